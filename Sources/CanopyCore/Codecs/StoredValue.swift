import Foundation

/// A stored value read without the app's types: a tree of nulls, Booleans, numbers, strings, bytes, dates, arrays and
/// objects, as the collection's codec wrote it.
///
/// Untyped migration steps (``MigrationStep/transform(_:collection:_:)`` and the steps built on it) read each row as a
/// `StoredValue`, change it, and write it back with the same codec. With ``BinaryCodec`` the round trip is exact:
/// every tag is kept (a `Date` stays a date, `Data` stays bytes, a `Float` stays a `Float`) and object keys keep their
/// stored order. With ``JSONCodec`` a date is the number of seconds since 2001 its `Codable` wrote, and bytes are a
/// base64 string, exactly as stored.
///
/// ```swift
/// var value: StoredValue = .object([.init(key: "title", value: .string("Buy milk"))])
/// value["done"] = .bool(false)           // add a key
/// value["title"] = nil                   // remove a key
/// ```
public enum StoredValue: Hashable, Sendable {
    /// A null (`nil` in Swift).
    case null
    /// A Boolean.
    case bool(Bool)
    /// A signed integer (any of Swift's integer types decodes from it when the value fits).
    case int(Int64)
    /// An unsigned integer too large for `Int64`, or one a `UInt` wrote.
    case unsigned(UInt64)
    /// A `Double`.
    case double(Double)
    /// A `Float` (the binary codec keeps its width).
    case float(Float)
    /// A string.
    case string(String)
    /// Bytes (`Data`).
    case data(Data)
    /// A `Date`.
    case date(Date)
    /// An array (an unkeyed container).
    case array([StoredValue])
    /// An object (a keyed container), its keys in stored order.
    case object([Member])

    /// One key and its value in an ``StoredValue/object(_:)``.
    public struct Member: Hashable, Sendable {
        /// The key.
        public var key: String
        /// The value.
        public var value: StoredValue
        /// Creates a member.
        public init(key: String, value: StoredValue) {
            self.key = key
            self.value = value
        }
    }

    /// The value under `key` of an object (`nil` when absent, or when this is not an object). Setting a value replaces
    /// the key's value in place or appends the key; setting `nil` removes the key; setting on a value that is not an
    /// object does nothing.
    public subscript(key: String) -> StoredValue? {
        get {
            guard case .object(let members) = self else { return nil }
            return members.first { $0.key == key }?.value
        }
        set {
            guard case .object(var members) = self else { return }
            if let index = members.firstIndex(where: { $0.key == key }) {
                if let newValue { members[index].value = newValue } else { members.remove(at: index) }
            } else if let newValue {
                members.append(Member(key: key, value: newValue))
            }
            self = .object(members)
        }
    }

    /// The keys of an object in stored order (empty for any other value).
    public var keys: [String] {
        guard case .object(let members) = self else { return [] }
        return members.map(\.key)
    }

    /// Reads stored bytes without the app's types.
    ///
    /// - Parameters:
    ///   - bytes: The bytes as the codec wrote them.
    ///   - codecName: The codec recorded for the collection: "binary" or "json".
    /// - Throws: ``CodecError`` with code ``CodecError/Code/unknownCodec`` for another codec, or
    ///   ``CodecError/Code/malformedBytes`` for bytes that do not parse.
    public init(decoding bytes: UnsafeRawBufferPointer, codecName: String) throws {
        switch codecName {
        case BinaryCodec.codecName:
            let reader = BinaryReader(bytes)
            do throws(BinaryReadError) {
                let end = try reader.checkedRoot()
                var offset = BinaryFormat.headerSize
                self = try Self.read(reader, &offset, limit: end, depth: 0)
            } catch {
                throw error.codecError
            }
        case JSONCodec.codecName:
            do {
                self = try JSONDecoder().decode(StoredValue.self, from: Data(bytes))
            } catch {
                throw CodecError(code: .malformedBytes, message: "The bytes are not JSON text: \(error)")
            }
        default:
            throw CodecError(code: .unknownCodec, message: "No built-in codec is named \"\(codecName)\"; the built-in codecs are \"json\" and \"binary\".")
        }
    }

