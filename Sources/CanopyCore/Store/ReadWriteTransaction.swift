import Foundation
import LMDB

/// A read-write transaction of a ``Connection``: everything a ``ReadTransaction`` does, plus writes.
///
/// Obtained only inside ``Connection/readWrite(_:)-14mnh``, valid only inside that closure and on its thread. It commits when
/// the closure returns and rolls back when it throws. Writes go through to the connection's caches; registered
/// extensions (views) hear of every change and update their state in the same transaction.
public final class ReadWriteTransaction: ReadTransaction {
    let lmdbWriteStorage: LMDB.WriteTransaction
    /// The LMDB write transaction, while this transaction is active.
    /// - Throws: ``CanopyError/Code/transactionEnded`` once its closure has returned.
    @usableFromInline
    var writeStorage: LMDB.WriteTransaction {
        get throws(CanopyError) {
            guard isActive else { throw endedError() }
            return lmdbWriteStorage
        }
    }
    // The properties every row's write or every commit touches go without the runtime's exclusivity check (a call per
    // access, per row or commit): the transaction is used on one thread, and no access to them overlaps another (no
    // user code runs during one).
    @exclusivity(unchecked) var storeState: StoreState
    @exclusivity(unchecked) var changes = ChangeLog()
    @exclusivity(unchecked) var didWrite = false
    /// Whether the change feed is on (the snapshot it was enabled at) as this transaction's commit found it, once
    /// ``recordInChangeFeed(_:)`` read it: what the committed state says too.
    @exclusivity(unchecked) var feedEnabledSince: UInt64??
    /// Bytes of objects and metadata written (the `canopy_bytes_written_total` metric).
    @exclusivity(unchecked) var bytesWritten = 0
    @exclusivity(unchecked) var sawMapFull = false
    /// The first error an extension's writer threw while told of a row change: writers before it may have written
    /// their tables for a change the store then did not write, so the transaction must not commit (``commit()``
    /// refuses it, whether or not the caller caught the error).
    @exclusivity(unchecked) var interruptedChange: (any Error)?
    @exclusivity(unchecked) var newCollections: [String: CollectionRecord] = [:]
    /// The entry of `newCollections` found last (two properties, as the connection's ``ConnectionState/lastCollectionName``).
    @exclusivity(unchecked) private var lastNewCollectionName: String?
    @exclusivity(unchecked) private var lastNewCollectionRecord = CollectionRecord(id: 0, codec: "")
    @exclusivity(unchecked) var writers: [(name: String, writer: any ExtensionTransaction)] = []
    /// See ``rowCursor()``.
    @exclusivity(unchecked) var rowCursorStorage: LMDB.Cursor?
    /// The attachment slot of the writer at each position of ``writers`` (with its name), found on its first edit:
    /// every edited row of a bulk write asked for it by name, a hash of the name per row and writer. Emptied whenever
    /// the slots change (``writableAttachmentSlot(for:)``, a retired slot).
    @exclusivity(unchecked) var writerSlots: [(name: String, slot: UInt32)?] = []
    @exclusivity(unchecked) var registeredExtensions: [any StoreExtension] = []
    @exclusivity(unchecked) var unregisteredExtensions: [String] = []
    /// Extensions rebuilt in this transaction (told so at commit: ``ExtensionCommit/isReset``).
    @exclusivity(unchecked) var rebuiltExtensions: Set<String> = []
    /// Extensions registered in this process whose state lags the store and was not brought up to date in this
    /// transaction (only in a registering transaction, for an extension whose recorded definition differs). They are
    /// not recorded as consistent with the commit's snapshot; every other writer's extension is (it was current when
    /// the transaction began, or was caught up, rebuilt or registered in it). Empty in nearly every transaction.
    @exclusivity(unchecked) var laggingExtensions: Set<String> = []

    /// Bytes attached to this commit's ``CommitNotification/customPayload``, for observers (who wrote, why).
    public var customPayload: [UInt8]? {
        didSet { if customPayload != nil { didWrite = true } }
    }

    init(storage: LMDB.WriteTransaction, connection: Connection, state: StoreState) throws {
        self.lmdbWriteStorage = storage
        self.storeState = state
        super.init(storage: storage, connection: connection, snapshot: state.snapshot)
        let (extensions, generation, verified) = core.extensionsForWrite(at: state.snapshot)
        let checks = !connection.state.isMaintenance
        for ext in extensions {
            if checks && !verified { try checkDefinition(of: ext) }
            writers.append((ext.name, try ext.beginWrite(self)))
        }
        checkedDefinitionsGeneration = checks ? generation : nil
        try catchUpStaleExtensions(extensions)
    }

    /// The generation of the extensions whose recorded definitions this transaction checked (or knew to match), or
    /// `nil` when it did not check them (a registering transaction).
    private var checkedDefinitionsGeneration: UInt64?

    /// After a commit at `snapshot`: the definitions this transaction checked still match their records there, unless
    /// it changed registrations or rebuilt an extension (which rewrites its record), so the next write of this process
    /// that begins at `snapshot` need not read them again.
    private func rememberCheckedDefinitions(at snapshot: UInt64) {
        guard let generation = checkedDefinitionsGeneration, registeredExtensions.isEmpty, unregisteredExtensions.isEmpty,
              rebuiltExtensions.isEmpty else { return }
        core.rememberVerifiedDefinitions(at: snapshot, generation: generation)
    }

