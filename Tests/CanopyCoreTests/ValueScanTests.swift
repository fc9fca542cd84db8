@testable import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import LMDB
import Testing

/// A flat struct that takes the binary codec's fast path.
private struct Reading: Codable, Sendable, Equatable, BinaryCodecSynthesizedDecoding {
    var id: Int
    var label: String
    var detail: String
    var value: Double
    var taken: Date
    var valid: Bool

    static func random(_ index: Int, using random: inout SeededRandom) -> Reading {
        let letters = Array("abcdefghijklmnopqrstuvwxyzé€")
        let detail = String((0..<Int(random.next() % 40)).map { _ in letters[Int(random.next() % UInt64(letters.count))] })
        return Reading(id: index, label: "reading \(index)", detail: detail, value: Double(random.next() % 10_000) / 7,
                       taken: Date(timeIntervalSinceReferenceDate: Double(random.next() % 1_000_000)), valid: random.next() % 2 == 0)
    }
}

/// Decodes any row but refuses one marked bad: the general path (`init(from:)`), failing on a value.
private struct Picky: Codable, Sendable, Equatable {
    var id: Int
    var label: String

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int.self, forKey: .id)
        label = try container.decode(String.self, forKey: .label)
        if label == "bad" { throw DecodingError.dataCorruptedError(forKey: .label, in: container, debugDescription: "refused") }
    }

    init(id: Int, label: String) {
        self.id = id
        self.label = label
    }
}

/// ``Picky``'s stored shape, written without its checks (another tool, an older model).
private struct PickyShape: Codable, Sendable {
    var id: Int
    var label: String
}

@Suite("A typed scan of values only")
struct ValueScanTests {
    private static let readings = TypedCollection<Reading, NoMetadata>("readings")

    /// The values-only scan visits the rows the keyed scan visits, in the same order, through every decoder the scan
    /// chooses (the flat fast path, `init(from:)`, JSON, the connection's cache), with a prefix, and stops when told.
    @Test(arguments: [0, 1_000])
    func visitsWhatTheKeyedScanVisits(cacheLimit: Int) throws {
        let seed: UInt64 = 0x5CA4_0019
        var random = SeededRandom(seed: seed)
        try withDatabase { database, _ in
            let connection = database.newConnection(options: .init(objectCacheLimit: cacheLimit, metadataCacheLimit: 0))
            let values = (0..<300).map { Reading.random($0, using: &random) }
            try connection.readWrite { txn in
                for value in values.shuffled(using: &random) {
                    // Keys longer than a small string's 15 bytes, as the benchmark's.
                    try txn.set(value, forKey: String(format: "%@-%012d", value.id % 2 == 0 ? "even" : "odd", value.id), in: Self.readings)
                    try txn.set(Note(title: value.label, body: value.detail), forKey: "note-\(value.id)", in: notes)
                    try txn.set(Note(title: value.label, body: value.detail), forKey: "note-\(value.id)", in: jsonNotes)
                }
            }
            try connection.read { txn in
                for _ in 0..<2 {  // the first scan of a type may lay out its plan; the second runs with it
                    for prefix in ["", "odd-", "none-"] {
                        var keyed: [Reading] = []
                        try txn.enumerateObjects(in: Self.readings, prefix: prefix) { _, value in keyed.append(value); return true }
                        var valuesOnly: [Reading] = []
                        try txn.enumerateObjects(in: Self.readings, prefix: prefix) { value in valuesOnly.append(value); return true }
                        #expect(valuesOnly == keyed, "seed \(seed), prefix '\(prefix)'")
                        #expect(valuesOnly.count == (prefix == "" ? 300 : prefix == "odd-" ? 150 : 0), "seed \(seed)")
                    }
                    for collection in [notes, jsonNotes] {
                        var keyed: [Note] = []
                        try txn.enumerateObjects(in: collection) { _, note in keyed.append(note); return true }
                        var valuesOnly: [Note] = []
                        try txn.enumerateObjects(in: collection) { note in valuesOnly.append(note); return true }
                        #expect(valuesOnly == keyed && keyed.count == 300, "seed \(seed), \(collection.name)")
                    }
                }
                var visited = 0
                try txn.enumerateObjects(in: Self.readings) { _ in visited += 1; return visited < 7 }
                #expect(visited == 7)
            }
            if cacheLimit > 0 {
                #expect(connection.cachedCounts.objects > 0, "the scans above ran with a non-empty cache")
            }
        }
    }

    /// A malformed record fails the values-only scan with `corruptStore` naming the row (the scan makes the key it
    /// otherwise skips); it is not skipped.
    @Test func malformedRecordNamesItsRow() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
            var random = SeededRandom(seed: 7)
            try connection.readWrite { txn in
                for index in 0..<3 { try txn.set(Reading.random(index, using: &random), forKey: "row-\(index)-long-key", in: Self.readings) }
            }
            let collectionID = try #require(try connection.read { txn in try txn.collectionRecord(Self.readings.name)?.id })
            try database.environment.write { txn in
                let objects = try txn.openDatabase(named: "canopy.objects", checksummed: true)
                // Flags say attachments follow, with a length past the end of the record (the checksum is valid).
                try txn.put([StoredRecord.hasAttachments, 0x7F, 1, 2],
                            forKey: RowKey.prefix(collectionID: collectionID) + Array("row-1-long-key".utf8), in: objects)
            }
            var visited = 0
            let error = #expect(throws: CanopyError.self) {
                try connection.read { txn in try txn.enumerateObjects(in: Self.readings) { _ in visited += 1; return true } }
            }
            #expect(error?.code == .corruptStore)
            #expect(error?.collection == Self.readings.name)
            #expect(error?.key == "row-1-long-key")
            #expect(visited == 1)
        }
    }

    /// A row its type's `init(from:)` refuses fails the values-only scan with `decodingFailed` naming the row, as the
    /// keyed scan does; so does a row of another shape read through the flat fast path's type.
    @Test func decodingFailureNamesItsRow() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
            let picky = TypedCollection<Picky, NoMetadata>("picky")
            try connection.readWrite { txn in
                try txn.set(Picky(id: 1, label: "fine"), forKey: "a-first-row-of-the-scan", in: picky)
                try txn.set(Note(title: "not a reading"), forKey: "a-note-among-readings", in: TypedCollection<Note, NoMetadata>(Self.readings.name))
            }
            // The refused value is written without the type's own checks (another tool, an older model).
            try connection.readWrite { txn in
                try txn.set(PickyShape(id: 2, label: "bad"), forKey: "b-refused-row", in: TypedCollection<PickyShape, NoMetadata>("picky"))
            }
            for (collection, key) in [("picky", "b-refused-row"), (Self.readings.name, "a-note-among-readings")] {
                var labels: [String] = []
                let error = #expect(throws: CanopyError.self) {
                    try connection.read { txn in
                        if collection == "picky" {
                            try txn.enumerateObjects(in: picky) { value in labels.append(value.label); return true }
                        } else {
                            try txn.enumerateObjects(in: Self.readings) { value in labels.append(value.label); return true }
                        }
                    }
                }
                #expect(error?.code == .decodingFailed)
                #expect(error?.collection == collection)
                #expect(error?.key == key)
                #expect(labels == (collection == "picky" ? ["fine"] : []))
            }
        }
    }
}
