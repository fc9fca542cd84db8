import Foundation

/// A fault found while reading binary-format bytes, before the coding path is known.
enum BinaryReadError: Error {
    case malformed(String, offset: Int)
    case typeMismatch(found: UInt8, offset: Int)
    case valueNotFound(offset: Int)
    case outOfRange(String, offset: Int)

    /// The `DecodingError` a decoder throws for this fault.
    func decodingError(type: Any.Type, codingPath: [any CodingKey]) -> DecodingError {
        switch self {
        case .malformed(let message, let offset):
            let cause = CodecError(code: .malformedBytes, message: message, offset: offset)
            return .dataCorrupted(.init(
                codingPath: codingPath,
                debugDescription: "The binary bytes are corrupt at byte \(offset): \(message)",
                underlyingError: cause))
        case .typeMismatch(let tag, let offset):
            return .typeMismatch(type, .init(
                codingPath: codingPath,
                debugDescription: "Expected \(type) but found \(BinaryFormat.Tag.describe(tag)) at byte \(offset)."))
        case .valueNotFound(let offset):
            return .valueNotFound(type, .init(
                codingPath: codingPath,
                debugDescription: "Expected \(type) but found nil at byte \(offset)."))
        case .outOfRange(let number, let offset):
            return .dataCorrupted(.init(
                codingPath: codingPath,
                debugDescription: "The number \(number) at byte \(offset) does not fit in \(type)."))
        }
    }

    /// The fault as a ``CodecError``, for conversions that have no coding path.
    var codecError: CodecError {
        switch self {
        case .malformed(let message, let offset):
            CodecError(code: .malformedBytes, message: message, offset: offset)
        case .typeMismatch(let tag, let offset):
            CodecError(code: .malformedBytes, message: "Unexpected \(BinaryFormat.Tag.describe(tag)).", offset: offset)
        case .valueNotFound(let offset):
            CodecError(code: .malformedBytes, message: "Unexpected nil.", offset: offset)
        case .outOfRange(let number, let offset):
            CodecError(code: .malformedBytes, message: "The number \(number) is out of range.", offset: offset)
        }
    }
}

/// Bounds-checked reads of binary-format bytes in place.
///
/// Every read takes a `limit`, the end of the enclosing container, which is never beyond the end of the bytes; a
/// read that would cross it throws ``BinaryReadError/malformed(_:offset:)``.
struct BinaryReader {
    private typealias Tag = BinaryFormat.Tag

    /// The start of the bytes; only `nil` when `count` is 0, in which case every read fails its bounds check first.
    private let base: UnsafeRawPointer?
    let count: Int

    init(_ bytes: UnsafeRawBufferPointer) {
        base = bytes.baseAddress
        count = bytes.count
    }

    @inline(__always)
    private func load(_ offset: Int) -> UInt8 {
        base.unsafelyUnwrapped.load(fromByteOffset: offset, as: UInt8.self)
    }

    @inline(__always)
    private func truncated(_ offset: Int) -> BinaryReadError {
        .malformed("The value is truncated.", offset: offset)
    }

    /// Checks the version byte and that the root value ends exactly at the end of the bytes.
    ///
    /// - Returns: The end of the root value (the byte count).
    func checkedRoot() throws(BinaryReadError) -> Int {
        guard count > BinaryFormat.headerSize else {
            throw .malformed("Expected a version byte and a value, found \(count) bytes.", offset: 0)
        }
        let version = load(0)
        guard version == BinaryFormat.version else {
            throw .malformed(
                "Unsupported binary format version \(version); this build reads version \(BinaryFormat.version).",
                offset: 0)
        }
        let end = try skip(at: BinaryFormat.headerSize, limit: count)
        guard end == count else {
            throw .malformed("\(count - end) bytes follow the value.", offset: end)
        }
        return end
    }

    @inline(__always)
    func tag(at offset: Int, limit: Int) throws(BinaryReadError) -> UInt8 {
        guard offset < limit else { throw truncated(offset) }
        return load(offset)
    }

    /// Whether the tag at `offset`, which must be before the end of the bytes, is nil.
    @inline(__always)
    func isNull(at offset: Int) -> Bool {
        offset < count && load(offset) == BinaryFormat.Tag.null
    }

