@testable import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Testing

/// Whether the feed is on is remembered per committed LMDB transaction (``DatabaseCore/feedEnabledSince(_:committed:)``).
/// A transaction that turns the feed on or off and also commits rows must record its own commit as the record it wrote
/// says, and leave that remembered for the next commit, not the state before it.
@Suite("Change feed: the remembered on/off state of a commit that changes it")
struct ChangeFeedEnabledCacheTests {
    @Test func aCommitThatTurnsTheFeedOnIsRecordedAndSoAreTheNextOnes() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            // A commit with the feed off: this process now remembers "off" as of that transaction.
            try connection.readWrite { txn in try txn.set(Note(title: "before"), forKey: "old", in: notes) }
            let since = try database.currentSnapshot()
            try connection.readWrite { txn in
                try txn.setChangeFeedEnabled(since: since)
                try txn.set(Note(title: "a"), forKey: "a", in: notes)
            }
            try connection.readWrite { txn in try txn.set(Note(title: "b"), forKey: "b", in: notes) }
            #expect(try database.changeFeedEnabledSince() == since)
            let commits = try database.readChanges(since: since)
            #expect(commits.map(\.snapshot) == [since + 1, since + 2])
        }
    }

    @Test func aCommitThatTurnsTheFeedOffIsNotRecordedNorAreTheNextOnes() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            let since = try database.enableChangeFeed()
            try connection.readWrite { txn in try txn.set(Note(title: "a"), forKey: "a", in: notes) }
            try connection.readWrite { txn in
                try txn.setChangeFeedEnabled(since: nil)
                try txn.set(Note(title: "b"), forKey: "b", in: notes)
            }
            try connection.readWrite { txn in try txn.set(Note(title: "c"), forKey: "c", in: notes) }
            #expect(try database.changeFeedEnabledSince() == nil)
            // Nothing recorded while the record says off (the feed's records of snapshot `since + 1` were written
            // while it was on; a commit recorded after it was turned off would be a record nobody prunes).
            try connection.read { txn in
                var recorded: [UInt64] = []
                try txn.storage.forEach(in: try #require(database.core.feedTables).feed) { key, _ in
                    if let snapshot = FeedRecord.snapshot(ofKey: key) { recorded.append(snapshot) }
                    return true
                }
                #expect(recorded.allSatisfy { $0 <= since + 1 })
            }
        }
    }
}