    /// Throws when the registration recorded in the database no longer matches `ext` as registered in this process:
    /// another process registered another definition (version tag, kind or options) of it, or unregistered it.
    /// Maintaining the extension with this process's definition would leave its state wrong for the other one,
    /// silently.
    ///
    /// Cost: one LMDB read and a byte comparison per extension; the record is decoded only when its bytes changed.
    private func checkDefinition(of ext: any StoreExtension) throws {
        if try definitionMatches(ext) == true { return }
        let name = ext.name
        let recorded = try extensionRecords().first { $0.name == name }
        let what = recorded.map { "version tag '\($0.versionTag)' (kind '\($0.kind)', options \($0.options))" } ?? "no registration (it was unregistered)"
        throw CanopyError(
            .extensionDefinitionMismatch,
            "extension '\(name)' is registered in this process with version tag '\(ext.versionTag)' (kind '\(ext.kind)', options \((try? ext.recordedOptions()) ?? "that cannot be encoded")), but the database records \(what), written by another process; the write was rolled back so the extension's state stays right. Register the same definition in every process; to take this one, unregister it here and register it again (which rebuilds it)",
            path: core.path, extensionName: name)
    }

    /// Whether the recorded registration of `ext` has its version tag, kind and options; `nil` when none is recorded.
    func definitionMatches(_ ext: any StoreExtension) throws -> Bool? {
        let name = ext.name
        return try tables.extensionsTable.withValue(forKey: name, in: storage) { bytes in
            guard let bytes else { return nil }
            if core.isVerifiedRecord(bytes, of: name) { return true }
            let record = try decodeExtensionRecord(bytes, name: name)
            guard try ext.matchesDefinition(of: record) else { return false }
            core.rememberVerifiedRecord(Array(bytes), of: name)
            return true
        }
    }

    override func collectionRecord(_ name: String) throws -> CollectionRecord? {
        if !newCollections.isEmpty {
            // The collection created in this transaction that was asked for last, found without hashing its name.
            if lastNewCollectionName == name { return lastNewCollectionRecord }
            if let record = newCollections[name] {
                lastNewCollectionName = name
                lastNewCollectionRecord = record
                return record
            }
        }
        return try super.collectionRecord(name)
    }

    /// The record of `collection`, creating it (bound to `codec`) when the collection was never written.
    func collectionRecordForWriting(_ name: String, codec: any Codec) throws -> CollectionRecord {
        if let record = try collectionRecord(name) {
            try checkCodec(record, codec, collection: name)
            return record
        }
        guard !name.isEmpty, name.utf8.count <= core.maxKeySize else {
            throw CanopyError(.invalidCollectionName, "collection names must be 1 to \(core.maxKeySize) bytes of UTF-8",
                              path: core.path, collection: String(name.prefix(64)))
        }
        var maxID: UInt32 = 0
        try tables.collectionsTable.forEach(in: storage, path: core.path) { _, record in
            maxID = max(maxID, record.id)
            return true
        }
        for record in newCollections.values { maxID = max(maxID, record.id) }
        let record = CollectionRecord(id: maxID + 1, codec: codec.name)
        try guarded { try tables.collectionsTable.put(record, forKey: name, in: writeStorage) }
        wroteCollectionRecord(record, for: name)
        return record
    }

    /// Records that this transaction wrote `record` for collection `name` (a new collection, or a codec changed):
    /// seen by this transaction at once, in ``lastNewCollectionRecord`` too when that is `name`'s, and by the
    /// connection's records at commit.
    func wroteCollectionRecord(_ record: CollectionRecord, for name: String) {
        newCollections[name] = record
        if lastNewCollectionName == name { lastNewCollectionRecord = record }
        didWrite = true
    }

    /// Runs an LMDB write, remembering a full map so that the connection grows it and runs the transaction again even
    /// if the caller swallows the error.
    @inline(__always) @usableFromInline
    func guarded<R>(_ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let error as LMDBError where error.code == .mapFull {
            sawMapFull = true
            throw CanopyError.wrap(error, path: core.path)
        }
    }

    func encode<T: Encodable>(_ value: T, codec: any Codec, id: RowID) throws -> [UInt8] {
        do {
            // The binary codec writes with the connection's root encoder into its buffer, kept from the last value
            // (no encoder, buffer and stack of containers allocated, grown and freed per row). They are kept only when
            // nothing else holds them: an `encode(to:)` that kept its encoder (or a container, or a super encoder)
            // must not write into the next row's bytes.
            guard Swift.type(of: codec) == BinaryCodec.self else { return try codec.encode(value) }
            var encoder = cacheState.rootEncoder ?? BinaryEncoder(state: BinaryEncodingState(), slot: .pending(0), parent: nil, key: nil)
            cacheState.rootEncoder = nil
            defer {
                if encoder.state.reset(), encoder.state.liveEncoders == 1, isKnownUniquelyReferenced(&encoder) {
                    cacheState.rootEncoder = encoder
                }
            }
            return try BinaryCodec().encode(value, root: encoder)
        } catch {
            throw CanopyError(.encodingFailed, "cannot encode \(String(reflecting: T.self)) with codec '\(codec.name)'",
                              path: core.path, collection: id.collection, key: id.key, underlying: error)
        }
    }

