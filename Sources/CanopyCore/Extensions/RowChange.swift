/// What a mutation did to a row (see ``RowChange``).
public enum RowChangeKind: Sendable, Hashable {
    /// The row did not exist and was written.
    case insert
    /// The row existed and its object and/or metadata were replaced (``RowChange/objectChanged`` /
    /// ``RowChange/metadataChanged`` say which).
    case update
    /// The row was marked as changed without new values (``RowChange/objectChanged`` /
    /// ``RowChange/metadataChanged`` say which part); or, with ``RowChange/isPlacementOnly``, an extension asked to
    /// place the row again in itself (``ReadWriteTransaction/placeAgain(_:inExtension:asUpdated:)``).
    case touch
    /// The row was removed: alone, or with every row of its collection (``RowChange/removesCollection``).
    case remove
}

/// What an extension wants done to its attachment of a row (its per-row record, kept in the row's own record), in
/// answer to a ``RowChange``. The store writes the row's record once, after every extension has answered.
public enum AttachmentEdit: Sendable, Hashable {
    /// Leave the attachment as the row carries it.
    case keep
    /// Attach these bytes (empty bytes remove it).
    case set([UInt8])
    /// Remove the attachment.
    case remove
}

/// One change to one row, as the store hands it to every extension's writer (``ExtensionTransaction/handle(_:)``):
/// the row's address, what happened, the attachments its record carried before, and the row's values after the
/// change, decoded on demand.
///
/// Every mutation (set, replace object, replace metadata, touch, remove, remove all) builds one of these: the store
/// reads the row's record once, hands the change to each writer in registration order (dependencies first), and
/// writes the record once with the attachments the writers asked for. The values are those every later read returns:
/// the writer's values for a type that opts in to ``BinaryCodecSynthesizedDecoding``, otherwise decoded through the
/// type's `init(from:)` from the bytes just encoded. Parts the mutation did not carry (the object of a metadata
/// replacement, both parts of a touch) are read from the transaction on first use.
///
/// Valid only while the writer handles it: it reads through the write transaction. A change made with
/// ``init(id:storedKey:kind:codecName:objectChanged:metadataChanged:removesCollection:previousAttachments:object:objectBytes:metadata:metadataBytes:)``
/// carries every value itself, so a writer can be tested without a database.
public final class RowChange {
    /// The row's address.
    public let id: RowID
    /// The row's stored key (its collection's id, then the key).
    public let storedKey: StoredRowKey
    /// What happened to the row.
    public let kind: RowChangeKind
    /// The codec of the row's collection.
    public let codecName: String
    /// Whether the object changed (always for an insert or a removal).
    public let objectChanged: Bool
    /// Whether the metadata changed (always for a removal; for an insert, when the row has metadata).
    public let metadataChanged: Bool
    /// For a removal: whether every row of the collection was removed at once
    /// (``ReadWriteTransaction/removeAll(inCollection:)``, ``ReadWriteTransaction/removeAllCollections()``).
    public let removesCollection: Bool
    /// Whether the change only asks the writer to place the row again (a ``RowChangeKind/touch`` made by
    /// ``ReadWriteTransaction/placeAgain(_:inExtension:asUpdated:)``): the row's values did not change, only the
    /// extension that asked and the extensions that depend on it are told, and the commit does not report the row as
    /// changed. ``objectChanged`` says whether the extension should report the row as updated.
    public let isPlacementOnly: Bool

    /// Reads what the change does not carry; `nil` for a change made without a database.
    let transaction: ReadTransaction?
    // The values below are filled on first use and are unchecked for exclusivity (as ReadWriteTransaction's state): a
    // change lives in one write transaction, on its thread, and no method passes them inout to code that reaches them
    // again. The checks cost a bulk insert with two views about 500 instructions a row.
    @exclusivity(unchecked) private var objectValue: Any?
    @exclusivity(unchecked) private var objectData: [UInt8]?
    @exclusivity(unchecked) private var metadataValue: Any?
    @exclusivity(unchecked) private var metadataData: [UInt8]??
    /// The attachments region of the record before the change (empty for a new row), parsed on first use.
    private let previousRegion: [UInt8]
    @exclusivity(unchecked) private var previousParsed: [UInt32: [UInt8]]?
    /// The attachments set by the writers that handled the change so far (a dependency's, for its dependents), by
    /// slot, each slot once. A few at most (one per extension that attaches): an array, not a dictionary allocated
    /// and hashed for every written row.
    @exclusivity(unchecked) private(set) var edits: [(slot: UInt32, edit: AttachmentEdit)] = []

