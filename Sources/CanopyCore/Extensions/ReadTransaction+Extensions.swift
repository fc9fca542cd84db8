import LMDB
import Synchronization

// The extension interface on transactions: opening typed tables, finding other extensions and their per-transaction
// state, addressing rows by their stored keys, and scanning rows for (re)population. Views (module Canopy) are built
// only on this and on the rest of the public API.

extension ReadTransaction {
    @inline(__always) @usableFromInline
    func guardedRead<R>(_ body: () throws -> R) throws -> R {
        do { return try body() } catch { throw CanopyError.wrap(error, path: core.path) }
    }

    /// The extension registered in this process under `name` (including one registered earlier in this transaction),
    /// or `nil`.
    public func registeredExtension(named name: String) -> (any StoreExtension)? {
        extensionRegisteredInTransaction(named: name) ?? core.registeredExtension(named: name)
    }

    /// The extension registered in this process under `name` when it is a `T`, or `nil`: the one lookup by a name
    /// (a string the caller chose) that checks the type of what it finds. Its writer in a read-write transaction is
    /// ``writer(of:)``.
    public func registeredExtension<T: StoreExtension>(named name: String, as type: T.Type) -> T? {
        registeredExtension(named: name) as? T
    }

    /// Opens the table `name` of the extension `extensionName`, as recorded in the database, for reading: in a process
    /// that did not register the extension (a tool), or before it registers. Returns `nil` when the table does not
    /// exist.
    ///
    /// Tables that existed when the database was opened are already open. Others are opened once, in a short
    /// transaction of their own (LMDB makes a handle usable only by transactions that begin after the one that opened
    /// it ends).
    ///
    /// - Throws: ``CanopyError/Code/invalidArgument`` when `name` is empty or holds a dot (see
    ///   ``ReadWriteTransaction/openTable(_:of:keys:values:)``); ``CanopyError/Code/extensionFailed`` when the table
    ///   was created after this transaction began (read it in a new transaction); ``CanopyError/Code/nestedTransaction``
    ///   when called on a thread that is inside a write transaction of this database.
    public func existingTable<K: TableCoding, V: TableCoding>(
        _ name: String, of extensionName: String, keys: K.Type, values: V.Type
    ) throws -> ExtensionTable<K, V>? {
        try ExtensionTableName.check(name, of: extensionName, path: core.path)
        let full = ExtensionTableName.full(name, of: extensionName)
        guard let database = try extensionTableHandle(named: full) else { return nil }
        let table = ExtensionTable<K, V>(database: database, name: name, extensionName: extensionName)
        do {
            _ = try storage.statistics(of: database)
        } catch let error as LMDBError where error.code == .invalidArgument {
            throw CanopyError(
                .extensionFailed,
                "the table '\(name)' was opened after this read transaction began (it was created after the database was opened); read it in a new transaction",
                path: core.path, extensionName: extensionName, underlying: error)
        }
        return table
    }

    /// Calls `body` with the state record of extension `name` (see ``ReadWriteTransaction/setExtensionState(_:of:)``),
    /// or `nil` when it has none, without copying it: as this transaction's snapshot holds it (in a read-write
    /// transaction, as this transaction last set it).
    ///
    /// The records are part of the store's state, which is read once per committed state and process (a commit of
    /// this process leaves it known): a lookup, not a read of the file.
    /// - Throws: ``CanopyError/Code/corruptStore`` when the store's state is malformed;
    ///   ``CanopyError/Code/incompatibleFormat`` when another process upgraded a file this one opened read-only in an
    ///   earlier format (open it again).
    public func withExtensionState<R>(of name: String, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        guard tables.layout == .inLog else {
            // A `canopy/4` or `canopy/5` file opened read-only: the record is in `canopy.info`.
            let storage = try storage
            return try guardedRead { try tables.withExtensionStateRecord(of: name, in: storage, path: core.path, body) }
        }
        guard let record = try extensionStateRecords()[name] else { return try body(nil) }
        return try record.withUnsafeBytes(body)
    }

