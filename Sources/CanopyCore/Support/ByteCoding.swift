/// Appends fixed-width integers and length-prefixed strings to a byte array: the one encoding of the store's internal
/// records, public for extensions' own records (a view's pages and commit changes).
public struct ByteWriter {
    /// The bytes written so far.
    public var bytes: [UInt8] = []

    /// An empty writer with room for `capacity` bytes.
    public init(capacity: Int = 64) { bytes.reserveCapacity(capacity) }

    /// Appends 8 bytes, most significant first.
    public mutating func append(bigEndian value: UInt64) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// Appends 4 bytes, most significant first.
    public mutating func append(bigEndian value: UInt32) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// Appends one byte.
    public mutating func append(byte: UInt8) { bytes.append(byte) }

    /// Appends a variable-length integer (``VarInt``).
    public mutating func append(varint value: UInt64) {
        VarInt.append(value, to: &bytes)
    }

    /// Appends a string as its UTF-8 length (a variable-length integer) and bytes.
    public mutating func append(string: String) {
        var s = string
        s.withUTF8 { utf8 in
            append(varint: UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    /// Appends bytes preceded by their length (a variable-length integer).
    public mutating func append(blob: [UInt8]) {
        append(varint: UInt64(blob.count))
        bytes.append(contentsOf: blob)
    }
}

/// Reads what ``ByteWriter`` wrote, bounds-checked: malformed input throws, never traps.
public struct ByteReader {
    /// The bytes read.
    public let buffer: UnsafeRawBufferPointer
    /// Where the next read starts.
    public var offset = 0

    /// A reader of `buffer`, from its start.
    public init(_ buffer: UnsafeRawBufferPointer) { self.buffer = buffer }

    /// Whether every byte was read.
    public var isAtEnd: Bool { offset >= buffer.count }

    /// The bytes end early or hold an impossible value.
    public struct Malformed: Error, Sendable, CustomStringConvertible {
        /// The bytes are malformed at `offset`.
        public init(offset: Int) { self.offset = offset }
        /// Where the bytes are malformed.
        public var offset: Int
        /// A sentence naming the offset.
        public var description: String { "malformed internal record at byte \(offset)" }
    }

    /// Throws ``Malformed`` unless `count` more bytes remain.
    public mutating func need(_ count: Int) throws {
        guard count >= 0, buffer.count - offset >= count else { throw Malformed(offset: offset) }
    }

    /// Reads 8 bytes, most significant first.
    public mutating func readBigEndianUInt64() throws -> UInt64 {
        try need(8)
        defer { offset += 8 }
        return buffer.loadBigEndianUInt64(at: offset)
    }

    /// Reads 4 bytes, most significant first.
    public mutating func readBigEndianUInt32() throws -> UInt32 {
        try need(4)
        defer { offset += 4 }
        return buffer.loadBigEndianUInt32(at: offset)
    }

    /// Reads one byte.
    public mutating func readByte() throws -> UInt8 {
        try need(1)
        defer { offset += 1 }
        return buffer[offset]
    }

    /// Reads a variable-length integer written by ``ByteWriter/append(varint:)`` (``VarInt``).
    public mutating func readVarint() throws -> UInt64 {
        guard let base = buffer.baseAddress else { throw Malformed(offset: offset) }
        do {
            return try VarInt.read(base, at: &offset, limit: buffer.count)
        } catch {
            throw Malformed(offset: error.offset)
        }
    }

    /// Reads a string written by ``ByteWriter/append(string:)``.
    public mutating func readString() throws -> String {
        let length = try readVarint()
        guard length <= UInt64(buffer.count - offset) else { throw Malformed(offset: offset) }
        let count = Int(length)
        defer { offset += count }
        return String(decoding: UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + count)]), as: UTF8.self)
    }

    /// Reads bytes written by ``ByteWriter/append(blob:)``.
    public mutating func readBlob() throws -> [UInt8] {
        let length = try readVarint()
        guard length <= UInt64(buffer.count - offset) else { throw Malformed(offset: offset) }
        let count = Int(length)
        defer { offset += count }
        return Array(buffer[offset..<(offset + count)])
    }
}

extension UnsafeRawBufferPointer {
    /// The 8 bytes at `offset`, most significant first (the caller checked the bounds).
    @inline(__always)
    public func loadBigEndianUInt64(at offset: Int) -> UInt64 {
        UInt64(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// The 4 bytes at `offset`, most significant first (the caller checked the bounds).
    @inline(__always)
    public func loadBigEndianUInt32(at offset: Int) -> UInt32 {
        UInt32(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }
}
