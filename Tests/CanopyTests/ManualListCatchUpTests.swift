import Canopy
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// A manual list is registered in this process while another process that does not register it writes: the rule
/// "removing a row from the store removes it from the list" holds for the other process's removals too, including a
/// row it removes and writes again in one transaction (the commit log then records only a change).
@Suite("Manual lists across processes", .ownThread)
struct ManualListCatchUpTests {
    static let focus = ManualView.make(name: "focus", collections: [crashWriterEntries.name])

    /// Rows as the `CrashWriter` child writes them (numbers 1...5, parts a and b) and its counter at 5, so that its
    /// next commits are 6, 7 and 8. `order` goes into the list in that order.
    static func seed(_ database: Database, order: [String]) throws {
        try database.newConnection().readWrite { txn throws in
            for number in 1...5 {
                for part in ["a", "b"] { try txn.set(CrashWriterEntry(number: number, part: part), forKey: "\(number)-\(part)", in: crashWriterEntries) }
            }
            try txn.set(5, forKey: "n", in: TypedCollection<Int, NoMetadata>("counter"))
            let list = try txn.manualList("focus")
            for key in order { try list.append(key: key, inCollection: crashWriterEntries.name) }
        }
    }

    static func keys(_ txn: ReadTransaction) throws -> [String] {
        try txn.view("focus").rowIDs(inGroup: "focus").map(\.key)
    }

    /// Saw it fail before the catch-up looked at attachments: the list still held "4-b", "5-b" and "6-b" (written
    /// again by the child) after its write.
    @Test("Rows another process removed, or removed and wrote again in one transaction, leave the list; the observer's changeset says so",
          .timeLimit(.minutes(5)))
    func removedAndRewrittenElsewhere() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let database = try Database(path: path, options: .init(durability: .none))
        try database.register(Self.focus)
        try Self.seed(database, order: ["4-b", "1-a", "5-b", "5-a", "3-b", "2-a"])
        let observer = try ViewObserver(database: database, mappings: ViewMappings(groups: ["focus"], view: "focus"))
        let before = try observer.read { txn throws in try Rendering(mappings: observer.mappings, reader: txn.view("focus")) }
        // Commit 6 removes 5-a and removes and writes again 4-b; commit 7: 6-a, 5-b; commit 8: 7-a, 6-b.
        try runCrashWriter(path, ["--commits", "3", "--churn"])
        #expect(try database.newConnection().read { txn throws in try txn.exists(key: "4-b", in: crashWriterEntries) })
        #expect(try database.catchUpExtensions())
        let expected = ["1-a", "3-b", "2-a"]
        try database.newConnection().read { txn throws in
            #expect(try Self.keys(txn) == expected)
            #expect(try txn.view("focus").checkInvariants() == [])
        }
        let changeset = try observer.advance()
        #expect(!changeset.isReload)
        let after = try observer.read { txn throws in try Rendering(mappings: observer.mappings, reader: txn.view("focus")) }
        #expect(after.sections.first?.rows.map(\.key) == expected)
        let applied = try ChangesetApplier.apply(changeset, to: before) { section in
            after.sections.indices.contains(section) ? after.sections[section].rows : []
        }
        #expect(applied == after)
        // Written again here too, the rows stay out; the list still takes them back when asked.
        try database.newConnection().readWrite { txn throws in
            try txn.set(CrashWriterEntry(number: 9, part: "b"), forKey: "4-b", in: crashWriterEntries)
            try txn.manualList("focus").insert(key: "5-b", inCollection: crashWriterEntries.name, at: 0)
        }
        try database.newConnection().read { txn throws in #expect(try Self.keys(txn) == ["5-b"] + expected) }
    }

    /// Saw it fail before the rebuild looked at the retired slot: the list still held "4-b" and "5-b".
    @Test("When the commit log no longer covers the gap, the rebuild drops rows another process removed and wrote again",
          .timeLimit(.minutes(5)))
    func removedAndRewrittenBeyondTheLog() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let database = try Database(path: path, options: .init(durability: .none, commitLogLimit: 4))
        let focus = ManualView.make(name: "focus", collections: [crashWriterEntries.name])
        try database.register(focus)
        try Self.seed(database, order: ["4-b", "1-a", "5-b", "5-a", "3-b", "2-a"])
        // 20 commits (6…25) with a log of 4: the list cannot catch up, it is rebuilt.
        try runCrashWriter(path, ["--commits", "20", "--churn", "--commit-log-limit", "4"])
        #expect(try database.catchUpExtensions())
        #expect(focus.lastPopulation?.reason.contains("beyond what the commit log covers") == true, "\(String(describing: focus.lastPopulation))")
        try database.newConnection().read { txn throws in
            #expect(try Self.keys(txn) == ["1-a", "3-b", "2-a"])
            #expect(try txn.view("focus").checkInvariants() == [])
        }
    }

    /// Saw it fail before: the collection's rows were written again after it was emptied, and the rebuild that the
    /// catch-up asked for kept them in the list.
    @Test("A collection another process emptied and wrote again leaves the list without a rebuild", .timeLimit(.minutes(5)))
    func emptiedCollectionElsewhere() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let options = DatabaseOptions(durability: .none)
        let database = try Database(path: path, options: options)
        let focus = ManualView.make(name: "focus", collections: [crashWriterEntries.name])
        try database.register(focus)
        try Self.seed(database, order: ["2-a", "1-b", "3-a"])
        // The child empties the collection (no view registered), then writes rows again, some under the same keys.
        try runCrashWriter(path, ["--remove-all", "--commits", "2"])
        #expect(try database.newConnection().read { txn throws in try txn.exists(key: "1-b", in: crashWriterEntries) })
        #expect(try database.catchUpExtensions())
        #expect(focus.lastPopulation?.reason == "first registration", "caught up, not rebuilt: \(String(describing: focus.lastPopulation))")
        try database.newConnection().read { txn throws in
            #expect(try Self.keys(txn) == [])
            #expect(try txn.view("focus").checkInvariants() == [])
        }
    }
}
