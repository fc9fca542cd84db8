import Foundation
import Testing

@testable import CanopyCore

// MARK: - Fixtures

private struct Inner: Codable, Equatable {
    var name: String
    var values: [Double]
    var children: [Inner]
}

private enum Shape: Codable, Equatable {
    case point
    case circle(radius: Double)
    case rectangle(width: Double, height: Double)
    case labeled(String, Int)
    case nested(Inner)
}

private enum Color: String, Codable, Equatable {
    case red, green
}

/// Every kind of value the codecs must round-trip.
private struct Everything: Codable, Equatable {
    var int8: Int8 = .min
    var int16: Int16 = .max
    var int32: Int32 = -123_456
    var int64: Int64 = .min
    var int: Int = .max
    var intMin: Int = .min
    var uint8: UInt8 = .max
    var uint16: UInt16 = 65_000
    var uint32: UInt32 = .max
    var uint64: UInt64 = .max
    var uint: UInt = 0
    var float: Float = 3.25
    var floatSmall: Float = .leastNonzeroMagnitude
    var double: Double = -1.0 / 3.0
    var doubleLarge: Double = .greatestFiniteMagnitude
    var bool: Bool = true
    var boolFalse: Bool = false
    var string = "Hello"
    var emptyString = ""
    var unicode = "héllo wörld — 日本語 🌍🏳️‍🌈 \u{0} \"quoted\" \\ \n\t"
    var optionalPresent: Int? = 42
    var optionalAbsent: String?
    var doubleOptional: Int?? = .some(.some(5))
    var array: [Int] = [1, -2, 300, .max]
    var emptyArray: [String] = []
    var strings: [String] = ["a", "", "ü"]
    var doubles: [Double] = [0.5, -0.0, 1e300]
    var optionalElements: [Int?] = [1, nil, 3]
    var nestedArrays: [[String]] = [["a", "b"], [], ["c"]]
    var stringDictionary: [String: Int] = ["one": 1, "two": 2, "": 0]
    var intDictionary: [Int: String] = [1: "one", -7: "minus seven"]
    var enumDictionary: [Color: Double] = [.red: 1.5]
    var set: Set<Int> = [3, 1, 2]
    var inner = Inner(
        name: "root", values: [1, 2], children: [Inner(name: "leaf", values: [], children: [])])
    var shapes: [Shape] = [
        .point, .circle(radius: 2), .rectangle(width: 3, height: 4), .labeled("x", -1),
        .nested(Inner(name: "n", values: [9], children: [])),
    ]
    var color: Color = .green
    var date = Date(timeIntervalSinceReferenceDate: 736_000_000.123_456_789)
    var dates: [Date] = [Date(timeIntervalSince1970: 0), Date(timeIntervalSinceReferenceDate: -1e-9)]
    var data = Data([0, 1, 2, 255])
    var emptyData = Data()
    var uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
    var url = URL(string: "https://example.com/a%20b?q=1#frag")!
    var decimal = Decimal(string: "12345.6789")!
}

private class Animal: Codable {
    var name: String
    var legs: Int

    init(name: String, legs: Int) {
        self.name = name
        self.legs = legs
    }
}

/// A subclass that keeps the superclass's values under the `super` key.
private final class Dog: Animal, Equatable {
    var breed: String

    private enum CodingKeys: String, CodingKey {
        case breed
    }

    init(name: String, legs: Int, breed: String) {
        self.breed = breed
        super.init(name: name, legs: legs)
    }

    required init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        breed = try container.decode(String.self, forKey: .breed)
        try super.init(from: container.superDecoder())
    }

    override func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(breed, forKey: .breed)
        try super.encode(to: container.superEncoder())
    }

    static func == (lhs: Dog, rhs: Dog) -> Bool {
        lhs.name == rhs.name && lhs.legs == rhs.legs && lhs.breed == rhs.breed
    }
}

/// A subclass that shares its container with the superclass.
private final class Cat: Animal, Equatable {
    var indoor: Bool

    private enum CodingKeys: String, CodingKey {
        case indoor
    }

