import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

@Suite("Commit notifications", .ownThread)
struct NotificationTests {
    @Test func notificationsCarryExactlyTheChangedKeys() throws {
        try withDatabase { database, _ in
            let recorder = NotificationRecorder()
            let token = database.addCommitObserver { recorder.record($0) }
            defer { database.removeObserver(token) }
            let connection = database.newConnection()
            try connection.readWrite { txn throws in
                try txn.set(Note(title: "a"), forKey: "a", in: notes)
                try txn.set(Note(title: "b"), forKey: "b", in: notes, metadata: NoteInfo(color: "x"))
                try txn.set(Note(title: "gone"), forKey: "gone", in: notes)
                _ = try txn.remove(key: "gone", in: notes)
                txn.customPayload = Array("hello".utf8)
            }
            try connection.readWrite { txn throws in
                _ = try txn.replace(Note(title: "a2"), forKey: "a", in: notes)
                _ = try txn.replaceMetadata(NoteInfo(color: "y"), forKey: "b", in: notes)
                _ = try txn.touchMetadata(forKey: "a", inCollection: "notes")
            }
            try connection.readWrite { txn throws in
                _ = try txn.remove(key: "a", in: notes)
                _ = try txn.removeAll(inCollection: "other")
            }
            try connection.readWrite { txn throws in
                _ = try txn.removeAll(inCollection: "notes")
                try txn.set(Note(title: "fresh"), forKey: "fresh", in: notes)
            }
            try connection.readWrite { txn throws in try txn.removeAllCollections() }
            let received = recorder.wait(for: 5)
            #expect(received.map(\.snapshot) == [1, 2, 3, 4, 5])
            guard received.count == 5 else { return }

            #expect(received[0].changedObjects == ["notes": ["a", "b"]])
            #expect(received[0].changedMetadata == ["notes": ["b"]])
            #expect(received[0].removedKeys == ["notes": ["gone"]])
            #expect(received[0].customPayload == Array("hello".utf8))

            #expect(received[1].changedObjects == ["notes": ["a"]])
            #expect(received[1].changedMetadata == ["notes": ["a", "b"]])
            #expect(received[1].removedKeys.isEmpty)
            #expect(received[1].customPayload == nil)

            #expect(received[2].removedKeys == ["notes": ["a"]])
            #expect(received[2].changedObjects.isEmpty)
            #expect(received[2].removedCollections.isEmpty)  // "other" never existed

            #expect(received[3].removedCollections == ["notes"])
            #expect(received[3].changedObjects == ["notes": ["fresh"]])
            #expect(received[3].objectMayHaveChanged(forKey: "b", in: "notes"))

            #expect(received[4].removedAll)
            #expect(received[4].objectMayHaveChanged(forKey: "anything", in: "anywhere"))
        }
    }

    /// The change log finds a commit's first collections by comparing names and builds an index past eight: a commit
    /// writing and removing keys of up to 20 collections, interleaved at random, is reported key by key as a model of
    /// it says (seeds printed on failure).
    @Test(arguments: [1, 2, 3, 8, 9, 20] as [Int])
    func notificationsOfCommitsOverManyCollections(collections: Int) throws {
        for seed in UInt64(1)...4 {
            var random = SeededRandom(seed: seed &* 1_000 &+ UInt64(collections))
            try withDatabase { database, _ in
                let recorder = NotificationRecorder()
                let token = database.addCommitObserver { recorder.record($0) }
                defer { database.removeObserver(token) }
                var changed: [String: Set<String>] = [:]
                var removed: [String: Set<String>] = [:]
                try database.newConnection().readWrite { txn in
                    for step in 0..<(collections * 12) {
                        let collection = TypedCollection<Note, NoteInfo>("c\(Int(random.next() % UInt64(collections)))")
                        let key = "k\(random.next() % 6)"
                        if random.next() % 4 == 0 {
                            if try txn.remove(key: key, in: collection) {
                                changed[collection.name]?.remove(key)
                                removed[collection.name, default: []].insert(key)
                            }
                        } else {
                            try txn.set(Note(title: "\(step)"), forKey: key, in: collection)
                            changed[collection.name, default: []].insert(key)
                            removed[collection.name]?.remove(key)
                        }
                    }
                }
                let notification = try #require(recorder.wait(for: 1).first)
                #expect(notification.changedObjects == changed.filter { !$0.value.isEmpty }, "seed \(random.seed)")
                #expect(notification.removedKeys == removed.filter { !$0.value.isEmpty }, "seed \(random.seed)")
            }
        }
    }

    @Test(.timeLimit(.minutes(1))) func asyncSequenceDeliversCommitsInOrder() async throws {
        try await withDatabase { database, _ in
            let stream = database.commits()
            let connection = database.newConnection()
            for i in 0..<5 {
                try await connection.readWrite { txn throws in try txn.set(Note(title: "\(i)"), forKey: "k\(i)", in: notes) }
            }
            var snapshots: [UInt64] = []
            for await notification in stream {
                snapshots.append(notification.snapshot)
                #expect(notification.changedObjects["notes"] == ["k\(snapshots.count - 1)"])
                if snapshots.count == 5 { break }
            }
            #expect(snapshots == [1, 2, 3, 4, 5])
        }
    }

    @Test func noNotificationForATransactionThatChangedNothing() throws {
        try withDatabase { database, _ in
            let recorder = NotificationRecorder()
            database.addCommitObserver { recorder.record($0) }
            let connection = database.newConnection()
            try connection.readWrite { _ in }
            try connection.readWrite { txn throws in try txn.set(Note(title: "x"), forKey: "x", in: notes) }
            let received = recorder.wait(for: 1)
            #expect(received.map(\.snapshot) == [1])
        }
    }
}
