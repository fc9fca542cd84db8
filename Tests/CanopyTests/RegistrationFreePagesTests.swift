import Canopy
import CanopyTestSupport
import Foundation
import LMDB
import Testing

/// What the Views article's Population section says about a view registered over existing rows: its transaction
/// rewrites every row's record, so the rows' old pages are freed at once and stay in LMDB's free list (every later
/// small commit writes two or three pages more while it is long); a compacting backup put in place of the database
/// has no free pages, and its views are current there (registering them again rebuilds nothing).
@Suite("A view registered over existing rows: LMDB's free pages, and a compacting backup that takes them back")
struct RegistrationFreePagesTests {
    struct Item: Codable, Sendable {
        var group: Int
        var title: String
    }

    static let items = TypedCollection<Item, NoMetadata>("items")
    static let rowCount = 5_000

    static func view() -> View {
        View(name: "by-title", grouping: .byObject(items) { _, item in "g\(item.group)" },
             sorting: .byObject(items) { _, _, item in SortKey(.ascending(item.title)) }, versionTag: "1")
    }

    /// The free pages and free-list shape of the database at `path`, and the pages of its rows' table, read through a
    /// plain read-only LMDB environment (no `Database` of the file may be open in this process).
    static func pages(at path: String) throws -> (free: FreePages, freeListDepth: Int, rowPages: Int) {
        let environment = try Environment(path: path, options: EnvironmentOptions(flags: [.readOnly], maxDatabases: 64))
        let objects = try environment.openDatabase(named: "canopy.objects")
        return try environment.read { txn in
            let rows = try txn.statistics(of: objects)
            return (try txn.freePages(), try txn.freeListStatistics().depth, rows.branchPages + rows.leafPages + rows.overflowPages)
        }
    }

    static func update(_ database: Canopy.Database, commits: Int) throws {
        let connection = database.newConnection()
        for commit in 0..<commits {
            let index = commit * 7_919 % rowCount
            try connection.readWrite { txn in
                try txn.set(Item(group: (index + commit) % 5, title: "t\(index)-\(commit)"), forKey: "k\(index)", in: items)
            }
        }
    }

    @Test("The registration frees the rows' old pages together; on a compacted copy the view is current and the free list stays one leaf")
    func compactingBackupTakesTheFreedPagesBack() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db"), copy = directory.appending("compacted")
        do {
            let database = try Canopy.Database(path: path, options: .init(durability: .none))
            try database.newConnection().readWrite { txn in
                for index in 0..<Self.rowCount { try txn.set(Item(group: index % 5, title: "t\(index)"), forKey: "k\(index)", in: Self.items) }
            }
        }
        let loaded = try Self.pages(at: path)
        do {
            let database = try Canopy.Database(path: path, options: .init(durability: .none))
            let view = Self.view()
            try database.register(view)
            #expect(view.lastPopulation?.rowsIndexed == Self.rowCount)
            try Self.update(database, commits: 3)
        }
        let registered = try Self.pages(at: path)
        // Every page of the rows' table as loaded was copied by the registration and freed by it, together.
        #expect(registered.free.pages >= loaded.rowPages, "free pages \(registered.free.pages), the rows' table had \(loaded.rowPages)")
        do {
            let database = try Canopy.Database(path: path, options: .init(durability: .none))
            try database.register(Self.view())
            try database.backup(to: copy, compact: true)
        }
        let compacted = try Self.pages(at: copy)
        #expect(compacted.free.pages == 0, "\(compacted.free)")
        do {
            let database = try Canopy.Database(path: copy, options: .init(durability: .none))
            let view = Self.view()
            try database.register(view)
            #expect(view.lastPopulation == nil, "the compacted copy's view was rebuilt: \(String(describing: view.lastPopulation))")
            try Self.update(database, commits: 300)
            try database.newConnection().read { txn in
                let reader = try txn.persistedView("by-title")
                #expect(try reader.checkStructure() == [])
                #expect(try reader.count() == Self.rowCount)
            }
        }
        let updated = try Self.pages(at: copy)
        // Each commit's freed pages are reused two commits later: a few records, within one leaf.
        #expect(updated.freeListDepth <= 1 && updated.free.records <= 4, "\(updated.free), depth \(updated.freeListDepth)")
    }
}