    init(name: String, legs: Int, indoor: Bool) {
        self.indoor = indoor
        super.init(name: name, legs: legs)
    }

    required init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        indoor = try container.decode(Bool.self, forKey: .indoor)
        try super.init(from: decoder)
    }

    override func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(indoor, forKey: .indoor)
        try super.encode(to: encoder)
    }

    static func == (lhs: Cat, rhs: Cat) -> Bool {
        lhs.name == rhs.name && lhs.legs == rhs.legs && lhs.indoor == rhs.indoor
    }
}

/// Uses nested containers by hand, in order, returning to the parent after each, and an unkeyed `superEncoder`.
private struct HandWritten: Codable, Equatable {
    var title: String
    var point: (x: Int, y: Int)
    var tags: [String]

    private enum CodingKeys: String, CodingKey {
        case title, point, tags, extra
    }

    private enum PointKeys: String, CodingKey {
        case x, y
    }

    init(title: String, point: (x: Int, y: Int), tags: [String]) {
        self.title = title
        self.point = point
        self.tags = tags
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let pointContainer = try container.nestedContainer(keyedBy: PointKeys.self, forKey: .point)
        point = (try pointContainer.decode(Int.self, forKey: .x), try pointContainer.decode(Int.self, forKey: .y))
        title = try container.decode(String.self, forKey: .title)
        var tagsContainer = try container.nestedUnkeyedContainer(forKey: .tags)
        guard tagsContainer.count == 3 else {
            throw DecodingError.dataCorruptedError(in: tagsContainer, debugDescription: "Expected 3 elements.")
        }
        var tags: [String] = []
        tags.append(try tagsContainer.decode(String.self))
        tags.append(try String(from: tagsContainer.superDecoder()))
        var pair = try tagsContainer.nestedUnkeyedContainer()
        tags.append(try pair.decode(String.self))
        self.tags = tags
        guard try container.decodeNil(forKey: .extra) else {
            throw DecodingError.dataCorruptedError(forKey: .extra, in: container, debugDescription: "Expected nil.")
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        var pointContainer = container.nestedContainer(keyedBy: PointKeys.self, forKey: .point)
        try pointContainer.encode(point.x, forKey: .x)
        try pointContainer.encode(point.y, forKey: .y)
        try container.encode(title, forKey: .title)
        var tagsContainer = container.nestedUnkeyedContainer(forKey: .tags)
        try tagsContainer.encode(tags[0])
        try tags[1].encode(to: tagsContainer.superEncoder())
        var pair = tagsContainer.nestedUnkeyedContainer()
        try pair.encode(tags[2])
        try container.encodeNil(forKey: .extra)
    }

    static func == (lhs: HandWritten, rhs: HandWritten) -> Bool {
        lhs.title == rhs.title && lhs.point == rhs.point && lhs.tags == rhs.tags
    }
}

/// Writes into a nested container after a later sibling was opened, which the binary codec cannot represent.
private struct Interleaved: Encodable {
    enum CodingKeys: String, CodingKey {
        case first, second
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        var first = container.nestedUnkeyedContainer(forKey: .first)
        var second = container.nestedUnkeyedContainer(forKey: .second)
        try second.encode(2)
        try first.encode(1)
    }
}

/// Writes into a nested container after writing to its parent again.
private struct WritesAfterParent: Encodable {
    enum CodingKeys: String, CodingKey {
        case nested, after
    }

    enum NestedKeys: String, CodingKey {
        case value
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        var nested = container.nestedContainer(keyedBy: NestedKeys.self, forKey: .nested)
        try container.encode(1, forKey: .after)
        try nested.encode(2, forKey: .value)
    }
}

private struct Wrapper<Value: Codable>: Codable {
    var value: Value
}

/// A tiny seeded generator (SplitMix64), so that randomized tests repeat exactly.
private struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A JSON value to compare JSON texts by meaning rather than by spelling.
private enum JSONValue: Decodable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        if let container = try? decoder.container(keyedBy: AnyKey.self) {
            var object: [String: JSONValue] = [:]
            for key in container.allKeys {
                object[key.stringValue] = try container.decode(JSONValue.self, forKey: key)
            }
            self = .object(object)
        } else if var container = try? decoder.unkeyedContainer() {
            var array: [JSONValue] = []
            while !container.isAtEnd {
                array.append(try container.decode(JSONValue.self))
            }
            self = .array(array)
        } else {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let bool = try? container.decode(Bool.self) {
                self = .bool(bool)
            } else if let number = try? container.decode(Double.self) {
                self = .number(number)
            } else {
                self = .string(try container.decode(String.self))
            }
        }
    }

    init(text: String) throws {
        self = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}