    /// Objects this transaction put in the connection's object cache (see ``cacheWritten(at:forKey:in:)``).
    @exclusivity(unchecked) private var objectsCached = 0

    /// Caches an object this transaction wrote, as later reads return it — unless the transaction already cached as
    /// many objects as the cache holds. Past that, each written object would only evict one written a moment before
    /// (an LRU insert and eviction: about 1,100 instructions a row of a bulk write, for values the cache drops again),
    /// so a write only removes what the cache holds for its key (a value cached earlier in the transaction, or by a
    /// read since). A read finds nothing stale either way: the cache holds a key's value as written, or nothing.
    ///
    /// The object is read at its address only when it is cached: read through `pointee` and passed on, it would be
    /// copied for every row (about 200 instructions a row of a bulk insert), cached or not.
    ///
    /// `existed`: whether the row existed before this write. A row that did not has nothing to remove: the cache
    /// holds only values of rows that exist at its snapshot (what this connection read or wrote; every removal,
    /// here or caught up from the log, drops its key, and a rollback empties the cache), so the lookup is skipped
    /// (about 300 instructions a row of a bulk insert past the cache's size).
    @inline(__always)
    func cacheWritten<Object>(_ object: Object, forKey key: String, in collection: String, existed: Bool) {
        let cache = cacheState.objectCache
        if objectsCached < cache.limit {
            objectsCached += 1
            cache.set(object, forKey: key, in: collection)
        } else if existed {
            cache.remove(key: key, in: collection)
        }
    }

    /// ``cacheWritten(_:forKey:in:existed:)`` of the object at `object`.
    @inline(__always)
    func cacheWritten<Object>(at object: UnsafePointer<Object>, forKey key: String, in collection: String, existed: Bool) {
        let cache = cacheState.objectCache
        if objectsCached < cache.limit {
            objectsCached += 1
            cache.set(object.pointee, forKey: key, in: collection)
        } else if existed {
            cache.remove(key: key, in: collection)
        }
    }

    // MARK: Writing rows

    /// Stores `object` for `key` in `collection`, with `metadata` (or none: existing metadata is removed).
    ///
    /// Views, other extensions and the connection's cache get the object as every later read returns it: decoded
    /// from the stored bytes through the type's `init(from:)` (which may lowercase, clamp or fill defaults), or the
    /// value itself for a type that opts in to ``BinaryCodecSynthesizedDecoding``.
    ///
    /// - Throws: ``CanopyError/Code/keyTooLong`` when the key exceeds LMDB's key size (507 bytes of UTF-8);
    ///   ``CanopyError/Code/encodingFailed``; ``CanopyError/Code/codecMismatch`` when the collection was written with
    ///   another codec; ``CanopyError/Code/decodingFailed`` when the type's `init(from:)` rejects what it encoded
    ///   (nothing is written: no read could return it).
    @inlinable
    public func set<Object, Metadata>(
        _ object: Object, forKey key: String, in collection: TypedCollection<Object, Metadata>, metadata: Metadata? = nil
    ) throws {
        // Inlined into the caller, where the types are known, so that the optional is tested there: unspecialized,
        // binding a `Metadata?` (or making an `Object?`) asks the runtime for the optional type's metadata, about
        // 400 instructions a write.
        if let metadata {
            try setRow(object, metadata: metadata, forKey: key, in: collection)
        } else {
            try setRow(object, forKey: key, in: collection)
        }
    }

    /// ``set(_:forKey:in:metadata:)`` without metadata (existing metadata is removed).
    @usableFromInline
    func setRow<Object, Metadata>(_ object: Object, forKey key: String, in collection: TypedCollection<Object, Metadata>) throws {
        let record = try collectionRecordForWriting(collection.name, codec: collection.codec)
        let id = RowID(collection: collection.name, key: key)
        let objectBytes = try encode(object, codec: collection.codec, id: id)
        if writers.isEmpty {
            // No extension to lend the value to: no address taken (a closure and its thunks per row).
            if cacheState.promisesSynthesizedDecoding(Object.self) {
                let existed = try writeRow(record: record, id: id, objectBytes: objectBytes, metadataBytes: nil, object: .none, metadata: .none)
                cacheWritten(object, forKey: key, in: collection.name, existed: existed)
            } else {
                let readObject = try readBack(object, bytes: objectBytes, codec: collection.codec, id: id)
                let existed = try writeRow(record: record, id: id, objectBytes: objectBytes, metadataBytes: nil, object: .none, metadata: .none)
                cacheWritten(readObject, forKey: key, in: collection.name, existed: existed)
            }
        } else {
            try withReadBack(object, bytes: objectBytes, codec: collection.codec, id: id) { readObject in
                // Lent to the extensions for the write (no copy, no box), then cached.
                let existed = try writeRow(record: record, id: id, objectBytes: objectBytes, metadataBytes: nil, object: HeldValue(lending: readObject), metadata: .none)
                cacheWritten(at: readObject, forKey: key, in: collection.name, existed: existed)
            }
        }
        cacheState.metadataCache.remove(key: key, in: collection.name)
    }

