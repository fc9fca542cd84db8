@testable import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// A flat struct of every kind of value the fast path writes, opted in to it.
private struct Flat: Codable, Sendable, Equatable, BinaryCodecSynthesizedDecoding {
    var id: Int
    var title: String
    var note: String
    var score: Double
    var ratio: Float
    var created: Date
    var done: Bool
    var small: Int8
    var count: UInt32
    var big: UInt64
    var delta: Int16

    static func random(using random: inout SeededRandom) -> Flat {
        let alphabet = Array("abcXYZ 09é–😀\u{301}")
        func text() -> String {
            String((0..<Int.random(in: 0..<40, using: &random)).map { _ in alphabet.randomElement(using: &random)! })
        }
        return Flat(
            id: Int.random(in: .min ... .max, using: &random), title: text(), note: text(),
            score: Double.random(in: -1e12...1e12, using: &random), ratio: Float.random(in: -1e6...1e6, using: &random),
            created: Date(timeIntervalSinceReferenceDate: Double.random(in: -1e9...1e9, using: &random)),
            done: Bool.random(using: &random), small: Int8.random(in: .min ... .max, using: &random),
            count: UInt32.random(in: .min ... .max, using: &random), big: UInt64.random(in: .min ... .max, using: &random),
            delta: Int16.random(in: .min ... .max, using: &random))
    }
}

/// The same keys as ``Flat``, written in another order.
private struct FlatReordered: Codable {
    var delta: Int16
    var big: UInt64
    var count: UInt32
    var small: Int8
    var done: Bool
    var created: Date
    var ratio: Float
    var score: Double
    var note: String
    var title: String
    var id: Int
}

private struct WithOptional: Codable, Equatable, BinaryCodecSynthesizedDecoding {
    var a: Int
    var b: String?
}

private struct RenamedKeys: Codable, Equatable, BinaryCodecSynthesizedDecoding {
    var title: String
    var count: Int
    enum CodingKeys: String, CodingKey {
        case title = "t"
        case count = "c"
    }
}

private struct Nested: Codable, Equatable, BinaryCodecSynthesizedDecoding {
    var name: String
    var inner: WithOptional
}

private final class Boxed: Codable, @unchecked Sendable {
    var a: Int
    init(a: Int) { self.a = a }
}

/// Decodes its properties by name and in order, but changes them: does not opt in.
private struct Shouting: Codable, Equatable {
    var title: String
    var count: Int
    init(title: String, count: Int) {
        self.title = title
        self.count = count
    }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        title = try container.decode(String.self, forKey: .title).uppercased()
        count = try container.decode(Int.self, forKey: .count)
    }
}

/// The kinds and key lengths ``Flat`` leaves out: keys whose entry head is longer than the 16 bytes compared as two
/// words (15 bytes and a tag), or exactly 16 (15 bytes of a Bool's key, which has no tag), and keys of 128 bytes or
/// more (a two-byte length); `Int32`, `Int64`, `UInt`, `UInt8`, `UInt16`.
private struct LongKeys: Codable, Equatable, BinaryCodecSynthesizedDecoding {
    var fifteenBytesKey: Int32
    var fifteenBoolKey1: Bool
    var k: UInt8
    var aPropertyWhoseNameIsLongerThan128BytesXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX: String
    var aBoolWhoseNameIsLongerThan128BytesYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYY: Bool
    var u: UInt
    var w: UInt16
    var i64: Int64
    var f: Float
    var d: Date

    static func random(using random: inout SeededRandom) -> LongKeys {
        let alphabet = Array("ab Z9é😀")
        let length = [0, 1, 15, 16, 127, 128, 200][Int.random(in: 0..<7, using: &random)]
        return LongKeys(
            fifteenBytesKey: .random(in: .min ... .max, using: &random), fifteenBoolKey1: .random(using: &random),
            k: .random(in: .min ... .max, using: &random),
            aPropertyWhoseNameIsLongerThan128BytesXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX: String((0..<length).map { _ in alphabet.randomElement(using: &random)! }),
            aBoolWhoseNameIsLongerThan128BytesYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYY: .random(using: &random), u: .random(in: .min ... .max, using: &random),
            w: .random(in: .min ... .max, using: &random), i64: .random(in: .min ... .max, using: &random),
            f: Float(bitPattern: .random(in: .min ... .max, using: &random)),
            d: Date(timeIntervalSinceReferenceDate: Double(bitPattern: .random(in: .min ... .max, using: &random))))
    }
}

