@testable import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import LMDB
import Testing

/// A flat struct that takes the binary codec's fast path, with a short (inline) and a long string.
private struct Sample: Codable, Sendable, Equatable, BinaryCodecSynthesizedDecoding {
    var id: Int
    var tag: String
    var text: String
}

/// The typed scan reads entries ahead of its position (``Cursor/ReadAhead``): one call into LMDB for many rows. What a
/// scan visits and where it fails must stay what stepping row by row gives.
@Suite("A scan that reads ahead")
struct ScanReadAheadTests {
    private static let samples = TypedCollection<Sample, NoMetadata>("samples")

    private static func key(_ index: Int) -> String { String(format: "sample-%06d", index) }

    private static func fill(_ connection: Connection, count: Int) throws {
        try connection.readWrite { txn in
            for index in 0..<count {
                try txn.set(Sample(id: index, tag: "t\(index % 97)", text: "a longer text for row \(index)"), forKey: key(index), in: samples)
            }
        }
    }

    /// Flips one byte of row `index`'s stored object behind the store's back (its checksum trailer left as it was).
    private static func damage(_ database: CanopyCore.Database, _ connection: Connection, row index: Int) throws {
        let collectionID = try #require(try connection.read { txn in try txn.collectionRecord(samples.name)?.id })
        try database.environment.write { txn in
            let raw = try txn.openDatabase(named: "canopy.objects")
            let rowKey = RowKey.prefix(collectionID: collectionID) + Array(key(index).utf8)
            var stored = try #require(try txn.value(forKey: rowKey, in: raw))
            stored[stored.count / 2] ^= 0x01
            try txn.put(stored, forKey: rowKey, in: raw)
        }
    }

    /// A row that fails its checksum is met where a row-by-row scan meets it: after every row before it has been
    /// visited, and not at all by a scan that stops earlier, whichever batch it falls in (the read-ahead finds it
    /// first and keeps its error until the scan gets there). Keyed, values-only and filtered scans alike.
    @Test(arguments: [0, 1, 4, 5, 12, 13, 150, 299])
    func damagedRowIsMetInItsPlace(damagedRow: Int) throws {
        try withDatabase { database, _ in
            let connection = database.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
            try Self.fill(connection, count: 300)
            try Self.damage(database, connection, row: damagedRow)
            for form in ["values", "keyed", "filtered"] {
                var visited: [Int] = []
                let error = #expect(throws: CanopyError.self, "form \(form), damaged row \(damagedRow)") {
                    try connection.read { txn in try Self.scan(txn, form: form) { visited.append($0.id); return true } }
                }
                #expect(error?.code == .corruptStore, "form \(form), damaged row \(damagedRow)")
                #expect(error?.key == Self.key(damagedRow), "form \(form), damaged row \(damagedRow)")
                #expect(visited == Array(0..<damagedRow), "form \(form), damaged row \(damagedRow)")
                // Stopping at the row before the damaged one: no error, every row before it visited.
                if damagedRow > 0 {
                    visited = []
                    try connection.read { txn in
                        try Self.scan(txn, form: form) { visited.append($0.id); return visited.count < damagedRow }
                    }
                    #expect(visited == Array(0..<damagedRow), "form \(form), damaged row \(damagedRow)")
                }
            }
        }
    }

    private static func scan(_ txn: CanopyCore.ReadTransaction, form: String, _ body: (Sample) -> Bool) throws {
        switch form {
        case "values": try txn.enumerateObjects(in: samples) { body($0) }
        case "keyed": try txn.enumerateObjects(in: samples) { key, sample in key == Self.key(sample.id) && body(sample) }
        default: try txn.enumerateObjects(in: samples, where: { !$0.isEmpty }) { _, sample in body(sample) }
        }
    }

    /// Every row, in key order, through scans that stop after each of several counts (around the read-ahead's growing
    /// batches: 1 row, then 4, 8, 16, … up to 64) and with a prefix that ends inside a batch.
    @Test func visitsEveryRowInOrderAndStopsWhenTold() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
            try Self.fill(connection, count: 1_000)
            try connection.readWrite { txn in
                try txn.set(Sample(id: -1, tag: "z", text: "after the samples"), forKey: "z-last", in: Self.samples)
            }
            try connection.read { txn in
                var all: [Int] = []
                try txn.enumerateObjects(in: Self.samples) { all.append($0.id); return true }
                #expect(all == Array(0..<1_000) + [-1])
                var prefixed: [Int] = []
                try txn.enumerateObjects(in: Self.samples, prefix: "sample-0005") { prefixed.append($0.id); return true }
                #expect(prefixed == Array(500..<600))
                for stop in [1, 2, 4, 5, 6, 13, 14, 61, 62, 125, 126, 127, 500] {
                    var visited: [Int] = []
                    try txn.enumerateObjects(in: Self.samples) { visited.append($0.id); return visited.count < stop }
                    #expect(visited == Array(0..<stop), "stop after \(stop)")
                }
            }
        }
    }

    /// In a write transaction the scan reads one row at a time, so that a scan whose closure writes the rows it visits
    /// (which moves the pages later rows are read from) reads every row as it now is.
    @Test func writeTransactionScanThatWritesReadsCurrentRows() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
            try Self.fill(connection, count: 400)
            try connection.readWrite { txn in
                var visited = 0
                try txn.enumerateObjects(in: Self.samples) { sample in
                    #expect(sample.tag == "t\(sample.id % 97)" && sample.text == "a longer text for row \(sample.id)")
                    visited += 1
                    // Rewrites this row longer, and the next one's, ahead of the scan (page splits).
                    for id in [sample.id, sample.id + 1] where id < 400 {
                        let text = String(repeating: "x", count: 40 + id % 50)
                        try txn.set(Sample(id: id, tag: "t\(id % 97)", text: id == sample.id ? text : "a longer text for row \(id)"),
                                    forKey: Self.key(id), in: Self.samples)
                    }
                    return true
                }
                #expect(visited == 400)
            }
        }
    }
}