    /// ``set(_:forKey:in:metadata:)`` with metadata.
    @usableFromInline
    func setRow<Object, Metadata>(
        _ object: Object, metadata: Metadata, forKey key: String, in collection: TypedCollection<Object, Metadata>
    ) throws {
        let record = try collectionRecordForWriting(collection.name, codec: collection.codec)
        let id = RowID(collection: collection.name, key: key)
        let objectBytes = try encode(object, codec: collection.codec, id: id)
        let metadataBytes = try encode(metadata, codec: collection.codec, id: id)
        try withReadBack(object, bytes: objectBytes, codec: collection.codec, id: id) { readObject in
            try withReadBack(metadata, bytes: metadataBytes, codec: collection.codec, id: id) { readMetadata in
                let existed = try writeRow(record: record, id: id, objectBytes: objectBytes, metadataBytes: metadataBytes,
                                           object: HeldValue(lending: readObject), metadata: HeldValue(lending: readMetadata))
                cacheWritten(at: readObject, forKey: key, in: collection.name, existed: existed)
                cacheState.metadataCache.set(readMetadata.pointee, forKey: key, in: collection.name)
            }
        }
    }

    /// The value a read of the row will return, which is what the caches keep and the extensions (views) see: the
    /// written value itself only for a type that promises synthesized decoding (``BinaryCodecSynthesizedDecoding``),
    /// otherwise `bytes` decoded through the type's `init(from:)` — which may lowercase, clamp or fill defaults, so the
    /// value as passed could differ from every later read (a view would group it as no reader sees it, and this
    /// connection's cache would return it while other processes read the decoded one).
    ///
    /// - Throws: ``CanopyError/Code/decodingFailed`` when the type cannot decode what it encodes (its `init(from:)`
    ///   rejects the value): the row is not written, since no read could return it.
    func readBack<T: Decodable>(_ value: T, bytes: [UInt8], codec: any Codec, id: RowID) throws -> T {
        if cacheState.promisesSynthesizedDecoding(T.self) { return value }
        return try decodeBack(T.self, bytes: bytes, codec: codec, id: id)
    }

    /// Calls `body` with the address of ``readBack(_:bytes:codec:id:)``'s value: `value` itself, in place, for a type
    /// that promises synthesized decoding (no copy of it), otherwise the decoded value.
    func withReadBack<T: Decodable, R>(_ value: T, bytes: [UInt8], codec: any Codec, id: RowID, _ body: (UnsafePointer<T>) throws -> R) throws -> R {
        if cacheState.promisesSynthesizedDecoding(T.self) { return try withUnsafePointer(to: value, body) }
        return try withUnsafePointer(to: try decodeBack(T.self, bytes: bytes, codec: codec, id: id), body)
    }

    private func decodeBack<T: Decodable>(_ type: T.Type, bytes: [UInt8], codec: any Codec, id: RowID) throws -> T {
        do {
            return try bytes.withUnsafeBytes { try decode(T.self, from: $0, codec: codec, id: id) }
        } catch let error as CanopyError {
            throw CanopyError(
                .decodingFailed,
                "the value written cannot be read back: \(String(reflecting: T.self))'s init(from:) rejects what its encode(to:) wrote with codec '\(codec.name)'; nothing was written",
                path: core.path, collection: id.collection, key: id.key, underlying: error.underlying ?? error)
        }
    }

    /// Writes a row's stored bytes (object, and metadata or none) on the one write path: the row's record is read
    /// once, the change goes to every extension's writer (``RowChange``), and the record is written once with the
    /// attachments they asked for; the change log takes the same change. `object` and `metadata` are the Swift values
    /// when the caller has them, lent for the call (the extensions read them in place; the change's loan ends before
    /// this returns); without them extensions decode the bytes. The caller then updates the connection's caches: it
    /// has the typed values (here, erased, they would be boxed on every write). Returns whether the row existed before.
    @discardableResult
    func writeRow(
        record: CollectionRecord, id: RowID, objectBytes: [UInt8], metadataBytes: [UInt8]?, object: consuming HeldValue,
        metadata: consuming HeldValue
    ) throws -> Bool {
        let hadMetadata: Bool?
        if writers.isEmpty {
            hadMetadata = try writeRowWithoutExtensions(record: record, id: id, objectBytes: objectBytes, metadataBytes: metadataBytes)
        } else {
            hadMetadata = try withRowKey(record, id.key, collection: id.collection) { rowKey in
                let previous = try previousRecordAtCursor(rowKey, id: id)
                var change = RowChange(
                    id: id, storedKey: StoredRowKey(assembled: rowKey), kind: previous == nil ? .insert : .update,
                    codecName: record.codec, objectChanged: true, metadataChanged: metadataBytes != nil || previous?.hasMetadata == true,
                    transaction: self, previousAttachments: previous?.attachments ?? [],
                    object: object.take(), objectBytes: objectBytes, metadata: metadata.take(), metadataBytes: .some(metadataBytes))
                try tellWriters(lending: &change)
                if change.hadNoAttachments {
                    try objectBytes.withUnsafeBytes { try putNewRecord(rowKey, hasMetadata: metadataBytes != nil, edits: change, object: $0) }
                } else {
                    let attachments = try change.attachmentsAfter(live: liveAttachmentSlots) ?? previous?.attachments ?? []
                    try objectBytes.withUnsafeBytes { object in
                        try putRecord(rowKey, hasMetadata: metadataBytes != nil, attachments: attachments, object: object)
                    }
                }
                try writeMetadata(metadataBytes, of: rowKey, hadMetadata: previous?.hasMetadata == true)
                return previous?.hasMetadata
            }
        }
        didWrite = true
        bytesWritten += objectBytes.count + (metadataBytes?.count ?? 0)
        if let hadMetadata {
            changes.changed(id.key, in: id.collection, object: true, metadata: metadataBytes != nil || hadMetadata)
            return true
        } else {
            changes.created(id.key, in: id.collection, metadata: metadataBytes != nil)
            return false
        }
    }