    /// The snapshot each recorded extension's stored state is consistent with (absent for one that has none), and the
    /// store's snapshot: an extension whose snapshot is below the store's is stale until a process that registers it
    /// brings it up to date (from the commit log, or by a rebuild) at its registration or next write.
    public func extensionSnapshots() throws -> (store: UInt64, extensions: [String: UInt64]) {
        let state = try DatabaseCore.readState(storage, tables)
        return (state.snapshot, state.extensionSnapshots)
    }

    /// Throws ``CanopyError/Code/staleView`` when the stored state of extension `name` lags this transaction's
    /// snapshot: rows were written by a process that did not register it, so reading it would show them missing or
    /// misplaced. Reads through a registered extension call it; in a read-write transaction it never throws for an
    /// extension registered in this process (the transaction brought each one up to date when it began).
    ///
    /// Cost: the store's state record is decoded once per snapshot and process, then a dictionary lookup.
    public func requireCurrentExtension(named name: String) throws {
        if hasCurrentWriter(named: name) { return }
        let extensionSnapshot = try recordedExtensionSnapshot(of: name)
        if let extensionSnapshot, extensionSnapshot >= snapshot { return }
        let consistent = extensionSnapshot.map { "is consistent with snapshot \($0)" } ?? "has no stored state"
        throw CanopyError(
            .staleView,
            "the extension '\(name)' \(consistent) but this transaction reads snapshot \(snapshot): rows were written by a process that did not register it, so it would show them missing or misplaced. This process registers it: any write transaction brings it up to date first, or call Database.catchUpExtensions(), then read again",
            path: core.path, extensionName: name)
    }

    /// Whether the stored state of extension `name` is consistent with this transaction's snapshot (the state record
    /// is decoded once per snapshot and process; a commit of this process leaves it known). In a read-write
    /// transaction, an extension registered in this process is current.
    public func isExtensionCurrent(named name: String) throws -> Bool {
        if hasCurrentWriter(named: name) { return true }
        guard let extensionSnapshot = try recordedExtensionSnapshot(of: name) else { return false }
        return extensionSnapshot >= snapshot
    }

    private func recordedExtensionSnapshot(of name: String) throws -> UInt64? {
        try core.extensionSnapshots(at: snapshot) { try DatabaseCore.readState(storage, tables) }[name]
    }

    /// The stored key of row `id`, or `nil` when its collection was never written.
    /// - Throws: ``CanopyError/Code/keyTooLong`` when the key cannot be stored.
    public func storedRowKey(for id: RowID) throws -> StoredRowKey? {
        guard let record = try collectionRecord(id.collection) else { return nil }
        guard 4 + id.key.utf8.count <= core.maxKeySize else {
            throw CanopyError(.keyTooLong, "the key is \(id.key.utf8.count) bytes of UTF-8; keys can be at most \(core.maxKeySize - 4) bytes",
                              path: core.path, collection: id.collection, key: String(id.key.prefix(64)))
        }
        return StoredRowKey(collectionID: record.id, key: id.key)
    }

    /// The row id of a stored row key, or `nil` when its collection id is unknown.
    public func rowID(for key: StoredRowKey) throws -> RowID? {
        guard let collection = try collection(forID: key.collectionID) else { return nil }
        return RowID(collection: collection.name, key: key.key)
    }

    /// The stored row of `key` (object bytes copied, metadata read on demand), or `nil` when there is no such row.
    public func storedRow(for key: StoredRowKey) throws -> StoredRow? {
        guard let collection = try collection(forID: key.collectionID) else { return nil }
        let stored = try guardedRead { try storage.value(forKey: key.bytes, in: tables.objects) }
        guard let stored, let flags = stored.first else { return nil }
        let (object, attachments) = try stored.withUnsafeBytes { value -> ([UInt8], [UInt8]) in
            guard let object = StoredRecord.objectBytes(value), let region = StoredRecord.attachmentBytes(value) else {
                throw CanopyError(.corruptStore, "the stored row is malformed", path: core.path, collection: collection.name, key: key.key)
            }
            return (Array(object), Array(region))
        }
        return StoredRow(id: RowID(collection: collection.name, key: key.key), storedKey: key, codecName: collection.codec,
                         hasMetadata: flags & 1 != 0, object: .owned(object), attachments: .owned(attachments), transaction: self)
    }