    @inline(__always)
    func varint(_ offset: inout Int, limit: Int) throws(BinaryReadError) -> UInt64 {
        guard offset < limit else { throw truncated(offset) }
        do {
            return try VarInt.read(base.unsafelyUnwrapped, at: &offset, limit: limit)
        } catch {
            throw error.isOverflow ? .malformed("A varint overflows 64 bits.", offset: error.offset) : truncated(error.offset)
        }
    }

    /// Reads a varint byte count and checks that that many bytes follow before `limit`.
    @inline(__always)
    func length(_ offset: inout Int, limit: Int) throws(BinaryReadError) -> Int {
        let start = offset
        let length = try varint(&offset, limit: limit)
        guard length <= UInt64(limit - offset) else {
            throw .malformed("A length of \(length) bytes runs past the end of its container.", offset: start)
        }
        return Int(length)
    }

    @inline(__always)
    func fixed32(_ offset: inout Int, limit: Int) throws(BinaryReadError) -> UInt32 {
        guard limit - offset >= 4 else { throw truncated(offset) }
        let value = base.unsafelyUnwrapped.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
        offset += 4
        return UInt32(littleEndian: value)
    }

    @inline(__always)
    func fixed64(_ offset: inout Int, limit: Int) throws(BinaryReadError) -> UInt64 {
        guard limit - offset >= 8 else { throw truncated(offset) }
        let value = base.unsafelyUnwrapped.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        offset += 8
        return UInt64(littleEndian: value)
    }

    /// The payload range of the container whose tag is at `offset`, checked to end before `limit`.
    @inline(__always)
    func containerPayload(at offset: Int, limit: Int) throws(BinaryReadError) -> (start: Int, end: Int) {
        var position = offset + 1
        let size = try fixed32(&position, limit: limit)
        guard UInt64(size) <= UInt64(limit - position) else {
            throw .malformed("A container of \(size) bytes runs past the end of its parent.", offset: offset)
        }
        return (position, position + Int(size))
    }

    /// The end of the value at `offset`, found without reading nested values.
    func skip(at offset: Int, limit: Int) throws(BinaryReadError) -> Int {
        let tag = try tag(at: offset, limit: limit)
        var position = offset + 1
        switch tag {
        case Tag.null, Tag.false, Tag.true:
            return position
        case Tag.int, Tag.uint:
            _ = try varint(&position, limit: limit)
            return position
        case Tag.float:
            guard limit - position >= 4 else { throw truncated(position) }
            return position + 4
        case Tag.double, Tag.date:
            guard limit - position >= 8 else { throw truncated(position) }
            return position + 8
        case Tag.string, Tag.bytes:
            let length = try length(&position, limit: limit)
            return position + length
        case Tag.array, Tag.map:
            return try containerPayload(at: offset, limit: limit).end
        default:
            throw .malformed("Unknown tag \(tag).", offset: offset)
        }
    }

    // MARK: Values

    @inline(__always)
    func readBool(_ offset: inout Int, limit: Int) throws(BinaryReadError) -> Bool {
        let tag = try tag(at: offset, limit: limit)
        switch tag {
        case Tag.true: offset += 1; return true
        case Tag.false: offset += 1; return false
        default: throw mismatch(tag, at: offset)
        }
    }

    @inline(__always)
    func readInteger<I: FixedWidthInteger>(_: I.Type, _ offset: inout Int, limit: Int) throws(BinaryReadError) -> I {
        let start = offset
        let tag = try tag(at: offset, limit: limit)
        offset += 1
        switch tag {
        case Tag.int:
            let value = BinaryFormat.unzigzag(try varint(&offset, limit: limit))
            guard let result = I(exactly: value) else { throw .outOfRange("\(value)", offset: start) }
            return result
        case Tag.uint:
            let value = try varint(&offset, limit: limit)
            guard let result = I(exactly: value) else { throw .outOfRange("\(value)", offset: start) }
            return result
        default:
            throw mismatch(tag, at: start)
        }
    }

    @inline(__always)
    func readDouble(_ offset: inout Int, limit: Int) throws(BinaryReadError) -> Double {
        let start = offset
        let tag = try tag(at: offset, limit: limit)
        offset += 1
        switch tag {
        case Tag.double:
            return Double(bitPattern: try fixed64(&offset, limit: limit))
        case Tag.float:
            return Double(Float(bitPattern: try fixed32(&offset, limit: limit)))
        case Tag.int:
            return Double(BinaryFormat.unzigzag(try varint(&offset, limit: limit)))
        case Tag.uint:
            return Double(try varint(&offset, limit: limit))
        default:
            throw mismatch(tag, at: start)
        }
    }