    init(
        id: RowID, storedKey: StoredRowKey, kind: RowChangeKind, codecName: String, objectChanged: Bool, metadataChanged: Bool,
        removesCollection: Bool = false, isPlacementOnly: Bool = false, transaction: ReadTransaction?, previousAttachments: [UInt8],
        object: Any? = nil, objectBytes: [UInt8]? = nil, metadata: Any? = nil, metadataBytes: [UInt8]?? = nil
    ) {
        self.id = id
        self.storedKey = storedKey
        self.kind = kind
        self.codecName = codecName
        self.objectChanged = objectChanged
        self.metadataChanged = metadataChanged
        self.removesCollection = removesCollection
        self.isPlacementOnly = isPlacementOnly
        self.transaction = transaction
        self.previousRegion = previousAttachments
        self.objectValue = object
        self.objectData = objectBytes
        self.metadataValue = metadata
        self.metadataData = metadataBytes
    }

    /// A change carrying every value itself, without a database: for testing an extension's writer
    /// (``ExtensionTransaction/handle(_:)``) on its own. Parts left `nil` read as absent.
    ///
    /// - Parameters:
    ///   - id: the row's address.
    ///   - storedKey: the row's stored key (collection number and key bytes).
    ///   - kind: what the change is (insert, update, touch or remove).
    ///   - codecName: the codec recorded for the row's collection.
    ///   - objectChanged: whether the object changed.
    ///   - metadataChanged: whether the metadata changed.
    ///   - removesCollection: whether the change is part of removing the whole collection.
    ///   - previousAttachments: the attachments the row's record carried before the change, by slot.
    ///   - object: the object after the change, as the type the writer asks for.
    ///   - objectBytes: the object's stored bytes, as ``objectBytes()`` returns them (`nil` reads as empty: such a change
    ///     has no database to read them from).
    ///   - metadata: the metadata after the change, or `nil`.
    ///   - metadataBytes: the metadata's stored bytes, or `nil` when the row has none.
    public convenience init(
        id: RowID, storedKey: StoredRowKey, kind: RowChangeKind, codecName: String = "binary", objectChanged: Bool, metadataChanged: Bool,
        removesCollection: Bool = false, previousAttachments: [AttachmentSlot: [UInt8]] = [:],
        object: (any Sendable)? = nil, objectBytes: [UInt8]? = nil, metadata: (any Sendable)? = nil, metadataBytes: [UInt8]? = nil
    ) {
        self.init(
            id: id, storedKey: storedKey, kind: kind, codecName: codecName, objectChanged: objectChanged, metadataChanged: metadataChanged,
            removesCollection: removesCollection, transaction: nil,
            previousAttachments: StoredRecord.encode(Dictionary(uniqueKeysWithValues: previousAttachments.map { ($0.key.number, $0.value) })),
            object: object, objectBytes: objectBytes ?? (object == nil ? [] : nil), metadata: metadata, metadataBytes: .some(metadataBytes))
    }

    /// The collection's name.
    public var collection: String { id.collection }
    /// The key.
    public var key: String { id.key }

    /// The attachment at `slot` as the row's record carried it before the change, or `nil`.
    /// - Throws: ``CanopyError/Code/corruptStore`` when the record's attachments are malformed.
    public func previousAttachment(at slot: AttachmentSlot) throws -> [UInt8]? {
        try previous()[slot.number]
    }

    /// The attachment at `slot` as the change leaves it so far: as an extension that handled the change earlier set it
    /// (a dependency), otherwise as the record carried it before.
    /// - Throws: ``CanopyError/Code/corruptStore`` when the record's attachments are malformed.
    public func attachment(at slot: AttachmentSlot) throws -> [UInt8]? {
        switch edits.first(where: { $0.slot == slot.number })?.edit {
        case .set(let bytes)?: return bytes.isEmpty ? nil : bytes
        case .remove?: return nil
        case .keep?, nil: return try previous()[slot.number]
        }
    }

    func record(_ edit: AttachmentEdit, at slot: UInt32) {
        if case .keep = edit { return }
        if let index = edits.firstIndex(where: { $0.slot == slot }) {
            edits[index].edit = edit
        } else {
            // Room for a few writers' edits at the first: growing from one to two (a row of two views) reallocates.
            if edits.isEmpty { edits.reserveCapacity(4) }
            edits.append((slot, edit))
        }
    }

    private func previous() throws -> [UInt32: [UInt8]] {
        if let previousParsed { return previousParsed }
        guard let parsed = previousRegion.withUnsafeBytes({ StoredRecord.attachments($0) }) else {
            throw CanopyError(.corruptStore, "a row's attachments are malformed", collection: id.collection, key: id.key)
        }
        previousParsed = parsed
        return parsed
    }

