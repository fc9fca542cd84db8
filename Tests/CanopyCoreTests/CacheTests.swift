@testable import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

@Suite("Connection caches")
struct CacheTests {
    @Test func cachesStayCorrectAcrossConnectionsAndCommits() throws {
        try withDatabase { database, _ in
            let reader = database.newConnection()
            let writer = database.newConnection()
            try writer.readWrite { txn throws in
                try txn.set(Note(title: "v1"), forKey: "k", in: notes, metadata: NoteInfo(color: "red"))
                try txn.set(Note(title: "other"), forKey: "o", in: notes)
            }
            try reader.read { txn throws in
                #expect(try txn.object(forKey: "k", in: notes)?.title == "v1")
                #expect(try txn.metadata(forKey: "k", in: notes)?.color == "red")
                #expect(try txn.object(forKey: "o", in: notes)?.title == "other")
            }
            #expect(reader.cachedCounts.objects == 2)
            try writer.readWrite { txn throws in try txn.set(Note(title: "v2"), forKey: "k", in: notes, metadata: NoteInfo(color: "blue")) }
            try reader.read { txn throws in
                #expect(try txn.object(forKey: "k", in: notes)?.title == "v2")
                #expect(try txn.metadata(forKey: "k", in: notes)?.color == "blue")
            }
            // Untouched entries survive the invalidation.
            #expect(reader.cachedCounts.objects == 2)
            try writer.readWrite { txn throws in _ = try txn.replaceMetadata(nil, forKey: "k", in: notes) }
            try reader.read { txn throws in #expect(try txn.metadata(forKey: "k", in: notes) == nil) }
            try writer.readWrite { txn throws in _ = try txn.remove(key: "k", in: notes) }
            try reader.read { txn throws in #expect(try txn.object(forKey: "k", in: notes) == nil) }
            try writer.readWrite { txn throws in _ = try txn.removeAll(inCollection: "notes") }
            try reader.read { txn throws in #expect(try txn.object(forKey: "o", in: notes) == nil) }
        }
    }

    @Test func cachesFollowCommitsTheyDidNotSeeInMemory() throws {
        // When the in-memory log misses commits (another process wrote), caches are rebuilt from the persisted log.
        try withDatabase { database, _ in
            let reader = database.newConnection()
            let writer = database.newConnection()
            try writer.readWrite { txn throws in try txn.set(Note(title: "v1"), forKey: "k", in: notes) }
            try reader.read { txn throws in _ = try txn.object(forKey: "k", in: notes) }
            try writer.readWrite { txn throws in try txn.set(Note(title: "v2"), forKey: "k", in: notes) }
            database.core.state.withLock { $0.recentCommits.removeAll() }
            try reader.read { txn throws in #expect(try txn.object(forKey: "k", in: notes)?.title == "v2") }
        }
    }

    @Test func cacheCanBeTurnedOff() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
            try connection.readWrite { txn throws in try txn.set(Note(title: "a"), forKey: "k", in: notes, metadata: NoteInfo(color: "x")) }
            try connection.read { txn throws in
                #expect(try txn.object(forKey: "k", in: notes)?.title == "a")
                #expect(try txn.metadata(forKey: "k", in: notes)?.color == "x")
            }
            #expect(connection.cachedCounts.objects == 0)
            #expect(connection.cachedCounts.metadata == 0)
        }
    }

    @Test func writesInATransactionAreSeenByItsOwnReads() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn throws in try txn.set(Note(title: "old"), forKey: "k", in: notes) }
            try connection.read { txn throws in _ = try txn.object(forKey: "k", in: notes) }
            try connection.readWrite { txn throws in
                try txn.set(Note(title: "new"), forKey: "k", in: notes)
                #expect(try txn.object(forKey: "k", in: notes)?.title == "new")
                _ = try txn.remove(key: "k", in: notes)
                #expect(try txn.object(forKey: "k", in: notes) == nil)
            }
        }
    }

    @Test(arguments: [1 as UInt64, 2, 3])
    func leastRecentlyUsedCacheKeepsItsInvariants(seed: UInt64) {
        // Two collections sharing one limit of 16, against a model that keeps recency per collection and evicts the
        // least recently used value of the collection being filled (or, when that one holds only the new value, of
        // the other).
        var random = SeededRandom(seed: seed)
        let caches = ObjectCaches(limit: 16)
        var model: [RowID: Int] = [:]
        var order: [String: [String]] = ["c0": [], "c1": []]  // most recent last, per collection
        for step in 0..<5_000 {
            let id = RowID(collection: "c\(Int.random(in: 0..<2, using: &random))", key: "\(Int.random(in: 0..<40, using: &random))")
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<5:
                caches.set(step, forKey: id.key, in: id.collection)
                let isNew = model[id] == nil
                model[id] = step
                order[id.collection]!.removeAll { $0 == id.key }
                order[id.collection]!.append(id.key)
                if isNew, model.count > 16 {
                    let other = id.collection == "c0" ? "c1" : "c0"
                    let victim = order[id.collection]!.count > 1 ? id.collection : other
                    model[RowID(collection: victim, key: order[victim]!.removeFirst())] = nil
                }
            case 5..<8:
                let cache = caches.cache(for: id.collection, type: ObjectIdentifier(Int.self))
                let value = cache?.slot(for: CacheKey(id.key)).map { cache!.value(at: $0, as: Int.self) }
                #expect(value == model[id], "seed \(seed) step \(step)")
                if value != nil {
                    order[id.collection]!.removeAll { $0 == id.key }
                    order[id.collection]!.append(id.key)
                }
            case 8:
                caches.remove(key: id.key, in: id.collection)
                model[id] = nil
                order[id.collection]!.removeAll { $0 == id.key }
            default:
                caches.removeAll(inCollection: id.collection)
                model = model.filter { $0.key.collection != id.collection }
                order[id.collection] = []
            }
            #expect(caches.checkInvariants(), "seed \(seed) step \(step)")
            #expect(caches.count == model.count, "seed \(seed) step \(step)")
        }
    }
}