    /// Writes a row when no extension is registered in this process: a new row is inserted as it is, in one put; an
    /// existing row keeps what extensions registered elsewhere attached to its record (they are stale after this
    /// write, as they were when they kept tables of their own, and rebuild). Returns whether the row had metadata, or
    /// `nil` when it is new.
    ///
    /// One descent of the rows' tree: the previous record is read through a cursor, which the put then starts from
    /// (LMDB checks the cursor's leaf before descending again); an `MDB_NOOVERWRITE` attempt followed by a put
    /// descended twice for an existing row. The cursor is this call's own, closed when it returns: the transaction's
    /// kept row cursor (``rowCursor()``) costs more to keep and close than one row saves (see the Views article of
    /// module Canopy, session 16).
    private func writeRowWithoutExtensions(record: CollectionRecord, id: RowID, objectBytes: [UInt8], metadataBytes: [UInt8]?) throws -> Bool? {
        try withRowKey(record, id.key, collection: id.collection) { rowKey in
            let previous = try guarded {
                try writeStorage.withCursor(in: tables.objects) { cursor in
                    let previous = try guardedRead { try cursor.seek(key: rowKey).map(Self.replacedRecord) }
                    try objectBytes.withUnsafeBytes { object in
                        try putRecord(rowKey, at: cursor, hasMetadata: metadataBytes != nil, attachments: previous?.attachments ?? [], object: object)
                    }
                    return previous
                }
            }
            try writeMetadata(metadataBytes, of: rowKey, hadMetadata: previous?.hasMetadata == true)
            return previous?.hasMetadata
        }
    }

    /// Replaces the object of an existing row, keeping its metadata. Does nothing and returns `false` when there is no
    /// row for `key`. As with ``set(_:forKey:in:metadata:)``, extensions and caches get the object as a read returns
    /// it, and a value its type cannot decode again is ``CanopyError/Code/decodingFailed``.
    @discardableResult
    public func replace<Object, Metadata>(_ object: Object, forKey key: String, in collection: TypedCollection<Object, Metadata>) throws -> Bool {
        guard let record = try collectionRecord(collection.name) else { return false }
        try checkCodec(record, collection.codec, collection: collection.name)
        let id = RowID(collection: collection.name, key: key)
        let objectBytes = try encode(object, codec: collection.codec, id: id)
        let replaced: Bool = try withRowKey(record, key, collection: collection.name) { rowKey in
            guard let previous = try previousRecord(rowKey, id: id, withObject: false) else { return false }
            try withReadBack(object, bytes: objectBytes, codec: collection.codec, id: id) { object in
                var attachments = previous.attachments
                if !writers.isEmpty {
                    var change = RowChange(
                        id: id, storedKey: StoredRowKey(collectionID: record.id, key: key), kind: .update, codecName: record.codec,
                        objectChanged: true, metadataChanged: false, transaction: self, previousAttachments: previous.attachments,
                        object: HeldValue(lending: object), objectBytes: objectBytes)
                    try tellWriters(lending: &change)
                    attachments = try change.attachmentsAfter(live: liveAttachmentSlots) ?? attachments
                }
                try objectBytes.withUnsafeBytes { try putRecord(rowKey, hasMetadata: previous.hasMetadata, attachments: attachments, object: $0) }
                cacheWritten(at: object, forKey: key, in: collection.name, existed: true)
            }
            return true
        }
        guard replaced else { return false }
        didWrite = true
        bytesWritten += objectBytes.count
        changes.changed(key, in: collection.name, object: true, metadata: false)
        return true
    }

    /// Replaces (or with `nil` removes) the metadata of an existing row, keeping its object. Does nothing and returns
    /// `false` when there is no row for `key`. Extensions and caches get the metadata as a read returns it (see
    /// ``set(_:forKey:in:metadata:)``).
    @discardableResult
    public func replaceMetadata<Object, Metadata>(
        _ metadata: Metadata?, forKey key: String, in collection: TypedCollection<Object, Metadata>
    ) throws -> Bool {
        guard let record = try collectionRecord(collection.name) else { return false }
        try checkCodec(record, collection.codec, collection: collection.name)
        let id = RowID(collection: collection.name, key: key)
        let metadataBytes = try metadata.map { try encode($0, codec: collection.codec, id: id) }
        let metadata = try metadata.flatMap { value in try metadataBytes.map { try readBack(value, bytes: $0, codec: collection.codec, id: id) } }
        let replaced: Bool = try withRowKey(record, key, collection: collection.name) { rowKey in
            guard let previous = try previousRecord(rowKey, id: id, withObject: true) else { return false }
            var attachments: [UInt8]?
            if !writers.isEmpty {
                var change = RowChange(
                    id: id, storedKey: StoredRowKey(collectionID: record.id, key: key), kind: .update, codecName: record.codec,
                    objectChanged: false, metadataChanged: true, transaction: self, previousAttachments: previous.attachments,
                    objectBytes: previous.object, metadata: metadata.map { HeldValue(owning: $0) } ?? .none, metadataBytes: .some(metadataBytes))
                try tellWriters(lending: &change)
                attachments = try change.attachmentsAfter(live: liveAttachmentSlots)
            }
            // The record is rewritten only when its metadata flag or its attachments change.
            if attachments != nil || previous.hasMetadata != (metadataBytes != nil) {
                try (previous.object ?? []).withUnsafeBytes { object in
                    try putRecord(rowKey, hasMetadata: metadataBytes != nil, attachments: attachments ?? previous.attachments, object: object)
                }
            }
            try guarded {
                if let metadataBytes {
                    try metadataBytes.withUnsafeBytes { try writeStorage.put($0, forKey: rowKey, in: tables.metadata) }
                } else if previous.hasMetadata {
                    try writeStorage.delete(rowKey, in: tables.metadata)
                }
            }
            return true
        }
        guard replaced else { return false }
        didWrite = true
        bytesWritten += metadataBytes?.count ?? 0
        if let metadata {
            cacheState.metadataCache.set(metadata, forKey: key, in: collection.name)
        } else {
            cacheState.metadataCache.remove(key: key, in: collection.name)
        }
        changes.changed(key, in: collection.name, object: false, metadata: true)
        return true
    }

