@testable import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import LMDB
import Testing

/// A flat struct that takes the binary codec's fast path (the scan's one-buffer decode).
private struct Task: Codable, Sendable, Equatable, BinaryCodecSynthesizedDecoding {
    var id: Int
    var title: String
    var note: String
    var priority: Int
    var created: Date
    var done: Bool
}

/// ``Task``'s keys in another order: bytes the fast path gives up on and the general path reads (by name).
private struct TaskReordered: Codable, Sendable {
    var done: Bool
    var created: Date
    var priority: Int
    var note: String
    var title: String
    var id: Int
}

/// Holds an encoder that an `encode(to:)` kept past its call (a misuse the store must survive without writing wrong
/// bytes).
private final class KeptEncoder: @unchecked Sendable {
    // @unchecked: used by one test on one thread.
    var encoder: (any Encoder)?
}

private enum Key: String, CodingKey { case value, extra }

/// Keeps its encoder after `encode(to:)` returns.
private struct Keeper: Codable, Sendable, Equatable {
    static let kept = KeptEncoder()
    var value: Int
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(value, forKey: .value)
        Self.kept.encoder = encoder
    }
}

/// Keeps a super encoder (which shares the encoding's buffer, not its root encoder) after `encode(to:)` returns.
private struct SuperKeeper: Codable, Sendable, Equatable {
    var value: Int
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(value, forKey: .value)
        Keeper.kept.encoder = container.superEncoder(forKey: .extra)
        var inner = Keeper.kept.encoder!.container(keyedBy: Key.self)
        try inner.encode(0, forKey: .value)
    }
}

/// Writes, in the middle of its own encoding, through the encoder ``Keeper`` (or ``SuperKeeper``) kept.
private struct Meddler: Codable, Sendable, Equatable {
    var value: Int
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(value, forKey: .value)
        if let kept = Keeper.kept.encoder {
            var meddling = kept.container(keyedBy: Key.self)
            try? meddling.encode(String(repeating: "x", count: 40), forKey: .extra)
            _ = kept.unkeyedContainer()  // a misuse its own encoding records and throws at its end
        }
    }
}

@Suite("Per-row paths: the scan's and the write's reused buffers keep every rule")
struct RowPathTests {
    private static let tasks = TypedCollection<Task, NoMetadata>("tasks")
    private static let reordered = TypedCollection<TaskReordered, NoMetadata>("tasks")

    private static func task(_ index: Int) -> Task {
        Task(id: index, title: "Task \(index)", note: String(repeating: "note \(index) ", count: 1 + index % 7),
             priority: index % 5, created: Date(timeIntervalSinceReferenceDate: Double(index) * 1.5), done: index % 2 == 0)
    }

