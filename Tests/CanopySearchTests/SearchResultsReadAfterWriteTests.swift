import Canopy
import CanopySearch
import CanopyTestSupport
import Foundation
import Testing

/// A reader of a search results view made in a write transaction before the query is set (or rows change) reads the
/// results the transaction made, as any view's reader does; so do index searches in that transaction.
@Suite("Search results view: a reader made before a query change in its transaction reads the new results")
struct SearchResultsReadAfterWriteTests {
    @Test("setQuery and row writes after the reader was made: it answers with the new results")
    func readerFollowsQuery() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (database, index, ranked) = try openRankedNotes(in: directory)
        try database.newConnection().readWrite { txn in
            let reader = try txn.view("note-results")
            #expect(try reader.rowIDs(inGroup: "results").map(\.key) == ["a", "b"])
            try ranked.setQuery("bread", in: txn)
            #expect(try Set(reader.rowIDs(inGroup: "results").map(\.key)) == ["b", "c"])
            try txn.set(Note(title: "bread bread bread", body: nil), forKey: "d", in: notes)
            #expect(try reader.count(inGroup: "results") == 3)
            #expect(try reader.position(ofKey: "d", inCollection: "notes")?.index == 0)
            #expect(try index.search("bread", in: txn, highlights: false).first?.id.key == "d")
            #expect(try reader.checkInvariants() == [])
        }
    }
}
