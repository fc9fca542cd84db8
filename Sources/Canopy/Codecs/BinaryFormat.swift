/// Constants and writing helpers of the binary format described in ``BinaryCodec``.
enum BinaryFormat {
    /// The first byte of every encoded value.
    static let version: UInt8 = 1
    /// The bytes before the root value: the version.
    static let headerSize = 1
    /// A container's tag and its `UInt32` byte count.
    static let containerHeaderSize = 5
    /// How deeply converting to JSON may nest before the bytes are taken to be corrupt; decoding has no such limit
    /// because its depth follows the Swift types.
    static let maximumJSONDepth = 512

    enum Tag {
        static let null: UInt8 = 0x00
        static let `false`: UInt8 = 0x01
        static let `true`: UInt8 = 0x02
        static let int: UInt8 = 0x03
        static let uint: UInt8 = 0x04
        static let float: UInt8 = 0x05
        static let double: UInt8 = 0x06
        static let string: UInt8 = 0x07
        static let bytes: UInt8 = 0x08
        static let date: UInt8 = 0x09
        static let array: UInt8 = 0x0A
        static let map: UInt8 = 0x0B

        /// What a tag holds, for error messages.
        static func describe(_ tag: UInt8) -> String {
            switch tag {
            case null: "nil"
            case `false`, `true`: "a Bool"
            case int: "a signed integer"
            case uint: "an unsigned integer"
            case float: "a Float"
            case double: "a Double"
            case string: "a string"
            case bytes: "bytes"
            case date: "a Date"
            case array: "an unkeyed container"
            case map: "a keyed container"
            default: "unknown tag \(tag)"
            }
        }
    }

    @inline(__always)
    static func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    @inline(__always)
    static func zigzag(_ value: Int64) -> UInt64 {
        UInt64(bitPattern: (value << 1) ^ (value >> 63))
    }

    @inline(__always)
    static func unzigzag(_ value: UInt64) -> Int64 {
        Int64(bitPattern: (value >> 1) ^ (0 &- (value & 1)))
    }

    @inline(__always)
    static func appendInt(_ value: Int64, to bytes: inout [UInt8]) {
        bytes.append(Tag.int)
        appendVarint(zigzag(value), to: &bytes)
    }

    @inline(__always)
    static func appendUInt(_ value: UInt64, to bytes: inout [UInt8]) {
        bytes.append(Tag.uint)
        appendVarint(value, to: &bytes)
    }

    @inline(__always)
    static func appendFixed64(_ value: UInt64, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    @inline(__always)
    static func appendDouble(_ value: Double, tag: UInt8 = Tag.double, to bytes: inout [UInt8]) {
        bytes.append(tag)
        appendFixed64(value.bitPattern, to: &bytes)
    }

    @inline(__always)
    static func appendFloat(_ value: Float, to bytes: inout [UInt8]) {
        bytes.append(Tag.float)
        withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Appends a varint byte count and the UTF-8 of a string, without the tag (also used for map keys).
    @inline(__always)
    static func appendUTF8(_ string: String, to bytes: inout [UInt8]) {
        var string = string
        string.withUTF8 { utf8 in
            appendVarint(UInt64(utf8.count), to: &bytes)
            bytes.append(contentsOf: utf8)
        }
    }

    @inline(__always)
    static func appendString(_ value: String, to bytes: inout [UInt8]) {
        bytes.append(Tag.string)
        appendUTF8(value, to: &bytes)
    }

    @inline(__always)
    static func appendBytes(_ value: UnsafeRawBufferPointer, to bytes: inout [UInt8]) {
        bytes.append(Tag.bytes)
        appendVarint(UInt64(value.count), to: &bytes)
        bytes.append(contentsOf: value)
    }
}
