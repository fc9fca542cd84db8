/// A row as every extension and every closure an extension runs sees it (the closures that group, order, filter or
/// index rows, whatever extension runs them). Modules built on this interface may name it after their own closures
/// with a type alias; it stays this one type.
///
/// It is made from a row being written (a ``RowChange``) or a stored row (a ``StoredRow``: visited by the row scan,
/// or read by its stored key), and reads through it:
///
/// - the row's address (``id``, ``collection``, ``key``, ``storedKey``) and its collection's codec (``codecName``);
/// - its object and metadata, decoded on demand, at most once per row whichever extension or closure asks first
///   (``object(as:)``, ``metadata(as:)``); for a written row, the value the writer passed when the type opts in to
///   ``BinaryCodecSynthesizedDecoding`` (see ``RowChange``);
/// - the same values through a typed collection handle, checked against the row's collection name and recorded codec
///   (``object(in:)``, ``metadata(in:)``);
/// - the object read in place, without a copy per call (``withObject(as:_:)``, ``withObject(in:_:)``): for closures
///   that run on every row;
/// - an extension's attachment at its slot, as the current write leaves it so far (``attachment(at:)``).
///
/// A row of the scan lends its bytes from the memory map for the visit only: read after the closure it was passed to
/// returned, anything not decoded during the visit throws ``CanopyError/Code/transactionEnded`` instead of reading
/// memory LMDB may have reused; keep the values read from a row, not the row. A written row holds its values
/// itself, and reads what it does not hold through its transaction, which refuses once its closure has returned.
///
/// It is a value holding a reference to the row it reads: copying it is free, and every copy shares the decoded
/// values.
public struct ExtensionRow {
    /// Where the values come from (no closure per row: an extension makes one of these per written row).
    private enum Source {
        case change(RowChange)
        case stored(StoredRow)
    }

    private let source: Source

    /// The row being written by `change` (its values after the change).
    public init(_ change: RowChange) {
        source = .change(change)
    }

    /// The stored row `stored`.
    public init(_ stored: StoredRow) {
        source = .stored(stored)
    }

    /// The row's address.
    public var id: RowID {
        switch source {
        case .change(let change): change.id
        case .stored(let stored): stored.id
        }
    }

    /// The collection's name.
    public var collection: String {
        // Read where the source keeps it (copying ``id`` first would retain and release the key too).
        switch source {
        case .change(let change): change.id.collection
        case .stored(let stored): stored.id.collection
        }
    }
    /// The key.
    public var key: String {
        switch source {
        case .change(let change): change.id.key
        case .stored(let stored): stored.id.key
        }
    }

    /// The row's stored key (its collection's id, then the key).
    public var storedKey: StoredRowKey {
        switch source {
        case .change(let change): change.storedKey
        case .stored(let stored): stored.storedKey
        }
    }

    /// The codec recorded for the row's collection.
    public var codecName: String {
        switch source {
        case .change(let change): change.codecName
        case .stored(let stored): stored.codecName
        }
    }

    /// The object as `T` (decoded once, then kept).
    /// - Throws: ``CanopyError/Code/decodingFailed`` when the stored bytes are not a `T`;
    ///   ``CanopyError/Code/transactionEnded`` when the row is used after the closure it was passed to returned.
    public func object<T: Decodable>(as type: T.Type = T.self) throws -> T {
        switch source {
        case .change(let change): try change.object(as: T.self)
        case .stored(let stored): try stored.object(as: T.self)
        }
    }

    /// The metadata as `T`, or `nil` when the row has none (decoded once, then kept).
    /// - Throws: as ``object(as:)``.
    public func metadata<T: Decodable>(as type: T.Type = T.self) throws -> T? {
        switch source {
        case .change(let change): try change.metadata(as: T.self)
        case .stored(let stored): try stored.metadata(as: T.self)
        }
    }

