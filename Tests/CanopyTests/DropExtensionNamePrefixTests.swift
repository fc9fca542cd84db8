import Canopy
import CanopyCoreTestFixtures
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// Extension names may hold dots, and an extension's tables are named `ext.<name>.<table>`: dropping the storage of
/// extension `tasks` by name (a tool, which has not registered it) must not empty the tables of `tasks.done`.
@Suite("Dropping an extension whose name prefixes another's")
struct DropExtensionNamePrefixTests {
    static func view(_ name: String) -> View {
        View(name: name, grouping: .byObject(notes) { _, _ in "all" },
             sorting: .byObject(notes) { _, _, note in SortKey(.ascending(note.title)) })
    }

    @Test("a tool's drop of 'tasks' leaves the view 'tasks.done' whole")
    func dropLeavesLongerName() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        do {
            let database = try Database(path: path, options: .init(durability: .none))
            try database.register(Self.view("tasks"))
            try database.register(Self.view("tasks.done"))
            try database.newConnection().readWrite { txn in
                for title in ["c", "a", "b"] { try txn.set(Note(title: title), forKey: title, in: notes) }
            }
        }
        do {
            // As a tool does: the views are not registered in this process.
            let database = try Database(path: path, options: .init(durability: .none))
            try database.unregisterExtension(named: "tasks", dropStorage: true)
            #expect(try database.recordedExtensions().map(\.name) == ["tasks.done"])
        }
        let database = try Database(path: path, options: .init(durability: .none))
        try database.register(Self.view("tasks.done"))
        let keys = try database.newConnection().read { txn in try txn.view("tasks.done").rowIDs(inGroup: "all").map(\.key) }
        // (Before the fix: [], without an error — the drop had emptied `tasks.done`'s pages too.)
        #expect(keys == ["a", "b", "c"])
    }
}
