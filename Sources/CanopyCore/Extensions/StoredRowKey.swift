/// How the store addresses a row in its tables: the collection's id (4 bytes, big-endian) followed by the key's UTF-8.
///
/// Extensions use it as the key of their per-row records (``StoredRowKeyCoding``) and inside their own values (a
/// view's entries end with it). Row keys of one collection share their first 4 bytes and sort by key; collections sort
/// by id (the order in which they were first written). Get one from ``RowChange/storedKey``,
/// `ScannedRow.storedKey` or ``ReadTransaction/storedRowKey(for:)``; turn one back into a ``RowID`` with
/// ``ReadTransaction/rowID(for:)``.
public struct StoredRowKey: Hashable, Sendable, Comparable {
    /// The stored bytes.
    public let bytes: [UInt8]

    /// The row key of `bytes`, or `nil` when they are too short to hold a collection id.
    public init?(bytes: [UInt8]) {
        guard bytes.count >= 4 else { return nil }
        self.bytes = bytes
    }

    /// The row key of `bytes`, or `nil` when they are too short to hold a collection id.
    public init?(_ bytes: some Collection<UInt8>) {
        self.init(bytes: Array(bytes))
    }

    init(collectionID: UInt32, key: String) {
        var bytes = [UInt8]()
        bytes.reserveCapacity(4 + key.utf8.count)
        withUnsafeBytes(of: collectionID.bigEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: key.utf8)
        self.bytes = bytes
    }

    /// The row key whose bytes are `bytes` (the store's own, assembled by `withRowKey`):
    /// one copy of contiguous bytes, where ``init(collectionID:key:)`` appends the key's UTF-8 view.
    init(assembled bytes: UnsafeRawBufferPointer) {
        self.bytes = Array(bytes)
    }

    /// The collection's id (see ``ReadTransaction/rowID(for:)`` for its name).
    public var collectionID: UInt32 {
        bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self).bigEndian }
    }

    /// The key within the collection.
    public var key: String { String(decoding: bytes[4...], as: UTF8.self) }

    /// Orders as the stored bytes compare.
    public static func < (lhs: StoredRowKey, rhs: StoredRowKey) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }
}
