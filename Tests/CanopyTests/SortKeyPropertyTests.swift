import Canopy
import CanopyTestSupport
import Foundation
import Testing

/// Byte order == value order, for every `SortKeyValue` type, ascending and descending, alone and in tuples.
///
/// Each case draws values from a seeded generator that favours edges (0, ±1, the type's extremes, 2^63 for `UInt64`,
/// ±0.0, infinities, NaN, empty strings, embedded NUL bytes, prefixes), and compares every pair both ways.
@Suite("Sort keys: byte order is value order")
struct SortKeyPropertyTests {
    static let pairsPerCase = 4_000

    /// -1, 0 or 1.
    static func sign(_ lhs: [UInt8], _ rhs: [UInt8]) -> Int {
        lhs == rhs ? 0 : (lhs.lexicographicallyPrecedes(rhs) ? -1 : 1)
    }

    static func sign<T: Comparable>(_ lhs: T, _ rhs: T) -> Int { lhs == rhs ? 0 : (lhs < rhs ? -1 : 1) }

    /// Checks one type: `order` gives the expected order of two values (-1, 0, 1).
    static func check<T: SortKeyValue & Sendable>(
        _ name: String, seed: UInt64, draw: (inout SeededRandom) -> T, order: (T, T) -> Int
    ) {
        var random = SeededRandom(seed: seed)
        for pair in 0..<pairsPerCase {
            let (a, b) = (draw(&random), draw(&random))
            let expected = order(a, b)
            let ascending = sign(SortKey(.ascending(a)).bytes, SortKey(.ascending(b)).bytes)
            let descending = sign(SortKey(.descending(a)).bytes, SortKey(.descending(b)).bytes)
            #expect(ascending == expected, "\(name) seed \(seed) pair \(pair): ascending \(a) vs \(b) gave \(ascending), expected \(expected)")
            #expect(descending == -expected, "\(name) seed \(seed) pair \(pair): descending \(a) vs \(b) gave \(descending), expected \(-expected)")
            if ascending != expected || descending != -expected { return }
        }
    }

    static func edgeOrRandom<T>(_ random: inout SeededRandom, edges: [T], _ other: (inout SeededRandom) -> T) -> T {
        Int.random(in: 0..<3, using: &random) == 0 ? edges[Int.random(in: 0..<edges.count, using: &random)] : other(&random)
    }

    static func drawInt64(_ random: inout SeededRandom) -> Int64 {
        let edges: [Int64] = [0, 1, -1, Int64.max, Int64.min, Int64.max - 1, Int64.min + 1, 255, 256, -256]
        return edgeOrRandom(&random, edges: edges) { random in
            if Int.random(in: 0..<2, using: &random) == 0 { return Int64.random(in: -1000...1000, using: &random) }
            return Int64.random(in: Int64.min...Int64.max, using: &random)
        }
    }

    static func drawUInt64(_ random: inout SeededRandom) -> UInt64 {
        let half: UInt64 = 1 << 63
        let edges: [UInt64] = [0, 1, half, half - 1, half + 1, UInt64.max, UInt64.max - 1, 255]
        return edgeOrRandom(&random, edges: edges) { random in
            if Int.random(in: 0..<2, using: &random) == 0 { return UInt64.random(in: 0...1000, using: &random) }
            return UInt64.random(in: 0...UInt64.max, using: &random)
        }
    }

    static func drawDouble(_ random: inout SeededRandom) -> Double {
        let edges: [Double] = [0.0, -0.0, 1, -1, .infinity, -.infinity, .nan, .greatestFiniteMagnitude,
                               -.greatestFiniteMagnitude, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, 0.1]
        return edgeOrRandom(&random, edges: edges) { random in
            Double(bitPattern: UInt64.random(in: 0 ... .max, using: &random))
        }
    }

    /// Doubles as the encoding orders them: -0.0 equals 0.0, every NaN is equal and after +infinity.
    static func orderDoubles(_ a: Double, _ b: Double) -> Int {
        switch (a.isNaN, b.isNaN) {
        case (true, true): return 0
        case (true, false): return 1
        case (false, true): return -1
        case (false, false): return sign(a, b)
        }
    }

