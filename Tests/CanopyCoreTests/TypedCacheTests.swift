@testable import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// Another collection with the same types as `notes`, to check that caches stay apart.
private let archive = TypedCollection<Note, NoteInfo>("archive")
/// `notes` read through another object type.
private struct TitleOnly: Codable, Sendable, Equatable {
    var title: String
}
private let notesByTitle = TypedCollection<TitleOnly, NoteInfo>("notes")

@Suite("Typed per-collection caches")
struct TypedCacheTests {
    @Test func aHitReturnsTheCachedValue() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn throws in try txn.set(Note(title: "stored"), forKey: "k", in: notes) }
            try connection.read { txn throws in #expect(try txn.object(forKey: "k", in: notes)?.title == "stored") }
            // A value put in the cache behind the store's back is what a read returns: reads are served by the cache.
            connection.state.objectCache.set(Note(title: "from the cache"), forKey: "k", in: "notes")
            try connection.read { txn throws in #expect(try txn.object(forKey: "k", in: notes)?.title == "from the cache") }
            // Another type for the same collection has a cache of its own: it decodes the stored bytes.
            try connection.read { txn throws in #expect(try txn.object(forKey: "k", in: notesByTitle)?.title == "stored") }
            // One key holds one cached value: caching it under the other type dropped the first.
            #expect(connection.state.objectCache.count(inCollection: "notes") == 1)
            #expect(connection.state.objectCache.cache(for: "notes", type: ObjectIdentifier(TitleOnly.self))?.count == 1)
            #expect(connection.state.objectCache.cache(for: "notes", type: ObjectIdentifier(Note.self))?.count == 0)
        }
    }

    @Test func writesReplaceOrDropCachedValues() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn throws in
                try txn.set(Note(title: "a"), forKey: "k", in: notes, metadata: NoteInfo(color: "red"))
            }
            try connection.read { txn throws in
                #expect(try txn.object(forKey: "k", in: notesByTitle)?.title == "a")
                #expect(try txn.metadata(forKey: "k", in: notes)?.color == "red")
            }
            try connection.readWrite { txn throws in
                try txn.set(Note(title: "b"), forKey: "k", in: notes)
                // The write cached the new value and dropped the value cached under another type.
                #expect(try txn.object(forKey: "k", in: notesByTitle)?.title == "b")
                #expect(try txn.metadata(forKey: "k", in: notes) == nil)
            }
            try connection.readWrite { txn throws in
                #expect(try txn.replace(Note(title: "c"), forKey: "k", in: notes))
                #expect(try txn.object(forKey: "k", in: notes)?.title == "c")
                #expect(try txn.remove(key: "k", in: notes))
                #expect(try txn.object(forKey: "k", in: notes) == nil)
            }
            #expect(connection.cachedCounts.objects == 0)
        }
    }

    @Test func collectionsAreCachedApart() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn throws in
                try txn.set(Note(title: "note"), forKey: "k", in: notes)
                try txn.set(Note(title: "archived"), forKey: "k", in: archive)
            }
            try connection.read { txn throws in
                #expect(try txn.object(forKey: "k", in: notes)?.title == "note")
                #expect(try txn.object(forKey: "k", in: archive)?.title == "archived")
                #expect(try txn.object(forKey: "k", in: notes)?.title == "note")
            }
            #expect(connection.state.objectCache.count(inCollection: "notes") == 1)
            #expect(connection.state.objectCache.count(inCollection: "archive") == 1)
            // Another connection's write to one collection drops only that collection's value.
            try database.newConnection().readWrite { txn throws in try txn.set(Note(title: "new"), forKey: "k", in: archive) }
            try connection.read { txn throws in
                #expect(connection.state.objectCache.count(inCollection: "notes") == 1)
                #expect(connection.state.objectCache.count(inCollection: "archive") == 0)
                #expect(try txn.object(forKey: "k", in: archive)?.title == "new")
                #expect(try txn.object(forKey: "k", in: notes)?.title == "note")
            }
            try connection.readWrite { txn throws in _ = try txn.removeAll(inCollection: "archive") }
            #expect(connection.state.objectCache.count(inCollection: "archive") == 0)
            #expect(connection.state.objectCache.count(inCollection: "notes") == 1)
        }
    }

    @Test func rollbackDropsWhatTheTransactionCached() throws {
        struct Abort: Error {}
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn throws in try txn.set(Note(title: "committed"), forKey: "k", in: notes) }
            #expect(throws: Abort.self) {
                try connection.readWrite { txn throws in
                    try txn.set(Note(title: "rolled back"), forKey: "k", in: notes)
                    #expect(try txn.object(forKey: "k", in: notes)?.title == "rolled back")
                    throw Abort()
                }
            }
            #expect(connection.cachedCounts.objects == 0)
            try connection.read { txn throws in #expect(try txn.object(forKey: "k", in: notes)?.title == "committed") }
        }
    }

    @Test func theLimitCoversEveryCollection() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection(options: .init(objectCacheLimit: 3, metadataCacheLimit: 3))
            try connection.readWrite { txn throws in
                for index in 0..<3 {
                    try txn.set(Note(title: "n\(index)"), forKey: "\(index)", in: notes)
                    try txn.set(Note(title: "a\(index)"), forKey: "\(index)", in: archive)
                }
            }
            #expect(connection.cachedCounts.objects == 3)
            #expect(connection.state.objectCache.checkInvariants())
            try connection.read { txn throws in
                for index in 0..<3 {
                    #expect(try txn.object(forKey: "\(index)", in: notes)?.title == "n\(index)")
                    #expect(try txn.object(forKey: "\(index)", in: archive)?.title == "a\(index)")
                }
            }
            #expect(connection.cachedCounts.objects == 3)
            #expect(connection.state.objectCache.checkInvariants())
        }
    }

    @Test func cacheKeysHashTheirBytes() {
        // Equal strings hash alike whatever their storage; strings differing in one byte (at any position, of any
        // length around the 8-byte words) hash apart.
        let native = "a key of some length"
        let built = String(decoding: Array(native.utf8), as: UTF8.self)
        #expect(CacheKey(native) == CacheKey(built))
        #expect(CacheKey(native).hash == CacheKey(built).hash)
        var hashes = Set<Int>()
        var count = 0
        for length in 0..<20 {
            let base = String(repeating: "x", count: length)
            hashes.insert(CacheKey(base).hash)
            count += 1
            for position in 0..<length {
                var bytes = Array(base.utf8)
                bytes[position] = UInt8(ascii: "y")
                hashes.insert(CacheKey(String(decoding: bytes, as: UTF8.self)).hash)
                count += 1
            }
        }
        #expect(hashes.count == count)
    }
}