    @inline(__always)
    func readFloat(_ offset: inout Int, limit: Int) throws(BinaryReadError) -> Float {
        let start = offset
        let tag = try tag(at: offset, limit: limit)
        if tag == Tag.float {
            offset += 1
            return Float(bitPattern: try fixed32(&offset, limit: limit))
        }
        // Like JSONDecoder: a wider number is accepted when it is within Float's range, rounding if need be.
        let value = try readDouble(&offset, limit: limit)
        let result = Float(value)
        guard result.isFinite || !value.isFinite else { throw .outOfRange("\(value)", offset: start) }
        return result
    }

    @inline(__always)
    func readString(_ offset: inout Int, limit: Int) throws(BinaryReadError) -> String {
        let start = offset
        let tag = try tag(at: offset, limit: limit)
        guard tag == Tag.string else { throw mismatch(tag, at: offset) }
        offset += 1
        return try utf8String(&offset, limit: limit, start: start)
    }

    /// Reads a varint byte count and that many bytes of UTF-8, which must be valid.
    @inline(__always)
    func utf8String(_ offset: inout Int, limit: Int, start: Int) throws(BinaryReadError) -> String {
        let length = try length(&offset, limit: limit)
        guard let string = Self.validUTF8String(base.unsafelyUnwrapped + offset, count: length) else {
            throw .malformed("A string is not valid UTF-8.", offset: start)
        }
        offset += length
        return string
    }

    /// The string of the `count` bytes at `start`, or `nil` when they are not valid UTF-8: the one place where the
    /// binary codec makes a string of stored bytes (both decode paths and the conversions without types use it).
    ///
    /// ASCII is valid as it is (checked a word at a time); a string of it that fits in a small string (15 bytes) is
    /// made from its bytes (``SmallASCIIString``), without a second look at them. Other bytes go through
    /// `String(decoding:)`, which replaces invalid UTF-8 with U+FFFD, so they were valid exactly when the string's UTF-8
    /// is the same bytes.
    /// (`String(validating:)` is several times slower: it is generic over the encoding.)
    @inline(__always)
    static func validUTF8String(_ start: UnsafeRawPointer, count: Int) -> String? {
        if count == 0 { return "" }
        if isASCII(start, count: count) {
            if count <= SmallASCIIString.maximumCount {
                // A small string: made from its bytes where that is exactly the standard library's string, else by
                // `String(unsafeUninitializedCapacity:)`, which takes ASCII without validating it again.
                if SmallASCIIString.isExact { return SmallASCIIString.make(start, count: count) }
                return String(unsafeUninitializedCapacity: count) { buffer in
                    let destination = UnsafeMutableRawPointer(buffer.baseAddress.unsafelyUnwrapped)
                    if count >= 8 {
                        // Two words, the second overlapping the first: no call to `memcpy`.
                        destination.storeBytes(of: start.loadUnaligned(as: UInt64.self), as: UInt64.self)
                        destination.storeBytes(of: start.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self),
                                               toByteOffset: count &- 8, as: UInt64.self)
                    } else {
                        destination.copyMemory(from: start, byteCount: count)
                    }
                    return count
                }
            }
            // Longer: one allocation either way, and `String(decoding:)` copies and checks ASCII in fewer instructions.
            return String(decoding: UnsafeBufferPointer(start: start.assumingMemoryBound(to: UInt8.self), count: count), as: UTF8.self)
        }
        var string = String(decoding: UnsafeBufferPointer(start: start.assumingMemoryBound(to: UInt8.self), count: count), as: UTF8.self)
        let same = string.withUTF8 { utf8 in utf8.count == count && memcmp(start, utf8.baseAddress.unsafelyUnwrapped, count) == 0 }
        return same ? string : nil
    }

    /// Whether the `count` (> 0) bytes at `start` are all ASCII: words of 8 (the last one overlapping the one before
    /// it), else of 4, else bytes; never a load outside the bytes.
    @inline(__always)
    static func isASCII(_ start: UnsafeRawPointer, count: Int) -> Bool {
        var highBits: UInt64 = 0
        if count >= 8 {
            var index = 0
            while index &+ 8 <= count {
                highBits |= start.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                index &+= 8
            }
            highBits |= start.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
        } else if count >= 4 {
            highBits = UInt64(start.loadUnaligned(as: UInt32.self)) | UInt64(start.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self))
        } else {
            for index in 0..<count { highBits |= UInt64(start.load(fromByteOffset: index, as: UInt8.self)) }
        }
        return highBits & 0x8080_8080_8080_8080 == 0
    }

    /// Whether the `length` bytes at `offset` are the UTF-8 of `string`.
    @inline(__always)
    func bytes(at offset: Int, length: Int, equal string: inout String) -> Bool {
        string.withUTF8 { utf8 in
            guard utf8.count == length else { return false }
            guard length > 0 else { return true }
            return memcmp(base.unsafelyUnwrapped + offset, utf8.baseAddress!, length) == 0
        }
    }

    func readData(_ offset: inout Int, limit: Int) throws(BinaryReadError) -> Data {
        let tag = try tag(at: offset, limit: limit)
        guard tag == Tag.bytes else { throw mismatch(tag, at: offset) }
        offset += 1
        let length = try length(&offset, limit: limit)
        guard length > 0 else { return Data() }
        let data = Data(bytes: base.unsafelyUnwrapped + offset, count: length)
        offset += length
        return data
    }

    func readDate(_ offset: inout Int, limit: Int) throws(BinaryReadError) -> Date {
        let tag = try tag(at: offset, limit: limit)
        // A Date encoded through its own Codable (a Double of seconds since 2001) reads back too.
        guard tag == Tag.date || tag == Tag.double else { throw mismatch(tag, at: offset) }
        offset += 1
        return Date(timeIntervalSinceReferenceDate: Double(bitPattern: try fixed64(&offset, limit: limit)))
    }

    @inline(__always)
    func mismatch(_ tag: UInt8, at offset: Int) -> BinaryReadError {
        switch tag {
        case Tag.null: .valueNotFound(offset: offset)
        case Tag.false...Tag.map: .typeMismatch(found: tag, offset: offset)
        default: .malformed("Unknown tag \(tag).", offset: offset)
        }
    }
}