    /// Visits every row (of the collections in `collections`, or all), in stored-key order, while `visit` returns
    /// `true`: the row scan extensions (re)populate from. Each row's object bytes are lent from the memory map for
    /// the visit only; the ``StoredRow`` refuses to read them afterwards (``CanopyError/Code/transactionEnded``). In a
    /// read-write transaction, ``StoredRow/setAttachment(_:at:)`` rewrites the visited record in place (population
    /// attaches each row's entry without a second pass).
    ///
    /// Every stored row is visited or refused, never left out: a row whose collection id no collection record holds
    /// (Canopy records a collection with its first row and never removes the record, so only a file changed outside
    /// Canopy has one) ends the scan with ``CanopyError/Code/corruptStore`` naming its key.
    /// - Throws: ``CanopyError/Code/corruptStore`` for a malformed row or one of an unrecorded collection; what
    ///   `visit` throws.
    public func scanRows(inCollections collections: Set<String>? = nil, _ visit: (StoredRow) throws -> Bool) throws {
        let names = try collectionNamesByID()
        let storage = try storage
        let writable = try scanWritableSlots()
        try guardedRead {
            try storage.withCursor(in: tables.objects) { cursor in
                // One writer for the scan (rows hold it during their visit only), and the collection of the previous
                // row: rows come by collection, so its name is looked up (and allowed) once per run of rows.
                let rewriter = writable.map { RowScanRewriter(cursor: cursor, live: $0) }
                var lastCollectionID: UInt32?
                var lastCollection: (name: String, codec: String)?
                var lastAllowed = false
                var entry = try cursor.first()
                while let current = entry {
                    let rowKey = current.key
                    let value = current.value
                    // Every record is visited or refused: a row left out silently would leave an extension that
                    // populates from the scan without it, and nothing would say so.
                    guard rowKey.count >= 4 else {
                        throw CanopyError(.corruptStore, "a stored row's key is \(rowKey.count) bytes, shorter than a collection id",
                                          path: core.path)
                    }
                    let collectionID = rowKey.loadUnaligned(as: UInt32.self).bigEndian
                    if collectionID != lastCollectionID {
                        lastCollectionID = collectionID
                        lastCollection = names[collectionID]
                        lastAllowed = lastCollection.map { collections?.contains($0.name) ?? true } ?? false
                    }
                    let collection = lastCollection
                    guard let flags = value.first, let object = StoredRecord.objectBytes(value),
                          let region = StoredRecord.attachmentBytes(value) else {
                        throw CanopyError(.corruptStore, value.isEmpty ? "a stored row is empty" : "a stored row is malformed",
                                          path: core.path, collection: collection?.name, key: String(decoding: rowKey.dropFirst(4), as: UTF8.self))
                    }
                    // Canopy records a collection in the transaction that writes its first row, and never removes
                    // the record: a row whose collection id is not recorded is damage (a file changed outside Canopy),
                    // never a row to leave out of a population without a word.
                    guard let collection else {
                        throw CanopyError(
                            .corruptStore,
                            "a stored row (key '\(String(decoding: rowKey.dropFirst(4), as: UTF8.self))') names collection id \(collectionID), which no collection record holds: the file was changed outside Canopy. Nothing was read past it; run `canopy verify` on the database and restore it from a backup",
                            path: core.path)
                    }
                    guard lastAllowed else {
                        entry = try cursor.next()
                        continue
                    }
                    guard let key = StoredRowKey(bytes: Array(rowKey)) else {
                        throw CanopyError(.corruptStore, "a stored row's key is shorter than a collection id", path: core.path)
                    }
                    let row = StoredRow(
                        id: RowID(collection: collection.name, key: key.key), storedKey: key, codecName: collection.codec,
                        hasMetadata: flags & 1 != 0, object: .borrowed(object), attachments: .borrowed(region), transaction: self,
                        rewriter: rewriter, record: rewriter == nil ? nil : value)
                    let goOn = try visit(row)
                    row.endAccess()
                    guard goOn else { return }
                    entry = try cursor.next()
                }
            }
        }
    }

