import LMDB

/// A read transaction of a ``Connection``: a consistent snapshot of the database.
///
/// Obtained only inside ``Connection/read(_:)-4nflk`` (or as the base of a ``ReadWriteTransaction``) and valid only inside
/// that closure; it must not escape it. Reads go through the connection's caches.
public class ReadTransaction {
    let lmdbStorage: LMDB.ReadTransaction
    let connection: Connection
    let core: DatabaseCore
    /// The snapshot this transaction reads.
    public let snapshot: UInt64
    /// False once the closure that received the transaction has returned.
    private(set) var isActive = true
    /// The extensions' attachment slots as this transaction sees them (read on first use).
    var attachmentSlotsCache: AttachmentSlots?

    init(storage: LMDB.ReadTransaction, connection: Connection, snapshot: UInt64) {
        self.lmdbStorage = storage
        self.connection = connection
        self.core = connection.core
        self.snapshot = snapshot
    }

    /// The LMDB transaction underneath, while this transaction is active.
    /// - Throws: ``CanopyError/Code/transactionEnded`` once its closure has returned (the transaction escaped it).
    @usableFromInline
    var storage: LMDB.ReadTransaction {
        get throws(CanopyError) {
            guard isActive else { throw endedError() }
            return lmdbStorage
        }
    }

    func endedError() -> CanopyError {
        CanopyError(
            .transactionEnded,
            "the transaction (snapshot \(snapshot)) was used after its closure returned; a transaction is valid only inside read { } or readWrite { } — keep values, not the transaction",
            path: core.path)
    }

    /// Marks the transaction as ended (its closure returned).
    func end() { isActive = false }

    /// Throws ``CanopyError/Code/transactionEnded`` once the transaction's closure has returned: for readers built on
    /// a transaction that answer from memory (a view's counted page directory), so that every read of an ended
    /// transaction fails, not only those that reach LMDB.
    @inline(__always)
    public func checkActive() throws(CanopyError) {
        guard isActive else { throw endedError() }
    }

    var tables: StoreTables { core.tables }
    var cacheState: ConnectionState { connection.state }

    // MARK: Collections

    /// The record of `name`, or `nil` when the collection was never written.
    func collectionRecord(_ name: String) throws -> CollectionRecord? {
        let state = cacheState
        if state.lastCollectionName == name { return state.lastCollectionRecord }
        if let record = state.collections[name] {
            state.lastCollectionName = name
            state.lastCollectionRecord = record
            return record
        }
        guard !name.isEmpty, name.utf8.count <= core.maxKeySize else {
            throw CanopyError(.invalidCollectionName, "collection names must be 1 to \(core.maxKeySize) bytes of UTF-8",
                              path: core.path, collection: String(name.prefix(64)))
        }
        // From this transaction's snapshot, not from the records the process shares: those are of no one snapshot
        // (a migration in this process may have changed the codec after this snapshot, one in another process before).
        let storage = try storage
        let record = try guardedRead { try tables.collectionsTable.value(forKey: name, in: storage, path: core.path) }
        if let record {
            cacheState.rememberCollectionRecord(record, for: name)
            core.remember([name: record])
        }
        return record
    }

    func checkCodec(_ record: CollectionRecord, _ codec: any Codec, collection: String) throws {
        // The common case without a call through the existential (which makes the name's string).
        if Swift.type(of: codec) == BinaryCodec.self, record.codec == BinaryCodec.codecName { return }
        guard record.codec == codec.name else {
            throw CanopyError(
                .codecMismatch,
                "the collection is stored with codec '\(record.codec)' but was accessed with codec '\(codec.name)'; use a handle with the codec it was written with",
                path: core.path, collection: collection)
        }
    }