    static func drawString(_ random: inout SeededRandom) -> String {
        edgeOrRandom(&random, edges: ["", "a", "a\u{0}", "a\u{0}b", "ab", "\u{0}", "é", "😀", "a\u{0}\u{0}", "b"]) { random in
            let alphabet: [Character] = ["a", "b", "\u{0}", "é", "z", "😀", "\u{FF}"]
            return String((0..<Int.random(in: 0...4, using: &random)).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &random)] })
        }
    }

    @Test func int64() { Self.check("Int64", seed: 1, draw: Self.drawInt64, order: Self.sign) }
    @Test func int() { Self.check("Int", seed: 2, draw: { Int(Self.drawInt64(&$0)) }, order: Self.sign) }
    @Test func int32() {
        Self.check("Int32", seed: 3, draw: { Int32(truncatingIfNeeded: Self.drawInt64(&$0)) }, order: Self.sign)
    }
    @Test func uint64() { Self.check("UInt64", seed: 4, draw: Self.drawUInt64, order: Self.sign) }
    @Test func double() { Self.check("Double", seed: 5, draw: Self.drawDouble, order: Self.orderDoubles) }
    @Test func float() {
        Self.check("Float", seed: 6, draw: { Float(Self.drawDouble(&$0)) }, order: { Self.orderDoubles(Double($0), Double($1)) })
    }
    @Test func date() {
        Self.check("Date", seed: 7, draw: { Date(timeIntervalSince1970: Double(Self.drawInt64(&$0) % 4_000_000_000) / 7) },
                   order: Self.sign)
    }
    @Test func bool() { Self.check("Bool", seed: 8, draw: { Bool.random(using: &$0) }, order: { Self.sign($0 ? 1 : 0, $1 ? 1 : 0) }) }
    @Test func string() {
        Self.check("String", seed: 9, draw: Self.drawString, order: { Self.sign(Array($0.utf8), Array($1.utf8)) })
    }
    @Test func optionalInt() {
        Self.check("Int?", seed: 10, draw: { random in Int.random(in: 0..<4, using: &random) == 0 ? nil : Int(Self.drawInt64(&random)) },
                   order: { a, b in
                       switch (a, b) {
                       case (nil, nil): return 0
                       case (nil, _): return -1
                       case (_, nil): return 1
                       case let (x?, y?): return Self.sign(x, y)
                       }
                   })
    }

    /// Mixed signed and unsigned integers in one position order by value.
    @Test func signedAndUnsignedInterleave() {
        var random = SeededRandom(seed: 11)
        for pair in 0..<Self.pairsPerCase {
            let signed = Self.drawInt64(&random)
            let unsigned = Self.drawUInt64(&random)
            let expected = signed < 0 ? -1 : Self.sign(UInt64(signed), unsigned)
            let bytes = Self.sign(SortKey(.ascending(signed)).bytes, SortKey(.ascending(unsigned)).bytes)
            #expect(bytes == expected, "seed 11 pair \(pair): \(signed) vs \(unsigned)")
            if bytes != expected { return }
        }
    }

    /// Tuples of three components of random types and directions: the key order is the lexicographic order of the
    /// components, each in its direction.
    @Test func tuples() {
        enum Value {
            case int(Int64), uint(UInt64), double(Double), string(String), bool(Bool), optional(Int?)
        }
        func draw(_ kind: Int, _ random: inout SeededRandom) -> Value {
            switch kind {
            case 0: return .int(Self.drawInt64(&random) % 3)  // small ranges so that ties happen and later components matter
            case 1: return .uint(Int.random(in: 0..<2, using: &random) == 0 ? 1 << 63 : UInt64.random(in: 0...2, using: &random))
            case 2: return .double([0.0, -0.0, 1.5, .nan, -.infinity][Int.random(in: 0..<5, using: &random)])
            case 3: return .string(["", "a", "a\u{0}", "ab", "b"][Int.random(in: 0..<5, using: &random)])
            case 4: return .bool(Bool.random(using: &random))
            default: return .optional(Int.random(in: 0..<3, using: &random) == 0 ? nil : Int.random(in: -1...1, using: &random))
            }
        }
        func order(_ a: Value, _ b: Value) -> Int {
            switch (a, b) {
            case let (.int(x), .int(y)): return Self.sign(x, y)
            case let (.uint(x), .uint(y)): return Self.sign(x, y)
            case let (.double(x), .double(y)): return Self.orderDoubles(x, y)
            case let (.string(x), .string(y)): return Self.sign(Array(x.utf8), Array(y.utf8))
            case let (.bool(x), .bool(y)): return Self.sign(x ? 1 : 0, y ? 1 : 0)
            case let (.optional(x), .optional(y)):
                switch (x, y) {
                case (nil, nil): return 0
                case (nil, _): return -1
                case (_, nil): return 1
                case let (p?, q?): return Self.sign(p, q)
                }
            default: return 0
            }
        }
        func component(_ value: Value, descending: Bool) -> SortKey.Component {
            switch value {
            case .int(let x): return descending ? .descending(x) : .ascending(x)
            case .uint(let x): return descending ? .descending(x) : .ascending(x)
            case .double(let x): return descending ? .descending(x) : .ascending(x)
            case .string(let x): return descending ? .descending(x) : .ascending(x)
            case .bool(let x): return descending ? .descending(x) : .ascending(x)
            case .optional(let x): return descending ? .descending(x) : .ascending(x)
            }
        }
        var random = SeededRandom(seed: 12)
        for pair in 0..<Self.pairsPerCase {
            let kinds = (0..<3).map { _ in Int.random(in: 0..<6, using: &random) }
            let directions = (0..<3).map { _ in Bool.random(using: &random) }
            let a = kinds.map { draw($0, &random) }
            let b = kinds.map { draw($0, &random) }
            var expected = 0
            for index in 0..<3 where expected == 0 {
                expected = order(a[index], b[index]) * (directions[index] ? -1 : 1)
            }
            let keyA = SortKey((0..<3).map { component(a[$0], descending: directions[$0]) })
            let keyB = SortKey((0..<3).map { component(b[$0], descending: directions[$0]) })
            let actual = Self.sign(keyA.bytes, keyB.bytes)
            #expect(actual == expected, "seed 12 pair \(pair): \(a) vs \(b), descending \(directions): \(actual), expected \(expected)")
            if actual != expected { return }
        }
    }
    /// A string's ascending encoding written out by hand from the format's rule (type byte 0x30, the UTF-8 with each
    /// 0x00 escaped as 0x00 0xFF, then the terminator 0x00 0x01): the spec the encoder's fast paths are checked against.
    static func expectedStringBytes(_ string: String) -> [UInt8] {
        var bytes: [UInt8] = [0x30]
        for byte in Array(string.utf8) {
            bytes.append(byte)
            if byte == 0 { bytes.append(0xFF) }
        }
        return bytes + [0x00, 0x01]
    }

    /// A string's encoding is its UTF-8 with each 0x00 escaped as 0x00 0xFF, then 0x00 0x01, whatever the string's
    /// storage: small (up to 15 bytes) or native, with or without NUL bytes, from a substring (the encoder copies a
    /// contiguous buffer when the string has one and no NUL, and walks the bytes otherwise).
    @Test func stringEncodingIsTheSameForEveryStorage() {
        var random = SeededRandom(seed: 31)
        let alphabet: [Character] = ["a", "\u{0}", "é", "😀", "z"]
        var strings = ["", "a", "\u{0}", "short title", "a title longer than fifteen bytes", "a long title with a \u{0} inside it"]
        for _ in 0..<200 {
            strings.append(String((0..<Int.random(in: 0..<40, using: &random)).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &random)] }))
        }
        for string in strings {
            let substring = String(("<" + string + ">").dropFirst().dropLast())
            #expect(SortKey(.ascending(string)).bytes == Self.expectedStringBytes(string), "seed 31: \(Array(string.utf8))")
            #expect(SortKey(.ascending(substring)).bytes == Self.expectedStringBytes(string), "seed 31 (from a substring): \(Array(string.utf8))")
            #expect(SortKey(.descending(string)).bytes == Self.expectedStringBytes(string).map { ~$0 }, "seed 31 (descending): \(Array(string.utf8))")
        }
    }
    /// The same encoding for strings of other origins and sizes: a NUL only at the last byte of a long buffer (the
    /// `memchr` must search the whole of it) or at the first, a megabyte, strings made by Foundation, from C bytes,
    /// from repaired UTF-8, and immortal literals.
    @Test func stringEncodingIsTheSameForEveryOrigin() throws {
        let long = String(repeating: "é-title ", count: 131_072)  // 1.1 MB
        var strings = [long, long + "\u{0}", "\u{0}" + long, String(long.prefix(40)) + "\u{0}",
                       "an immortal literal longer than fifteen bytes, non-ASCII: ü😀"]
        strings.append(try #require(String(data: Data("from Data, ünïcode \u{0} with a NUL".utf8), encoding: .utf8)))
        strings.append(NSString(string: "from NSString, longer than fifteen bytes: ñ").description)
        strings.append(("a lowercased TITLE longer than 15 bytes" as NSString).lowercased)
        strings.append([UInt8]("from C bytes, longer than fifteen".utf8 + [0]).withUnsafeBufferPointer { $0.baseAddress.map { String(cString: $0) } ?? "" })
        strings.append(String(decoding: [0x61, 0xFF, 0x00, 0xC3, 0x62] + Array(repeating: UInt8(0x7A), count: 20), as: UTF8.self))
        for string in strings {
            let prefix = Array(string.utf8.prefix(24))
            #expect(SortKey(.ascending(string)).bytes == Self.expectedStringBytes(string), "\(string.utf8.count) bytes from \(prefix)")
            #expect(SortKey(.descending(string)).bytes == Self.expectedStringBytes(string).map { ~$0 }, "\(string.utf8.count) bytes from \(prefix) (descending)")
        }
    }
}