@Suite("Small strings made from their bytes")
struct SmallASCIIStringTests {
    /// On this platform the layout the codec assumes holds (else it makes strings the standard library's way: the
    /// check below then fails, to say the fast path is off).
    @Test func layoutIsExact() {
        #expect(SmallASCIIString.checkLayout())
        #expect(SmallASCIIString.isExact)
    }

    /// Random ASCII of every length up to 15 bytes (and a few longer, and non-ASCII) gives, bit for bit, the string
    /// `String(decoding:as:)` gives, through the codec's one string maker.
    @Test func stringsAreTheStandardLibrarysOwn() {
        let seed: UInt64 = 0x5A11_A5C1
        var random = SeededRandom(seed: seed)
        for round in 0..<20_000 {
            let count = round % 24
            var bytes = (0..<count).map { _ in UInt8(random.next() % 128) }
            if round % 7 == 0, count > 1 { bytes[Int(random.next() % UInt64(count))] = 0xC3 }  // not ASCII, maybe not UTF-8
            let made = bytes.withUnsafeBytes { buffer in buffer.baseAddress.flatMap { BinaryReader.validUTF8String($0, count: count) } }
            let expected = String(decoding: bytes, as: UTF8.self)
            if count == 0 { continue }
            if Array(expected.utf8) != bytes {
                #expect(made == nil, "seed \(seed), round \(round)")
                continue
            }
            guard let made else {
                Issue.record("seed \(seed), round \(round): no string made")
                continue
            }
            if count <= SmallASCIIString.maximumCount {  // (a longer string's second word is its own storage's address)
                #expect(unsafeBitCast(made, to: (UInt64, UInt64).self) == unsafeBitCast(expected, to: (UInt64, UInt64).self),
                        "seed \(seed), round \(round)")
            }
            #expect(made == expected && made.hashValue == expected.hashValue && made.utf8.count == count, "seed \(seed), round \(round)")
        }
    }
}
