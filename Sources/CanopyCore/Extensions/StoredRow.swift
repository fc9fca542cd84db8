/// A stored row as an extension reads it: its address, codec, object bytes and (on demand) metadata bytes. A closure
/// sees it as an ``ExtensionRow``, which decodes its values (once).
///
/// Rows from ``ReadTransaction/scanRows(inCollections:_:)`` lend their object bytes from the memory map for the
/// visit only; using them afterwards throws ``CanopyError/Code/transactionEnded`` instead of reading reused memory.
public final class StoredRow {
    enum Object {
        case borrowed(UnsafeRawBufferPointer)
        case owned([UInt8])
    }

    /// The row's address.
    public let id: RowID
    /// The row's stored key.
    public let storedKey: StoredRowKey
    /// The codec of the row's collection.
    public let codecName: String
    /// Whether the row has metadata.
    public let hasMetadata: Bool
    private let object: Object
    private let attachments: Object
    private let transaction: ReadTransaction
    // The mutable state below is unchecked for exclusivity (as ReadWriteTransaction's): a row is not Sendable, its
    // methods never pass these properties inout to code that reaches them again, and the checks cost a population
    // about 150 instructions a row.
    @exclusivity(unchecked) private var accessEnded = false

    /// The scan's writer and the visited record's bytes, during a visit of a read-write transaction's scan.
    @exclusivity(unchecked) private var rewriter: RowScanRewriter?
    private let record: UnsafeRawBufferPointer?
    /// The object and metadata decoded so far (at most once each, whichever extension or closure asked first: see
    /// ``ExtensionRow``), held without an `Any` box and read in place by the closures (``HeldValue``). Not `Any?`:
    /// a row is made and destroyed per row of a scan, and destroying optionals of `Any` went through `Optional`'s
    /// generic value witnesses (about 670 instructions a row, a twentieth of a population's row).
    @exclusivity(unchecked) private var objectValue = HeldValue.none
    @exclusivity(unchecked) private var metadataValue = HeldValue.none
    /// Whether the row was found to have no metadata (``metadataValue`` is then empty).
    @exclusivity(unchecked) private var metadataAbsent = false

    init(id: RowID, storedKey: StoredRowKey, codecName: String, hasMetadata: Bool, object: Object, attachments: Object,
         transaction: ReadTransaction, rewriter: RowScanRewriter? = nil, record: UnsafeRawBufferPointer? = nil) {
        self.rewriter = rewriter
        self.record = record
        self.id = id
        self.storedKey = storedKey
        self.codecName = codecName
        self.hasMetadata = hasMetadata
        self.object = object
        self.attachments = attachments
        self.transaction = transaction
        metadataAbsent = !hasMetadata
    }

    /// The row's attachment at `slot`, or `nil`.
    /// - Throws: ``CanopyError/Code/transactionEnded`` after a scan visit (or ``endAccess()``);
    ///   ``CanopyError/Code/corruptStore`` when the record's attachments are malformed.
    public func attachment(at slot: AttachmentSlot) throws -> [UInt8]? {
        try checkAccess()
        let find = { (region: UnsafeRawBufferPointer) throws -> [UInt8]? in
            guard let attachment = StoredRecord.attachment(slot: slot.number, in: region) else {
                throw CanopyError(.corruptStore, "a row's attachments are malformed", path: self.transaction.core.path,
                                  collection: self.id.collection, key: self.id.key)
            }
            return attachment.map { Array($0) }
        }
        switch attachments {
        case .owned(let bytes): return try bytes.withUnsafeBytes(find)
        case .borrowed(let bytes): return try find(bytes)
        }
    }

    /// Ends the row's access: reads of what was not decoded yet throw ``CanopyError/Code/transactionEnded`` from now
    /// on. The scan ends each row's access after its visit; an extension that hands a row it read by key
    /// (``ReadTransaction/storedRow(for:)``) to a closure of its user ends it when the closure returns, so that a row
    /// the closure kept fails the same way in both cases.
    public func endAccess() {
        accessEnded = true
        rewriter = nil
    }

    /// Sets (or with `nil` removes) the row's attachment at `slot`, rewriting the visited record in place: during a
    /// scan visit in a read-write transaction only. The record's bytes lent to this row are invalid afterwards: read
    /// what you need first.
    /// - Throws: ``CanopyError/Code/transactionEnded`` outside a visit of a read-write transaction's scan;
    ///   ``CanopyError/Code/corruptStore`` when the record's attachments are malformed; what the write throws. The
    ///   row's access ends also when it throws: a write that failed part way may have changed the lent bytes.
    public func setAttachment(_ bytes: [UInt8]?, at slot: AttachmentSlot) throws {
        guard let rewriter, let record else {
            throw CanopyError(.transactionEnded, "a row's attachment can be set only during its visit of a read-write transaction's scan",
                              collection: id.collection, key: id.key)
        }
        defer { endAccess() }
        try rewriter.setAttachment(bytes, at: slot, record: record, key: storedKey)
    }

