/// Appends fixed-width integers and length-prefixed strings to a byte array (the store's internal records).
package struct ByteWriter {
    package var bytes: [UInt8] = []

    package init(capacity: Int = 64) { bytes.reserveCapacity(capacity) }

    package mutating func append(bigEndian value: UInt64) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    package mutating func append(bigEndian value: UInt32) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    package mutating func append(byte: UInt8) { bytes.append(byte) }

    package mutating func append(varint value: UInt64) {
        VarInt.append(value, to: &bytes)
    }

    package mutating func append(string: String) {
        var s = string
        s.withUTF8 { utf8 in
            append(varint: UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    package mutating func append(blob: [UInt8]) {
        append(varint: UInt64(blob.count))
        bytes.append(contentsOf: blob)
    }
}

/// Reads what ``ByteWriter`` wrote, bounds-checked: malformed input throws, never traps.
package struct ByteReader {
    package let buffer: UnsafeRawBufferPointer
    package var offset = 0

    package init(_ buffer: UnsafeRawBufferPointer) { self.buffer = buffer }

    package var isAtEnd: Bool { offset >= buffer.count }

    package struct Malformed: Error, Sendable, CustomStringConvertible {
        package init(offset: Int) { self.offset = offset }
        package var offset: Int
        package var description: String { "malformed internal record at byte \(offset)" }
    }

    package mutating func need(_ count: Int) throws {
        guard count >= 0, buffer.count - offset >= count else { throw Malformed(offset: offset) }
    }

    package mutating func readBigEndianUInt64() throws -> UInt64 {
        try need(8)
        defer { offset += 8 }
        return buffer.loadBigEndianUInt64(at: offset)
    }

    package mutating func readBigEndianUInt32() throws -> UInt32 {
        try need(4)
        defer { offset += 4 }
        return buffer.loadBigEndianUInt32(at: offset)
    }

    package mutating func readByte() throws -> UInt8 {
        try need(1)
        defer { offset += 1 }
        return buffer[offset]
    }

    package mutating func readVarint() throws -> UInt64 {
        guard let base = buffer.baseAddress else { throw Malformed(offset: offset) }
        do {
            return try VarInt.read(base, at: &offset, limit: buffer.count)
        } catch {
            throw Malformed(offset: error.offset)
        }
    }

    package mutating func readString() throws -> String {
        let length = try readVarint()
        guard length <= UInt64(buffer.count - offset) else { throw Malformed(offset: offset) }
        let count = Int(length)
        defer { offset += count }
        return String(decoding: UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + count)]), as: UTF8.self)
    }

    package mutating func readBlob() throws -> [UInt8] {
        let length = try readVarint()
        guard length <= UInt64(buffer.count - offset) else { throw Malformed(offset: offset) }
        let count = Int(length)
        defer { offset += count }
        return Array(buffer[offset..<(offset + count)])
    }
}

extension UnsafeRawBufferPointer {
    @inline(__always)
    package func loadBigEndianUInt64(at offset: Int) -> UInt64 {
        UInt64(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    @inline(__always)
    package func loadBigEndianUInt32(at offset: Int) -> UInt32 {
        UInt32(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }
}
