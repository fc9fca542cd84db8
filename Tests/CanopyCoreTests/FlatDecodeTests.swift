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
