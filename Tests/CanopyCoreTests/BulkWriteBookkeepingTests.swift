@testable import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

private let archive = TypedCollection<Note, NoteInfo>("archive")
private let endMarker = TypedCollection<Note, NoteInfo>("end-marker")

/// What a write transaction keeps per row besides the row — the change log behind its commit notification, and the
/// connection's object cache — takes shortcuts in a big transaction (created rows' keys listed without a hash, the key
/// sets built only when asked for, written objects no longer cached past the cache's size). These tests hold those
/// shortcuts to what the plain paths give.
@Suite("Bulk writes: the change log and the object cache keep their meaning")
struct BulkWriteBookkeepingTests {
    /// A model of what a commit must report, kept beside random mutations: per collection, the keys whose object or
    /// metadata changed and the keys removed, as ``CommitNotification`` documents them.
    private struct Expected {
        var objects: [String: Set<String>] = [:]
        var metadata: [String: Set<String>] = [:]
        var removed: [String: Set<String>] = [:]
        var removedCollections: Set<String> = []
        var removedAll = false

        mutating func changed(_ key: String, _ collection: String, object: Bool, metadata changedMetadata: Bool) {
            if object { objects[collection, default: []].insert(key) }
            if changedMetadata { metadata[collection, default: []].insert(key) }
            removed[collection]?.remove(key)
        }

        mutating func removedRow(_ key: String, _ collection: String) {
            objects[collection]?.remove(key)
            metadata[collection]?.remove(key)
            removed[collection, default: []].insert(key)
        }

        mutating func removedAll(_ collection: String) {
            objects[collection] = nil
            metadata[collection] = nil
            removed[collection] = nil
            removedCollections.insert(collection)
        }

        mutating func removedEverything() {
            self = Expected()
            removedAll = true
        }

        func trimmed(_ map: [String: Set<String>]) -> [String: Set<String>] { map.filter { !$0.value.isEmpty } }
    }

    /// A row of the model: its object's title and its metadata's colour.
    private struct Row: Equatable {
        var title: String
        var color: String?
    }

    @Test("A transaction's notification lists exactly the rows it created, changed and removed, in memory and as persisted (seeded)",
          arguments: [1, 2, 3, 42, 262, 1_919] as [UInt64])
    func notificationsMatchTheModel(seed: UInt64) throws {
        // (Ten collections: more than the change log finds by comparing names, so its index of collections is used.)
        try checkNotificationAgainstModel(seed: seed, steps: 400, keys: 40, collectionCount: 10)
    }

    /// A commit of a few changes starts with the change log's one-key form (the first changed row of a collection kept
    /// without a hashed set) and leaves it at the next change: the same key again, a created row, another key, a
    /// removal, a metadata-only change, a collection emptied, every collection emptied. Short transactions over few
    /// keys go through each of those transitions.
    @Test("A short transaction's notification (the one-key form and its way out) lists exactly what it changed (seeded)",
          arguments: Array(UInt64(1)...200))
    func shortTransactionsMatchTheModel(seed: UInt64) throws {
        // (Four keys, all existing at first, or 18, of which three are created.)
        try checkNotificationAgainstModel(seed: seed, steps: 1 + Int(seed % 5), keys: seed % 2 == 0 ? 4 : 18, collectionCount: 2)
    }

