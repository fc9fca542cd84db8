import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

@Suite("Change feed: values, tombstones, checkpoints, pruning", .ownThread)
struct ChangeFeedTests {
    @Test func commitsCarryValuesAndTombstonesInOrder() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn in try txn.set(Note(title: "before"), forKey: "old", in: notes) }
            let start = try database.enableChangeFeed()
            #expect(try database.enableChangeFeed() == start)  // already on: nothing changes
            try connection.readWrite { txn in
                try txn.set(Note(title: "a", priority: 1), forKey: "k1", in: notes, metadata: NoteInfo(color: "red"))
                try txn.set(Note(title: "j"), forKey: "k1", in: jsonNotes)
            }
            try connection.readWrite { txn in
                try txn.replaceMetadata(NoteInfo(color: "blue"), forKey: "k1", in: notes)
                try txn.remove(key: "old", in: notes)
            }
            try connection.readWrite { txn in
                try txn.set(Note(title: "set then gone"), forKey: "tmp", in: notes)
                try txn.remove(key: "tmp", in: notes)
                _ = try txn.removeAll(inCollection: jsonNotes.name)
            }
            let commits = try database.readChanges(since: start)
            #expect(commits.map(\.snapshot) == [start + 1, start + 2, start + 3])

            let first = commits[0].changes
            #expect(first.map(\.kind) == [.set, .set])
            #expect(first.map(\.collection) == ["json-notes", "notes"])
            #expect(try first[0].object(as: Note.self) == Note(title: "j"))
            #expect(first[0].codec == "json")
            #expect(try first[1].object(as: Note.self) == Note(title: "a", priority: 1))
            #expect(try first[1].metadata(as: NoteInfo.self) == NoteInfo(color: "red"))
            #expect(try first[1].objectJSON() == #"{"title":"a","body":"","priority":1}"#)

            // A metadata-only change still carries the whole row; a removal is a tombstone.
            let second = commits[1].changes
            #expect(second.map(\.kind) == [.set, .remove])
            #expect(second.map(\.key) == ["k1", "old"])
            #expect(try second[0].object(as: Note.self) == Note(title: "a", priority: 1))
            #expect(try second[0].metadata(as: NoteInfo.self) == NoteInfo(color: "blue"))
            #expect(second[1].objectBytes == nil)

            // Collection removals come first; a key set and removed in one commit is only a tombstone.
            let third = commits[2].changes
            #expect(third.map(\.kind) == [.removeCollection, .remove])
            #expect(third[0].collection == "json-notes")
            #expect(third[1].key == "tmp")

            #expect(try database.readChanges(since: start + 1, limit: 1).map(\.snapshot) == [start + 2])
            #expect(try database.readChanges(since: start + 3).isEmpty)
        }
    }

    @Test func readingWhatTheFeedNeverHeldIsATypedError() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            #expect { try database.readChanges(since: 0) } throws: { ($0 as? CanopyError)?.code == .changeFeedDisabled }
            try connection.readWrite { txn in try txn.set(Note(title: "a"), forKey: "a", in: notes) }
            let start = try database.enableChangeFeed()
            try connection.readWrite { txn in try txn.set(Note(title: "b"), forKey: "b", in: notes) }
            #expect(start == 1)
            #expect { try database.readChanges(since: 0) } throws: { ($0 as? CanopyError)?.code == .changeFeedGap }
            #expect { try database.readChanges(since: 9) } throws: { ($0 as? CanopyError)?.code == .invalidArgument }
            #expect(try database.readChanges(since: 1).count == 1)
            try database.disableChangeFeed()
            #expect(try database.changeFeedEnabledSince() == nil)
            #expect { try database.readChanges(since: 1) } throws: { ($0 as? CanopyError)?.code == .changeFeedDisabled }
        }
    }

    /// The feed keeps what a consumer has not acknowledged, prunes what everyone passed, and a consumer beyond the
    /// limit gets a gap error rather than a silent hole.
    @Test func checkpointsHoldTheLogAndPruningPassesThem() throws {
        let options = DatabaseOptions(durability: .none, commitLogLimit: 10, changeFeedConsumerLimit: 300)
        try withDatabase(options: options) { database, _ in
            let connection = database.newConnection()
            try database.enableChangeFeed()
            try database.registerFeedConsumer(named: "slow", after: 0)
            try database.registerFeedConsumer(named: "fast")
            func commit(_ count: Int) throws {
                for _ in 0..<count {
                    try connection.readWrite { txn in
                        let n = (try txn.object(forKey: "n", in: counter) ?? 0) + 1
                        try txn.set(n, forKey: "n", in: counter)
                    }
                }
            }
            try commit(200)
            // "slow" holds everything after 0, although the log keeps only 10 commits.
            #expect(try database.readChanges(since: 0, limit: 1_000).count == 200)
            try database.acknowledge(consumer: "slow", through: 100)
            try database.acknowledge(consumer: "slow", through: 50)  // never moves back
            #expect(try database.feedConsumer(named: "slow")?.checkpoint == 100)
            try database.acknowledge(consumer: "fast", through: 200)
            try commit(56)  // snapshot 256: a pruning
            // Pruned up to the slowest checkpoint (100), not before.
            #expect { try database.readChanges(since: 99) } throws: { ($0 as? CanopyError)?.code == .changeFeedGap }
            #expect(try database.readChanges(since: 100, limit: 1).first?.snapshot == 101)
            #expect(try database.readChanges(since: 100, limit: 1_000).count == 156)

            // Past the consumer limit (300), "slow" no longer holds the feed: its next read is a gap.
            try commit(320)  // snapshot 576
            #expect(try database.feedConsumer(named: "slow")?.behind == 476)
            #expect { try database.readChanges(since: 100) } throws: { ($0 as? CanopyError)?.code == .changeFeedGap }
            #expect(try database.readChanges(since: 276, limit: 1).first?.snapshot == 277)
            // Without consumers the feed keeps the log's limit (10) after the next pruning.
            try database.removeFeedConsumer(named: "slow")
            try database.removeFeedConsumer(named: "fast")
            try commit(64)  // snapshot 640
            #expect { try database.readChanges(since: 629) } throws: { ($0 as? CanopyError)?.code == .changeFeedGap }
            #expect(try database.readChanges(since: 630).count == 10)
        }
    }

    @Test func consumersAreValidated() throws {
        try withDatabase { database, _ in
            try database.enableChangeFeed()
            #expect { try database.registerFeedConsumer(named: "") } throws: { ($0 as? CanopyError)?.code == .invalidArgument }
            #expect { try database.acknowledge(consumer: "nobody", through: 0) } throws: { ($0 as? CanopyError)?.code == .invalidArgument }
            try database.registerFeedConsumer(named: "c")
            #expect { try database.acknowledge(consumer: "c", through: 5) } throws: { ($0 as? CanopyError)?.code == .invalidArgument }
            #expect(try database.removeFeedConsumer(named: "c"))
            #expect(try !database.removeFeedConsumer(named: "c"))
        }
    }

    /// The asynchronous sequence delivers what is there, then follows new commits of another connection.
    @Test(.timeLimit(.minutes(1))) func changesFollowsNewCommits() async throws {
        try await withDatabase { database, _ in
            let connection = database.newConnection()
            let start = try database.enableChangeFeed()
            try await connection.readWrite { txn in try txn.set(Note(title: "1"), forKey: "1", in: notes) }
            let reader = Task {
                var seen: [String] = []
                for try await commit in database.changes(since: start) {
                    seen.append(try commit.changes[0].object(as: Note.self)?.title ?? "?")
                    if seen.count == 3 { break }
                }
                return seen
            }
            try await connection.readWrite { txn in try txn.set(Note(title: "2"), forKey: "2", in: notes) }
            try await connection.readWrite { txn in try txn.set(Note(title: "3"), forKey: "3", in: notes) }
            #expect(try await reader.value == ["1", "2", "3"])
        }
    }
}

private let counter = TypedCollection<Int, NoMetadata>("counter")
