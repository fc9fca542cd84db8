import Canopy
import CanopyCLI
import CanopyTestSupport
import Foundation
import Synchronization
import Testing

@Suite("canopy watch in a child process", .ownThread)
struct WatchTests {
    /// A row change as `watch --json` prints it: kind, collection, key, original and final index paths.
    struct Change: Hashable, CustomStringConvertible {
        var kind: String
        var id: String
        var from: [Int]?
        var to: [Int]?
        var description: String { "\(kind) \(id) \(from ?? []) -> \(to ?? [])" }
    }

    static func changes(_ changeset: ViewChangeset) -> [Change] {
        changeset.rowChanges.map {
            Change(kind: "\($0.kind)", id: "\($0.id.collection)/\($0.id.key)",
                   from: $0.originalIndexPath.map { [$0.section, $0.row] }, to: $0.finalIndexPath.map { [$0.section, $0.row] })
        }
    }

    static func changes(_ line: JSONValue) -> [Change] {
        (line["rows"]?.elements ?? []).map { row in
            Change(kind: row["kind"]?.stringValue ?? "?", id: "\(row["collection"]?.stringValue ?? "?")/\(row["key"]?.stringValue ?? "?")",
                   from: row["from"]?.elements.compactMap(\.intValue).nilIfEmpty, to: row["to"]?.elements.compactMap(\.intValue).nilIfEmpty)
        }
    }

    @Test("watch --view sees this process's commits as the same changesets an in-process observer computes", .timeLimit(.minutes(1)))
    func viewChangesetsMatch() throws {
        let executable = try #require(canopyExecutable, "the canopy executable was not built")
        let directory = try TemporaryDirectory(prefix: "canopy-cli-test")
        defer { directory.remove() }
        let path = directory.appending("db")
        try makeFixture(at: path)
        let database = try Database(path: path, options: .init(durability: .none))
        try database.register(byList())
        try database.register(urgent())
        let observer = try ViewObserver(database: database, mappings: ViewMappings(view: "by-list", groupFilter: { _ in true }))
        let connection = database.newConnection()

        let child = try ChildProcess(executable, ["watch", path, "--view", "by-list", "--json", "--count", "3", "--announce"])
        let announced = try #require(child.nextLine(), "watch did not start")
        #expect(try JSONValue.parse(announced)["watching"]?.stringValue == "by-list")

        let writes: [@Sendable (ReadWriteTransaction) throws -> Void] = [
            { txn in try txn.set(Chore(title: "Urgent thing", list: "home", priority: 9, due: Date(timeIntervalSince1970: 0), estimate: 1), forKey: "t10", in: tasks) },
            { txn in try txn.set(Chore(title: "Buy milk", list: "work", priority: 1, due: Date(timeIntervalSince1970: 0), estimate: 1), forKey: "t1", in: tasks) },
            { txn in
                _ = try txn.remove(key: "t5", inCollection: "tasks")
                try txn.set(Chore(title: "Garden", list: "yard", priority: 1, due: Date(timeIntervalSince1970: 0), estimate: 1), forKey: "t11", in: tasks)
            },
        ]
        for (i, write) in writes.enumerated() {
            try connection.readWrite(write)
            let expected = try observer.advance()
            let line = try #require(child.nextLine(), "watch printed no changeset for commit \(i + 1)")
            let printed = try JSONValue.parse(line)
            #expect(printed["toSnapshot"]?.intValue == Int(expected.toSnapshot))
            #expect(printed["fromSnapshot"]?.intValue == Int(expected.fromSnapshot))
            #expect(Self.changes(printed) == Self.changes(expected), "commit \(i + 1)")
            #expect(printed["sections"]?.elements.count == expected.sectionChanges.count)
            #expect(!Self.changes(expected).isEmpty)
        }
        #expect(child.waitForExit() == 0)
    }

