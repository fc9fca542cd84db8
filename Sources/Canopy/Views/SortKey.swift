import Foundation

/// An order-preserving byte encoding of a tuple of values: comparing two sort keys' bytes orders them like the tuples.
///
/// Views position rows by comparing these stored bytes, never by decoding neighbouring objects. Each component is
/// ascending or descending; strings compare by their UTF-8 bytes (binary, not locale-aware: fold case yourself if you
/// want case-insensitive order).
///
/// ```swift
/// SortKey(.ascending(reminder.due), .descending(reminder.priority), .ascending(reminder.title))
/// ```
public struct SortKey: Hashable, Sendable, Comparable {
    /// One value of the tuple with its direction.
    public struct Component: Sendable {
        /// The component's encoding, made when the component is (one array per component, no closure to call later;
        /// a key of one component takes its array as is).
        let bytes: [UInt8]

        /// `value` in ascending order.
        public static func ascending(_ value: some SortKeyValue) -> Component {
            var bytes: [UInt8] = []
            // (Room for a short string's encoding: a title of 20 bytes took a second allocation at 16.)
            bytes.reserveCapacity(32)
            value.appendSortBytes(to: &bytes)
            return Component(bytes: bytes)
        }

        /// `value` in descending order.
        public static func descending(_ value: some SortKeyValue) -> Component {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(32)
            value.appendSortBytes(to: &bytes)
            bytes.withUnsafeMutableBufferPointer { encoded in
                for i in encoded.indices { encoded[i] = ~encoded[i] }
            }
            return Component(bytes: bytes)
        }
    }

    /// The encoded bytes.
    public private(set) var bytes: [UInt8]

    /// The longest sort key a view stores, in bytes (1 MiB). A row whose sorting closure returns a longer one fails
    /// the write with ``/CanopyCore/CanopyError/Code/sortKeyTooLong`` and nothing is written. Keys under it of any
    /// length are stored and ordered exactly: a key over about 2 KB takes a view page of its own. (The bound keeps
    /// what a view holds in memory per page — its first entry, in 32-bit offsets — far from its limits.)
    public static let maximumLength = 1 << 20

    /// Encodes `components` in order.
    public init(_ components: Component...) {
        self.init(components)
    }

    /// Encodes `components` in order.
    public init(_ components: [Component]) {
        if components.count == 1 {
            bytes = components[0].bytes
            return
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(components.reduce(0) { $0 + $1.bytes.count })
        for component in components { bytes.append(contentsOf: component.bytes) }
        self.bytes = bytes
    }

    /// A sort key of one ascending value.
    public init(_ value: some SortKeyValue) {
        var bytes: [UInt8] = []
        value.appendSortBytes(to: &bytes)
        self.bytes = bytes
    }

    /// Wraps bytes that are already an order-preserving encoding.
    public init(bytes: [UInt8]) { self.bytes = bytes }

    /// Compares the bytes.
    public static func < (lhs: SortKey, rhs: SortKey) -> Bool { lhs.bytes.lexicographicallyPrecedes(rhs.bytes) }
}

/// A value that can be part of a ``SortKey``: it appends a self-delimiting, order-preserving encoding of itself.
public protocol SortKeyValue: Sendable {
    /// Appends the value's encoding; the encodings of two values compare (as bytes) like the values.
    func appendSortBytes(to bytes: inout [UInt8])
}

enum SortTag {
    static let null: UInt8 = 0x05
    static let bool: UInt8 = 0x10
    static let integer: UInt8 = 0x20
    static let double: UInt8 = 0x21
    /// `UInt64` values of 2^63 and above, which `Int64`'s encoding can't hold: after every other integer.
    static let largeUnsigned: UInt8 = 0x22
    static let string: UInt8 = 0x30
}

extension String: SortKeyValue {
    /// UTF-8 bytes with 0x00 escaped as 0x00 0xFF, ended by 0x00 0x01, so that a prefix sorts first.
    public func appendSortBytes(to bytes: inout [UInt8]) {
        bytes.append(SortTag.string)
        // A native string's bytes in one contiguous buffer: searched for a zero by `memchr` and copied at once (the
        // generic walks over the UTF-8 view cost about eight instructions a byte, twice). The same bytes as below.
        let copied: Bool? = utf8.withContiguousStorageIfAvailable { buffer in
            guard let base = buffer.baseAddress, memchr(base, 0, buffer.count) == nil else { return false }
            bytes.append(contentsOf: buffer)
            return true
        }
        if copied != true {
            for byte in utf8 {
                bytes.append(byte)
                if byte == 0 { bytes.append(0xFF) }
            }
        }
        bytes.append(0x00)
        bytes.append(0x01)
    }
}

extension Int64: SortKeyValue {
    /// Big-endian with the sign bit flipped.
    public func appendSortBytes(to bytes: inout [UInt8]) {
        bytes.append(SortTag.integer)
        let flipped = UInt64(bitPattern: self) ^ (1 << 63)
        withUnsafeBytes(of: flipped.bigEndian) { bytes.append(contentsOf: $0) }
    }
}

extension Int: SortKeyValue {
    /// As `Int64`.
    public func appendSortBytes(to bytes: inout [UInt8]) { Int64(self).appendSortBytes(to: &bytes) }
}

extension Int32: SortKeyValue {
    /// As `Int64`.
    public func appendSortBytes(to bytes: inout [UInt8]) { Int64(self).appendSortBytes(to: &bytes) }
}

extension UInt64: SortKeyValue {
    /// Values below 2^63 as the equal `Int64` (so they interleave with signed integers); larger values big-endian after
    /// a tag of their own that sorts after every `Int64`.
    ///
    /// (Before this encoding, values of 2^63 and above sorted below small ones; a view that sorted such values should
    /// change its version tag to be rebuilt.)
    public func appendSortBytes(to bytes: inout [UInt8]) {
        if self < 1 << 63 {
            Int64(self).appendSortBytes(to: &bytes)
        } else {
            bytes.append(SortTag.largeUnsigned)
            withUnsafeBytes(of: bigEndian) { bytes.append(contentsOf: $0) }
        }
    }
}

extension Double: SortKeyValue {
    /// IEEE-754 bits made order-preserving (negative numbers inverted, positive ones with the sign bit set);
    /// -0.0 sorts as 0.0 and every NaN sorts after +infinity.
    public func appendSortBytes(to bytes: inout [UInt8]) {
        bytes.append(SortTag.double)
        let value = self == 0 ? 0.0 : (isNaN ? Double.nan : self)
        let bits = value.bitPattern
        let ordered = bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
        withUnsafeBytes(of: ordered.bigEndian) { bytes.append(contentsOf: $0) }
    }
}

extension Float: SortKeyValue {
    /// As `Double`.
    public func appendSortBytes(to bytes: inout [UInt8]) { Double(self).appendSortBytes(to: &bytes) }
}

extension Date: SortKeyValue {
    /// As the `Double` seconds since 1970.
    public func appendSortBytes(to bytes: inout [UInt8]) { timeIntervalSince1970.appendSortBytes(to: &bytes) }
}

extension Bool: SortKeyValue {
    /// `false` before `true`.
    public func appendSortBytes(to bytes: inout [UInt8]) {
        bytes.append(SortTag.bool)
        bytes.append(self ? 1 : 0)
    }
}

extension Optional: SortKeyValue where Wrapped: SortKeyValue {
    /// `nil` before every value.
    public func appendSortBytes(to bytes: inout [UInt8]) {
        switch self {
        case .none: bytes.append(SortTag.null)
        case .some(let value): value.appendSortBytes(to: &bytes)
        }
    }
}
