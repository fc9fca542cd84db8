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
    // The values are held without an `Any` box (``HeldValue``): the mutation lends the values it is writing while the
    // writers handle the change (the store ends the loan afterwards: ``endLoans()``), and a value decoded here is
    // owned until the change goes.
    @exclusivity(unchecked) private var objectValue = HeldValue.none
    @exclusivity(unchecked) private var objectData: [UInt8]?
    @exclusivity(unchecked) private var metadataValue = HeldValue.none
    @exclusivity(unchecked) private var metadataData: [UInt8]??
    /// The attachments region of the record before the change (empty for a new row), parsed on first use.
    private let previousRegion: [UInt8]
    @exclusivity(unchecked) private var previousParsed: [UInt32: [UInt8]]?
    /// The attachments set by the writers that handled the change so far (a dependency's, for its dependents), by
    /// slot, each slot once. A few at most (one per extension that attaches): a list with two inline places, not a
    /// dictionary (or an array) allocated for every written row.
    @exclusivity(unchecked) private(set) var edits = AttachmentEdits()

    init(
        id: RowID, storedKey: StoredRowKey, kind: RowChangeKind, codecName: String, objectChanged: Bool, metadataChanged: Bool,
        removesCollection: Bool = false, isPlacementOnly: Bool = false, transaction: ReadTransaction?, previousAttachments: [UInt8],
        object: consuming HeldValue = .none, objectBytes: [UInt8]? = nil, metadata: consuming HeldValue = .none, metadataBytes: [UInt8]?? = nil
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

    /// Ends the loan of the values the mutation lent (they live in its frame): called by the store once every writer
    /// handled the change. A change a writer kept (`kept`: not uniquely referenced) keeps copies of them; otherwise
    /// they are forgotten, and a later read decodes the bytes, which give the same values (see the type's overview).
    func endLoans(kept: Bool) {
        if kept {
            objectValue.own()
            metadataValue.own()
        } else {
            objectValue.endLoan()
            metadataValue.endLoan()
        }
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
            object: object.map { HeldValue(owning: $0) } ?? .none, objectBytes: objectBytes ?? (object == nil ? [] : nil),
            metadata: metadata.map { HeldValue(owning: $0) } ?? .none, metadataBytes: .some(metadataBytes))
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
        case .keep?, nil:
            // A record that carried no attachments (every new row) has none to parse: about 200 instructions a row
            // and writer of a bulk insert.
            if previousRegion.isEmpty { return nil }
            return try previous()[slot.number]
        }
    }

    func record(_ edit: AttachmentEdit, at slot: UInt32) {
        if case .keep = edit { return }
        if let index = edits.firstIndex(where: { $0.slot == slot }) {
            edits[index].edit = edit
        } else {
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

    /// Whether the record carried no attachments before the change (a new row, among others): the region after it
    /// then holds only what the writers set (``editsRegionSize``, ``writeEditsRegion(to:)``).
    var hadNoAttachments: Bool { previousRegion.isEmpty }

    /// The size of the attachments region holding only the writers' edits (what ``attachmentsAfter(live:)`` returns
    /// for a record that carried none), 0 when they set nothing.
    var editsRegionSize: Int {
        var size = 0
        for (slot, edit) in edits {
            guard case .set(let bytes) = edit, !bytes.isEmpty else { continue }
            size += VarInt.size(of: UInt64(slot)) + VarInt.size(of: UInt64(bytes.count)) + bytes.count
        }
        return size
    }

    /// Writes the region of ``editsRegionSize`` bytes at `out`, by ascending slot: the store writes a new row's record
    /// in place in the map, without an array for the region and one for the record.
    func writeEditsRegion(to out: UnsafeMutableRawPointer) {
        var offset = 0
        edits.inSlotOrder { slot, edit in
            guard case .set(let bytes) = edit, !bytes.isEmpty else { return }
            offset += VarInt.write(UInt64(slot), to: out + offset)
            offset += VarInt.write(UInt64(bytes.count), to: out + offset)
            bytes.withUnsafeBytes { (out + offset).copyMemory(from: $0.baseAddress.unsafelyUnwrapped, byteCount: $0.count) }
            offset += bytes.count
        }
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
            edits.inSlotOrder { slot, edit in
                guard case .set(let bytes) = edit else { return }
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
        if objectValue.holds(T.self) { return objectValue.copy(as: T.self) }
        return try castOrDecodeObject(as: T.self)
    }

    /// Calls `body` with the object after the change as `T`, read in place: the value the mutation is writing, or the
    /// one decoded once and kept (as ``object(as:)``, without copying it per call). Returns what `body` returns.
    /// - Throws: what ``object(as:)`` throws; what `body` throws.
    public func withObject<T: Decodable, R>(as type: T.Type, _ body: (T) throws -> R) throws -> R {
        try withObjectInPlace(as: T.self) { object in try body(object) }
    }

    /// ``withObject(as:_:)`` with the value `inout`, the form that passes it on without a copy (see
    /// ``HeldValue/borrow(as:_:)``): `body` must not change it.
    func withObjectInPlace<T: Decodable, R>(as type: T.Type, _ body: (inout T) throws -> R) throws -> R {
        if objectValue.holds(T.self) { return try objectValue.borrow(as: T.self, body) }
        var value = try castOrDecodeObject(as: T.self)
        return try body(&value)
    }

    // Not the common case (the held value has the asked type): a function of its own, so that the callers' fast path
    // asks for no `T?` metadata (about 160 instructions in unspecialized code).
    @inline(never)
    private func castOrDecodeObject<T: Decodable>(as type: T.Type) throws -> T {
        if let value = objectValue.boxed() as? T { return value }
        let value: T = try decode(T.self, bytes: try objectBytes())
        // Kept only in place of nothing: a held value of another type may be borrowed by a caller up the stack.
        if objectValue.isEmpty { objectValue = HeldValue(owning: value) }
        return value
    }

    /// The metadata after the change as `T`, or `nil` when the row has none.
    /// - Throws: as ``object(as:)``.
    public func metadata<T: Decodable>(as type: T.Type) throws -> T? {
        if metadataValue.holds(T.self) { return metadataValue.copy(as: T.self) }
        return try castOrDecodeMetadata(as: T.self)
    }

    @inline(never)
    private func castOrDecodeMetadata<T: Decodable>(as type: T.Type) throws -> T? {
        if let value = metadataValue.boxed() as? T { return value }
        guard let bytes = try metadataBytes() else { return nil }
        let value: T = try decode(T.self, bytes: bytes)
        if metadataValue.isEmpty { metadataValue = HeldValue(owning: value) }
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
