import Canopy
import CanopySearch
import CanopyTestSupport
import Foundation
import Testing

@Suite("Search results view")
struct SearchResultsViewTests {
    @Test("Setting the same query again reports the rows as updated (their highlights may have changed)")
    func sameQueryUpdates() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (database, _, ranked) = try openRankedNotes(in: directory)
        let observer = try ViewObserver(database: database, mappings: ViewMappings(groups: ["results"], view: "note-results"))
        let first = try observer.read { txn in try txn.view("note-results").rowIDs(inGroup: "results").map(\.key) }
        #expect(first == ["a", "b"])
        try database.newConnection().readWrite { txn in try ranked.setQuery("milk", in: txn) }
        let changeset = try observer.advance()
        #expect(changeset.rowChanges.map { "\($0.kind)" } == ["update", "update"], "\(changeset.rowChanges)")
        try database.newConnection().readWrite { txn in try ranked.setQuery("bread", in: txn) }
        let changes = try observer.advance()
        #expect(Set(changes.rowChanges.map { "\($0.kind) \($0.id.key)" }) == ["delete a", "move b", "insert c"], "\(changes.rowChanges)")
    }
}