    /// The attachments region the record carries after the change: the previous attachments of live slots, with the
    /// writers' edits applied. `nil` when it is the previous region unchanged.
    func attachmentsAfter(live: () throws -> Set<UInt32>) throws -> [UInt8]? {
        if previousRegion.isEmpty {
            guard !edits.isEmpty else { return nil }
            // A new row (or one without attachments): only what the writers set, by slot, without a merged
            // dictionary.
            if edits.count == 1, case .set(let bytes) = edits[0].edit {
                return StoredRecord.attachmentRegion(holding: bytes, slot: edits[0].slot)
            }
            var out = ByteWriter(capacity: 32)
            // By ascending slot: writers answer in registration order, usually the slots' order already (then no
            // sorted copy is made: about 1k instructions a row of a bulk insert with two views).
            let inOrder = zip(edits, edits.dropFirst()).allSatisfy { $0.slot < $1.slot }
            for (slot, edit) in inOrder ? edits : edits.sorted(by: { $0.slot < $1.slot }) {
                guard case .set(let bytes) = edit else { continue }
                StoredRecord.appendAttachment(bytes, slot: slot, to: &out)
            }
            return out.bytes
        }
        var merged = try previous()
        let live = try live()
        let dead = merged.keys.contains { !live.contains($0) }
        guard dead || !edits.isEmpty else { return nil }
        if dead { merged = merged.filter { live.contains($0.key) } }
        for (slot, edit) in edits {
            switch edit {
            case .set(let bytes): merged[slot] = bytes
            case .remove: merged[slot] = nil
            case .keep: break
            }
        }
        return StoredRecord.encode(merged)
    }

    /// The object's stored bytes after the change.
    /// - Throws: ``CanopyError/Code/invalidArgument`` for a removal (the row has no values after it).
    public func objectBytes() throws -> [UInt8] {
        if let objectData { return objectData }
        try requireValues()
        let bytes = try transaction?.rawObject(forKey: id.key, inCollection: id.collection)?.bytes ?? []
        objectData = bytes
        return bytes
    }

    /// The metadata's stored bytes after the change, or `nil` when the row has none.
    /// - Throws: ``CanopyError/Code/invalidArgument`` for a removal.
    public func metadataBytes() throws -> [UInt8]? {
        if let metadataData { return metadataData }
        try requireValues()
        let bytes = try transaction?.rawMetadata(forKey: id.key, inCollection: id.collection)?.bytes
        metadataData = .some(bytes)
        return bytes
    }

    /// The object after the change as `T`: the value a read returns (see the type's overview) when it has that type,
    /// otherwise decoded with the collection's codec (once, then kept).
    /// - Throws: ``CanopyError/Code/decodingFailed`` when the stored bytes are not a `T`;
    ///   ``CanopyError/Code/invalidArgument`` for a removal.
    public func object<T: Decodable>(as type: T.Type) throws -> T {
        // The exact type compared first, then the value taken as it is (``TypedValue/take(_:as:)``): no dynamic
        // cast, and no request for `T?`'s metadata, in this (unspecialized) generic code run once per row, view and
        // closure.
        if let value = objectValue, let typed = TypedValue.take(value, as: T.self) { return typed }
        return try castOrDecodeObject(as: T.self)
    }

    @inline(never)
    private func castOrDecodeObject<T: Decodable>(as type: T.Type) throws -> T {
        if let objectValue, let value = objectValue as? T { return value }
        let value: T = try decode(T.self, bytes: try objectBytes())
        objectValue = value
        return value
    }

    /// The metadata after the change as `T`, or `nil` when the row has none.
    /// - Throws: as ``object(as:)``.
    public func metadata<T: Decodable>(as type: T.Type) throws -> T? {
        if let value = metadataValue, let typed = TypedValue.take(value, as: T.self) { return typed }
        return try castOrDecodeMetadata(as: T.self)
    }

    @inline(never)
    private func castOrDecodeMetadata<T: Decodable>(as type: T.Type) throws -> T? {
        if let metadataValue, let value = metadataValue as? T { return value }
        guard let bytes = try metadataBytes() else { return nil }
        let value: T = try decode(T.self, bytes: bytes)
        metadataValue = value
        return value
    }

    private func decode<T: Decodable>(_ type: T.Type, bytes: [UInt8]) throws -> T {
        if let transaction { return try transaction.decode(T.self, bytes: bytes, codecName: codecName, id: id) }
        guard let codec = Codecs.named(codecName) else {
            throw CanopyError(.codecMismatch, "the collection's codec '\(codecName)' is not a built-in codec", collection: id.collection, key: id.key)
        }
        do {
            return try bytes.withUnsafeBytes { try codec.decode(T.self, from: $0) }
        } catch {
            throw CanopyError(.decodingFailed, DecodingExplanation.message(for: error, decoding: T.self, codecName: codecName),
                              collection: id.collection, key: id.key, underlying: error)
        }
    }

    private func requireValues() throws {
        guard kind == .remove else { return }
        throw CanopyError(.invalidArgument, "a removed row has no object or metadata after the change", collection: id.collection, key: id.key)
    }
}
