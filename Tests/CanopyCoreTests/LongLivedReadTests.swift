@testable import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

@Suite("Long-lived read transactions")
struct LongLivedReadTests {
    @Test func pinnedConnectionSeesItsSnapshotUntilAdvanced() throws {
        try withDatabase { database, _ in
            let ui = database.newConnection()
            let writer = database.newConnection()
            try writer.readWrite { txn throws in try txn.set(Note(title: "v1"), forKey: "k", in: notes) }
            #expect(try ui.pin() == 1)
            #expect(ui.pinnedSnapshot == 1)
            try writer.readWrite { txn throws in try txn.set(Note(title: "v2"), forKey: "k", in: notes) }
            try writer.readWrite { txn throws in try txn.set(Note(title: "new"), forKey: "n", in: notes) }
            try ui.read { txn throws in
                #expect(txn.snapshot == 1)
                #expect(try txn.object(forKey: "k", in: notes)?.title == "v1")
                #expect(try txn.object(forKey: "n", in: notes) == nil)
            }
            let passed = try ui.advance()
            #expect(passed.map(\.snapshot) == [2, 3])
            #expect(passed[0].changedObjects == ["notes": ["k"]])
            #expect(passed[1].changedObjects == ["notes": ["n"]])
            try ui.read { txn throws in
                #expect(txn.snapshot == 3)
                #expect(try txn.object(forKey: "k", in: notes)?.title == "v2")
                #expect(try txn.object(forKey: "n", in: notes)?.title == "new")
            }
            #expect(try ui.advance().isEmpty)
            ui.unpin()
            #expect(ui.pinnedSnapshot == nil)
        }
    }

    @Test func advanceReadsThePersistedLogWhenMemoryDoesNotHaveIt() throws {
        try withDatabase { database, _ in
            let ui = database.newConnection()
            let writer = database.newConnection()
            try ui.pin()
            for i in 0..<3 { try writer.readWrite { txn throws in try txn.set(Note(title: "\(i)"), forKey: "k\(i)", in: notes) } }
            database.core.state.withLock { $0.recentCommits.removeAll() }
            let passed = try ui.advance()
            #expect(passed.map(\.snapshot) == [1, 2, 3])
            #expect(passed.map { $0.changedObjects["notes"] ?? [] } == [["k0"], ["k1"], ["k2"]])
        }
    }

    @Test func advancingPastTheCommitLogIsATypedError() throws {
        try withDatabase(options: .init(durability: .none, commitLogLimit: 2)) { database, _ in
            let ui = database.newConnection()
            let writer = database.newConnection()
            try ui.pin()
            for i in 0..<5 { try writer.readWrite { txn throws in try txn.set(Note(title: "\(i)"), forKey: "k\(i)", in: notes) } }
            database.core.state.withLock { $0.recentCommits.removeAll() }
            let error = #expect(throws: CanopyError.self) { try ui.advance() }
            #expect(error?.code == .snapshotMismatch)
            // The connection moved on anyway, and reads the latest state.
            #expect(ui.pinnedSnapshot == 5)
            try ui.read { txn throws in #expect(try txn.object(forKey: "k4", in: notes)?.title == "4") }
        }
    }

    @Test func writingOnAPinnedConnectionIsAnError() throws {
        try withDatabase { database, _ in
            let ui = database.newConnection()
            try ui.pin()
            let error = #expect(throws: CanopyError.self) {
                try ui.readWrite { txn throws in try txn.set(Note(title: "x"), forKey: "x", in: notes) }
            }
            #expect(error?.code == .connectionPinned)
            #expect(error?.description.contains("pinned") == true)
            #expect(throws: CanopyError.self) { try database.newConnection().advance() }
            ui.unpin()
            try ui.readWrite { txn throws in try txn.set(Note(title: "x"), forKey: "x", in: notes) }
        }
    }

    /// `advance(since:)` from a snapshot after the one the connection was pinned to (an observer resuming from another
    /// one's later state): the commits in between are not returned, but the caches dropped nothing for them and the
    /// next read returned the value they replaced.
    @Test func advancingSinceALaterSnapshotStillRefreshesTheCaches() throws {
        try withDatabase { database, _ in
            let writer = database.newConnection()
            try writer.readWrite { txn throws in try txn.set(Note(title: "old"), forKey: "k", in: notes) }
            let pinned = database.newConnection()
            try pinned.pin()
            #expect(try pinned.read { try $0.object(forKey: "k", in: notes)?.title } == "old")
            try writer.readWrite { txn throws in try txn.set(Note(title: "new"), forKey: "k", in: notes) }
            #expect(try pinned.advance(since: try database.currentSnapshot()).isEmpty)
            #expect(try pinned.read { try $0.object(forKey: "k", in: notes)?.title } == "new")
        }
    }
}