    /// The value encoded by the named codec.
    ///
    /// - Throws: ``CodecError`` with code ``CodecError/Code/unknownCodec`` for a codec that is not built in; what the
    ///   codec throws.
    public func encoded(codecName: String) throws -> [UInt8] {
        guard let codec = Codecs.named(codecName) else {
            throw CodecError(code: .unknownCodec, message: "No built-in codec is named \"\(codecName)\"; the built-in codecs are \"json\" and \"binary\".")
        }
        return try codec.encode(self)
    }

    private static func read(_ reader: BinaryReader, _ offset: inout Int, limit: Int, depth: Int) throws(BinaryReadError) -> StoredValue {
        typealias Tag = BinaryFormat.Tag
        let start = offset
        let tag = try reader.tag(at: offset, limit: limit)
        switch tag {
        case Tag.null:
            offset += 1
            return .null
        case Tag.false, Tag.true:
            offset += 1
            return .bool(tag == Tag.true)
        case Tag.int:
            return .int(try reader.readInteger(Int64.self, &offset, limit: limit))
        case Tag.uint:
            return .unsigned(try reader.readInteger(UInt64.self, &offset, limit: limit))
        case Tag.float:
            return .float(try reader.readFloat(&offset, limit: limit))
        case Tag.double:
            return .double(try reader.readDouble(&offset, limit: limit))
        case Tag.string:
            return .string(try reader.readString(&offset, limit: limit))
        case Tag.bytes:
            return .data(try reader.readData(&offset, limit: limit))
        case Tag.date:
            return .date(try reader.readDate(&offset, limit: limit))
        case Tag.array, Tag.map:
            guard depth < BinaryFormat.maximumDepth else {
                throw .malformed("Containers nest deeper than \(BinaryFormat.maximumDepth) levels.", offset: start)
            }
            let payload = try reader.containerPayload(at: offset, limit: limit)
            var position = payload.start
            defer { offset = payload.end }
            if tag == Tag.array {
                var items: [StoredValue] = []
                while position < payload.end {
                    items.append(try read(reader, &position, limit: payload.end, depth: depth + 1))
                }
                return .array(items)
            }
            var members: [Member] = []
            while position < payload.end {
                let entry = position
                let key = try reader.utf8String(&position, limit: payload.end, start: entry)
                members.append(Member(key: key, value: try read(reader, &position, limit: payload.end, depth: depth + 1)))
            }
            return .object(members)
        default:
            throw .malformed("Unknown tag \(tag).", offset: offset)
        }
    }
}

extension StoredValue: Codable {
    private struct MemberKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Writes the value through any encoder: dates as `Date`, bytes as `Data`, objects with their keys in order.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .object(let members):
            var container = encoder.container(keyedBy: MemberKey.self)
            for member in members { try container.encode(member.value, forKey: MemberKey(stringValue: member.key)) }
        case .array(let items):
            var container = encoder.unkeyedContainer()
            for item in items { try container.encode(item) }
        default:
            var container = encoder.singleValueContainer()
            switch self {
            case .null: try container.encodeNil()
            case .bool(let value): try container.encode(value)
            case .int(let value): try container.encode(value)
            case .unsigned(let value): try container.encode(value)
            case .double(let value): try container.encode(value)
            case .float(let value): try container.encode(value)
            case .string(let value): try container.encode(value)
            case .data(let value): try container.encode(value)
            case .date(let value): try container.encode(value)
            case .object, .array: break
            }
        }
    }

    /// Reads a value from a decoder that holds JSON-shaped data (the JSON codec): numbers become `.int`, `.unsigned`
    /// or `.double`, objects keep their keys sorted. Bytes of the binary codec are read by
    /// ``init(decoding:codecName:)`` instead, which keeps every tag.
    public init(from decoder: any Decoder) throws {
        if let container = try? decoder.container(keyedBy: MemberKey.self) {
            var members: [Member] = []
            for key in container.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) {
                members.append(Member(key: key.stringValue, value: try container.decode(StoredValue.self, forKey: key)))
            }
            self = .object(members)
            return
        }
        if var container = try? decoder.unkeyedContainer() {
            var items: [StoredValue] = []
            while !container.isAtEnd { items.append(try container.decode(StoredValue.self)) }
            self = .array(items)
            return
        }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(UInt64.self) {
            self = .unsigned(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else {
            self = .string(try container.decode(String.self))
        }
    }
}
