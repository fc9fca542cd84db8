import LMDB

/// Upgrades a store of an earlier format to `canopy/6` in place, in the write transaction that opens it, so the
/// upgrade commits whole or not at all (a process killed during it leaves the file as it was):
///
/// - `canopy/5` → `canopy/6` (``moveExtensionStates(_:tables:path:)``): each extension's state record moves from
///   `canopy.info` (`ext.<name>.state`) into the commit log's newest entry, which is rewritten with them (version 3);
///   a one-byte marker (``StoreTables/movedExtensionStateRecord``) takes each record's place. Nothing else changes:
///   older entries keep their version (readers take every version), observers' snapshots carry on, views are not
///   rebuilt.
/// - `canopy/4` → `canopy/6` (``moveState(_:tables:path:)``): the store's state moves from `canopy.info`'s `state`
///   record into the commit log's newest entry, with the extensions' state records.
/// - `canopy/3` → `canopy/6` (``upgrade(_:tables:path:)``): first every value of the store's tables (`canopy.*`) and of
///   the extensions' tables (`ext.*`) gets its CRC32C trailer (`canopy/4`), then the state moves. Values are
///   rewritten as they are, trailers aside: rows, attachments, view pages and the commit log keep their meaning, so
///   nothing is rebuilt. A read-only open of a `canopy/3` file is refused instead
///   (``CanopyError/Code/incompatibleFormat`` naming `canopy upgrade`).
///
/// A read-only open of a `canopy/4` or `canopy/5` file reads it as it is (``StateLayout``).
///
/// The state records move as they are, whatever their size: ``ReadWriteTransaction/maximumExtensionStateSize`` came
/// with `canopy/6`, and an upgrade never refuses (nor cuts) a record the file's own build accepted. Nothing reads a
/// record against that limit (it bounds what a commit may set), so the upgraded file reads as any other; the record
/// stays until its extension sets another, which must fit (setting the same bytes again is accepted).
enum FormatUpgrade {
    /// The first entry of a new store's commit log: the state of snapshot 0, so that an empty log always means a
    /// damaged one (``StoreTables/state(in:path:)``).
    static func writeFirstLogEntry(_ txn: LMDB.WriteTransaction, tables: StoreTables) throws {
        try tables.commitsTable.put(CommitLogEntry(notification: CommitNotification(snapshot: 0), state: StoreState()), forKey: 0, in: txn)
    }

    /// Moves the state of a `canopy/4` store, and its extensions' state records, into its commit log and writes the
    /// `canopy/6` format record. Returns the number of records rewritten (the log's newest entry, the old state record
    /// and each extension's).
    ///
    /// - Throws: ``CanopyError/Code/corruptStore`` when the log holds an entry newer than the state record (the
    ///   file is damaged: nothing is changed).
    static func moveState(_ txn: LMDB.WriteTransaction, tables: StoreTables, path: String) throws -> Int {
        var old = tables
        old.layout = .records
        var state = try old.state(in: txn, path: path)
        var newest: (snapshot: UInt64, notification: CommitNotification)?
        try txn.withCursor(in: tables.commits) { cursor in
            var entry = try cursor.last()
            while let current = entry, current.key.count != 8 { entry = try cursor.previous() }
            if let current = entry {
                newest = (current.key.loadBigEndianUInt64(at: 0), try CommitNotification(decoding: current.value))
            }
        }
        if let newest, newest.snapshot > state.snapshot {
            throw CanopyError(
                .corruptStore,
                "the commit log holds commit \(newest.snapshot), newer than the store's state record (snapshot \(state.snapshot)); nothing was changed. Run `canopy verify` with the release that wrote the file and restore it from a backup",
                path: path)
        }
        state.extensionStates = try tables.extensionStateRecords(in: txn)
        // The entry of the state's own commit carries the state from now on. When the log no longer holds that commit
        // (a store that never committed has none), the entry says its changes are unknown: observers reload rather
        // than read it as a commit that changed nothing.
        let entry: CommitLogEntry
        if let newest, newest.snapshot == state.snapshot {
            entry = CommitLogEntry(notification: newest.notification, state: state)
        } else {
            entry = CommitLogEntry(notification: CommitNotification(snapshot: state.snapshot), state: state, changesUnknown: state.snapshot > 0)
        }
        try tables.commitsTable.put(entry, forKey: state.snapshot, in: txn)
        try txn.put(StoreTables.movedStateRecord, forKey: StoreInfoKey.state, in: tables.info)
        try markMoved(state.extensionStates.keys, txn, tables: tables)
        try tables.writeFormat(in: txn)
        return 2 + state.extensionStates.count
    }

