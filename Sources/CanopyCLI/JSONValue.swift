/// A JSON value, as `canopy` prints and reads it: key order is kept, numbers keep their text (so that an integer
/// stays an integer and a double keeps its digits), and `raw` embeds JSON text produced elsewhere (a stored object
/// converted by its codec) without parsing it again.
public indirect enum JSONValue: Sendable, Equatable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number, as its JSON text.
    case number(String)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object, members in order.
    case object([Member])
    /// JSON text, written as it is.
    case raw(String)

    /// One member of an object.
    public struct Member: Sendable, Equatable {
        /// The key.
        public var key: String
        /// The value.
        public var value: JSONValue
        /// Creates a member.
        public init(_ key: String, _ value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    /// An integer.
    public static func int(_ value: some BinaryInteger) -> JSONValue { .number(String(value)) }

    /// An object from key-value pairs, in order; `nil` values are left out.
    public static func members(_ pairs: [(String, JSONValue?)]) -> JSONValue {
        .object(pairs.compactMap { key, value in value.map { Member(key, $0) } })
    }

    /// The member `key` of an object, or `nil`.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// The string, when this is a string.
    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// Compact JSON text (one line).
    public var text: String {
        var out = ""
        write(into: &out, indent: nil, level: 0)
        return out
    }

    /// JSON text indented by two spaces a level.
    public var prettyText: String {
        var out = ""
        write(into: &out, indent: "  ", level: 0)
        return out
    }

    func write(into out: inout String, indent: String?, level: Int) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .number(let text): out += text
        case .string(let text): Self.writeString(text, into: &out)
        case .raw(let text): out += text
        case .array(let elements):
            guard !elements.isEmpty else { out += "[]"; return }
            out += "["
            for (i, element) in elements.enumerated() {
                if i > 0 { out += "," }
                if let indent { out += "\n" + String(repeating: indent, count: level + 1) }
                element.write(into: &out, indent: indent, level: level + 1)
            }
            if let indent { out += "\n" + String(repeating: indent, count: level) }
            out += "]"
        case .object(let members):
            guard !members.isEmpty else { out += "{}"; return }
            out += "{"
            for (i, member) in members.enumerated() {
                if i > 0 { out += "," }
                if let indent { out += "\n" + String(repeating: indent, count: level + 1) }
                Self.writeString(member.key, into: &out)
                out += indent == nil ? ":" : ": "
                member.value.write(into: &out, indent: indent, level: level + 1)
            }
            if let indent { out += "\n" + String(repeating: indent, count: level) }
            out += "}"
        }
    }

    static func writeString(_ text: String, into out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

// MARK: Parsing

/// A JSON syntax error, with the byte offset where it was found.
public struct JSONSyntaxError: Error, CustomStringConvertible {
    /// What is wrong.
    public var message: String
    /// The byte offset in the text.
    public var offset: Int
    /// The message and offset.
    public var description: String { "\(message) at byte \(offset)" }
}

extension JSONValue {
    /// Parses JSON text (RFC 8259), keeping member order and number text.
    /// - Throws: ``JSONSyntaxError``.
    public static func parse(_ text: String) throws -> JSONValue {
        var parser = JSONParser(bytes: Array(text.utf8))
        parser.skipSpace()
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.offset == parser.bytes.count else { throw parser.error("unexpected text after the value") }
        return value
    }
}

struct JSONParser {
    let bytes: [UInt8]
    var offset = 0

    func error(_ message: String) -> JSONSyntaxError { JSONSyntaxError(message: message, offset: offset) }

    mutating func skipSpace() {
        while offset < bytes.count, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[offset]) { offset += 1 }
    }

    mutating func expect(_ literal: String) throws {
        let utf8 = Array(literal.utf8)
        guard offset + utf8.count <= bytes.count, Array(bytes[offset..<offset + utf8.count]) == utf8 else {
            throw error("expected '\(literal)'")
        }
        offset += utf8.count
    }

    mutating func value(depth: Int) throws -> JSONValue {
        guard depth < 512 else { throw error("values nest deeper than 512 levels") }
        guard offset < bytes.count else { throw error("unexpected end of text") }
        switch bytes[offset] {
        case UInt8(ascii: "n"): try expect("null"); return .null
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "["):
            offset += 1
            var elements: [JSONValue] = []
            skipSpace()
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "]") { offset += 1; return .array([]) }
            while true {
                skipSpace()
                elements.append(try value(depth: depth + 1))
                skipSpace()
                guard offset < bytes.count else { throw error("unterminated array") }
                if bytes[offset] == UInt8(ascii: ",") { offset += 1; continue }
                if bytes[offset] == UInt8(ascii: "]") { offset += 1; return .array(elements) }
                throw error("expected ',' or ']'")
            }
        case UInt8(ascii: "{"):
            offset += 1
            var members: [JSONValue.Member] = []
            skipSpace()
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "}") { offset += 1; return .object([]) }
            while true {
                skipSpace()
                guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else { throw error("expected a member name") }
                let key = try string()
                skipSpace()
                try expect(":")
                skipSpace()
                members.append(JSONValue.Member(key, try value(depth: depth + 1)))
                skipSpace()
                guard offset < bytes.count else { throw error("unterminated object") }
                if bytes[offset] == UInt8(ascii: ",") { offset += 1; continue }
                if bytes[offset] == UInt8(ascii: "}") { offset += 1; return .object(members) }
                throw error("expected ',' or '}'")
            }
        default:
            return .number(try number())
        }
    }

    mutating func number() throws -> String {
        let start = offset
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "-") { offset += 1 }
        var digits = 0
        while offset < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[offset]) { offset += 1; digits += 1 }
        guard digits > 0 else { offset = start; throw error("expected a value") }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: ".") {
            offset += 1
            var fraction = 0
            while offset < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[offset]) { offset += 1; fraction += 1 }
            guard fraction > 0 else { throw error("expected digits after '.'") }
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "e") || bytes[offset] == UInt8(ascii: "E") {
            offset += 1
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-") { offset += 1 }
            var exponent = 0
            while offset < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[offset]) { offset += 1; exponent += 1 }
            guard exponent > 0 else { throw error("expected digits in the exponent") }
        }
        return String(decoding: bytes[start..<offset], as: UTF8.self)
    }

    mutating func string() throws -> String {
        offset += 1  // the opening quote
        var scalars = String.UnicodeScalarView()
        var run = offset
        func flush(_ end: Int) { scalars.append(contentsOf: String(decoding: bytes[run..<end], as: UTF8.self).unicodeScalars) }
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte == UInt8(ascii: "\"") {
                flush(offset)
                offset += 1
                return String(scalars)
            }
            if byte < 0x20 { throw error("control character in a string") }
            if byte == UInt8(ascii: "\\") {
                flush(offset)
                offset += 1
                guard offset < bytes.count else { break }
                let escape = bytes[offset]
                offset += 1
                switch escape {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800..<0xDC00).contains(code) {
                        try expect("\\u")
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw error("invalid \\u escape") }
                    scalars.append(scalar)
                default: throw error("invalid escape")
                }
                run = offset
                continue
            }
            offset += 1
        }
        throw error("unterminated string")
    }

    mutating func hex4() throws -> UInt32 {
        guard offset + 4 <= bytes.count, let value = UInt32(String(decoding: bytes[offset..<offset + 4], as: UTF8.self), radix: 16) else {
            throw error("expected four hex digits")
        }
        offset += 4
        return value
    }
}

// MARK: Encoding through a codec

extension JSONValue: Encodable {
    /// Encodes the value through any `Encoder` (so that a codec can store JSON read from a file): integers as
    /// `Int64` (or `UInt64` beyond it), other numbers as `Double`, objects as keyed containers in member order.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .bool(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .number(let text):
            var container = encoder.singleValueContainer()
            if let integer = Int64(text) {
                try container.encode(integer)
            } else if let integer = UInt64(text) {
                try container.encode(integer)
            } else if let double = Double(text) {
                try container.encode(double)
            } else {
                throw EncodingError.invalidValue(text, .init(codingPath: encoder.codingPath, debugDescription: "not a number"))
            }
        case .string(let text):
            var container = encoder.singleValueContainer()
            try container.encode(text)
        case .array(let elements):
            var container = encoder.unkeyedContainer()
            for element in elements { try container.encode(element) }
        case .object(let members):
            var container = encoder.container(keyedBy: DynamicKey.self)
            for member in members { try container.encode(member.value, forKey: DynamicKey(member.key)) }
        case .raw(let text):
            try JSONValue.parse(text).encode(to: encoder)
        }
    }

    struct DynamicKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