    /// Marks the object of an existing row as changed without writing it: observers and extensions see an update.
    /// Returns `false` when there is no such row.
    @discardableResult
    public func touchObject(forKey key: String, inCollection collection: String) throws -> Bool {
        try touch(key, collection, object: true, metadata: false)
    }

    /// Marks the metadata of an existing row as changed. Returns `false` when there is no such row.
    @discardableResult
    public func touchMetadata(forKey key: String, inCollection collection: String) throws -> Bool {
        try touch(key, collection, object: false, metadata: true)
    }

    /// Marks the object and metadata of an existing row as changed. Returns `false` when there is no such row.
    @discardableResult
    public func touchRow(forKey key: String, inCollection collection: String) throws -> Bool {
        try touch(key, collection, object: true, metadata: true)
    }

    private func touch(_ key: String, _ collection: String, object: Bool, metadata: Bool) throws -> Bool {
        guard let record = try collectionRecord(collection) else { return false }
        let id = RowID(collection: collection, key: key)
        let touched: Bool = try withRowKey(record, key, collection: collection) { rowKey in
            guard let previous = try previousRecord(rowKey, id: id, withObject: !writers.isEmpty) else { return false }
            guard !writers.isEmpty else { return true }
            let change = RowChange(
                id: id, storedKey: StoredRowKey(collectionID: record.id, key: key), kind: .touch, codecName: record.codec,
                objectChanged: object, metadataChanged: metadata, transaction: self, previousAttachments: previous.attachments,
                objectBytes: previous.object)
            try tellWriters(change)
            if let attachments = try change.attachmentsAfter(live: liveAttachmentSlots) {
                try (previous.object ?? []).withUnsafeBytes { try putRecord(rowKey, hasMetadata: previous.hasMetadata, attachments: attachments, object: $0) }
            }
            return true
        }
        guard touched else { return false }
        didWrite = true
        changes.changed(key, in: collection, object: object, metadata: metadata)
        return true
    }

    /// Removes the row for `key` in the collection named `collection`. Returns whether it existed.
    @discardableResult
    public func remove(key: String, inCollection collection: String) throws -> Bool {
        guard let record = try collectionRecord(collection) else { return false }
        let id = RowID(collection: collection, key: key)
        let removed: Bool = try withRowKey(record, key, collection: collection) { rowKey in
            guard let previous = try previousRecord(rowKey, id: id, withObject: false) else { return false }
            try guarded {
                try writeStorage.delete(rowKey, in: tables.objects)
                if previous.hasMetadata { try writeStorage.delete(rowKey, in: tables.metadata) }
            }
            if !writers.isEmpty {
                try tellWriters(RowChange(
                    id: id, storedKey: StoredRowKey(collectionID: record.id, key: key), kind: .remove, codecName: record.codec,
                    objectChanged: true, metadataChanged: true, transaction: self, previousAttachments: previous.attachments))
            }
            return true
        }
        guard removed else { return false }
        didWrite = true
        cacheState.objectCache.remove(key: key, in: collection)
        cacheState.metadataCache.remove(key: key, in: collection)
        changes.removed(key, in: collection)
        return true
    }

    /// Removes the row for `key` in `collection`. Returns whether it existed.
    @discardableResult
    public func remove<Object, Metadata>(key: String, in collection: TypedCollection<Object, Metadata>) throws -> Bool {
        try remove(key: key, inCollection: collection.name)
    }

    /// Removes the rows for `keys` in the collection named `collection`. Returns how many existed.
    @discardableResult
    public func remove(keys: some Sequence<String>, inCollection collection: String) throws -> Int {
        var count = 0
        for key in keys where try remove(key: key, inCollection: collection) { count += 1 }
        return count
    }