/// Types the binary decoder reads directly, without their `Decodable` implementations.
protocol BinaryReadable {
    static func read(from reader: BinaryReader, _ offset: inout Int, limit: Int) throws(BinaryReadError) -> Self
}

extension Bool: BinaryReadable {
    @inline(__always)
    static func read(from reader: BinaryReader, _ offset: inout Int, limit: Int) throws(BinaryReadError) -> Bool {
        try reader.readBool(&offset, limit: limit)
    }
}

extension String: BinaryReadable {
    @inline(__always)
    static func read(from reader: BinaryReader, _ offset: inout Int, limit: Int) throws(BinaryReadError) -> String {
        try reader.readString(&offset, limit: limit)
    }
}

extension Double: BinaryReadable {
    @inline(__always)
    static func read(from reader: BinaryReader, _ offset: inout Int, limit: Int) throws(BinaryReadError) -> Double {
        try reader.readDouble(&offset, limit: limit)
    }
}

extension Float: BinaryReadable {
    @inline(__always)
    static func read(from reader: BinaryReader, _ offset: inout Int, limit: Int) throws(BinaryReadError) -> Float {
        try reader.readFloat(&offset, limit: limit)
    }
}

extension Date: BinaryReadable {
    static func read(from reader: BinaryReader, _ offset: inout Int, limit: Int) throws(BinaryReadError) -> Date {
        try reader.readDate(&offset, limit: limit)
    }
}

extension Data: BinaryReadable {
    static func read(from reader: BinaryReader, _ offset: inout Int, limit: Int) throws(BinaryReadError) -> Data {
        try reader.readData(&offset, limit: limit)
    }
}

/// Integers read from either integer tag, checked against the type's range.
protocol BinaryReadableInteger: BinaryReadable, FixedWidthInteger {}

extension BinaryReadableInteger {
    @inline(__always)
    static func read(from reader: BinaryReader, _ offset: inout Int, limit: Int) throws(BinaryReadError) -> Self {
        try reader.readInteger(Self.self, &offset, limit: limit)
    }
}

extension Int: BinaryReadableInteger {}
extension Int8: BinaryReadableInteger {}
extension Int16: BinaryReadableInteger {}
extension Int32: BinaryReadableInteger {}
extension Int64: BinaryReadableInteger {}
extension UInt: BinaryReadableInteger {}
extension UInt8: BinaryReadableInteger {}
extension UInt16: BinaryReadableInteger {}
extension UInt32: BinaryReadableInteger {}
extension UInt64: BinaryReadableInteger {}