    /// Collection records by id (for turning row keys back into collection names).
    func collectionNamesByID() throws -> [UInt32: (name: String, codec: String)] {
        var result: [UInt32: (name: String, codec: String)] = [:]
        try tables.collectionsTable.forEach(in: storage, path: core.path) { name, record in
            result[record.id] = (name, record.codec)
            return true
        }
        for (name, record) in uncommittedCollections() { result[record.id] = (name, record.codec) }
        return result
    }

    /// The collection name and codec of a collection id, using the connection's and database's caches.
    func collection(forID id: UInt32) throws -> (name: String, codec: String)? {
        // This transaction's own records first: a codec it changed is not the one the connection remembers.
        let uncommitted = uncommittedCollections()
        if let hit = uncommitted.first(where: { $0.value.id == id }) { return (hit.key, hit.value.codec) }
        if let hit = cacheState.collections.first(where: { $0.value.id == id }) { return (hit.key, hit.value.codec) }
        let all = try collectionNamesByID()
        for (recordID, entry) in all where uncommitted[entry.name] == nil {
            cacheState.rememberCollectionRecord(CollectionRecord(id: recordID, codec: entry.codec), for: entry.name)
        }
        return all[id]
    }

    /// Decodes stored `bytes` of row `id` as `T` with the codec named `codecName` (an extension decoding a row it read
    /// as bytes).
    /// - Throws: ``CanopyError/Code/codecMismatch`` for a codec that is not built in; ``CanopyError/Code/decodingFailed``.
    public func decodeStoredValue<T: Decodable>(_ type: T.Type, from bytes: [UInt8], codecName: String, id: RowID) throws -> T {
        try decode(T.self, bytes: bytes, codecName: codecName, id: id)
    }

    /// A value shared by every transaction of this database in this process, created by `make` on first use (an
    /// extension's cache of decoded state, kept per database).
    public func databaseScopedValue<T: AnyObject & Sendable>(forKey key: String, _ make: () throws -> T) rethrows -> T {
        try core.scopedValue(forKey: key, make)
    }
}

extension ReadWriteTransaction {
    /// Opens (creating it if needed) the table `name` of the extension `extensionName`: an LMDB database named
    /// `ext.<extensionName>.<name>`, whose keys and values the codings encode. Call it in
    /// ``StoreExtension/prepare(in:context:)`` and keep the table.
    ///
    /// A table name holds no dot (extension names may): `ext.<extensionName>.<name>` then names one extension's table
    /// only — `tasks`' table `done.pages` would be `tasks.done`'s table `pages` — and a damaged record's extension is
    /// the part before the last dot.
    /// - Throws: ``CanopyError/Code/invalidArgument`` when `name` is empty or holds a dot (nothing is created).
    public func openTable<K: TableCoding, V: TableCoding>(
        _ name: String, of extensionName: String, keys: K.Type, values: V.Type
    ) throws -> ExtensionTable<K, V> {
        try ExtensionTableName.check(name, of: extensionName, path: core.path)
        let database = try guarded { try writeStorage.openDatabase(named: ExtensionTableName.full(name, of: extensionName), flags: .create, checksummed: true) }
        return ExtensionTable(database: database, name: name, extensionName: extensionName)
    }

