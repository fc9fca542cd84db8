import Canopy
import CanopyCoreTestFixtures
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// One extension object (a `View`) keeps its tables' handles and its cached page directories for one database: the
/// same object registered in a second open database would read and write the first one's state through the second.
@Suite("One extension object in two open databases")
struct SharedExtensionObjectTests {
    static func byTitle() -> View {
        View(name: "by-title", grouping: .byObject(notes) { _, _ in "all" },
             sorting: .byObject(notes) { _, _, note in SortKey(.ascending(note.title)) })
    }

    @Test("the second registration of the same View object is refused with a typed error; a second View value works")
    func secondRegistrationRefused() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let first = try Database(path: directory.appending("a"), options: .init(durability: .none))
        let second = try Database(path: directory.appending("b"), options: .init(durability: .none))
        let view = Self.byTitle()
        try first.register(view)
        try first.newConnection().readWrite { txn in
            for title in ["c", "a", "b"] { try txn.set(Note(title: title), forKey: title, in: notes) }
        }
        let error = #expect(throws: CanopyError.self) { try second.register(view) }
        #expect(error?.code == .extensionAlreadyRegistered, "\(String(describing: error))")
        #expect(error?.message.contains("another open database") == true, "\(String(describing: error))")
        // Nothing of the refused registration reached the second database, and the first still reads right.
        #expect(second.registeredExtension(named: "by-title") == nil)
        #expect(try second.recordedExtensions().isEmpty)
        #expect(try first.newConnection().read { txn in try txn.view("by-title").rowIDs(inGroup: "all").map(\.key) } == ["a", "b", "c"])

        // A second View value of the same definition is the way to have the view in both.
        try second.register(Self.byTitle())
        try second.newConnection().readWrite { txn in try txn.set(Note(title: "z"), forKey: "z", in: notes) }
        #expect(try second.newConnection().read { txn in try txn.view("by-title").rowIDs(inGroup: "all").map(\.key) } == ["z"])
        #expect(try first.newConnection().read { txn in try txn.view("by-title").rowIDs(inGroup: "all").map(\.key) } == ["a", "b", "c"])
    }

    @Test("after the first database unregisters it (or is closed), the object can be registered in another")
    func reusableAfterRelease() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let view = Self.byTitle()
        do {
            let first = try Database(path: directory.appending("a"), options: .init(durability: .none))
            try first.register(view)
            try first.unregisterExtension(named: "by-title")
            let second = try Database(path: directory.appending("b"), options: .init(durability: .none))
            try second.register(view)
            try second.newConnection().readWrite { txn in try txn.set(Note(title: "q"), forKey: "q", in: notes) }
            #expect(try second.newConnection().read { txn in try txn.view("by-title").rowIDs(inGroup: "all").map(\.key) } == ["q"])
        }
        // Both databases closed: a third takes it.
        let third = try Database(path: directory.appending("c"), options: .init(durability: .none))
        try third.register(view)
        try third.newConnection().readWrite { txn in try txn.set(Note(title: "r"), forKey: "r", in: notes) }
        #expect(try third.newConnection().read { txn in try txn.view("by-title").rowIDs(inGroup: "all").map(\.key) } == ["r"])
    }

    /// A view's committed page directories are cached by version, and versions are the commits' snapshots: two
    /// databases give the same versions. An object moved to a second database (the first closed) must not answer the
    /// second one's version from the first one's cache — a version this process never wrote, from another process.
    @Test("moved to a second database, the object reads that database's entries, not a version cached from the first",
          .timeLimit(.minutes(1)))
    func movedObjectForgetsTheFirstDatabase() throws {
        let writerPath = try #require(CrashTests.writerPath, "the CrashWriter executable was not built")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let view = crashWriterView()
        do {
            // Database A: commits at snapshots 2…9 cache the view's versions 2…9 (top bit set), rows "a<n>".
            let first = try Database(path: directory.appending("a"), options: .init(durability: .none))
            try first.register(view)
            for number in 0..<8 {
                try first.newConnection().readWrite { txn in
                    try txn.set(CrashWriterEntry(number: 100 + number, part: "a"), forKey: "a\(number)", in: crashWriterEntries)
                }
            }
            #expect(try first.newConnection().read { txn in try txn.view("entries-by-part").count() } == 8)
        }
        // Database B: the same object registered (A is closed), then another process commits at snapshots 2…4.
        let path = directory.appending("b")
        let second = try Database(path: path, options: .init(durability: .none))
        try second.register(view)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: writerPath)
        process.arguments = [path, "none", "--with-view", "--commits", "3"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "the writer process failed")
        let keys = try second.newConnection().read { txn in try txn.view("entries-by-part").rowIDs(inGroup: "a").map(\.key) }
        #expect(keys.allSatisfy { !$0.hasPrefix("a") } && keys.count == 3, "\(keys)")
    }

    @Test("registering it again in the same database is the name's usual refusal, not the other-database one")
    func sameDatabaseTwice() throws {
        try withDatabase { database, _ in
            let view = Self.byTitle()
            try database.register(view)
            let error = #expect(throws: CanopyError.self) { try database.register(view) }
            #expect(error?.code == .extensionAlreadyRegistered)
            #expect(error?.message.contains("another open database") == false)
        }
    }

    /// What the same object in two databases did before registrations were refused (kept to show the damage).
    @Test("reproduction: without the refusal, a write to one database shows in the other's reads")
    func reproduction() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let first = try Database(path: directory.appending("a"), options: .init(durability: .none))
        let second = try Database(path: directory.appending("b"), options: .init(durability: .none))
        let view = Self.byTitle()
        try first.register(view)
        guard (try? second.register(view)) != nil else { return }  // refused: the rule holds
        try first.newConnection().readWrite { txn in
            for title in ["c", "a", "b"] { try txn.set(Note(title: title), forKey: title, in: notes) }
        }
        try second.newConnection().readWrite { txn in try txn.set(Note(title: "z"), forKey: "z", in: notes) }
        let firstKeys = try first.newConnection().read { txn in try txn.view("by-title").rowIDs(inGroup: "all").map(\.key) }
        let secondKeys = try second.newConnection().read { txn in try txn.view("by-title").rowIDs(inGroup: "all").map(\.key) }
        Issue.record("the second registration was accepted: first reads \(firstKeys), second reads \(secondKeys)")
    }
}