private let codecNames = ["json", "binary"]

private func codec(_ name: String) throws -> any Codec {
    try #require(Codecs.named(name))
}

private func roundTrip<T: Codable>(_ value: T, _ codec: any Codec) throws -> T {
    let bytes = try codec.encode(value)
    return try bytes.withUnsafeBytes { try codec.decode(T.self, from: $0) }
}

private func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8], _ codec: any Codec = BinaryCodec()) throws -> T {
    try bytes.withUnsafeBytes { try codec.decode(type, from: $0) }
}

private func jsonText(_ bytes: [UInt8], codecName: String, prettyPrinted: Bool = false) throws -> String {
    try bytes.withUnsafeBytes { try Codecs.jsonText(from: $0, codecName: codecName, prettyPrinted: prettyPrinted) }
}

// MARK: - Round trips

@Suite("Codecs")
struct CodecTests {
    @Test("Codecs are found by their recorded names", arguments: codecNames)
    func namedCodecs(name: String) throws {
        #expect(try codec(name).name == name)
        #expect(Codecs.named("yaml") == nil)
        func nameOf(_ codec: some Codec) -> String { codec.name }
        #expect(nameOf(.binary) == "binary")
        #expect(nameOf(.json) == "json")
    }

    @Test("Every kind of value round-trips", arguments: codecNames)
    func roundTripsEverything(name: String) throws {
        let value = Everything()
        #expect(try roundTrip(value, codec(name)) == value)
        #expect(try roundTrip([value, value], codec(name)) == [value, value])
    }

    @Test("Top-level values that are not containers round-trip", arguments: codecNames)
    func roundTripsTopLevelValues(name: String) throws {
        let codec = try codec(name)
        #expect(try roundTrip(Int.min, codec) == Int.min)
        #expect(try roundTrip(UInt64.max, codec) == UInt64.max)
        #expect(try roundTrip("", codec) == "")
        #expect(try roundTrip("🌍", codec) == "🌍")
        #expect(try roundTrip(true, codec) == true)
        #expect(try roundTrip(Int?.none, codec) == nil)
        #expect(try roundTrip([Int](), codec) == [])
        #expect(try roundTrip([String: Int](), codec) == [:])
        let date = Date(timeIntervalSinceReferenceDate: 1.000_000_001)
        #expect(try roundTrip(date, codec) == date)
        #expect(try roundTrip(Data([7]), codec) == Data([7]))
        #expect(try roundTrip(Shape.labeled("a", 1), codec) == .labeled("a", 1))
    }

    @Test("Negative zero, infinities and NaN round-trip", arguments: codecNames)
    func roundTripsSpecialFloatingPointValues(name: String) throws {
        let codec = try codec(name)
        let doubles = try roundTrip([-0.0, .infinity, -.infinity, .nan], codec)
        #expect(doubles.count == 4)
        #expect(doubles[0] == 0 && doubles[0].sign == .minus)
        #expect(doubles[1] == .infinity && doubles[2] == -.infinity)
        #expect(doubles[3].isNaN)
        let float = try roundTrip(Wrapper(value: Float.nan), codec).value
        #expect(float.isNaN)
        #expect(try roundTrip(Wrapper(value: -Float.zero), codec).value.sign == .minus)
    }

    @Test("A nil inside an optional under a key reads back as nil, as in JSON", arguments: codecNames)
    func nestedOptionalNil(name: String) throws {
        struct NestedOptional: Codable {
            var value: Int??
        }
        #expect(try roundTrip(NestedOptional(value: .some(nil)), codec(name)).value == nil)
        #expect(try roundTrip(NestedOptional(value: .some(3)), codec(name)).value == .some(3))
    }