/// A flat struct larger than the fast path's 256-byte scratch (20 strings, 320 bytes): decoded by the general path.
private struct Wide: Codable, Equatable, BinaryCodecSynthesizedDecoding {
    var s0 = "a", s1 = "b", s2 = "c", s3 = "d", s4 = "e", s5 = "f", s6 = "g", s7 = "h", s8 = "i", s9 = "j"
    var t0 = "k", t1 = "l", t2 = "m", t3 = "n", t4 = "o", t5 = "p", t6 = "q", t7 = "r", t8 = "s", t9 = "a long string, on the heap"
}

/// A flat struct that qualifies in every way but did not opt in.
private struct NotOptedIn: Codable, Equatable {
    var title: String
    var count: Int
}

/// A flat struct whose bytes are shorter than the 16 the fast path compares an entry's head against.
private struct Tiny: Codable, Equatable, BinaryCodecSynthesizedDecoding {
    var on: Bool
    var n: UInt8
}

private struct WrongShape: Codable, Sendable, BinaryCodecSynthesizedDecoding {
    var id: String
    var title: Int
}

private func isPlan(_ type: Any.Type) -> Bool {
    if case .plan? = FlatDecodePlans.entry(for: type) { return true }
    return false
}

private func isGeneral(_ type: Any.Type) -> Bool {
    if case .general? = FlatDecodePlans.entry(for: type) { return true }
    return false
}

/// Whether the fast path itself (not the general path it falls back to) decodes `bytes` as `T`, which has a plan.
private func fastPathAccepts<T>(_ bytes: [UInt8], as type: T.Type) -> Bool {
    guard let plan = FlatDecodePlans.entry(for: T.self)?.plan else { return false }
    let out = UnsafeMutablePointer<T>.allocate(capacity: 1)
    defer { out.deallocate() }
    guard bytes.withUnsafeBytes({ plan.decode(into: UnsafeMutableRawPointer(out), from: $0) }) else { return false }
    out.deinitialize(count: 1)
    return true
}

@Suite("Binary codec: fast path for flat structs")
struct FlatDecodeTests {
    let codec = BinaryCodec()

    @Test func decodesExactlyWhatTheGeneralPathDecodes() throws {
        let seed: UInt64 = 0xF1A7
        var random = SeededRandom(seed: seed)
        _ = try codec.encode(Flat.random(using: &random)).withUnsafeBytes { try codec.decode(Flat.self, from: $0) }
        #expect(isPlan(Flat.self), "a flat struct of strings, numbers, Bools and Dates takes the fast path")
        for step in 0..<2_000 {
            let value = Flat.random(using: &random)
            let bytes = try codec.encode(value)
            let fast = try bytes.withUnsafeBytes { try codec.decode(Flat.self, from: $0) }
            let general = try bytes.withUnsafeBytes { try codec.decodeGeneral(Flat.self, from: $0) }
            #expect(fast == general, "seed \(seed) step \(step)")
            #expect(fast == value, "seed \(seed) step \(step)")
        }
    }

    @Test func corruptOrTruncatedBytesFailAsTheGeneralPathDoes() throws {
        let seed: UInt64 = 0xBAD
        var random = SeededRandom(seed: seed)
        _ = try codec.encode(Flat.random(using: &random)).withUnsafeBytes { try codec.decode(Flat.self, from: $0) }
        #expect(isPlan(Flat.self))
        func same(_ bytes: [UInt8], _ context: @autoclosure () -> String) {
            let fast = Result { try bytes.withUnsafeBytes { try codec.decode(Flat.self, from: $0) } }
            let general = Result { try bytes.withUnsafeBytes { try codec.decodeGeneral(Flat.self, from: $0) } }
            switch (fast, general) {
            case (.success(let a), .success(let b)):
                #expect(a == b, "\(context())")
            case (.failure(let a), .failure(let b)):
                #expect(a is DecodingError, "\(context())")
                #expect(String(describing: a) == String(describing: b), "\(context())")
            default:
                Issue.record("the fast path and the general path disagree: \(fast) / \(general); \(context())")
            }
        }
        for round in 0..<20 {
            let bytes = try codec.encode(Flat.random(using: &random))
            for length in 0..<bytes.count { same(Array(bytes.prefix(length)), "seed \(seed) round \(round) truncated to \(length)") }
            for position in 0..<bytes.count {
                var flipped = bytes
                flipped[position] ^= UInt8.random(in: 1...255, using: &random)
                same(flipped, "seed \(seed) round \(round) byte \(position) flipped")
            }
        }
        // Keys in another order: the fast path gives up, the general path finds them by name.
        let value = Flat.random(using: &random)
        let reordered = FlatReordered(
            delta: value.delta, big: value.big, count: value.count, small: value.small, done: value.done, created: value.created,
            ratio: value.ratio, score: value.score, note: value.note, title: value.title, id: value.id)
        let bytes = try codec.encode(reordered)
        #expect(try bytes.withUnsafeBytes { try codec.decode(Flat.self, from: $0) } == value)
    }

