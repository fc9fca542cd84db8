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
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let index = makeNoteSearch()
        let ranked = SearchResultsView.ranked(name: "note-results", index: index)
        try database.register(index)
        try database.register(ranked.view)
        try database.newConnection().readWrite { txn in
            try txn.set(Note(title: "milk", body: "oat milk"), forKey: "a", in: notes)
            try txn.set(Note(title: "bread", body: "milk bread"), forKey: "b", in: notes)
            try txn.set(Note(title: "bread", body: nil), forKey: "c", in: notes)
            try ranked.setQuery("milk", in: txn)
        }
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