    @Test("Classes round-trip with their superclass's values", arguments: codecNames)
    func roundTripsClasses(name: String) throws {
        let codec = try codec(name)
        let dog = Dog(name: "Rex", legs: 4, breed: "Collie")
        #expect(try roundTrip(dog, codec) == dog)
        let cat = Cat(name: "Tom", legs: 3, indoor: true)
        #expect(try roundTrip(cat, codec) == cat)
    }

    @Test("Hand-written nested containers, super coders and counts round-trip", arguments: codecNames)
    func roundTripsHandWrittenContainers(name: String) throws {
        let value = HandWritten(title: "t", point: (x: -1, y: 2), tags: ["a", "b", "c"])
        #expect(try roundTrip(value, codec(name)) == value)
    }

    @Test("Reordered, added and missing optional fields decode", arguments: codecNames)
    func decodesOtherVersionsOfAType(name: String) throws {
        struct Old: Codable {
            var a = 1
            var b = "two"
            var c: [Int] = [3]
            var d: Double? = 4
        }
        struct New: Codable {
            var d: Double?
            var e: String?
            var c: [Int]
            var a: Int
        }
        let codec = try codec(name)
        let bytes = try codec.encode(Old())
        let new = try decode(New.self, bytes, codec)
        #expect(new.a == 1 && new.c == [3] && new.d == 4 && new.e == nil)
    }

    // MARK: Errors