    /// Strings of every length around the small string's 15 bytes and the 8-byte words the ASCII check loads, in
    /// ASCII and not; integers whose varints take 1 to 10 bytes; an entry's head read near the end of the bytes, and
    /// bytes shorter than a head's 16: the fast path decodes what the general path decodes.
    @Test func boundariesOfStringsIntegersAndHeads() throws {
        var random = SeededRandom(seed: 0xB0B)
        _ = try codec.encode(Flat.random(using: &random)).withUnsafeBytes { try codec.decode(Flat.self, from: $0) }
        #expect(isPlan(Flat.self))
        func check(_ value: Flat, _ context: String) throws {
            let bytes = try codec.encode(value)
            let fast = try bytes.withUnsafeBytes { try codec.decode(Flat.self, from: $0) }
            let general = try bytes.withUnsafeBytes { try codec.decodeGeneral(Flat.self, from: $0) }
            #expect(fast == value && general == value, "\(context)")
            #expect(fastPathAccepts(bytes, as: Flat.self), "the fast path itself decodes \(context)")
        }
        var value = Flat.random(using: &random)
        for length in 0...40 {
            value.title = String((0..<length).map { Character(UnicodeScalar(UInt8(0x21 + ($0 * 7) % 94))) })
            value.note = String(repeating: "é", count: length / 2) + String(repeating: "x", count: length % 2)
            try check(value, "string length \(length)")
            value.title = String(repeating: "a", count: max(0, length - 1)) + "😀"
            try check(value, "string length \(length) ending in a 4-byte scalar")
        }
        var integers: [Int] = [0, 1, -1, 63, -64, 64, -65, .max, .min]
        for bits in 1...62 { integers += [1 << bits, -(1 << bits), (1 << bits) - 1] }
        for integer in integers {
            value.id = integer
            value.big = UInt64(bitPattern: Int64(integer))
            value.count = UInt32(truncatingIfNeeded: integer)
            value.small = Int8(truncatingIfNeeded: integer)
            value.delta = Int16(truncatingIfNeeded: integer)
            try check(value, "integer \(integer)")
        }
        // Bytes shorter than 16: every head is read from fewer bytes than two words.
        for tiny in [Tiny(on: true, n: 0), Tiny(on: false, n: 255)] {
            let bytes = try codec.encode(tiny)
            #expect(bytes.count < 16)
            for _ in 0..<2 { #expect(try bytes.withUnsafeBytes { try codec.decode(Tiny.self, from: $0) } == tiny) }
            #expect(isPlan(Tiny.self))
            #expect(fastPathAccepts(bytes, as: Tiny.self))
            for length in 0..<bytes.count {
                #expect(throws: DecodingError.self) { try Array(bytes.prefix(length)).withUnsafeBytes { try codec.decode(Tiny.self, from: $0) } }
            }
        }
    }

    /// Bytes that are not UTF-8 in a string the fast path reads (short or long, at its start, middle or end) fail as
    /// the general path fails: a typed error, never a string with U+FFFD in it.
    @Test func invalidUTF8FailsAsTheGeneralPathDoes() throws {
        var random = SeededRandom(seed: 0x0FF)
        _ = try codec.encode(Flat.random(using: &random)).withUnsafeBytes { try codec.decode(Flat.self, from: $0) }
        let invalid: [[UInt8]] = [[0xFF], [0xC0, 0x80], [0xE2, 0x82], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0x80]]
        for length in [4, 11, 15, 16, 27, 40] {
            var value = Flat.random(using: &random)
            value.note = String(repeating: "Q", count: length)
            let bytes = try codec.encode(value)
            let marker = Array(repeating: UInt8(ascii: "Q"), count: length)
            guard let start = (0...(bytes.count - length)).first(where: { Array(bytes[$0..<($0 + length)]) == marker }) else {
                Issue.record("the note's bytes are not in the encoding")
                continue
            }
            for sequence in invalid where sequence.count <= length {
                for offset in Set([0, (length - sequence.count) / 2, length - sequence.count]) {
                    var damaged = bytes
                    damaged.replaceSubrange((start + offset)..<(start + offset + sequence.count), with: sequence)
                    let fast = Result { try damaged.withUnsafeBytes { try codec.decode(Flat.self, from: $0) } }
                    let general = Result { try damaged.withUnsafeBytes { try codec.decodeGeneral(Flat.self, from: $0) } }
                    switch (fast, general) {
                    case (.failure(let a), .failure(let b)):
                        #expect(String(describing: a) == String(describing: b), "length \(length), \(sequence) at \(offset)")
                    default:
                        Issue.record("invalid UTF-8 decoded: \(fast) / \(general); length \(length), \(sequence) at \(offset)")
                    }
                }
            }
        }
    }