    func decode<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer, codec: any Codec, id: RowID) throws -> T {
        try decode(T.self, from: bytes, codec: codec, key: id.key, collection: id.collection)
    }

    /// ``decode(_:from:codec:id:)`` naming the row by its parts (no `RowID` to build on the way to a decode that works).
    final func decode<T: Decodable>(
        _ type: T.Type, from bytes: UnsafeRawBufferPointer, codec: any Codec, key: String, collection: String
    ) throws -> T {
        // (A metatype comparison, not a dynamic cast; the binary codec has no state.)
        try decode(T.self, from: bytes, codec: codec, isBinary: Swift.type(of: codec) == BinaryCodec.self, key: key, collection: collection)
    }

    /// ``decode(_:from:codec:key:collection:)`` for a caller that knows whether `codec` is the binary codec (the
    /// dynamic type of an existential is a runtime call, about 50 instructions).
    @inline(__always)
    final func decode<T: Decodable>(
        _ type: T.Type, from bytes: UnsafeRawBufferPointer, codec: any Codec, isBinary: Bool, key: String, collection: String
    ) throws -> T {
        guard isBinary else {
            do {
                return try codec.decode(T.self, from: bytes)
            } catch {
                throw decodingFailure(error, decoding: T.self, codec: codec, key: key, collection: collection)
            }
        }
        return try decodeBinary(T.self, from: bytes, key: key, collection: collection)
    }

    /// ``decode(_:from:codec:key:collection:)`` with the binary codec, for a caller that knows the collection's codec is
    /// the binary codec (no existential codec passed along: copying it in unspecialized code is a runtime call).
    @inline(__always)
    final func decodeBinary<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer, key: String, collection: String) throws -> T {
        do {
            // The binary codec's plan for the type decoded last, remembered by the connection (no lock).
            let state = cacheState
            if state.flatPlanType != ObjectIdentifier(T.self) {
                state.flatPlan = FlatDecodePlans.entry(for: T.self)
                state.flatPlanType = state.flatPlan == nil ? nil : ObjectIdentifier(T.self)
                state.flatPlanAligned = MemoryLayout<T>.alignment <= 16
            }
            // The fast path into the connection's scratch (the plan is `T`'s: `flatPlanType` says so), else the codec
            // (which takes the general path for bytes that are not the plan's map, and learns a plan not laid out yet).
            if state.flatPlanAligned, let plan = state.flatPlanReference,
               plan._withUnsafeGuaranteedRef({ $0.decode(into: state.flatScratch, from: bytes) }) {
                return state.flatScratch.assumingMemoryBound(to: T.self).move()
            }
            return try BinaryCodec().decode(T.self, from: bytes, entry: state.flatPlan)
        } catch {
            throw decodingFailure(error, decoding: T.self, codec: BinaryCodec(), key: key, collection: collection)
        }
    }

    /// The typed error of a decode that failed.
    final func decodingFailure<T>(_ error: any Error, decoding type: T.Type, codec: any Codec, key: String, collection: String) -> CanopyError {
        CanopyError(
            .decodingFailed, DecodingExplanation.message(for: error, decoding: T.self, codecName: codec.name),
            path: core.path, collection: collection, key: key, underlying: error)
    }

    func decode<T: Decodable>(_ type: T.Type, bytes: [UInt8], codecName: String, id: RowID) throws -> T {
        try bytes.withUnsafeBytes { try decode(T.self, from: $0, codecName: codecName, id: id) }
    }

    /// Decodes row `id`'s stored `bytes` with the codec recorded for its collection.
    /// - Throws: ``CanopyError/Code/codecMismatch`` for a codec that is not built in; ``CanopyError/Code/decodingFailed``.
    func decode<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer, codecName: String, id: RowID) throws -> T {
        guard let codec = Codecs.named(codecName) else {
            throw CanopyError(.codecMismatch, "the collection's codec '\(codecName)' is not a built-in codec", path: core.path,
                              collection: id.collection, key: id.key)
        }
        return try decode(T.self, from: bytes, codec: codec, id: id)
    }

    @inline(__always)
    func withRowKey<R>(_ record: CollectionRecord, _ key: String, collection: String, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        do {
            return try RowKey.with(collectionID: record.id, key: key, maxKeySize: core.maxKeySize, collection: collection, body)
        } catch var error as CanopyError {
            error.path = core.path
            throw error
        } catch {
            // LMDB's errors (a record that fails its checksum, a broken page) as the store's, inside the closure too.
            throw CanopyError.wrap(error, path: core.path, collection: collection, key: key)
        }
    }

    /// Calls `body` with the stored object bytes (after the flag byte) and whether metadata exists.
    func withStoredObject<R>(
        _ record: CollectionRecord, key: String, collection: String,
        _ body: (_ object: UnsafeRawBufferPointer, _ hasMetadata: Bool) throws -> R
    ) throws -> R? {
        try withRowKey(record, key, collection: collection) { rowKey in
            try storage.withValue(forKey: rowKey, in: tables.objects) { value -> R? in
                guard let value else { return nil }
                guard let flags = value.first else {
                    throw CanopyError(.corruptStore, "the stored row is empty", path: core.path, collection: collection, key: key)
                }
                guard let object = StoredRecord.objectBytes(value) else {
                    throw CanopyError(.corruptStore, "the stored row is malformed", path: core.path, collection: collection, key: key)
                }
                return try body(object, flags & 1 != 0)
            }
        }
    }

    /// The stored object bytes (after the flag byte) for `key`, or `nil`: LMDB's own memory, valid until this
    /// transaction writes or ends — decode them at once. (Not a closure generic over the result, as
    /// ``withStoredObject(_:key:collection:_:)`` is: a typed read past the cache is unspecialized code, where each
    /// generic layer asks the runtime for metadata.)
    final func storedObjectBytes(_ record: CollectionRecord, key: String, collection: String) throws -> UnsafeRawBufferPointer? {
        let storage = try storage
        let found = try withRowKey(record, key, collection: collection) { rowKey in try storage.unsafeValue(forKey: rowKey, in: tables.objects) }
        guard let value = found else { return nil }
        guard !value.isEmpty else {
            throw CanopyError(.corruptStore, "the stored row is empty", path: core.path, collection: collection, key: key)
        }
        guard let object = StoredRecord.objectBytes(value) else {
            throw CanopyError(.corruptStore, "the stored row is malformed", path: core.path, collection: collection, key: key)
        }
        return object
    }

    // MARK: Typed reads

    /// The object stored for `key` in `collection`, or `nil`.
    ///
    /// Served from the connection's cache when it holds the object; otherwise read and decoded, then cached. A cache
    /// hit obeys the same rules as a read: it throws once the transaction has ended, and when the handle's codec is
    /// not the collection's.
    /// - Throws: ``CanopyError/Code/decodingFailed`` (naming the collection and key) when the bytes cannot be decoded;
    ///   ``CanopyError/Code/codecMismatch`` when the collection was written with another codec;
    ///   ``CanopyError/Code/transactionEnded`` when the transaction is used after its closure returned.
    @inlinable
    public final func object<Object, Metadata>(forKey key: String, in collection: TypedCollection<Object, Metadata>) throws -> Object? {
        // Inlined into the caller, where `Object` is known: the value is copied out of the cache's slot (and the
        // optional made) as the concrete type, not through the runtime's generic witnesses; everything else of a hit
        // (finding the slot, the transaction's and codec's checks) is one call that is not generic.
        if let slot = try cachedValue(forKey: key, collection: collection.name, codec: collection.codec,
                                      isBinary: collection.usesBinaryCodec, type: ObjectIdentifier(Object.self), metadata: false) {
            return slot.assumingMemoryBound(to: Object.self).pointee
        }
        return try uncachedObject(forKey: key, in: collection)
    }

    /// Where the connection's object cache (`metadata`: its metadata cache) holds the value of `type` for `key` in
    /// `collection`, made the most recently used, after the checks of a read (see ``checkCachedRead(_:_:isBinary:)``);
    /// `nil` when the cache holds none. The address is valid until the cache changes: the caller copies the value at once.
    @usableFromInline
    final func cachedValue(
        forKey key: String, collection: String, codec: any Codec, isBinary: Bool, type: ObjectIdentifier, metadata: Bool
    ) throws -> UnsafeRawPointer? {
        let caches = metadata ? cacheState.metadataCache : cacheState.objectCache
        guard caches.count > 0, let cache = caches.cache(for: collection, type: type), let slot = cache.slot(for: CacheKey(key)) else {
            return nil
        }
        if isBinary && cache.binaryRecordChecked {
            guard isActive else { throw endedError() }
        } else {
            cache.binaryRecordChecked = try checkCachedRead(collection, codec, isBinary: isBinary)
        }
        return UnsafeRawPointer(cache.address(of: slot))
    }

    /// The checks a read makes before it reaches LMDB, for a read the cache answers: the transaction is active, and
    /// the handle's codec is the collection's (a cached value exists only for a collection that has a record).
    /// `isBinary`: whether `codec` is the binary codec (``TypedCollection/usesBinaryCodec``: the dynamic type of an
    /// existential is a call into the runtime).
    /// Returns whether both are the binary codec (the handle's and the collection's record's).
    @inline(__always) @discardableResult
    final func checkCachedRead(_ collection: String, _ codec: any Codec, isBinary: Bool) throws -> Bool {
        guard isActive else { throw endedError() }
        guard let record = try collectionRecord(collection) else { return false }
        // The common case without a call through the existential: the binary codec, recorded for the collection.
        if isBinary, record.codec == BinaryCodec.codecName { return true }
        try checkCodec(record, codec, collection: collection)
        return false
    }

    /// ``object(forKey:in:)`` past the cache. Apart, so that the hit path has no optional of the generic type (which,
    /// unspecialized, asks the runtime for its metadata on every call).
    @inline(never) @usableFromInline
    final func uncachedObject<Object, Metadata>(forKey key: String, in collection: TypedCollection<Object, Metadata>) throws -> Object? {
        guard let record = try collectionRecord(collection.name) else { return nil }
        let isBinary = collection.usesBinaryCodec
        if !isBinary || record.codec != BinaryCodec.codecName { try checkCodec(record, collection.codec, collection: collection.name) }
        guard let bytes = try storedObjectBytes(record, key: key, collection: collection.name) else { return nil }
        let object = isBinary
            ? try decodeBinary(Object.self, from: bytes, key: key, collection: collection.name)
            : try decode(Object.self, from: bytes, codec: collection.codec, isBinary: false, key: key, collection: collection.name)
        cacheState.objectCache.set(object, forKey: key, in: collection.name)
        return object
    }

    /// The metadata stored for `key` in `collection`, or `nil` when the row or its metadata is absent.
    ///
    /// Reads only the metadata: the object is not decoded. Cache hits obey the rules of ``object(forKey:in:)``.
    @inlinable
    public final func metadata<Object, Metadata>(forKey key: String, in collection: TypedCollection<Object, Metadata>) throws -> Metadata? {
        // (Inlined as ``object(forKey:in:)`` is.)
        if let slot = try cachedValue(forKey: key, collection: collection.name, codec: collection.codec,
                                      isBinary: collection.usesBinaryCodec, type: ObjectIdentifier(Metadata.self), metadata: true) {
            return slot.assumingMemoryBound(to: Metadata.self).pointee
        }
        return try uncachedMetadata(forKey: key, in: collection)
    }

    /// ``metadata(forKey:in:)`` past the cache (apart, as ``uncachedObject(forKey:in:)``).
    @inline(never) @usableFromInline
    final func uncachedMetadata<Object, Metadata>(
        forKey key: String, in collection: TypedCollection<Object, Metadata>
    ) throws -> Metadata? {
        let id = RowID(collection: collection.name, key: key)
        guard let record = try collectionRecord(collection.name) else { return nil }
        try checkCodec(record, collection.codec, collection: collection.name)
        let metadata: Metadata? = try withRowKey(record, key, collection: collection.name) { rowKey in
            try storage.withValue(forKey: rowKey, in: tables.metadata) { bytes in
                try bytes.map { try decode(Metadata.self, from: $0, codec: collection.codec, id: id) }
            }
        }
        if let metadata { cacheState.metadataCache.set(metadata, forKey: key, in: collection.name) }
        return metadata
    }

    /// The object and metadata stored for `key`, or `nil` when there is no such row.
    public func row<Object, Metadata>(
        forKey key: String, in collection: TypedCollection<Object, Metadata>
    ) throws -> (object: Object, metadata: Metadata?)? {
        guard let object = try object(forKey: key, in: collection) else { return nil }
        return (object, try metadata(forKey: key, in: collection))
    }

    /// Whether a row exists for `key` in the collection named `collection`.
    public func exists(key: String, inCollection collection: String) throws -> Bool {
        guard let record = try collectionRecord(collection) else { return false }
        return try withRowKey(record, key, collection: collection) { rowKey in
            try storage.withValue(forKey: rowKey, in: tables.objects) { $0 != nil }
        }
    }

    /// Whether a row exists for `key` in `collection`.
    public func exists<Object, Metadata>(key: String, in collection: TypedCollection<Object, Metadata>) throws -> Bool {
        try exists(key: key, inCollection: collection.name)
    }

    // MARK: Untyped reads

    /// The stored bytes of the object for `key` in the collection named `collection`, with the collection's codec
    /// name; `nil` when absent. Tools use it with ``Codecs/jsonText(from:codecName:prettyPrinted:)``.
    public func rawObject(forKey key: String, inCollection collection: String) throws -> (codec: String, bytes: [UInt8])? {
        guard let record = try collectionRecord(collection) else { return nil }
        return try withStoredObject(record, key: key, collection: collection) { bytes, _ in (record.codec, Array(bytes)) }
    }

    /// The stored bytes of the metadata for `key`, with the collection's codec name; `nil` when absent.
    public func rawMetadata(forKey key: String, inCollection collection: String) throws -> (codec: String, bytes: [UInt8])? {
        guard let record = try collectionRecord(collection) else { return nil }
        return try withRowKey(record, key, collection: collection) { rowKey in
            try storage.withValue(forKey: rowKey, in: tables.metadata) { bytes in bytes.map { (record.codec, Array($0)) } }
        }
    }

    /// The codec name recorded for `collection`, or `nil` when it was never written.
    public func codecName(ofCollection collection: String) throws -> String? {
        try collectionRecord(collection)?.codec
    }

    // MARK: Collections and keys

    /// The names of the collections that hold at least one row, sorted.
    public func collectionNames() throws -> [String] {
        var records: [(String, UInt32)] = []
        try tables.collectionsTable.forEach(in: storage, path: core.path) { name, record in
            records.append((name, record.id))
            return true
        }
        var names: [String] = []
        try storage.withCursor(in: tables.objects) { cursor in
            for (name, id) in records {
                let prefix = RowKey.prefix(collectionID: id)
                if let entry = try cursor.seek(atOrAfter: prefix), entry.key.starts(with: prefix) { names.append(name) }
            }
        }
        return names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// The number of rows in the collection named `collection`. Counts by scanning the collection's keys.
    public func count(inCollection collection: String) throws -> Int {
        guard let record = try collectionRecord(collection) else { return 0 }
        var count = 0
        try storage.forEach(in: tables.objects, prefix: RowKey.prefix(collectionID: record.id)) { _, _ in
            count += 1
            return true
        }
        return count
    }

    /// The total number of rows in all collections.
    public func count() throws -> Int {
        try storage.count(of: tables.objects)
    }

    /// Keys of `collection` in order (by UTF-8 bytes): those starting with `prefix`, strictly after `after`, at most
    /// `limit` of them. Page through a large collection by passing the last key of a page as the next `after`.
    public func keys(
        inCollection collection: String, prefix: String = "", after: String? = nil, limit: Int = .max, reverse: Bool = false
    ) throws -> [String] {
        var keys: [String] = []
        try enumerateKeys(inCollection: collection, prefix: prefix, after: after, reverse: reverse) { key in
            guard keys.count < limit else { return false }
            keys.append(key)
            return keys.count < limit
        }
        return keys
    }

    /// Visits the keys of `collection` in order while `body` returns `true`, with the same filters as
    /// ``keys(inCollection:prefix:after:limit:reverse:)``.
    /// - Throws: ``CanopyError/Code/corruptStore`` naming the row whose record is empty or malformed; what `body`
    ///   throws.
    public func enumerateKeys(
        inCollection collection: String, prefix: String = "", after: String? = nil, reverse: Bool = false,
        _ body: (String) throws -> Bool
    ) throws {
        try enumerateRows(inCollection: collection, prefix: prefix, after: after, reverse: reverse) { key, _, _ in
            try body(key)
        }
    }

    /// Visits rows of a collection in key order: key, object bytes, whether metadata exists.
    /// - Throws: ``CanopyError/Code/corruptStore`` naming the row whose record is empty or malformed (it is not
    ///   skipped: a key listing that left it out would be silently wrong).
    func enumerateRows(
        inCollection collection: String, prefix: String, after: String?, reverse: Bool,
        _ body: (String, UnsafeRawBufferPointer, Bool) throws -> Bool
    ) throws {
        guard let record = try collectionRecord(collection) else { return }
        let collectionPrefix = RowKey.prefix(collectionID: record.id)
        let fullPrefix = collectionPrefix + Array(prefix.utf8)
        try guardedRead { try storage.forEach(in: tables.objects, prefix: fullPrefix, reverse: reverse) { rowKey, value in
            let key = RowKey.key(of: rowKey)
            if let after {
                let beyond = reverse
                    ? key.utf8.lexicographicallyPrecedes(after.utf8)
                    : after.utf8.lexicographicallyPrecedes(key.utf8)
                if !beyond { return true }
            }
            guard let flags = value.first, let object = StoredRecord.objectBytes(value) else {
                throw CanopyError(.corruptStore, value.isEmpty ? "the stored row is empty" : "the stored row is malformed",
                                  path: core.path, collection: collection, key: key)
            }
            return try body(key, object, flags & 1 != 0)
        } }
    }

    /// Visits the objects of `collection` in key order while `body` returns `true`; `filter` (on the key) skips rows
    /// without decoding them.
    ///
    /// - Throws: ``CanopyError/Code/decodingFailed`` naming the row whose bytes do not decode;
    ///   ``CanopyError/Code/corruptStore`` naming the row whose record is malformed (it is not skipped);
    ///   ``CanopyError/Code/codecMismatch``; what `body` throws.
    public func enumerateObjects<Object, Metadata>(
        in collection: TypedCollection<Object, Metadata>, prefix: String = "", where filter: ((String) -> Bool)? = nil,
        _ body: (String, Object) throws -> Bool
    ) throws {
        try scanObjects(in: collection, prefix: prefix, where: filter, withKeys: true, body)
    }

    /// Visits the objects of `collection` in key order while `body` returns `true`, without their keys.
    ///
    /// The same scan as ``enumerateObjects(in:prefix:where:_:)``, with the same checks (every record's checksum, the
    /// codec, each row decoded as its type's `Decodable` decodes it), for a caller that needs only the values: no key
    /// `String` is made per row (a key of more than 15 bytes of UTF-8 is an allocation, a copy and a release). Errors
    /// still name the row's key.
    ///
    /// ```swift
    /// var open = 0
    /// try txn.enumerateObjects(in: reminders) { reminder in
    ///     if !reminder.done { open += 1 }
    ///     return true
    /// }
    /// ```
    /// - Throws: ``CanopyError/Code/decodingFailed`` naming the row whose bytes do not decode;
    ///   ``CanopyError/Code/corruptStore`` naming the row whose record is malformed (it is not skipped);
    ///   ``CanopyError/Code/codecMismatch``; what `body` throws.
    public func enumerateObjects<Object, Metadata>(
        in collection: TypedCollection<Object, Metadata>, prefix: String = "", _ body: (Object) throws -> Bool
    ) throws {
        try scanObjects(in: collection, prefix: prefix, where: nil, withKeys: false) { _, object in try body(object) }
    }

    /// The scan of both ``enumerateObjects(in:prefix:where:_:)`` forms: `body` gets each row's key (`withKeys`), or
    /// in its place an empty string (or the key, when one was made for the cache), and its object. Otherwise a key is made only when something asks for it: the
    /// filter, a non-empty cache, an error. (The keyed form passes its closure as it is: no extra call per row.)
    private final func scanObjects<Object, Metadata>(
        in collection: TypedCollection<Object, Metadata>, prefix: String, where filter: ((String) -> Bool)?,
        withKeys: Bool, _ body: (_ key: String, _ object: Object) throws -> Bool
    ) throws {
        guard let record = try collectionRecord(collection.name) else { return }
        try checkCodec(record, collection.codec, collection: collection.name)
        let cache = cacheState.objectCache.cache(for: collection.name, type: ObjectIdentifier(Object.self))
        // The decoder is chosen once per scan, not per row: the binary codec's fast path for flat structs, assembling
        // each row's value in one buffer for the whole scan (no per-row set-up), or the binary codec with what it
        // knows of the type (looked up again after the first row, which lays out its plan), or the handle's codec.
        let binary = collection.usesBinaryCodec
        var planEntry = binary ? FlatDecodePlans.entry(for: Object.self) : nil
        // (Unmanaged: `planEntry` holds the plan to the end of the scan, so a row's decode needs no retain and release
        // of it.)
        var flat = planEntry?.plan.map(Unmanaged.passUnretained)
        defer { withExtendedLifetime(planEntry) {} }
        let scratch = UnsafeMutableRawPointer.allocate(
            byteCount: max(1, MemoryLayout<Object>.size), alignment: max(1, MemoryLayout<Object>.alignment))
        defer { scratch.deallocate() }
        // The storages of the strings of a row the closure let go of, written again with the next row's strings (see
        // `FlatDecodePlan.destroy(_:keepingStoragesIn:)`): a scan whose closure keeps no string allocates none per row.
        let storages = UnsafeMutablePointer<AnyObject?>.allocate(capacity: FlatDecodePlan.reusedStorageSlots)
        storages.initialize(repeating: nil, count: FlatDecodePlan.reusedStorageSlots)
        defer {
            storages.deinitialize(count: FlatDecodePlan.reusedStorageSlots)
            storages.deallocate()
        }
        let rowPrefix = RowKey.prefix(collectionID: record.id) + Array(prefix.utf8)
        // The cursor is stepped here rather than through a closure per row (`forEach`), and reads ahead: one call into
        // LMDB (which checks each entry and its checksum in the same call) for up to 64 rows, then per row the decode
        // and `body`. An entry that fails its checks is met where a step would meet it (after the rows before it); the
        // read-ahead ends at the first key past the prefix, as the loop does (nothing after it is read or checked).
        try guardedRead { try storage.withCursor(in: tables.objects) { cursor in try rowPrefix.withUnsafeBytes { rowPrefix in
            var entry = try cursor.seek(atOrAfter: rowPrefix)
            var ahead = Cursor.ReadAhead(capacity: 64)
            var aheadIndex = 0
            // The row's key, made up front for the keyed form, else when something needs it (`hasKey`); an empty
            // string (no allocation) until then. (Declared once for the scan, so that the values-only form releases
            // no string per row; `body` ignores it there.)
            var key = ""
            while let found = entry, LMDB.ReadTransaction.key(found.key, startsWith: rowPrefix) {
                let rowKey = found.key, value = found.value
                var hasKey = withKeys
                if withKeys { RowKey.assignKey(&key, of: rowKey) }
                if let filter {
                    if !hasKey { key = RowKey.key(of: rowKey); hasKey = true }
                    guard filter(key) else {
                        aheadIndex += 1
                        if aheadIndex >= ahead.count {
                            aheadIndex = 0
                            _ = try cursor.readAhead(into: &ahead, prefix: rowPrefix)
                        }
                        entry = ahead.entry(at: aheadIndex)
                        continue
                    }
                }
                guard let bytes = StoredRecord.objectBytes(value) else {
                    throw CanopyError(.corruptStore, value.isEmpty ? "the stored row is empty" : "the stored row is malformed",
                                      path: core.path, collection: collection.name, key: hasKey ? key : RowKey.key(of: rowKey))
                }
                // The connection's cache is looked up by key: made here only when the cache holds something.
                if !hasKey, let cache, cache.count > 0 { key = RowKey.key(of: rowKey); hasKey = true }
                let proceed: Bool
                if hasKey, let cache, cache.count > 0, let slot = cache.slot(for: CacheKey(key)) {
                    proceed = try body(key, cache.value(at: slot, as: Object.self))
                } else if let flat, flat._withUnsafeGuaranteedRef({ $0.decode(into: scratch, from: bytes, reusing: storages) }) {
                    // The value goes back to the buffer after `body`, to be destroyed by the plan (which keeps the
                    // storages of its strings that `body` kept no copy of); if `body` throws, it is released as usual.
                    let object = scratch.assumingMemoryBound(to: Object.self).move()
                    proceed = try body(key, object)
                    scratch.assumingMemoryBound(to: Object.self).initialize(to: consume object)
                    flat._withUnsafeGuaranteedRef { $0.destroy(scratch, keepingStoragesIn: storages) }
                } else if binary {
                    let object: Object
                    do {
                        object = try BinaryCodec().decode(Object.self, from: bytes, entry: planEntry)
                    } catch {
                        throw decodingFailure(error, decoding: Object.self, codec: collection.codec,
                                              key: hasKey ? key : RowKey.key(of: rowKey), collection: collection.name)
                    }
                    if planEntry == nil {
                        planEntry = FlatDecodePlans.entry(for: Object.self)
                        flat = planEntry?.plan.map(Unmanaged.passUnretained)
                    }
                    proceed = try body(key, object)
                } else {
                    proceed = try body(key, try decode(Object.self, from: bytes, codec: collection.codec,
                                                       key: hasKey ? key : RowKey.key(of: rowKey), collection: collection.name))
                }
                guard proceed else { return }
                aheadIndex += 1
                if aheadIndex >= ahead.count {
                    aheadIndex = 0
                    _ = try cursor.readAhead(into: &ahead, prefix: rowPrefix)
                }
                entry = ahead.entry(at: aheadIndex)
            }
        } } }
    }

    /// Visits the rows of `collection` (object and metadata) in key order while `body` returns `true`.
    public func enumerateRows<Object, Metadata>(
        in collection: TypedCollection<Object, Metadata>, prefix: String = "", where filter: ((String) -> Bool)? = nil,
        _ body: (String, Object, Metadata?) throws -> Bool
    ) throws {
        try enumerateObjects(in: collection, prefix: prefix, where: filter) { key, object in
            try body(key, object, try metadata(forKey: key, in: collection))
        }
    }

    /// Visits the metadata of the rows of `collection` in key order while `body` returns `true`, without decoding
    /// objects. Rows without metadata are skipped.
    public func enumerateMetadata<Object, Metadata>(
        in collection: TypedCollection<Object, Metadata>, where filter: ((String) -> Bool)? = nil,
        _ body: (String, Metadata) throws -> Bool
    ) throws {
        guard let record = try collectionRecord(collection.name) else { return }
        try checkCodec(record, collection.codec, collection: collection.name)
        try guardedRead { try storage.forEach(in: tables.metadata, prefix: RowKey.prefix(collectionID: record.id)) { rowKey, bytes in
            let key = RowKey.key(of: rowKey)
            if let filter, !filter(key) { return true }
            let metadata = try decode(Metadata.self, from: bytes, codec: collection.codec, key: key, collection: collection.name)
            return try body(key, metadata)
        } }
    }

    // MARK: Extensions

    /// The registrations of extensions recorded in the database.
    public func extensionRecords() throws -> [ExtensionRecord] {
        var records: [ExtensionRecord] = []
        try tables.extensionsTable.forEach(in: storage, path: core.path) { name, bytes in
            records.append(try bytes.withUnsafeBytes { try decodeExtensionRecord($0, name: name) })
            return true
        }
        return records
    }

    /// Decodes a stored extension record.
    /// - Throws: ``CanopyError/Code/corruptStore`` naming the extension when the bytes are not a record.
    func decodeExtensionRecord(_ bytes: UnsafeRawBufferPointer, name: String) throws -> ExtensionRecord {
        do {
            return try JSONDecoderBox.decoder.decode(ExtensionRecord.self, from: Array(bytes))
        } catch {
            throw CanopyError(
                .corruptStore,
                "the stored registration record of extension '\(name)' is malformed; unregister the extension (unregisterExtension(named:dropStorage: true)) and register it again",
                path: core.path, extensionName: name, underlying: error)
        }
    }

    /// The database's path.
    public var databasePath: String { core.path }

    // MARK: What a write adds to reads (overridden by ReadWriteTransaction)

    /// The writer of `ext` in this transaction: in a read-write transaction of a process that registered `ext`, the
    /// ``ExtensionTransaction`` it created for the transaction (``StoreExtension/beginWrite(_:)``), which holds what
    /// the transaction changed so far; `nil` in a read transaction.
    ///
    /// How a read of an extension includes the transaction's own changes (a view's reader takes its writer's pages),
    /// and how an extension reads a dependency's state in the transaction (a filtered view reads its parent's
    /// entries): typed by the extension's ``StoreExtension/Writer``, so no caller discovers the transaction's kind or
    /// the writer's type at run time. Extensions hear of each change in registration order, and dependencies register
    /// first, so a dependency's writer has already handled the change being handled. `ext` is found by its name: pass
    /// the registered instance (``registeredExtension(named:as:)``).
    public func writer<E: StoreExtension>(of ext: E) -> E.Writer? { nil }

    /// Throws ``CanopyError/Code/extensionNotRegistered`` when this transaction writes rows that the extension `name`
    /// does not hear of: a read-write transaction of a process that did not register it (reading its stored state
    /// would miss the transaction's own writes). Never throws in a read transaction.
    public func requireMaintained(extensionNamed name: String) throws {}

    /// The extension registered in this transaction (not yet in the process's list), or `nil`.
    func extensionRegisteredInTransaction(named name: String) -> (any StoreExtension)? { nil }

    /// Whether every extension with a writer in this transaction is current by construction (a write transaction
    /// brings each registered extension up to date when it begins).
    func hasCurrentWriter(named name: String) -> Bool { false }

    /// Collections created by this transaction and not committed yet.
    func uncommittedCollections() -> [String: CollectionRecord] { [:] }

    /// The live attachment slots when the row scan may rewrite visited records (a read-write transaction), else `nil`.
    func scanWritableSlots() throws -> Set<UInt32>? { nil }

    /// The LMDB handle of the extension table `full` for reading in this transaction, or `nil` when it does not
    /// exist.
    func extensionTableHandle(named full: String) throws -> LMDB.Database? {
        if let known = core.openTable(named: full) { return known }
        return try core.openExistingTable(named: full)
    }
}