    /// Writes 15 rows in each of `collectionCount` collections; runs a transaction of `steps` random mutations over
    /// keys `k0..<k<keys>` that throws (rolled back: no notification, no row, no cached value left); then one of `steps`
    /// others that commits, and checks its notification, delivered and persisted, against a model of it, and the rows
    /// read in it (through the connection's cache) and after it.
    private func checkNotificationAgainstModel(seed: UInt64, steps: Int, keys: Int, collectionCount: Int) throws {
        try withDatabase { database, _ in
            var random = SeededRandom(seed: seed)
            let recorder = NotificationRecorder()
            let token = database.addCommitObserver { recorder.record($0) }
            defer { database.removeObserver(token) }
            let connection = database.newConnection(options: .init(objectCacheLimit: 8, metadataCacheLimit: 8))
            let collections = [notes, archive] + (2..<max(2, collectionCount)).map { TypedCollection<Note, NoteInfo>("c\($0)") }
            // Rows that exist, by collection and key.
            var rows: [String: [String: Row]] = [:]
            try connection.readWrite { txn throws in
                for collection in collections {
                    for index in 0..<15 {
                        let color: String? = index % 3 == 0 ? "c" : nil
                        try txn.set(Note(title: "first \(index)"), forKey: "k\(index)", in: collection, metadata: color.map { NoteInfo(color: $0) })
                        rows[collection.name, default: [:]]["k\(index)"] = Row(title: "first \(index)", color: color)
                    }
                }
            }
            struct RolledBack: Error {}
            var scratchRows = rows
            var scratch = Expected()
            #expect(throws: RolledBack.self, "seed \(seed): the rolled-back transaction") {
                try connection.readWrite { txn throws in
                    for step in 0..<steps {
                        try Self.mutate(txn, step: step, collections: collections, keys: keys, seed: seed, random: &random, rows: &scratchRows, expected: &scratch)
                    }
                    throw RolledBack()
                }
            }
            var expected = Expected()
            try connection.readWrite { txn throws in
                for step in 0..<steps {
                    try Self.mutate(txn, step: step, collections: collections, keys: keys, seed: seed, random: &random, rows: &rows, expected: &expected)
                }
            }
            // A last commit in another collection: a transaction that changed nothing (a replace or removal of a
            // missing row) delivers no notification, so the one after the first is either the transaction's or this.
            try connection.readWrite { txn in try txn.set(Note(title: "end"), forKey: "end", in: endMarker) }
            var received = recorder.wait(for: 2)
            let isEndMarker = { (notification: CommitNotification) in notification.changedObjects[endMarker.name] != nil }
            if received.count == 2, !isEndMarker(received[1]) { received = recorder.wait(for: 3) }
            guard received.count >= 2 else {
                Issue.record("seed \(seed): \(received.count) notifications")
                return
            }
            let notification = isEndMarker(received[1]) ? CommitNotification(snapshot: received[1].snapshot - 1) : received[1]
            let persisted = try CommitLogEntry.encode(notification, state: StoreState()).withUnsafeBytes { try CommitNotification(decoding: $0) }
            for (label, found) in [("delivered", notification), ("persisted", persisted)] {
                #expect(found.changedObjects == expected.trimmed(expected.objects), "seed \(seed), \(label): changed objects")
                #expect(found.changedMetadata == expected.trimmed(expected.metadata), "seed \(seed), \(label): changed metadata")
                #expect(found.removedKeys == expected.trimmed(expected.removed), "seed \(seed), \(label): removed keys")
                #expect(found.removedCollections == expected.removedCollections, "seed \(seed), \(label): removed collections")
                #expect(found.removedAll == expected.removedAll, "seed \(seed), \(label): removed all")
            }
            #expect(persisted == notification, "seed \(seed): the persisted notification differs from the delivered one")
            // The walk other connections' caches use gives the same keys as the sets.
            for kind in CommitKeySets.Kind.allCases {
                var walked: [String: Set<String>] = [:]
                notification.keySets.forEachKey(in: kind) { walked[$0, default: []].insert($1) }
                #expect(walked == notification.keySets.maps[kind], "seed \(seed): the key walk of \(kind) differs from the sets")
            }
            // The committed rows are what the model says, read through the writer's cache and by a new connection.
            for reader in [connection, database.newConnection()] {
                try reader.read { txn throws in
                    for collection in collections {
                        for index in 0..<max(keys, 15) {
                            let key = "k\(index)"
                            let found = try txn.object(forKey: key, in: collection).map { Row(title: $0.title, color: try txn.metadata(forKey: key, in: collection)?.color) }
                            #expect(found == rows[collection.name]?[key], "seed \(seed): \(collection.name)/\(key)")
                        }
                    }
                }
            }
        }
    }

    /// One random mutation (or a read of the transaction's own writes) of a row of `collections`, applied to the model.
    private static func mutate(
        _ txn: ReadWriteTransaction, step: Int, collections: [TypedCollection<Note, NoteInfo>], keys: Int, seed: UInt64,
        random: inout SeededRandom, rows: inout [String: [String: Row]], expected: inout Expected
    ) throws {
        let collection = collections[Int.random(in: 0..<collections.count, using: &random)]
        let name = collection.name
        let key = "k\(Int.random(in: 0..<keys, using: &random))"
        let row = rows[name]?[key]
        let exists = row != nil
        switch Int.random(in: 0..<100, using: &random) {
        case 0..<36:
            try txn.set(Note(title: "s\(step)"), forKey: key, in: collection)
            expected.changed(key, name, object: true, metadata: row?.color != nil)
            rows[name, default: [:]][key] = Row(title: "s\(step)", color: nil)
        case 36..<50:
            try txn.set(Note(title: "m\(step)"), forKey: key, in: collection, metadata: NoteInfo(color: "\(step)"))
            expected.changed(key, name, object: true, metadata: true)
            rows[name, default: [:]][key] = Row(title: "m\(step)", color: "\(step)")
        case 50..<56:
            #expect(try txn.replace(Note(title: "r\(step)"), forKey: key, in: collection) == exists, "seed \(seed)")
            if exists {
                expected.changed(key, name, object: true, metadata: false)
                rows[name]?[key]?.title = "r\(step)"
            }
        case 56..<63:
            let color: String? = step % 2 == 0 ? "r\(step)" : nil
            #expect(try txn.replaceMetadata(color.map { NoteInfo(color: $0) }, forKey: key, in: collection) == exists, "seed \(seed)")
            if exists {
                expected.changed(key, name, object: false, metadata: true)
                rows[name]?[key]?.color = color
            }
        case 63..<67:
            #expect(try txn.touchRow(forKey: key, inCollection: name) == exists, "seed \(seed)")
            if exists { expected.changed(key, name, object: true, metadata: true) }
        case 67..<75:
            // The transaction reads its own writes (through the connection's cache).
            let found = try txn.object(forKey: key, in: collection).map { Row(title: $0.title, color: try txn.metadata(forKey: key, in: collection)?.color) }
            #expect(found == row, "seed \(seed), step \(step): \(name)/\(key) read in the transaction")
        case 75..<98:
            #expect(try txn.remove(key: key, in: collection) == exists, "seed \(seed)")
            if exists { expected.removedRow(key, name) }
            rows[name]?[key] = nil
        case 98:
            _ = try txn.removeAll(inCollection: name)
            expected.removedAll(name)
            rows[name] = [:]
        default:
            try txn.removeAllCollections()
            expected.removedEverything()
            rows = [:]
        }
    }

    @Test("A change of neither the object nor the metadata leaves the change log empty")
    func changeOfNothingLogsNothing() {
        var log = ChangeLog()
        log.changed("a", in: "items", object: false, metadata: false)
        #expect(log.isEmpty)
        log.changed("a", in: "items", object: true, metadata: false)
        #expect(!log.isEmpty)
    }

    @Test("A bulk insert's notification lists every created key once, without a hashed set, and encodes them all")
    func bulkInsertListsEveryKey() throws {
        try withDatabase { database, _ in
            let recorder = NotificationRecorder()
            let token = database.addCommitObserver { recorder.record($0) }
            defer { database.removeObserver(token) }
            let connection = database.newConnection()
            try connection.readWrite { txn throws in
                for index in 0..<5_000 { try txn.set(Note(title: "\(index)"), forKey: "key-\(index)", in: notes) }
                // Created, then changed again: still listed once.
                _ = try txn.replace(Note(title: "again"), forKey: "key-7", in: notes)
            }
            guard let notification = recorder.wait(for: 1).first else {
                Issue.record("no notification")
                return
            }
            let parts = notification.keySets.parts(.changedObjects)
            #expect(parts.map(\.collection) == ["notes"])
            #expect(parts.first?.count == 5_000)
            #expect(notification.changedObjects["notes"]?.count == 5_000)
            let decoded = try CommitLogEntry.encode(notification, state: StoreState()).withUnsafeBytes { try CommitNotification(decoding: $0) }
            #expect(decoded.changedObjects == notification.changedObjects)
            #expect(decoded.changedMetadata.isEmpty && decoded.removedKeys.isEmpty)
        }
    }

    @Test("Past the object cache's size, a write removes its key's cached value: nothing read in or after the transaction is stale")
    func writesPastTheCacheLimitLeaveNothingStale() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection(options: .init(objectCacheLimit: 3, metadataCacheLimit: 3))
            try connection.readWrite { txn throws in
                for index in 0..<6 { try txn.set(Note(title: "v1"), forKey: "k\(index)", in: notes) }
                // k0...k2 were cached as written; k3...k5 were not. A read caches k4 now.
                #expect(try txn.object(forKey: "k4", in: notes)?.title == "v1")
                #expect(connection.state.objectCache.count(inCollection: "notes") == 3)
                // Written again past the limit: the cached values of k1 and k4 must go (not stay "v1").
                try txn.set(Note(title: "v2"), forKey: "k1", in: notes)
                try txn.set(Note(title: "v2"), forKey: "k4", in: notes)
                #expect(try txn.object(forKey: "k1", in: notes)?.title == "v2")
                #expect(try txn.object(forKey: "k4", in: notes)?.title == "v2")
                _ = try txn.replace(Note(title: "v3"), forKey: "k0", in: notes)
                #expect(try txn.object(forKey: "k0", in: notes)?.title == "v3")
                #expect(connection.state.objectCache.checkInvariants())
            }
            try connection.read { txn throws in
                let titles = try (0..<6).map { try txn.object(forKey: "k\($0)", in: notes)?.title }
                #expect(titles == ["v3", "v2", "v1", "v1", "v2", "v1"])
            }
            #expect(connection.state.objectCache.checkInvariants())
            #expect(connection.cachedCounts.objects <= 3)
        }
    }

    @Test("Past the object cache's size, a row written as new after its cached value was removed (here, or by another connection) reads as written")
    func newRowsPastTheCacheLimitReadAsWritten() throws {
        // A write of a row that did not exist skips the cache's lookup past its size: this holds the rule it relies on
        // (a removal drops the key's cached value, in this transaction or caught up from another connection's commit).
        try withDatabase { database, _ in
            let connection = database.newConnection(options: .init(objectCacheLimit: 3, metadataCacheLimit: 3))
            try connection.readWrite { txn throws in
                for index in 0..<2 { try txn.set(Note(title: "v1"), forKey: "k\(index)", in: notes) }
            }
            #expect(connection.state.objectCache.count(inCollection: "notes") == 2)
            try database.newConnection().readWrite { txn throws in _ = try txn.remove(key: "k1", in: notes) }
            try connection.readWrite { txn throws in
                _ = try txn.remove(key: "k0", in: notes)
                // Three rows of another collection fill what the transaction caches (without evicting the notes'
                // cached values); k0 and k1 come after: new rows past the limit.
                for index in 0..<3 { try txn.set(Note(title: "fill"), forKey: "a\(index)", in: archive) }
                try txn.set(Note(title: "v2"), forKey: "k0", in: notes)
                try txn.set(Note(title: "v2"), forKey: "k1", in: notes)
                #expect(try txn.object(forKey: "k0", in: notes)?.title == "v2")
                #expect(try txn.object(forKey: "k1", in: notes)?.title == "v2")
            }
            try connection.read { txn throws in
                #expect(try txn.object(forKey: "k0", in: notes)?.title == "v2")
                #expect(try txn.object(forKey: "k1", in: notes)?.title == "v2")
            }
            #expect(connection.state.objectCache.checkInvariants())
        }
    }

    @Test("Another connection's cached values of rows a bulk commit changed or removed are dropped when it reads next")
    func otherConnectionsCatchUpAfterABulkCommit() throws {
        try withDatabase { database, _ in
            let writer = database.newConnection(options: .init(objectCacheLimit: 10, metadataCacheLimit: 10))
            let reader = database.newConnection(options: .init(objectCacheLimit: 1_000, metadataCacheLimit: 1_000))
            try writer.readWrite { txn throws in
                for index in 0..<50 { try txn.set(Note(title: "old"), forKey: "k\(index)", in: notes, metadata: NoteInfo(color: "old")) }
            }
            try reader.read { txn throws in
                for index in 0..<50 {
                    #expect(try txn.object(forKey: "k\(index)", in: notes)?.title == "old")
                    #expect(try txn.metadata(forKey: "k\(index)", in: notes)?.color == "old")
                }
            }
            try writer.readWrite { txn throws in
                for index in 0..<10 { _ = try txn.remove(key: "k\(index)", in: notes) }
                for index in 0..<300 { try txn.set(Note(title: "new"), forKey: "n\(index)", in: notes) }
                for index in 10..<50 { try txn.set(Note(title: "new"), forKey: "k\(index)", in: notes, metadata: NoteInfo(color: "new")) }
            }
            try reader.read { txn throws in
                for index in 0..<10 {
                    #expect(try txn.object(forKey: "k\(index)", in: notes) == nil)
                    #expect(try txn.metadata(forKey: "k\(index)", in: notes) == nil)
                }
                for index in 10..<50 {
                    #expect(try txn.object(forKey: "k\(index)", in: notes)?.title == "new")
                    #expect(try txn.metadata(forKey: "k\(index)", in: notes)?.color == "new")
                }
            }
        }
    }
}

