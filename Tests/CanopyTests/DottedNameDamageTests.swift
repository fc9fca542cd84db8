import Canopy
import CanopyCoreTestFixtures
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// Extension names may hold dots (`tasks`, `tasks.done`), and an extension's tables are `ext.<name>.<table>`: a
/// damaged record names its extension from the table's name, by its last dot, which is right only while table names
/// hold none. So a table name with a dot is refused (it would also be the same LMDB table as another extension's:
/// `tasks`' table `done.pages` is `tasks.done`'s `pages`).
@Suite("Dotted extension names: damage names the right extension; a dotted table name is refused")
struct DottedNameDamageTests {
    @Test("a damaged page of view 'tasks.done' is corruptStore naming 'tasks.done', not 'tasks'")
    func damagedPageNamesTheLongerName() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        do {
            let database = try Database(path: path, options: .init(durability: .none))
            try database.register(DropExtensionNamePrefixTests.view("tasks"))
            try database.register(DropExtensionNamePrefixTests.view("tasks.done"))
            try database.newConnection().readWrite { txn in
                for title in ["c", "a", "b"] { try txn.set(Note(title: title), forKey: title, in: notes) }
            }
        }
        try flipStoredByte(path: path, table: "ext.tasks.done.pages", key: { _ in true }, at: { $0 - 10 })
        let database = try Database(path: path, options: .init(durability: .none, readOnly: true))
        try database.newConnection().read { txn throws in
            #expect(try txn.persistedView("tasks").checkStructure() == [])
            let error = #expect(throws: CanopyError.self) { _ = try txn.persistedView("tasks.done").checkStructure() }
            #expect(error?.code == .corruptStore)
            #expect(error?.extensionName == "tasks.done", "\(String(describing: error))")
        }
    }

    @Test("a table name with a dot (or none) is invalidArgument, for opening and for reading; nothing is created")
    func dottedTableNameRefused() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        try database.register(DropExtensionNamePrefixTests.view("tasks.done"))
        let connection = database.newConnection()
        for name in ["done.pages", "", "."] {
            let error = #expect(throws: CanopyError.self) {
                try connection.readWrite { txn in
                    _ = try txn.openTable(name, of: "tasks", keys: BytesCoding.self, values: BytesCoding.self)
                }
            }
            #expect(error?.code == .invalidArgument, "'\(name)': \(String(describing: error))")
            #expect(error?.extensionName == "tasks")
            let readError = #expect(throws: CanopyError.self) {
                try connection.read { txn in _ = try txn.existingTable(name, of: "tasks", keys: BytesCoding.self, values: BytesCoding.self) }
            }
            #expect(readError?.code == .invalidArgument, "'\(name)': \(String(describing: readError))")
        }
        // (Before the fix: `tasks`' table `done.pages` opened `tasks.done`'s pages, and a write to it changed that view.)
        try connection.read { txn throws in
            #expect(try txn.existingTable("pages", of: "tasks.done", keys: BytesCoding.self, values: BytesCoding.self) != nil)
        }
    }
}