    /// The scan decodes every row through one buffer: rows the fast path gives up on (keys in another order, as an
    /// older or other writer may have stored them), between rows it takes, come out whole and right.
    @Test func scanMixesFastAndGeneralRowsCorrectly() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
            var expected: [String: Task] = [:]
            try connection.readWrite { txn in
                for index in 0..<300 {
                    let key = String(format: "%04d", index)
                    let task = Self.task(index)
                    expected[key] = task
                    if index % 3 == 1 {
                        try txn.set(TaskReordered(done: task.done, created: task.created, priority: task.priority, note: task.note,
                                                  title: task.title, id: task.id), forKey: key, in: Self.reordered)
                    } else {
                        try txn.set(task, forKey: key, in: Self.tasks)
                    }
                }
            }
            for _ in 0..<2 {  // the first scan may lay out the type's plan; the second runs with it
                var scanned: [String: Task] = [:]
                try connection.read { txn in
                    try txn.enumerateObjects(in: Self.tasks) { key, task in
                        scanned[key] = task
                        return true
                    }
                }
                #expect(scanned == expected)
            }
        }
    }

    /// A row whose record is malformed (with a valid checksum: the record's own structure is wrong) fails a typed
    /// scan with `corruptStore` naming the row; it is not skipped.
    @Test func scanReportsAMalformedRecordInsteadOfSkippingIt() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn in
                for index in 0..<3 { try txn.set(Self.task(index), forKey: "k\(index)", in: Self.tasks) }
            }
            let collectionID = try #require(try connection.read { txn in try txn.collectionRecord("tasks")?.id })
            try database.environment.write { txn in
                let objects = try txn.openDatabase(named: "canopy.objects", checksummed: true)
                // Flags say attachments follow, with a length past the end of the record.
                try txn.put([StoredRecord.hasAttachments, 0x7F, 1, 2], forKey: RowKey.prefix(collectionID: collectionID) + Array("k1".utf8),
                            in: objects)
            }
            var visited: [String] = []
            let error = #expect(throws: CanopyError.self) {
                try database.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0)).read { txn in
                    try txn.enumerateObjects(in: Self.tasks) { key, _ in
                        visited.append(key)
                        return true
                    }
                }
            }
            #expect(error?.code == .corruptStore)
            #expect(error?.key == "k1")
            #expect(visited == ["k0"])
        }
    }

    /// A write without extensions over a row that carries another process's attachments (an extension not registered
    /// here) keeps them byte for byte, with the new object after them; a new row gets the flag byte and the object.
    @Test func writeWithoutExtensionsKeepsTheRowsAttachments() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn in try txn.set(Self.task(1), forKey: "k1", in: Self.tasks) }
            let collectionID = try #require(try connection.read { txn in try txn.collectionRecord("tasks")?.id })
            let rowKey = RowKey.prefix(collectionID: collectionID) + Array("k1".utf8)
            // One attachment at slot 3: varint(slot) varint(length) bytes.
            let region: [UInt8] = [3, 4, 9, 8, 7, 6]
            let objects = { (txn: LMDB.ReadTransaction) in try txn.openDatabase(named: "canopy.objects", checksummed: true) }
            try database.environment.write { txn in
                let object = try BinaryCodec().encode(Self.task(1))
                try object.withUnsafeBytes { object in
                    try txn.put(StoredRecord.value(hasMetadata: false, attachments: region, object: object), forKey: rowKey, in: try objects(txn))
                }
            }
            try connection.readWrite { txn in
                try txn.set(Self.task(2), forKey: "k1", in: Self.tasks)
                try txn.set(Self.task(3), forKey: "k0", in: Self.tasks)
            }
            let (updated, created) = try database.environment.read { txn in
                (try txn.value(forKey: rowKey, in: try objects(txn)),
                 try txn.value(forKey: RowKey.prefix(collectionID: collectionID) + Array("k0".utf8), in: try objects(txn)))
            }
            let object2 = try BinaryCodec().encode(Self.task(2))
            let object3 = try BinaryCodec().encode(Self.task(3))
            #expect(updated == object2.withUnsafeBytes { StoredRecord.value(hasMetadata: false, attachments: region, object: $0) })
            #expect(created == [0] + object3)
            let read = try database.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0)).read { txn in
                (try txn.object(forKey: "k1", in: Self.tasks), try txn.object(forKey: "k0", in: Self.tasks))
            }
            #expect(read.0 == Self.task(2))
            #expect(read.1 == Self.task(3))
        }
    }

    /// The write path keeps one encoding buffer for its rows: values of every size (one larger than the buffer kept)
    /// in one transaction are stored exactly as a fresh encoder writes them.
    @Test func reusedEncodingBufferWritesEachRowAsAFreshEncoder() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
            var random = SeededRandom(seed: 0x5EED)
            var values: [String: Task] = [:]
            try connection.readWrite { txn in
                for index in 0..<200 {
                    var task = Self.task(index)
                    let length = index == 100 ? BinaryEncodingState.reusableCapacity + 10 : Int.random(in: 0..<600, using: &random)
                    task.note = String(repeating: "é", count: length / 2)
                    values["\(index)"] = task
                    try txn.set(task, forKey: "\(index)", in: Self.tasks)
                }
            }
            try connection.read { txn in
                for (key, task) in values {
                    let stored = try #require(try txn.rawObject(forKey: key, inCollection: "tasks"))
                    #expect(stored.bytes == (try BinaryCodec().encode(task)), "seed 0x5EED key \(key)")
                    #expect(try txn.object(forKey: key, in: Self.tasks) == task, "seed 0x5EED key \(key)")
                }
            }
        }
    }

    /// An `encode(to:)` that keeps its encoder and writes through it later (during the next row's encoding) must not
    /// write into that row's bytes: a buffer still held elsewhere is not reused.
    @Test func anEncoderKeptPastItsCallDoesNotWriteIntoTheNextRow() throws {
        try withDatabase { database, _ in
            let keepers = TypedCollection<Keeper, NoMetadata>("keepers")
            let meddlers = TypedCollection<Meddler, NoMetadata>("meddlers")
            let connection = database.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
            try connection.readWrite { txn in
                try txn.set(Keeper(value: 1), forKey: "a", in: keepers)
                try txn.set(Meddler(value: 2), forKey: "b", in: meddlers)
            }
            Keeper.kept.encoder = nil
            try connection.read { txn in
                let stored = try #require(try txn.rawObject(forKey: "b", inCollection: "meddlers"))
                #expect(stored.bytes == (try BinaryCodec().encode(Meddler(value: 2))))
                #expect(try txn.object(forKey: "b", in: meddlers) == Meddler(value: 2))
            }
            // The same with a kept super encoder: the root encoder is free again, the buffer is not.
            let superKeepers = TypedCollection<SuperKeeper, NoMetadata>("super-keepers")
            try connection.readWrite { txn in
                try txn.set(SuperKeeper(value: 3), forKey: "c", in: superKeepers)
                try txn.set(Meddler(value: 4), forKey: "d", in: meddlers)
            }
            Keeper.kept.encoder = nil
            try connection.read { txn in
                let stored = try #require(try txn.rawObject(forKey: "d", inCollection: "meddlers"))
                #expect(stored.bytes == (try BinaryCodec().encode(Meddler(value: 4))))
            }
        }
    }
}