    /// Moves the extensions' state records of a `canopy/5` store into its commit log's newest entry (rewritten as
    /// version 3) and writes the `canopy/6` format record. Returns the number of records rewritten (the entry and each
    /// extension's record).
    ///
    /// - Throws: ``CanopyError/Code/corruptStore`` when the newest entry is not a `canopy/5` one of the state (the
    ///   file is damaged: nothing is changed).
    static func moveExtensionStates(_ txn: LMDB.WriteTransaction, tables: StoreTables, path: String) throws -> Int {
        var old = tables
        old.layout = .storeStateInLog
        // Read through the old layout: the newest entry must be a version-2 entry of the state (checked there).
        var state = try old.state(in: txn, path: path)
        var entry = try tables.commitsTable.value(forKey: state.snapshot, in: txn, path: path)
        guard entry != nil, entry?.state == state else {
            throw CanopyError(
                .corruptStore,
                "the commit log's newest entry (snapshot \(state.snapshot)) does not decode as the store's state; nothing was changed. Run `canopy verify` with the release that wrote the file and restore it from a backup",
                path: path)
        }
        state.extensionStates = try tables.extensionStateRecords(in: txn)
        entry?.state = state
        if let entry { try tables.commitsTable.put(entry, forKey: state.snapshot, in: txn) }
        try markMoved(state.extensionStates.keys, txn, tables: tables)
        try tables.writeFormat(in: txn)
        return 1 + state.extensionStates.count
    }

    /// Puts the one-byte marker in place of the `canopy.info` state record of each of `extensions` (moved into the
    /// log): an older build that has the file open reads it as malformed, never as the extension's state.
    private static func markMoved(_ extensions: some Sequence<String>, _ txn: LMDB.WriteTransaction, tables: StoreTables) throws {
        for name in extensions {
            try txn.put(StoreTables.movedExtensionStateRecord, forKey: StoreInfoKey.extensionState(of: name), in: tables.info)
        }
    }

    /// Upgrades a `canopy/3` store: seals every value, then moves the state (``moveState(_:tables:path:)``). Returns
    /// the number of values sealed and rewritten.
    ///
    /// - Throws: ``CanopyError/Code/incompatibleFormat`` when LMDB refuses a transaction that large
    ///   (`MDB_TXN_FULL`); nothing is changed.
    @discardableResult
    static func upgrade(_ txn: LMDB.WriteTransaction, tables: StoreTables, path: String) throws -> Int {
        do {
            let sealed = try sealEverything(txn, tables: tables)
            return sealed + (try moveState(txn, tables: tables, path: path))
        } catch let error as LMDBError where error.code == .transactionFull {
            throw CanopyError(
                .incompatibleFormat,
                "the store format is '\(StoreTables.upgradableFormatTag)' and upgrading it rewrites every record in one transaction, which LMDB refused as too large (MDB_TXN_FULL). Nothing was changed: export the data with the `canopy export` of the release that wrote it, then `canopy import` it into a new database with this one",
                path: path, underlying: error)
        }
    }

    private static func sealEverything(_ txn: LMDB.WriteTransaction, tables: StoreTables) throws -> Int {
        let main = try txn.openDatabase(named: nil)
        var names: [String] = []
        try txn.forEach(in: main) { key, _ in
            let name = String(decoding: key, as: UTF8.self)
            if StoreTableName.isCanopyTable(name) { names.append(name) }
            return true
        }
        var sealed = 0
        for name in names {
            let database = try txn.openDatabase(named: name)
            let skipsFormat = name == StoreTableName.info  // rewritten last, sealed
            try txn.withCursor(in: database) { cursor in
                var entry = try cursor.first()
                while let current = entry {
                    let key = Array(current.key)
                    if !(skipsFormat && key == StoreInfoKey.format) {
                        let value = key.withUnsafeBytes { ValueChecksum.sealed(current.value, key: $0) }
                        try key.withUnsafeBytes { key in
                            try value.withUnsafeBytes { try cursor.put($0, forKey: key, flags: .current) }
                        }
                        sealed += 1
                    }
                    entry = try cursor.next()
                }
            }
        }
        return sealed
    }
}
