@testable import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// A commit that changed more than `CommitLogEntry.maximumLoggedKeys` rows is logged with its state only: readers of
/// the persisted log (other processes) reload after it, this process still gets the whole notification, and pruning
/// its entry later frees no large run of pages (which would leave LMDB's free list long for good, and every small
/// commit after it writing two pages more).
@Suite("Bulk commits in the commit log")
struct BulkCommitLogTests {
    private func insert(_ count: Int, prefix: String, _ connection: Connection) throws {
        try connection.readWrite { txn in
            for index in 0..<count { try txn.set(Note(title: "\(index)"), forKey: "\(prefix)\(index)", in: notes) }
        }
    }

    @Test func aCommitOfAtMostTheLimitIsListed() throws {
        try withDatabase { database, _ in
            let reader = database.newConnection()
            try reader.pin()
            try insert(CommitLogEntry.maximumLoggedKeys, prefix: "k", database.newConnection())
            // As another process reads it: from the persisted log, not this process's memory.
            database.core.state.withLock { $0.recentCommits.removeAll() }
            let passed = try reader.advance()
            #expect(passed.count == 1)
            #expect(passed.first?.changedObjects["notes"]?.count == CommitLogEntry.maximumLoggedKeys)
        }
    }

    @Test func aBulkCommitIsAGapForReadersOfThePersistedLog() throws {
        try withDatabase { database, _ in
            let inProcess = database.newConnection()
            let otherProcess = database.newConnection()
            try inProcess.pin()
            try otherProcess.pin()
            let writer = database.newConnection()
            try insert(CommitLogEntry.maximumLoggedKeys + 1, prefix: "k", writer)
            try writer.readWrite { txn in try txn.set(Note(title: "small"), forKey: "small", in: notes) }

            // This process's notifications are complete (from memory).
            let passed = try inProcess.advance()
            #expect(passed.map(\.snapshot) == [1, 2])
            #expect(passed.first?.changedObjects["notes"]?.count == CommitLogEntry.maximumLoggedKeys + 1)

            // Read from the log, the bulk commit is a gap: a typed error saying to reload, never "nothing changed".
            database.core.state.withLock { $0.recentCommits.removeAll() }
            let error = #expect(throws: CanopyError.self) { try otherProcess.advance() }
            #expect(error?.code == .snapshotMismatch)
            #expect(otherProcess.pinnedSnapshot == 2)
            try otherProcess.read { txn throws in
                #expect(try txn.object(forKey: "k\(CommitLogEntry.maximumLoggedKeys)", in: notes)?.title == "\(CommitLogEntry.maximumLoggedKeys)")
                #expect(try txn.object(forKey: "small", in: notes)?.title == "small")
            }
            // The commits after it are listed again.
            try writer.readWrite { txn in try txn.set(Note(title: "after"), forKey: "after", in: notes) }
            #expect(try otherProcess.advance().map { $0.changedObjects } == [["notes": ["after"]]])

            // The store's state is still the newest entry's: a new Database reads it.
            let snapshot = try database.newConnection().read { $0.snapshot }
            #expect(snapshot == 3)
        }
    }

    @Test func aBulkCommitsEntryIsSmallAndItsPruningLeavesTheFreeListShort() throws {
        // A bulk commit, then small commits until its entry is pruned (a log of 64 entries) and long after. Listing the
        // 20,000 keys took about 90 pages, freed at once by the pruning: LMDB then reused them a commit's worth at a
        // time while each commit added its own record, so the free list kept a record per commit of those (about 14
        // records; 2 without the bulk commit) for good.
        try withDatabase(options: .init(durability: .none, commitLogLimit: 64)) { database, _ in
            let writer = database.newConnection()
            try insert(20_000, prefix: "bulk", writer)
            let entrySize = try database.core.environment.read { txn in
                try txn.withValue(forKey: SnapshotKey.bytes(1), in: database.core.tables.commits) { $0?.count ?? 0 }
            }
            #expect(entrySize < 200, "the bulk commit's log entry takes \(entrySize) bytes")
            for index in 0..<400 {
                try writer.readWrite { txn in try txn.set(Note(title: "\(index)"), forKey: "bulk\(index * 37 % 20_000)", in: notes) }
            }
            let (free, depth) = try database.core.environment.read { txn in (try txn.freePages(), try txn.freeListStatistics().depth) }
            #expect(free.records <= 4, "the free list holds \(free.records) records (\(free.pages) pages)")
            #expect(depth <= 1)
        }
    }
}