    /// The object, decoded through `collection` (its types and codec).
    /// - Throws: ``CanopyError/Code/invalidArgument`` when the row is in another collection;
    ///   ``CanopyError/Code/codecMismatch`` when the collection was written with another codec; what ``object(as:)``
    ///   throws.
    public func object<Object, Metadata>(in collection: TypedCollection<Object, Metadata>) throws -> Object {
        try check(collection.name, collection.codec, binary: collection.usesBinaryCodec)
        return try object(as: Object.self)
    }

    /// Calls `body` with the object as `T`, read in place where the row keeps it, and returns what `body` returns: as
    /// ``object(as:)``, without a copy of the value per call (a written row lends the value being written; a stored
    /// row decodes it once and keeps it). Use it in closures that run for every row: the value is the same, a copy of
    /// a struct with strings or arrays is not free.
    /// - Throws: what ``object(as:)`` throws; what `body` throws.
    public func withObject<T: Decodable, R>(as type: T.Type = T.self, _ body: (_ object: T) throws -> R) throws -> R {
        // In place (`inout`, which the row's holders read without copying), handed to `body` by value: no copy.
        switch source {
        case .change(let change): try change.withObjectInPlace(as: T.self) { object in try body(object) }
        case .stored(let stored): try stored.withObjectInPlace(as: T.self) { object in try body(object) }
        }
    }

    /// Calls `body` with the object, decoded through `collection` (its types and codec) and read in place (see
    /// ``withObject(as:_:)``), and returns what `body` returns. The typed forms of the views' and indexes' closures
    /// read rows this way.
    /// - Throws: what ``object(in:)`` throws; what `body` throws.
    public func withObject<Object, Metadata, R>(
        in collection: TypedCollection<Object, Metadata>, _ body: (_ object: Object) throws -> R
    ) throws -> R {
        try check(collection.name, collection.codec, binary: collection.usesBinaryCodec)
        return try withObject(as: Object.self, body)
    }

    /// The metadata, decoded through `collection`, or `nil` when the row has none.
    /// - Throws: as ``object(in:)``.
    public func metadata<Object, Metadata>(in collection: TypedCollection<Object, Metadata>) throws -> Metadata? {
        try check(collection.name, collection.codec, binary: collection.usesBinaryCodec)
        return try metadata(as: Metadata.self)
    }

    /// Whether a typed handle for collection `name` with `codec` reads this row (``RowID/checkTyped(collection:codec:recordedCodec:)``,
    /// which throws the error when not). The names are compared where the source keeps them, without copying the
    /// row's address and codec name out of it first: a typed closure asks on every row, once per closure (four
    /// times a row for two views), and each copy retained and released both strings.
    private func check(_ name: String, _ codec: any Codec, binary: Bool) throws {
        // The binary codec's name is known without asking the existential (a witness call per closure call).
        switch source {
        case .change(let change):
            if change.id.collection == name, change.codecName == (binary ? BinaryCodec.codecName : codec.name) { return }
            try change.id.checkTyped(collection: name, codec: codec, recordedCodec: change.codecName)
        case .stored(let stored):
            if stored.id.collection == name, stored.codecName == (binary ? BinaryCodec.codecName : codec.name) { return }
            try stored.id.checkTyped(collection: name, codec: codec, recordedCodec: stored.codecName)
        }
    }

    /// The row's attachment at `slot` (an extension's per-row record): for a written row, as the extensions that
    /// handled the change so far left it (a dependency's, for its dependents), otherwise as the record carries it.
    /// - Throws: ``CanopyError/Code/corruptStore`` when the record's attachments are malformed;
    ///   ``CanopyError/Code/transactionEnded`` after a scan visit.
    public func attachment(at slot: AttachmentSlot) throws -> [UInt8]? {
        switch source {
        case .change(let change): try change.attachment(at: slot)
        case .stored(let stored): try stored.attachment(at: slot)
        }
    }
}