    /// Removes every row of the collection named `collection`. Returns how many there were.
    @discardableResult
    public func removeAll(inCollection collection: String) throws -> Int {
        guard let record = try collectionRecord(collection) else { return 0 }
        let prefix = RowKey.prefix(collectionID: record.id)
        var rows: [RowChange] = []
        var count = 0
        let collectRows = !writers.isEmpty
        try guarded {
            try deleteAll(withPrefix: prefix, in: tables.objects) { rowKey, value in
                count += 1
                guard collectRows else { return }
                rows.append(removal(of: rowKey, value: value, collection: collection, record: record))
            }
            try deleteAll(withPrefix: prefix, in: tables.metadata) { _, _ in }
        }
        didWrite = true
        cacheState.objectCache.removeAll(inCollection: collection)
        cacheState.metadataCache.removeAll(inCollection: collection)
        changes.removedAll(inCollection: collection)
        for row in rows { try tellWriters(row) }
        return count
    }

    /// Removes every row of every collection. Collection records (names and codecs) are kept.
    public func removeAllCollections() throws {
        var rows: [RowChange] = []
        if !writers.isEmpty {
            var namesByID: [UInt32: (name: String, record: CollectionRecord)] = [:]
            try tables.collectionsTable.forEach(in: storage, path: core.path) { name, record in
                namesByID[record.id] = (name, record)
                return true
            }
            for (name, record) in newCollections { namesByID[record.id] = (name, record) }
            try storage.forEach(in: tables.objects) { rowKey, value in
                if let id = RowKey.collectionID(of: rowKey), let collection = namesByID[id] {
                    rows.append(removal(of: rowKey, value: value, collection: collection.name, record: collection.record))
                }
                return true
            }
            // Collection by collection, by name (each collection's rows are in key order already).
            rows = rows.enumerated().sorted { ($0.element.collection, $0.offset) < ($1.element.collection, $1.offset) }.map(\.element)
        }
        try guarded {
            try writeStorage.empty(tables.objects)
            try writeStorage.empty(tables.metadata)
        }
        didWrite = true
        cacheState.objectCache.removeAll()
        cacheState.metadataCache.removeAll()
        changes.removedEverything()
        for row in rows { try tellWriters(row) }
    }

    /// The change of a row removed with its whole collection, from its stored key and record.
    private func removal(of rowKey: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, collection: String, record: CollectionRecord) -> RowChange {
        let key = RowKey.key(of: rowKey)
        return RowChange(
            id: RowID(collection: collection, key: key), storedKey: StoredRowKey(collectionID: record.id, key: key), kind: .remove,
            codecName: record.codec, objectChanged: true, metadataChanged: true, removesCollection: true, transaction: self,
            previousAttachments: StoredRecord.attachmentBytes(value).map { Array($0) } ?? [])
    }

