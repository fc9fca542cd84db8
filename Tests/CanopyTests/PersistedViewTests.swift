import Canopy
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Testing

@Suite("Views read from their stored tables, without their closures")
struct PersistedViewTests {
    static let parts = ["a", "b", "c"]

    /// Writes `count` entries and registers the view and a filtered view (even numbers), then closes the database.
    static func makeDatabase(at path: String, count: Int) throws {
        let database = try Database(path: path, options: .init(durability: .none))
        try database.register(crashWriterView())
        try database.register(FilteredView.make(name: "even", parentView: "entries-by-part") { _, row in
            try row.object(as: CrashWriterEntry.self).number % 2 == 0
        })
        try database.newConnection().readWrite { txn in
            for n in 0..<count { try txn.set(CrashWriterEntry(number: n, part: parts[n % 3]), forKey: "k\(n)", in: crashWriterEntries) }
        }
    }

    @Test("groups, counts, rows by index and positions match the registered view's")
    func readsLikeTheRegisteredView() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let count = 500
        try Self.makeDatabase(at: path, count: count)
        // Expected, from the model: part p holds numbers n % 3 == p, newest first.
        let database = try Database(path: path, options: .init(durability: .none, readOnly: true))
        #expect(database.registeredExtension(named: "entries-by-part") == nil)
        try database.newConnection().read { txn in
            let view = try txn.persistedView("entries-by-part")
            #expect(view.kind == "view")
            #expect(!view.hasClosures)
            #expect(try view.groups() == Self.parts)
            #expect(try view.count() == count)
            for (p, part) in Self.parts.enumerated() {
                let numbers = (0..<count).filter { $0 % 3 == p }.sorted(by: >)
                #expect(try view.count(inGroup: part) == numbers.count)
                #expect(try view.rowIDs(inGroup: part).map(\.key) == numbers.map { "k\($0)" })
                #expect(try view.rowID(at: 7, inGroup: part)?.key == "k\(numbers[7])")
                #expect(try view.position(ofKey: "k\(numbers[11])", inCollection: "entries")?.index == 11)
            }
            #expect(try view.checkStructure() == [])

            let even = try txn.view("even")  // view(_:) falls back to the stored tables in a read transaction
            #expect(even.kind == "filtered-view")
            #expect(even.parentView == "entries-by-part")
            #expect(try even.count() == (0..<count).filter { $0 % 2 == 0 }.count)
            #expect(try even.rowID(at: 0, inGroup: "a")?.key == "k498")
            #expect(try even.checkStructure() == [])
        }
    }

    @Test("an observer follows a view it did not register, through another process's commits", .timeLimit(.minutes(1)))
    func observesWithoutClosures() throws {
        let writerPath = try #require(CrashTests.writerPath, "the CrashWriter executable was not built")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        try Self.makeDatabase(at: path, count: 30)
        let database = try Database(path: path, options: .init(durability: .none, readOnly: true))
        let observer = try ViewObserver(database: database, mappings: ViewMappings(groups: Self.parts, view: "entries-by-part"))
        #expect(observer.mappings.numberOfItems(inGroup: "a") == 10)

        // Another process, which registers the view, commits entries 1-a and 1-b (number 1).
        let process = Process()
        process.executableURL = URL(fileURLWithPath: writerPath)
        process.arguments = [path, "none", "--with-view", "--commits", "1"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "the writer process failed")

        let changes = try observer.advance()
        #expect(Set(changes.rowChanges.map(\.id.key)) == ["1-a", "1-b"])
        // Number 1, newest first: after the 9 larger numbers of its part (ties break by key: "1-b" < "k1").
        #expect(changes.rowChanges.allSatisfy { $0.kind == .insert && $0.finalIndexPath?.row == 9 })
        #expect(observer.mappings.numberOfItems(inGroup: "a") == 11)
    }

    @Test("unknown view: extensionNotRegistered listing the recorded views; stale view: staleView naming both snapshots")
    func errors() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        try Self.makeDatabase(at: path, count: 10)
        let database = try Database(path: path, options: .init(durability: .none))
        let unknown = #expect(throws: CanopyError.self) { try database.newConnection().read { txn in _ = try txn.persistedView("nope") } }
        #expect(unknown?.code == .extensionNotRegistered)
        #expect(unknown?.message.contains("entries-by-part, even") == true)
        try database.newConnection().readWrite { txn in try txn.set(CrashWriterEntry(number: 50, part: "a"), forKey: "k50", in: crashWriterEntries) }
        let stale = #expect(throws: CanopyError.self) { try database.newConnection().read { txn in _ = try txn.persistedView("even") } }
        #expect(stale?.code == .staleView)
        #expect(stale?.extensionName == "even")
        #expect(stale?.message.contains("snapshot 3") == true && stale?.message.contains("snapshot 4") == true)
        // As stored, on request.
        let stored = try database.newConnection().read { txn in try txn.persistedView("entries-by-part", allowingStale: true).count() }
        #expect(stored == 10)
    }
}
