/// The one variable-length integer code of every Canopy format: unsigned LEB128 (7 bits per byte, least significant
/// group first, the high bit set on every byte but the last), at most ``maxSize`` bytes for a `UInt64`.
///
/// The binary codec, the row record and its attachments, view pages, the commit log, the change feed and the store's
/// internal records all write and read their integers through it. Reads are bounds-checked and never trap: a value
/// that runs past its limit, or overflows 64 bits, is ``Malformed``.
///
/// Extensions may use it for their own tables' values:
/// ```swift
/// var bytes: [UInt8] = []
/// VarInt.append(300, to: &bytes)               // [0xAC, 0x02]
/// let value = bytes.withUnsafeBytes { buffer in
///     var offset = 0
///     return VarInt.read(buffer, at: &offset)  // 300, offset 2
/// }
/// ```
public enum VarInt {
    /// The most bytes a value takes (a `UInt64` of 64 significant bits).
    public static let maxSize = 10

    /// Why a read failed, and where.
    public struct Malformed: Error, Sendable, Equatable {
        /// The offset of the byte the read could not take (the limit, for a value that runs past it).
        public var offset: Int
        /// True when the value overflows 64 bits; false when it runs past its limit.
        public var isOverflow: Bool

        /// Creates the failure of a read.
        public init(offset: Int, isOverflow: Bool) {
            self.offset = offset
            self.isOverflow = isOverflow
        }
    }

    /// The number of bytes `value` takes (1 to ``maxSize``).
    @inlinable
    public static func size(of value: UInt64) -> Int {
        // 1 byte per started group of 7 significant bits, and 1 for zero.
        let bits = 64 - (value | 1).leadingZeroBitCount
        return (bits + 6) / 7
    }

    /// Writes `value` at `destination`, which must have room for ``size(of:)`` bytes; returns the bytes written.
    @inlinable
    @discardableResult
    public static func write(_ value: UInt64, to destination: UnsafeMutableRawPointer) -> Int {
        var value = value
        var position = 0
        while value >= 0x80 {
            destination.storeBytes(of: UInt8(truncatingIfNeeded: value) | 0x80, toByteOffset: position, as: UInt8.self)
            value >>= 7
            position += 1
        }
        destination.storeBytes(of: UInt8(truncatingIfNeeded: value), toByteOffset: position, as: UInt8.self)
        return position + 1
    }

    /// Appends `value` to `bytes`.
    @inlinable
    public static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    /// Reads the value at `offset` of `base`, never at or past `limit`, and moves `offset` past it.
    ///
    /// - Throws: ``Malformed`` when the value reaches `limit` before its last byte, or overflows 64 bits (`offset` is
    ///   then unspecified).
    @inlinable
    @inline(__always)
    public static func read(_ base: UnsafeRawPointer, at offset: inout Int, limit: Int) throws(Malformed) -> UInt64 {
        guard offset < limit else { throw Malformed(offset: offset, isOverflow: false) }
        let first = base.load(fromByteOffset: offset, as: UInt8.self)
        offset += 1
        if first < 0x80 { return UInt64(first) }
        return try readTail(UInt64(first & 0x7F), base, at: &offset, limit: limit)
    }

    /// The bytes after the first of a value of more than one byte (apart, so that the one-byte case inlines small).
    @usableFromInline
    static func readTail(_ start: UInt64, _ base: UnsafeRawPointer, at offset: inout Int, limit: Int) throws(Malformed) -> UInt64 {
        var result = start
        var shift: UInt64 = 7
        while true {
            guard offset < limit else { throw Malformed(offset: offset, isOverflow: false) }
            let byte = base.load(fromByteOffset: offset, as: UInt8.self)
            offset += 1
            if shift == 63 && byte > 1 { throw Malformed(offset: offset - 1, isOverflow: true) }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
    }

    /// Reads the value at `offset` of `bytes` and moves `offset` past it; `nil` when it is malformed (runs past the
    /// end, or overflows 64 bits).
    @inlinable
    public static func read(_ bytes: UnsafeRawBufferPointer, at offset: inout Int) -> UInt64? {
        guard let base = bytes.baseAddress, offset >= 0 else { return nil }
        return try? read(base, at: &offset, limit: bytes.count)
    }

    /// Reads a value that must fit in an `Int` (a length, a slot, an offset): `nil` when malformed or larger.
    @inlinable
    public static func readInt(_ bytes: UnsafeRawBufferPointer, at offset: inout Int) -> Int? {
        guard let value = read(bytes, at: &offset), value <= UInt64(Int.max) else { return nil }
        return Int(value)
    }
}