    @Test("watch --view on a view another process left stale says so and waits; once the app catches the view up, it carries on",
          .timeLimit(.minutes(1)))
    func staleViewWaits() throws {
        let executable = try #require(canopyExecutable, "the canopy executable was not built")
        let directory = try TemporaryDirectory(prefix: "canopy-cli-test")
        defer { directory.remove() }
        let path = directory.appending("db")
        try makeFixture(at: path)
        let child = try ChildProcess(executable, ["watch", path, "--view", "by-list", "--json", "--count", "1", "--announce",
                                                  "--poll-milliseconds", "20"])
        #expect(try JSONValue.parse(try #require(child.nextLine(), "watch did not start"))["watching"]?.stringValue == "by-list")
        let database = try Database(path: path, options: .init(durability: .none))
        // This process has not registered the views: its write leaves them stale.
        try database.newConnection().readWrite { txn in
            try txn.set(Chore(title: "Sneaked in", list: "home", priority: 2, due: Date(timeIntervalSince1970: 0), estimate: 1), forKey: "t20", in: tasks)
        }
        let stale = try JSONValue.parse(try #require(child.nextLine(), "watch said nothing about the stale view"))
        #expect(stale["stale"]?.boolValue == true, "\(stale)")
        #expect(stale["message"]?.stringValue?.contains("by-list") == true)
        // The app registers the views: they are caught up, and watch reports the row it had not seen.
        try database.register(byList())
        try database.register(urgent())
        let again = try JSONValue.parse(try #require(child.nextLine(), "watch ended or said nothing once the view was current"))
        #expect(again["stale"]?.boolValue == false, "\(again)")
        let changeset = try JSONValue.parse(try #require(child.nextLine(), "watch printed no changeset after the catch-up"))
        #expect(Self.changes(changeset).map(\.description) == ["insert tasks/t20 [] -> [0, 3]"], "\(changeset)")
        #expect(child.waitForExit() == 0)
    }

    @Test("watch without --view prints each commit's snapshot and changed keys as JSON lines", .timeLimit(.minutes(1)))
    func commitLines() throws {
        let executable = try #require(canopyExecutable, "the canopy executable was not built")
        let directory = try TemporaryDirectory(prefix: "canopy-cli-test")
        defer { directory.remove() }
        let path = directory.appending("db")
        try makeFixture(at: path)
        let database = try Database(path: path, options: .init(durability: .none))
        let connection = database.newConnection()
        let child = try ChildProcess(executable, ["watch", path, "--json", "--count", "2", "--announce"])
        let announced = try JSONValue.parse(try #require(child.nextLine(), "watch did not start"))
        let start = try #require(announced["snapshot"]?.intValue)

        try connection.readWrite { txn in try txn.set(Memo(text: "new", tags: []), forKey: "m3", in: memos) }
        let first = try JSONValue.parse(try #require(child.nextLine()))
        #expect(first["snapshot"]?.intValue == start + 1)
        #expect(first["changedObjects"]?["memos"]?.elements.compactMap(\.stringValue) == ["m3"])

        try connection.readWrite { txn in _ = try txn.remove(key: "m1", inCollection: "memos") }
        let second = try JSONValue.parse(try #require(child.nextLine()))
        #expect(second["snapshot"]?.intValue == start + 2)
        #expect(second["removedKeys"]?["memos"]?.elements.compactMap(\.stringValue) == ["m1"])
        #expect(child.waitForExit() == 0)
    }
}

extension WatchTests {
    @Test("watch --view --group prints readable changesets of that group only", .timeLimit(.minutes(1)))
    func readableGroup() throws {
        let executable = try #require(canopyExecutable, "the canopy executable was not built")
        let directory = try TemporaryDirectory(prefix: "canopy-cli-test")
        defer { directory.remove() }
        let path = directory.appending("db")
        try makeFixture(at: path)
        let database = try Database(path: path, options: .init(durability: .none))
        try database.register(byList())
        try database.register(urgent())
        let connection = database.newConnection()
        let child = try ChildProcess(executable, ["watch", path, "--view", "by-list", "--group", "work", "--count", "1", "--announce"])
        #expect(child.nextLine()?.hasPrefix("watching view by-list from snapshot") == true)
        // A commit to the other group only: no changeset for "work" (empty ones are not printed).
        try connection.readWrite { txn in
            try txn.set(Chore(title: "Home thing", list: "home", priority: 9, due: Date(timeIntervalSince1970: 0), estimate: 1), forKey: "t20", in: tasks)
        }
        try connection.readWrite { txn in
            try txn.set(Chore(title: "Work thing", list: "work", priority: 9, due: Date(timeIntervalSince1970: 0), estimate: 1), forKey: "t21", in: tasks)
        }
        let header = try #require(child.nextLine())
        #expect(header.hasSuffix(": 0 section change(s), 1 row change(s)"), "\(header)")
        #expect(child.nextLine() == "  insert tasks/t21 [0, 0]")
        #expect(child.waitForExit() == 0)
    }
}

extension Array {
    var nilIfEmpty: [Element]? { isEmpty ? nil : self }
}
