/// How the keys or the values of an ``ExtensionTable`` become bytes and back, declared once per table (as heed's
/// `Database<KC, DC>` codecs are).
///
/// Encoding hands the bytes to a closure so that fixed-size keys are built on the stack; decoding reads bytes that
/// LMDB lends for the duration of the call and throws on malformed input (it never traps).
public protocol TableCoding {
    /// The Swift value a key or value of the table is.
    associatedtype Value

    /// Calls `body` with the stored bytes of `value`.
    static func withBytes<R>(of value: Value, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R

    /// The value stored as `bytes`.
    /// - Throws: ``TableCodingError`` when the bytes are not a valid encoding.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws -> Value
}

/// Bytes that are not a valid encoding for a table's ``TableCoding``.
public struct TableCodingError: Error, Sendable, CustomStringConvertible {
    /// What was wrong with the bytes.
    public var message: String

    /// Creates the error.
    public init(_ message: String) { self.message = message }

    /// The message.
    public var description: String { message }
}

/// A `UInt64` as 8 big-endian bytes: keys sort numerically.
public enum UInt64BigEndianCoding: TableCoding {
    /// Calls `body` with the 8 big-endian bytes of `value`.
    @inlinable @inline(__always)
    public static func withBytes<R>(of value: UInt64, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(of: value.bigEndian, body)
    }

    /// Reads 8 big-endian bytes.
    @inlinable
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws -> UInt64 {
        guard bytes.count == 8 else { throw TableCodingError("expected 8 bytes for a UInt64, found \(bytes.count)") }
        return bytes.loadUnaligned(as: UInt64.self).bigEndian
    }
}

/// A `UInt32` as 4 big-endian bytes: keys sort numerically.
public enum UInt32BigEndianCoding: TableCoding {
    /// Calls `body` with the 4 big-endian bytes of `value`.
    @inlinable @inline(__always)
    public static func withBytes<R>(of value: UInt32, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(of: value.bigEndian, body)
    }

    /// Reads 4 big-endian bytes.
    @inlinable
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws -> UInt32 {
        guard bytes.count == 4 else { throw TableCodingError("expected 4 bytes for a UInt32, found \(bytes.count)") }
        return bytes.loadUnaligned(as: UInt32.self).bigEndian
    }
}

/// A `String` as its UTF-8 bytes (no terminator): keys sort by UTF-8 bytes.
public enum StringUTF8Coding: TableCoding {
    /// Calls `body` with the UTF-8 bytes of `value`.
    @inlinable
    public static func withBytes<R>(of value: String, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        var value = value
        return try value.withUTF8 { try body(UnsafeRawBufferPointer($0)) }
    }

    /// The string of the UTF-8 bytes (invalid sequences are replaced, as `String(decoding:as:)` does).
    @inlinable
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws -> String {
        String(decoding: bytes, as: UTF8.self)
    }
}

/// Bytes as they are.
public enum BytesCoding: TableCoding {
    /// Calls `body` with the bytes.
    @inlinable @inline(__always)
    public static func withBytes<R>(of value: [UInt8], _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try value.withUnsafeBytes(body)
    }

    /// A copy of the bytes.
    @inlinable
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws -> [UInt8] {
        Array(bytes)
    }
}

/// A ``StoredRowKey`` (collection id, then the key's UTF-8): keys sort by collection, then key.
public enum StoredRowKeyCoding: TableCoding {
    /// Calls `body` with the row key's bytes.
    @inlinable @inline(__always)
    public static func withBytes<R>(of value: StoredRowKey, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try value.bytes.withUnsafeBytes(body)
    }

    /// The row key of `bytes`.
    @inlinable
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws -> StoredRowKey {
        guard let key = StoredRowKey(bytes: Array(bytes)) else {
            throw TableCodingError("a row key has at least 4 bytes (the collection id), found \(bytes.count)")
        }
        return key
    }
}
