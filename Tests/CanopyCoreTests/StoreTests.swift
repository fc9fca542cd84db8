import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

@Suite("Store: reading and writing rows")
struct StoreTests {
    @Test(arguments: ["binary", "json"])
    func objectAndMetadataRoundTrip(codecName: String) throws {
        try withDatabase { database, _ in
            let collection = codecName == "json" ? jsonNotes : notes
            let connection = database.newConnection()
            try connection.readWrite { txn throws in
                try txn.set(Note(title: "a", body: "first", priority: 2), forKey: "k1", in: collection, metadata: NoteInfo(color: "red"))
                try txn.set(Note(title: "b"), forKey: "k2", in: collection)
            }
            // A second connection (empty caches) reads from disk.
            let other = database.newConnection()
            try other.read { txn throws in
                #expect(try txn.object(forKey: "k1", in: collection) == Note(title: "a", body: "first", priority: 2))
                #expect(try txn.metadata(forKey: "k1", in: collection) == NoteInfo(color: "red"))
                #expect(try txn.metadata(forKey: "k2", in: collection) == nil)
                let row = try txn.row(forKey: "k1", in: collection)
                #expect(row?.object.title == "a")
                #expect(row?.metadata?.color == "red")
                #expect(try txn.object(forKey: "missing", in: collection) == nil)
                #expect(try txn.row(forKey: "missing", in: collection) == nil)
                #expect(try txn.exists(key: "k2", in: collection))
                #expect(try !txn.exists(key: "k3", in: collection))
                #expect(try txn.codecName(ofCollection: collection.name) == codecName)
            }
        }
    }