    /// Stages (or with `nil` removes) the small state record of extension `name` — a version, counters — as part of
    /// the store's state: the commit writes it in its commit-log entry, the one record every commit writes anyway, so
    /// no page of the extension's tables nor of the store's other tables is dirtied for it. It is read with
    /// ``ReadTransaction/withExtensionState(of:_:)`` (in this transaction, as staged; after the commit, by every
    /// transaction of its snapshot and later, in any process, until it is set again).
    ///
    /// Setting a record that differs from the one this transaction sees makes the commit advance the snapshot (as any
    /// write does); setting the same bytes again changes nothing, whatever their size (a record of a `canopy/5` file,
    /// written before the limit, is moved by the format upgrade as it is). Every commit's log entry carries every
    /// extension's record, so keep it small (tens of bytes).
    /// - Throws: ``CanopyError/Code/extensionFailed`` when `bytes` differ from the record and are longer than
    ///   ``maximumExtensionStateSize`` (nothing is staged); ``CanopyError/Code/transactionEnded`` once the
    ///   transaction's closure has returned.
    public func setExtensionState(_ bytes: [UInt8]?, of name: String) throws {
        _ = try writeStorage
        guard storeState.extensionStates[name] != bytes else { return }
        if let bytes, bytes.count > Self.maximumExtensionStateSize {
            throw CanopyError(
                .extensionFailed,
                "the extension's state record is \(bytes.count) bytes; at most \(Self.maximumExtensionStateSize) are kept (every commit's log entry carries it): keep counters and versions there, and larger values in the extension's own tables",
                path: core.path, extensionName: name)
        }
        storeState.extensionStates[name] = bytes
        didWrite = true
    }

    /// The longest state record an extension can set (``setExtensionState(_:of:)``), in bytes.
    public static let maximumExtensionStateSize = 1_024

    /// Whether the extension `name` was rebuilt (its state reset) in this transaction.
    public func isRebuilt(extensionNamed name: String) -> Bool { rebuiltExtensions.contains(name) }
}

extension DatabaseCore {
    /// Extension tables open in this process by full name (opened at open, or on first read).
    func openTable(named name: String) -> LMDB.Database? {
        tableHandles.withLock { $0[name] }
    }

    func forgetTable(named name: String) {
        tableHandles.withLock { $0[name] = nil }
    }

    /// Opens an existing table in a read transaction of its own, under the write lock (no write transaction of this
    /// process opens handles meanwhile). Returns `nil` when it does not exist.
    func openExistingTable(named name: String) throws -> LMDB.Database? {
        if writerThread.load(ordering: .relaxed) == currentThreadID() {
            throw CanopyError(.nestedTransaction, "an extension table cannot be opened for reading inside a write transaction of the same database on this thread; read it in the write transaction",
                              path: path)
        }
        return try writeLock.withLock { _ in
            do {
                let database = try environment.read { txn in try txn.openDatabase(named: name, checksummed: true) }
                tableHandles.withLock { $0[name] = database }
                return database
            } catch let error as LMDBError where error.code == .notFound {
                return nil
            } catch {
                throw CanopyError.wrap(error, path: path)
            }
        }
    }

    /// Opens every extension table recorded in the database, so that transactions begun afterwards (pinned snapshots,
    /// observers) can read them. Called when the database is opened; best effort (a failure is reported by the first
    /// read that needs the table).
    func openRecordedExtensionTables() {
        _ = writeLock.withLockIfAvailable { _ in openRecordedExtensionTablesLocked() }
    }

    /// ``openRecordedExtensionTables()`` under the write lock.
    private func openRecordedExtensionTablesLocked() {
        _ = try? environment.read { txn in
            let main = try txn.openDatabase(named: nil)
            var names: [String] = []
            try txn.forEach(in: main, prefix: Array(ExtensionTableName.prefix.utf8)) { key, _ in
                names.append(String(decoding: key, as: UTF8.self))
                return true
            }
            for name in names {
                if let database = try? txn.openDatabase(named: name, checksummed: true) { tableHandles.withLock { $0[name] = database } }
            }
        }
    }

    /// A value shared by every transaction of this core.
    func scopedValue<T: AnyObject & Sendable>(forKey key: String, _ make: () throws -> T) rethrows -> T {
        if let existing = scopedValues.withLock({ $0[key] }) as? T { return existing }
        let made = try make()
        return scopedValues.withLock { values in
            if let existing = values[key] as? T { return existing }
            values[key] = made
            return made
        }
    }
}