    @Test("A number that does not fit the decoded type throws", arguments: codecNames)
    func integerOverflowThrows(name: String) throws {
        let codec = try codec(name)
        func expectOverflow<Small: Codable, Large: Codable>(_ value: Large, as type: Small.Type) throws {
            let bytes = try codec.encode(Wrapper(value: value))
            #expect(throws: DecodingError.self, "\(value) as \(type)") {
                try decode(Wrapper<Small>.self, bytes, codec)
            }
        }
        try expectOverflow(300, as: UInt8.self)
        try expectOverflow(-129, as: Int8.self)
        try expectOverflow(-1, as: UInt.self)
        try expectOverflow(Int64.max, as: Int32.self)
        try expectOverflow(UInt64.max, as: Int64.self)
        try expectOverflow(UInt64.max, as: Int.self)
        try expectOverflow(1e300, as: Float.self)
        #expect(try decode(Wrapper<UInt8>.self, codec.encode(Wrapper(value: 255)), codec).value == 255)
    }

    @Test("Values of another shape throw the matching DecodingError")
    func shapeErrors() throws {
        let bytes = try BinaryCodec().encode(Wrapper(value: "text"))
        #expect {
            try decode(Wrapper<Int>.self, bytes)
        } throws: { error in
            guard case DecodingError.typeMismatch(_, let context) = error else { return false }
            return context.codingPath.map(\.stringValue) == ["value"]
        }
        struct MaybeValue: Codable {
            var value: Int?
        }
        #expect {
            try decode(Wrapper<[Int]>.self, BinaryCodec().encode(MaybeValue(value: nil)))
        } throws: { error in
            guard case DecodingError.keyNotFound(let key, _) = error else { return false }
            return key.stringValue == "value"
        }
        #expect {
            try decode([Int].self, BinaryCodec().encode([1, nil, 3] as [Int?]))
        } throws: { error in
            guard case DecodingError.valueNotFound(_, let context) = error else { return false }
            return context.codingPath.map(\.stringValue) == ["Index 1"]
        }
    }

    @Test("Errors name the coding path of the failing value")
    func errorCodingPaths() throws {
        struct Loose: Codable {
            var inner: LooseInner
        }
        struct LooseInner: Codable {
            var name = "inner"
            var values: [Double] = []
            var children: [LooseChild]
        }
        struct LooseChild: Codable {
            var name: String?
            var values: [Double]
            var children: [LooseChild] = []
        }
        struct Strict: Codable {
            var inner: Inner
        }
        let loose = Loose(inner: LooseInner(children: [
            LooseChild(name: "a", values: []), LooseChild(name: nil, values: [1]),
        ]))
        let bytes = try BinaryCodec().encode(loose)
        #expect {
            try decode(Strict.self, bytes)
        } throws: { error in
            guard case DecodingError.keyNotFound(let key, let context) = error else { return false }
            return key.stringValue == "name"
                && context.codingPath.map(\.stringValue) == ["inner", "children", "Index 1"]
        }
    }

    @Test("The binary encoder refuses nested containers written out of order, which JSON accepts")
    func outOfOrderContainersThrow() throws {
        for value in [Interleaved() as any Encodable, WritesAfterParent()] {
            #expect(throws: Never.self) { try JSONCodec().encode(value) }
            #expect {
                try BinaryCodec().encode(value)
            } throws: { error in
                guard case EncodingError.invalidValue(_, let context) = error else { return false }
                return context.debugDescription.contains("in order") && context.debugDescription.contains("JSONCodec")
            }
        }
    }

    @Test("Bytes of another format version or with trailing bytes are refused")
    func versionAndTrailingBytes() throws {
        var bytes = try BinaryCodec().encode(Everything())
        bytes.append(0)
        #expect(throws: DecodingError.self) { try decode(Everything.self, bytes) }
        bytes.removeLast()
        bytes[0] = 2
        #expect {
            try decode(Everything.self, bytes)
        } throws: { error in
            guard case DecodingError.dataCorrupted(let context) = error,
                  let cause = context.underlyingError as? CodecError
            else { return false }
            return cause.code == .malformedBytes && cause.offset == 0
        }
        #expect(throws: DecodingError.self) { try decode(Int.self, []) }
    }

    @Test("Invalid UTF-8 in a string is refused")
    func invalidUTF8() throws {
        var bytes = try BinaryCodec().encode("abc")
        bytes[bytes.count - 2] = 0xFF
        #expect(throws: DecodingError.self) { try decode(String.self, bytes) }
        #expect(throws: CodecError.self) { try jsonText(bytes, codecName: "binary") }
    }

    @Test("Truncated, flipped and random bytes throw or decode, never crash")
    func corruptBytes() throws {
        let seed: UInt64 = 0xC0DE_C0DE_2024
        var random = SplitMix64(seed: seed)
        // Each sample with the type it decodes as.
        let samples: [(bytes: [UInt8], type: any Decodable.Type)] = try [
            (BinaryCodec().encode(Everything()), Everything.self),
            (BinaryCodec().encode([Everything(), Everything()]), [Everything].self),
            (BinaryCodec().encode(Dog(name: "a", legs: 1, breed: "b")), Dog.self),
            (BinaryCodec().encode(HandWritten(title: "t", point: (x: 1, y: 2), tags: ["a", "b", "c"])), HandWritten.self),
        ]

        func check(_ bytes: [UInt8], as type: any Decodable.Type, mustFail: Bool, _ what: @autoclosure () -> String) {
            func checkDecoding<T: Decodable>(_ type: T.Type) {
                do {
                    _ = try decode(type, bytes)
                    #expect(!mustFail, "\(what()) decoded as \(type); seed \(seed)")
                } catch is DecodingError {
                } catch {
                    Issue.record("\(what()) threw \(error) rather than a DecodingError; seed \(seed)")
                }
            }
            checkDecoding(type)
            do {
                _ = try jsonText(bytes, codecName: "binary")
                #expect(!mustFail, "\(what()) converted to JSON; seed \(seed)")
            } catch let error as CodecError {
                #expect(error.code == .malformedBytes, "\(what()): \(error); seed \(seed)")
            } catch {
                Issue.record("\(what()) threw \(error) rather than a CodecError; seed \(seed)")
            }
        }

        for (index, sample) in samples.enumerated() {
            for length in 0..<sample.bytes.count {
                check(
                    Array(sample.bytes[..<length]), as: sample.type, mustFail: true,
                    "sample \(index) cut to \(length) bytes")
            }
            for round in 0..<1000 {
                var bytes = sample.bytes
                for _ in 0...Int.random(in: 0..<3, using: &random) {
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                }
                check(bytes, as: sample.type, mustFail: false, "sample \(index), flip round \(round)")
            }
        }
        for round in 0..<1000 {
            let count = Int.random(in: 1...64, using: &random)
            let bytes = [BinaryFormat.version] + (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            check(bytes, as: Everything.self, mustFail: false, "random round \(round)")
        }
    }

    @Test("Values nested too deeply are refused rather than exhausting the stack")
    func deepNesting() throws {
        indirect enum List: Codable {
            case end
            case node(List)
        }
        var list = List.end
        for _ in 0..<600 {
            list = .node(list)
        }
        let bytes = try BinaryCodec().encode(list)
        #expect(throws: DecodingError.self) { try decode(List.self, bytes) }
        #expect(throws: CodecError.self) { try jsonText(bytes, codecName: "binary") }
    }

    // MARK: JSON text

    @Test("JSON text of binary bytes means the same as the JSON codec's text")
    func binaryJSONTextMatchesJSONCodec() throws {
        struct Plain: Codable {
            var int = -5
            var uint64 = UInt64(1) << 40
            var double = 0.1
            var string = "a \"b\" \\ c\n"
            var bool = false
            var optional: Int? = nil
            var array: [Int?] = [1, nil]
            var nested: [[String]] = [["x"], []]
            var dictionary: [String: Double] = ["k": 2.5]
            var intDictionary: [Int: Bool] = [3: true]
            var inner = Inner(name: "i", values: [1.5], children: [])
            var shapes: [Shape] = [.point, .labeled("l", 2), .rectangle(width: 1, height: 2)]
        }
        let fromJSON = try JSONValue(text: String(decoding: JSONCodec().encode(Plain()), as: UTF8.self))
        let binary = try BinaryCodec().encode(Plain())
        #expect(try JSONValue(text: jsonText(binary, codecName: "binary")) == fromJSON)
        #expect(try JSONValue(text: jsonText(binary, codecName: "binary", prettyPrinted: true)) == fromJSON)
    }

    @Test("JSON text of binary bytes keeps stored key order and spells dates, data and non-finite numbers")
    func binaryJSONTextFormats() throws {
        struct Special: Codable {
            var zeta = Date(timeIntervalSince1970: 1_700_000_000.25)
            var alpha = Data([1, 2, 3])
            var numbers: [Double] = [.nan, .infinity, -.infinity, 1]
            var float: Float = 0.1
            var early = Date(timeIntervalSince1970: -62_135_596_800)
        }
        let text = try jsonText(BinaryCodec().encode(Special()), codecName: "binary")
        #expect(text == #"""
            {"zeta":"2023-11-14T22:13:20.250Z","alpha":"AQID","numbers":["nan","inf","-inf",1.0],"float":0.1,\#
            "early":"0001-01-01T00:00:00.000Z"}
            """#)
        let pretty = try jsonText(BinaryCodec().encode(Wrapper(value: [1])), codecName: "binary", prettyPrinted: true)
        #expect(pretty == "{\n  \"value\" : [\n    1\n  ]\n}")
    }

    @Test("JSON text of JSON bytes is the stored text, or re-indented")
    func jsonCodecJSONText() throws {
        let bytes = try JSONCodec().encode(Wrapper(value: ["a": [1, 2], "b": []]))
        let text = try jsonText(bytes, codecName: "json")
        #expect(text == #"{"value":{"a":[1,2],"b":[]}}"#)
        let pretty = try jsonText(bytes, codecName: "json", prettyPrinted: true)
        #expect(pretty == "{\n  \"value\" : {\n    \"a\" : [\n      1,\n      2\n    ],\n    \"b\" : []\n  }\n}")
        #expect(throws: CodecError.self) { try jsonText(Array("{\"a\":".utf8), codecName: "json") }
    }

    @Test("JSON text of an unknown codec throws unknownCodec")
    func unknownCodec() throws {
        #expect {
            try jsonText([1, 0], codecName: "protobuf")
        } throws: { error in
            (error as? CodecError)?.code == .unknownCodec
        }
    }
}
