/// Constants of the binary format described in ``BinaryCodec``.
enum BinaryFormat {
    /// The first byte of every encoded value.
    static let version: UInt8 = 1
    /// The bytes before the root value: the version.
    static let headerSize = 1
    /// A container's tag and its `UInt32` byte count.
    static let containerHeaderSize = 5
    /// How deeply values may nest when decoded or converted to JSON, as in `JSONDecoder`: deeper bytes are taken to
    /// be corrupt rather than risk running out of stack.
    static let maximumDepth = 512

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
    static func zigzag(_ value: Int64) -> UInt64 {
        UInt64(bitPattern: (value << 1) ^ (value >> 63))
    }

    @inline(__always)
    static func unzigzag(_ value: UInt64) -> Int64 {
        Int64(bitPattern: (value >> 1) ^ (0 &- (value & 1)))
    }
}