    private func deleteAll(withPrefix prefix: [UInt8], in table: LMDB.Database, _ visit: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) -> Void) throws {
        try writeStorage.withCursor(in: table) { cursor in
            var entry = try cursor.seek(atOrAfter: prefix)
            while let current = entry, current.key.starts(with: prefix) {
                visit(current.key, current.value)
                try cursor.deleteCurrent()
                entry = try cursor.current()
            }
        }
    }

    // MARK: Extensions

    /// Marks the transaction as having written something (extensions that write only their own tables call this so
    /// that the commit advances the snapshot).
    public func markWritten() { didWrite = true }

    // MARK: Commit

    /// Writes the store's records and commits. Returns the notification, or `nil` when nothing was written.
    func commit() throws -> CommitNotification? {
        if let interruptedChange {
            throw CanopyError(
                .extensionFailed,
                "an extension refused a row change in this transaction after others had applied it (\(interruptedChange)); the whole transaction was rolled back so that views and rows cannot disagree. Catching the error inside the transaction does not let it commit: check the row before writing it, or write it in a transaction of its own",
                path: core.path, underlying: interruptedChange)
        }
        guard didWrite || !changes.isEmpty else {
            try writeStorage.commit()
            rememberCheckedDefinitions(at: storeState.snapshot)
            for (_, writer) in writers { writer.didCommit(snapshot: storeState.snapshot) }
            writers.removeAll()
            return nil
        }
        let snapshot = storeState.snapshot + 1
        var payloads: [String: ExtensionPayload] = [:]
        for (name, writer) in writers {
            if let payload = try writer.prepareCommit(ExtensionCommit(snapshot: snapshot, isReset: rebuiltExtensions.contains(name))) {
                payloads[name] = payload
            }
        }
        // The state after the commit, made in place (the transaction ends with the commit, which succeeds or rolls
        // everything back; a copy cost a retain and a release of each of the state's dictionaries per commit).
        let previous = storeState.snapshot
        storeState.snapshot = snapshot
        // A commit that changed no rows and rebuilt nothing (registering or unregistering an extension) cannot make
        // another extension miss writes: those that were up to date stay up to date, registered here or not.
        if changes.isEmpty && rebuiltExtensions.isEmpty {
            for (name, extensionSnapshot) in storeState.extensionSnapshots where extensionSnapshot == previous {
                storeState.extensionSnapshots[name] = snapshot
            }
        }
        // Only an extension that was current when the transaction began (or was caught up, rebuilt or registered in
        // it) is consistent with this commit: one that lagged and was not brought up to date keeps its snapshot.
        for (name, _) in writers where laggingExtensions.isEmpty || !laggingExtensions.contains(name) {
            storeState.extensionSnapshots[name] = snapshot
        }
        let notification = changes.notification(snapshot: snapshot, customPayload: customPayload, extensionPayloads: payloads)
        try guarded {
            // One record for the commit: its log entry carries the store's new state and the extensions' state records
            // (canopy/6), so the commit dirties the rows' tables, the extensions' tables and the log, not also
            // `canopy.info`.
            // Encoded from the notification and the state as they are (no entry value made, copied and destroyed).
            let entry = CommitLogEntry.encode(notification, state: storeState)
            try withUnsafeBytes(of: snapshot.bigEndian) { key in
                try entry.withUnsafeBytes { bytes in
                    // Appended: the new snapshot sorts after every key of the log (entries and feed records are of
                    // older snapshots), so LMDB skips the search and splits a full leaf at its end — the log's leaves
                    // stay full, where a middle split left them half full (twice the splits, pages and branch
                    // entries). A key that does not sort last (not expected) is put the ordinary way.
                    do {
                        try writeStorage.put(bytes, forKey: key, in: tables.commits, flags: .append)
                    } catch let error as LMDBError where error.code == .keyExists {
                        try writeStorage.put(bytes, forKey: key, in: tables.commits)
                    }
                }
            }
            // Keep at least `limit` entries; prune in batches so that most commits don't also dirty the log's
            // oldest page (one page fewer to write per commit).
            let limit = UInt64(max(1, core.options.commitLogLimit))
            let batch = min(64, limit)
            if snapshot > limit, snapshot % batch == 0 {
                try pruneCommitLog(from: snapshot - limit - min(batch, snapshot - limit) + 1, through: snapshot - limit)
            }
            try recordInChangeFeed(notification)
        }
        let transaction = try writeStorage.id
        try writeStorage.commit()
        core.rememberCommittedState(storeState, transaction: transaction)
        if let feedEnabledSince { core.rememberFeedEnabled(since: feedEnabledSince, transaction: transaction) }
        rememberCheckedDefinitions(at: snapshot)
        core.rememberExtensionSnapshots(storeState)
        core.remember(newCollections)
        for (name, record) in newCollections { cacheState.rememberCollectionRecord(record, for: name) }
        cacheState.cacheSnapshot = snapshot
        for name in unregisteredExtensions { core.removeExtension(named: name) }
        for ext in registeredExtensions { core.addExtension(ext) }
        for (_, writer) in writers { writer.didCommit(snapshot: snapshot) }
        // Extension transactions usually hold this transaction: drop them to break the cycle.
        writers.removeAll()
        return notification
    }

    // MARK: What a write adds to reads

    /// The writer `ext` created for this transaction, or `nil` when no extension of that name is registered.
    public override func writer<E: StoreExtension>(of ext: E) -> E.Writer? {
        let name = ext.name
        for (writerName, writer) in writers where writerName == name {
            // The writer was made by the extension registered under this name (`beginWrite` returns `E.Writer`): the
            // cast fails only for another extension type registered under the same name, which then has no writer.
            return writer as? E.Writer
        }
        return nil
    }

    /// Throws when no writer of extension `name` hears of this transaction's changes.
    public override func requireMaintained(extensionNamed name: String) throws {
        if hasCurrentWriter(named: name) { return }
        throw CanopyError(
            .extensionNotRegistered,
            "the extension '\(name)' is not registered in this process, so a read-write transaction cannot keep it up to date; register it with Database.register(_:)",
            path: core.path, extensionName: name)
    }

    override func extensionRegisteredInTransaction(named name: String) -> (any StoreExtension)? {
        registeredExtensions.first { $0.name == name }
    }

    override func hasCurrentWriter(named name: String) -> Bool {
        writers.contains { $0.name == name }
    }

    override func uncommittedCollections() -> [String: CollectionRecord] { newCollections }

    override func extensionStateRecords() throws -> [String: [UInt8]] {
        try checkActive()
        return storeState.extensionStates
    }

    override func scanWritableSlots() throws -> Set<UInt32>? { try attachmentSlots().live }

    override func extensionTableHandle(named full: String) throws -> LMDB.Database? {
        do {
            return try writeStorage.openDatabase(named: full, checksummed: true)
        } catch let error as LMDBError where error.code == .notFound {
            return nil
        }
    }

    /// Deletes the commit log's notifications of snapshots `first...last` through one cursor: one descent of the log's
    /// B-tree, then a step per entry, where deleting key by key descends it once per entry. The change feed's records
    /// between them (longer keys) stay: the feed prunes its own.
    private func pruneCommitLog(from first: UInt64, through last: UInt64) throws {
        // Keys only: the entries' checksums are not computed for values about to be deleted.
        try writeStorage.withCursor(in: tables.commits.withoutChecksums) { cursor in
            // (From 0 in the first batch: a store's log begins with the entry of snapshot 0.)
            var entry = try cursor.seek(atOrAfter: SnapshotKey.bytes(first <= 1 ? 0 : first))
            while let current = entry, current.key.count >= 8, current.key.loadBigEndianUInt64(at: 0) <= last {
                if current.key.count == 8 {
                    try cursor.deleteCurrent()
                    entry = try cursor.current()
                } else {
                    entry = try cursor.next()
                }
            }
        }
    }

    /// Aborts the LMDB transaction and undoes what the connection cached from it.
    func rollback() {
        lmdbWriteStorage.abort()
        cacheState.objectCache.removeAll()
        cacheState.metadataCache.removeAll()
        cacheState.cacheSnapshot = nil
        for (_, writer) in writers { writer.didRollback() }
        writers.removeAll()
    }
}