    /// Records damaged in several places at once — bytes flipped, set to tags and varint edges, inserted and removed,
    /// with the root map's size patched to the new length half the time (so that the damage reaches the entries
    /// rather than the first check), or replaced by random bytes after a valid root header — decode through the fast
    /// path exactly as through the general path: the same value (compared as its encoding, so that a NaN compares),
    /// or the same typed error. Over ``Flat`` and ``LongKeys`` (every kind, every way a key's head is compared).
    @Test func mutatedRecordsDecodeAsTheGeneralPathDecodes() throws {
        let seed: UInt64 = 0xF022
        var random = SeededRandom(seed: seed)
        var accepted = 0
        func fuzz<T: Codable>(_ type: T.Type, _ make: (inout SeededRandom) -> T) throws {
            _ = try codec.encode(make(&random)).withUnsafeBytes { try codec.decode(T.self, from: $0) }
            #expect(isPlan(T.self), "\(T.self) takes the fast path")
            let interesting: [UInt8] = [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x09, 0x0B, 0x0F, 0x10, 0x7F, 0x80, 0xC3, 0xFF]
            for round in 0..<1_500 {
                let value = make(&random)
                var bytes = try codec.encode(value)
                let original = bytes
                // An intact record: the fast path itself decodes it, as the general path does.
                if round % 10 == 0 {
                    #expect(fastPathAccepts(bytes, as: T.self), "\(T.self) seed \(seed) round \(round)")
                    let general = try bytes.withUnsafeBytes { try codec.decodeGeneral(T.self, from: $0) }
                    #expect(try codec.encode(general) == original, "\(T.self) seed \(seed) round \(round)")
                }
                if round % 7 == 0 {
                    // Random bytes behind a valid root header.
                    let count = Int.random(in: 0..<(original.count + 8), using: &random)
                    bytes = [BinaryFormat.version, BinaryFormat.Tag.map, 0, 0, 0, 0] + (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
                } else {
                    for _ in 0..<Int.random(in: 1...4, using: &random) where !bytes.isEmpty {
                        let position = Int.random(in: 0..<bytes.count, using: &random)
                        switch Int.random(in: 0..<5, using: &random) {
                        case 0: bytes[position] ^= UInt8.random(in: 1...255, using: &random)
                        case 1: bytes[position] = interesting.randomElement(using: &random)!
                        case 2: bytes.insert(interesting.randomElement(using: &random)!, at: position)
                        case 3: bytes.remove(at: position)
                        default: bytes[position] = bytes[Int.random(in: 0..<bytes.count, using: &random)]
                        }
                    }
                }
                if (round % 7 == 0 || Bool.random(using: &random)), bytes.count >= 6 {
                    withUnsafeBytes(of: UInt32(bytes.count - 6).littleEndian) { bytes.replaceSubrange(2..<6, with: $0) }
                }
                let context = "\(T.self) seed \(seed) round \(round): \(bytes)"
                let fast = Result { try bytes.withUnsafeBytes { try codec.decode(T.self, from: $0) } }
                let general = Result { try bytes.withUnsafeBytes { try codec.decodeGeneral(T.self, from: $0) } }
                switch (fast, general) {
                case (.success(let a), .success(let b)):
                    #expect(try codec.encode(a) == codec.encode(b), "\(context)")
                case (.failure(let a), .failure(let b)):
                    #expect(a is DecodingError, "\(context)")
                    #expect(String(describing: a) == String(describing: b), "\(context)")
                default:
                    Issue.record("the fast path and the general path disagree: \(fast) / \(general); \(context)")
                }
                if bytes != original, fastPathAccepts(bytes, as: T.self) { accepted += 1 }
            }
        }
        try fuzz(Flat.self) { Flat.random(using: &$0) }
        try fuzz(LongKeys.self) { LongKeys.random(using: &$0) }
        // The damage reached past the first checks: some damaged records were still the plan's map (a value's bytes
        // changed), and those were compared value against value.
        #expect(accepted > 50, "seed \(seed): \(accepted) damaged records taken by the fast path")
    }

    @Test func typesThatDoNotQualifyTakeTheGeneralPath() throws {
        func roundTrip<T: Codable & Equatable>(_ value: T) throws -> T {
            let bytes = try codec.encode(value)
            _ = try bytes.withUnsafeBytes { try codec.decode(T.self, from: $0) }
            return try bytes.withUnsafeBytes { try codec.decode(T.self, from: $0) }
        }
        #expect(try roundTrip(WithOptional(a: 1, b: "x")) == WithOptional(a: 1, b: "x"))
        #expect(try roundTrip(WithOptional(a: 2, b: nil)) == WithOptional(a: 2, b: nil))
        #expect(isGeneral(WithOptional.self))
        #expect(try roundTrip(RenamedKeys(title: "t", count: 3)) == RenamedKeys(title: "t", count: 3))
        #expect(isGeneral(RenamedKeys.self))
        #expect(try roundTrip(Nested(name: "n", inner: WithOptional(a: 1, b: nil))) == Nested(name: "n", inner: WithOptional(a: 1, b: nil)))
        #expect(isGeneral(Nested.self))
        let shouting = try codec.encode(Shouting(title: "quiet", count: 1))
        for _ in 0..<2 {
            #expect(try shouting.withUnsafeBytes { try codec.decode(Shouting.self, from: $0) } == Shouting(title: "QUIET", count: 1))
        }
        #expect(isGeneral(Shouting.self))
        let boxed = try codec.encode(Boxed(a: 7))
        for _ in 0..<2 { #expect(try boxed.withUnsafeBytes { try codec.decode(Boxed.self, from: $0) }.a == 7) }
        #expect(isGeneral(Boxed.self))
        var wide = Wide()
        wide.s3 = "changed"
        #expect(try roundTrip(wide) == wide)
        #expect(try roundTrip(["a", "b"]) == ["a", "b"])
        #expect(isGeneral([String].self))
        #expect(try roundTrip(NotOptedIn(title: "t", count: 1)) == NotOptedIn(title: "t", count: 1))
        #expect(isGeneral(NotOptedIn.self), "only types that opt in take the fast path")
    }

    @Test func storeReadsAndScansTakeTheFastPathAndKeepTypedErrors() throws {
        try withDatabase { database, _ in
            let flats = TypedCollection<Flat, NoMetadata>("flats")
            let connection = database.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
            var random = SeededRandom(seed: 42)
            let values = (0..<200).map { _ in Flat.random(using: &random) }
            try connection.readWrite { txn throws in
                for (index, value) in values.enumerated() { try txn.set(value, forKey: "\(1000 + index)", in: flats) }
            }
            try connection.read { txn throws in
                for (index, value) in values.enumerated() { #expect(try txn.object(forKey: "\(1000 + index)", in: flats) == value) }
                var scanned: [Flat] = []
                try txn.enumerateObjects(in: flats) { _, object in
                    scanned.append(object)
                    return true
                }
                #expect(scanned == values)
            }
            #expect(isPlan(Flat.self))
            let wrong = TypedCollection<WrongShape, NoMetadata>("flats")
            try connection.read { txn throws in
                #expect {
                    _ = try txn.object(forKey: "1000", in: wrong)
                } throws: { error in
                    (error as? CanopyError)?.code == .decodingFailed && (error as? CanopyError)?.key == "1000"
                }
            }
        }
    }
}