    private func checkAccess() throws {
        guard accessEnded else { return }
        throw CanopyError(.transactionEnded, "a row was used after its visit (or the closure it was passed to returned); keep the values read from it, not the row",
                          collection: id.collection, key: id.key)
    }

    /// A copy of the object's stored bytes.
    public func objectBytes() throws -> [UInt8] {
        try checkAccess()
        switch object {
        case .owned(let bytes): return bytes
        case .borrowed(let bytes): return Array(bytes)
        }
    }

    /// Calls `body` with the object's stored bytes, without copying them.
    public func withObjectBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try checkAccess()
        switch object {
        case .owned(let bytes): return try bytes.withUnsafeBytes(body)
        case .borrowed(let bytes): return try body(bytes)
        }
    }

    /// The metadata's stored bytes, or `nil` when the row has none (read through the transaction, which refuses once
    /// its closure has returned).
    /// - Throws: ``CanopyError/Code/transactionEnded`` after a scan visit (or ``endAccess()``), as the row's other
    ///   reads: a row kept past its visit fails the same way whichever part it reads.
    public func metadataBytes() throws -> [UInt8]? {
        try checkAccess()
        guard hasMetadata else { return nil }
        return try transaction.guardedRead { try transaction.storage.value(forKey: storedKey.bytes, in: transaction.tables.metadata) }
    }

    /// The object as `T`, decoded from the stored bytes with the collection's codec once, then kept (``ExtensionRow``
    /// reads through it).
    /// - Throws: ``CanopyError/Code/decodingFailed``; ``CanopyError/Code/transactionEnded`` when the bytes were lent by
    ///   a scan visit that is over (a value decoded during the visit is still handed back).
    func object<T: Decodable>(as type: T.Type) throws -> T {
        if objectValue.holds(T.self) { return objectValue.copy(as: T.self) }
        return try castOrDecodeObject(as: T.self)
    }

    /// Calls `body` with the object as `T`, decoded once and kept, in place (no copy per call). The value is passed
    /// `inout` so that it is not copied (see ``HeldValue/borrow(as:_:)``): `body` must not change it.
    /// - Throws: as ``object(as:)``; what `body` throws.
    func withObjectInPlace<T: Decodable, R>(as type: T.Type, _ body: (inout T) throws -> R) throws -> R {
        if objectValue.holds(T.self) { return try objectValue.borrow(as: T.self, body) }
        if objectValue.isEmpty {
            // The first read of the row's object (every row of a population): decoded into the row's storage and
            // lent from there, with no `T?` asked for.
            objectValue = HeldValue(owning: try decodeObject(as: T.self))
            return try objectValue.borrow(as: T.self, body)
        }
        var value = try castOrDecodeObject(as: T.self)
        return try body(&value)
    }

    // The cast is in a function of its own: a `T?` in unspecialized generic code looks up `Optional<T>`'s metadata on
    // every call (about 160 instructions), and the first read of a row's object has nothing to cast.
    @inline(never)
    private func castOrDecodeObject<T: Decodable>(as type: T.Type) throws -> T {
        if let kept = objectValue.boxed() as? T { return kept }
        let value = try decodeObject(as: T.self)
        // Kept only in place of nothing: a held value of another type may be borrowed by a caller up the stack.
        if objectValue.isEmpty { objectValue = HeldValue(owning: value) }
        return value
    }

    private func decodeObject<T: Decodable>(as type: T.Type) throws -> T {
        try withObjectBytes { try transaction.decode(T.self, from: $0, codecName: codecName, id: id) }
    }

    /// The metadata as `T`, or `nil` when the row has none; decoded once, then kept.
    /// - Throws: as ``object(as:)``; ``CanopyError/Code/transactionEnded`` when the transaction's closure returned.
    func metadata<T: Decodable>(as type: T.Type) throws -> T? {
        if metadataValue.holds(T.self) { return metadataValue.copy(as: T.self) }
        if metadataAbsent { return nil }
        return try castOrDecodeMetadata(as: T.self)
    }

    @inline(never)
    private func castOrDecodeMetadata<T: Decodable>(as type: T.Type) throws -> T? {
        if let kept = metadataValue.boxed() as? T { return kept }
        try checkAccess()
        guard let bytes = try metadataBytes() else {
            metadataAbsent = true
            return nil
        }
        let value: T = try bytes.withUnsafeBytes { try transaction.decode(T.self, from: $0, codecName: codecName, id: id) }
        if metadataValue.isEmpty { metadataValue = HeldValue(owning: value) }
        return value
    }
}