/// A row's attachments are rewritten in one pass over its record (population and catch-up set one slot of every
/// row): the result must be what the dictionary of attachments gave — live slots kept, retired ones dropped, the slot
/// set or cleared, ascending — for any region, including one whose slots are out of order.
@Suite("Attachments rewritten in one pass")
struct AttachmentRewriteTests {
    @Test("One pass gives the dictionary's record (seeded regions, live sets, set and cleared slots)", arguments: [5, 6, 7, 8] as [UInt64])
    func onePassMatchesTheDictionary(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let key = StoredRowKey(collectionID: 1, key: "k")
        for round in 0..<300 {
            var attachments: [UInt32: [UInt8]] = [:]
            for _ in 0..<Int.random(in: 0..<5, using: &random) {
                attachments[UInt32.random(in: 0..<8, using: &random)] = (0..<Int.random(in: 1..<6, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            }
            let live = Set((0..<8).filter { _ in Bool.random(using: &random) }.map(UInt32.init))
            let slot = UInt32.random(in: 0..<8, using: &random)
            let bytes: [UInt8]? = Bool.random(using: &random) ? [UInt8(round % 256), 7] : nil
            let object: [UInt8] = [9, 8, 7]
            let hasMetadata = Bool.random(using: &random)
            // In order, as every writer writes them; or out of order (a region built by hand).
            var region = StoredRecord.encode(attachments)
            let shuffled = round % 5 == 0 && attachments.count > 1
            if shuffled {
                var out = ByteWriter()
                for slot in attachments.keys.sorted(by: >) { StoredRecord.appendAttachment(attachments[slot] ?? [], slot: slot, to: &out) }
                region = out.bytes
            }
            let value = object.withUnsafeBytes { StoredRecord.value(hasMetadata: hasMetadata, attachments: region, object: $0) }
            var expected = attachments.filter { live.contains($0.key) }
            expected[slot] = bytes
            let want = object.withUnsafeBytes { StoredRecord.value(hasMetadata: hasMetadata, attachments: StoredRecord.encode(expected), object: $0) }
            let got = try value.withUnsafeBytes { try ReadWriteTransaction.record($0, setting: bytes, at: slot, live: live, key: key) }
            #expect(got == want, "seed \(seed), round \(round): slot \(slot), live \(live.sorted()), shuffled \(shuffled)")
        }
    }
}