    @Test func settingWithoutMetadataRemovesMetadata() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn throws in
                try txn.set(Note(title: "a"), forKey: "k", in: notes, metadata: NoteInfo(color: "blue"))
            }
            try connection.readWrite { txn throws in try txn.set(Note(title: "a2"), forKey: "k", in: notes) }
            try database.newConnection().read { txn throws in
                #expect(try txn.metadata(forKey: "k", in: notes) == nil)
                #expect(try txn.object(forKey: "k", in: notes)?.title == "a2")
            }
        }
    }

    @Test func replaceObjectKeepsMetadataAndReplaceMetadataKeepsObject() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn throws in
                try txn.set(Note(title: "a"), forKey: "k", in: notes, metadata: NoteInfo(color: "blue"))
                #expect(try txn.replace(Note(title: "b"), forKey: "k", in: notes))
                #expect(try !txn.replace(Note(title: "x"), forKey: "absent", in: notes))
            }
            try database.newConnection().read { txn throws in
                #expect(try txn.object(forKey: "k", in: notes)?.title == "b")
                #expect(try txn.metadata(forKey: "k", in: notes)?.color == "blue")
                #expect(try !txn.exists(key: "absent", in: notes))
            }
            try connection.readWrite { txn throws in
                #expect(try txn.replaceMetadata(NoteInfo(color: "green"), forKey: "k", in: notes))
                #expect(try !txn.replaceMetadata(NoteInfo(color: "green"), forKey: "absent", in: notes))
            }
            try database.newConnection().read { txn throws in
                #expect(try txn.object(forKey: "k", in: notes)?.title == "b")
                #expect(try txn.metadata(forKey: "k", in: notes)?.color == "green")
            }
            try connection.readWrite { txn throws in #expect(try txn.replaceMetadata(nil, forKey: "k", in: notes)) }
            try database.newConnection().read { txn throws in
                #expect(try txn.metadata(forKey: "k", in: notes) == nil)
                #expect(try txn.object(forKey: "k", in: notes)?.title == "b")
            }
            // Setting metadata again after removing it works (the has-metadata flag is rewritten).
            try connection.readWrite { txn throws in #expect(try txn.replaceMetadata(NoteInfo(color: "pink"), forKey: "k", in: notes)) }
            try database.newConnection().read { txn throws in #expect(try txn.metadata(forKey: "k", in: notes)?.color == "pink") }
        }
    }

    @Test func removeOneManyCollectionAndAll() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            let other = TypedCollection<Note, NoteInfo>("other")
            try connection.readWrite { txn throws in
                for i in 0..<10 { try txn.set(Note(title: "\(i)"), forKey: "k\(i)", in: notes, metadata: NoteInfo(color: "c\(i)")) }
                for i in 0..<3 { try txn.set(Note(title: "o\(i)"), forKey: "o\(i)", in: other) }
            }
            try connection.readWrite { txn throws in
                #expect(try txn.remove(key: "k0", in: notes))
                #expect(try !txn.remove(key: "k0", in: notes))
                #expect(try txn.remove(keys: ["k1", "k2", "nope"], inCollection: "notes") == 2)
            }
            try database.newConnection().read { txn throws in
                #expect(try txn.count(inCollection: "notes") == 7)
                #expect(try txn.metadata(forKey: "k1", in: notes) == nil)
                #expect(try txn.keys(inCollection: "notes").first == "k3")
            }
            try connection.readWrite { txn throws in #expect(try txn.removeAll(inCollection: "notes") == 7) }
            try database.newConnection().read { txn throws in
                #expect(try txn.count(inCollection: "notes") == 0)
                #expect(try txn.count(inCollection: "other") == 3)
                #expect(try txn.collectionNames() == ["other"])
                var metadataCount = 0
                try txn.enumerateMetadata(in: notes) { _, _ in metadataCount += 1; return true }
                #expect(metadataCount == 0)
            }
            try connection.readWrite { txn throws in try txn.removeAllCollections() }
            try database.newConnection().read { txn throws in
                #expect(try txn.count() == 0)
                #expect(try txn.collectionNames().isEmpty)
            }
            // Collections remain usable (and keep their codec) after everything was removed.
            try connection.readWrite { txn throws in try txn.set(Note(title: "again"), forKey: "k", in: notes) }
            try connection.read { txn throws in #expect(try txn.object(forKey: "k", in: notes)?.title == "again") }
        }
    }

    @Test func keysArePagedInOrderWithPrefixAndAfter() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            let keys = (0..<50).map { String(format: "item-%03d", $0) } + ["other-1", "other-2", "zeta", "é-accent"]
            try connection.readWrite { txn throws in
                for key in keys.shuffled() { try txn.set(Note(title: key), forKey: key, in: notes) }
            }
            try connection.read { txn throws in
                let all = try txn.keys(inCollection: "notes")
                #expect(all == keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
                #expect(try txn.keys(inCollection: "notes", prefix: "other-") == ["other-1", "other-2"])
                var page: [String] = []
                var after: String? = nil
                var pages = 0
                repeat {
                    let next = try txn.keys(inCollection: "notes", prefix: "item-", after: after, limit: 7)
                    page += next
                    after = next.last
                    pages += 1
                    if next.count < 7 { break }
                } while true
                #expect(page == (0..<50).map { String(format: "item-%03d", $0) })
                #expect(pages == 8)
                #expect(try txn.keys(inCollection: "notes", prefix: "item-", limit: 2, reverse: true) == ["item-049", "item-048"])
                #expect(try txn.keys(inCollection: "notes", prefix: "item-", after: "item-002", limit: 2, reverse: true) == ["item-001", "item-000"])
                #expect(try txn.keys(inCollection: "absent").isEmpty)

                var titles: [String] = []
                try txn.enumerateObjects(in: notes, prefix: "other-") { _, note in titles.append(note.title); return true }
                #expect(titles == ["other-1", "other-2"])
                var filtered = 0
                try txn.enumerateObjects(in: notes, where: { $0.hasSuffix("7") }) { _, _ in filtered += 1; return true }
                #expect(filtered == 5)
                var stoppedAfter = 0
                try txn.enumerateKeys(inCollection: "notes") { _ in stoppedAfter += 1; return stoppedAfter < 3 }
                #expect(stoppedAfter == 3)
            }
        }
    }

    @Test func snapshotAdvancesOnlyWhenSomethingChanges() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            #expect(try database.currentSnapshot() == 0)
            try connection.readWrite { txn throws in try txn.set(Note(title: "a"), forKey: "k", in: notes) }
            #expect(try database.currentSnapshot() == 1)
            try connection.readWrite { _ in }
            #expect(try database.currentSnapshot() == 1)
            try connection.readWrite { txn throws in _ = try txn.remove(key: "absent", in: notes) }
            #expect(try database.currentSnapshot() == 1)
            try connection.readWrite { txn throws in _ = try txn.touchObject(forKey: "k", inCollection: "notes") }
            #expect(try database.currentSnapshot() == 2)
            try connection.read { txn throws in #expect(txn.snapshot == 2) }
        }
    }

    @Test func throwingRollsBackEverything() throws {
        struct Oops: Error {}
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn throws in try txn.set(Note(title: "kept"), forKey: "k", in: notes) }
            #expect(throws: Oops.self) {
                try connection.readWrite { txn throws in
                    try txn.set(Note(title: "lost"), forKey: "k", in: notes)
                    try txn.set(Note(title: "lost"), forKey: "new", in: notes)
                    _ = try txn.removeAll(inCollection: "notes")
                    throw Oops()
                }
            }
            // The same connection (whose cache saw the writes) and a fresh one both see the committed state.
            for reader in [connection, database.newConnection()] {
                try reader.read { txn throws in
                    #expect(try txn.object(forKey: "k", in: notes)?.title == "kept")
                    #expect(try txn.object(forKey: "new", in: notes) == nil)
                }
            }
            #expect(try database.currentSnapshot() == 1)
        }
    }

    @Test func reopeningKeepsDataAndSnapshot() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        do {
            let database = try Database(path: path)
            try database.newConnection().readWrite { txn throws in
                try txn.set(Note(title: "persisted"), forKey: "k", in: notes, metadata: NoteInfo(color: "red"))
            }
        }
        let reopened = try Database(path: path)
        try reopened.newConnection().read { txn throws in
            #expect(try txn.object(forKey: "k", in: notes)?.title == "persisted")
            #expect(try txn.metadata(forKey: "k", in: notes)?.color == "red")
            #expect(txn.snapshot == 1)
        }
    }

    @Test func oneEnvironmentPerPathPerProcess() throws {
        try withDatabase { database, directory in
            let again = try Database(path: directory.appending("db"), options: .init(durability: .none))
            try database.newConnection().readWrite { txn throws in try txn.set(Note(title: "shared"), forKey: "k", in: notes) }
            try again.newConnection().read { txn throws in #expect(try txn.object(forKey: "k", in: notes)?.title == "shared") }
            #expect(again.environment === database.environment)
            let error = #expect(throws: CanopyError.self) {
                _ = try Database(path: directory.appending("db"), options: .init(durability: .full))
            }
            #expect(error?.code == .alreadyOpen)
        }
    }

    @Test func customPayloadAndEmptyKeyAndUnicode() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn throws in
                try txn.set(Note(title: "empty key"), forKey: "", in: notes)
                try txn.set(Note(title: "ünïcødé 🌳"), forKey: "ключ", in: notes)
            }
            try database.newConnection().read { txn throws in
                #expect(try txn.object(forKey: "", in: notes)?.title == "empty key")
                #expect(try txn.object(forKey: "ключ", in: notes)?.title == "ünïcødé 🌳")
                #expect(try txn.keys(inCollection: "notes") == ["", "ключ"])
            }
        }
    }

    @Test(.timeLimit(.minutes(1))) func asyncReadAndWrite() async throws {
        try await withDatabase { database, _ in
            let connection = database.newConnection()
            let snapshot = try await connection.readWrite { txn throws in
                try txn.set(Note(title: "async"), forKey: "k", in: notes)
                return txn.snapshot
            }
            #expect(snapshot == 0)
            let title = try await database.newConnection().read { txn throws in try txn.object(forKey: "k", in: notes)?.title }
            #expect(title == "async")
            // Many concurrent writers through separate connections: all commits land, snapshots are distinct.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<16 {
                    group.addTask {
                        try await database.newConnection().readWrite { txn throws in try txn.set(Note(title: "\(i)"), forKey: "c\(i)", in: notes) }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try database.currentSnapshot() == 17)
            let count = try await connection.read { txn throws in try txn.count(inCollection: "notes") }
            #expect(count == 17)
        }
    }
}
