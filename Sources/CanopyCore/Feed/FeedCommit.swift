/// One commit of the durable change feed: its snapshot number and the rows it left behind, with their values.
///
/// Delivered in snapshot order by ``Database/changes(since:pollInterval:batchSize:)`` and ``Database/readChanges(since:limit:)``. Delivery is
/// at least once: a consumer that stops before acknowledging a commit (``Database/acknowledge(consumer:through:)``)
/// sees it again, so apply commits idempotently by their ``snapshot`` (skip a snapshot you already applied).
public struct FeedCommit: Sendable, Hashable {
    /// The snapshot the commit produced; consecutive commits have consecutive snapshots.
    public var snapshot: UInt64
    /// What the commit did, in order: whole-store and whole-collection removals first, then each row set or removed
    /// (by collection, then key).
    public var changes: [FeedChange]

    /// Creates a commit.
    public init(snapshot: UInt64, changes: [FeedChange]) {
        self.snapshot = snapshot
        self.changes = changes
    }
}

/// One change of a ``FeedCommit``: a row as it is after the commit, or a tombstone.
///
/// A `set` carries the whole row (object and metadata bytes as its collection's codec wrote them), also when only the
/// metadata changed or the row was touched, so that applying it is the same whatever came before.
public struct FeedChange: Sendable, Hashable {
    /// What happened.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// The row (``FeedChange/collection``, ``FeedChange/key``) now holds ``FeedChange/objectBytes`` and
        /// ``FeedChange/metadataBytes``.
        case set
        /// The row was removed (a tombstone).
        case remove
        /// Every row of ``FeedChange/collection`` was removed.
        case removeCollection
        /// Every row of every collection was removed.
        case removeAll
    }

    /// What happened.
    public var kind: Kind
    /// The collection; empty for ``Kind/removeAll``.
    public var collection: String
    /// The key; empty for ``Kind/removeCollection`` and ``Kind/removeAll``.
    public var key: String
    /// The name of the codec the collection's values are stored with (`"binary"` or `"json"`); empty unless `set`.
    public var codec: String
    /// The object's bytes, as the codec wrote them; `nil` unless `set`.
    public var objectBytes: [UInt8]?
    /// The metadata's bytes, or `nil` when the row has none (or the change is not a `set`).
    public var metadataBytes: [UInt8]?

    /// Creates a change.
    public init(kind: Kind, collection: String, key: String = "", codec: String = "", objectBytes: [UInt8]? = nil,
                metadataBytes: [UInt8]? = nil) {
        self.kind = kind
        self.collection = collection
        self.key = key
        self.codec = codec
        self.objectBytes = objectBytes
        self.metadataBytes = metadataBytes
    }

    /// The object decoded as `T` through the collection's recorded codec.
    ///
    /// - Returns: `nil` when the change is not a `set`.
    /// - Throws: ``CanopyError/Code/decodingFailed`` when the bytes do not decode as `T`;
    ///   ``CanopyError/Code/codecMismatch`` when the recorded codec is not a built-in one.
    public func object<T: Decodable>(as type: T.Type) throws -> T? {
        try objectBytes.map { try decode($0, as: T.self, what: "object") }
    }

    /// The metadata decoded as `T` through the collection's recorded codec; `nil` when the row has none.
    ///
    /// - Throws: as ``object(as:)``.
    public func metadata<T: Decodable>(as type: T.Type) throws -> T? {
        try metadataBytes.map { try decode($0, as: T.self, what: "metadata") }
    }

    /// The object as JSON text (through ``Codecs/jsonText(from:codecName:prettyPrinted:)``, without the app's types);
    /// `nil` when the change is not a `set`.
    /// - Throws: ``CodecError`` when the bytes are not a valid encoding of the recorded codec.
    public func objectJSON() throws -> String? {
        try objectBytes.map { bytes in try bytes.withUnsafeBytes { try Codecs.jsonText(from: $0, codecName: codec) } }
    }

    /// The metadata as JSON text; `nil` when the row has none.
    /// - Throws: ``CodecError`` when the bytes are not a valid encoding of the recorded codec.
    public func metadataJSON() throws -> String? {
        try metadataBytes.map { bytes in try bytes.withUnsafeBytes { try Codecs.jsonText(from: $0, codecName: codec) } }
    }

    private func decode<T: Decodable>(_ bytes: [UInt8], as type: T.Type, what: String) throws -> T {
        guard let codec = Codecs.named(codec) else {
            throw CanopyError(.codecMismatch, "the feed recorded codec '\(codec)', which is not a built-in codec; decode objectBytes yourself",
                              collection: collection, key: key)
        }
        do {
            return try bytes.withUnsafeBytes { try codec.decode(T.self, from: $0) }
        } catch {
            throw CanopyError(.decodingFailed, "the feed's \(what) does not decode as \(String(reflecting: T.self)) with codec '\(codec.name)'",
                              collection: collection, key: key, underlying: error)
        }
    }
}
