import LMDB

/// Where the store's state (``StoreState``) and the extensions' state records are read, by layout (``StateLayout``):
/// the newest entry of the commit log (`canopy/6`, ``CommitLogEntry``), or where a `canopy/4` or `canopy/5` file opened
/// read-only keeps them. Every reader of the state — a read or write transaction's start, pinning and advancing,
/// extensions and tools reading an extension's state record — goes through these functions.
extension StoreTables {
    /// The bytes the format upgrade leaves in `canopy.info`'s `state` record (from `canopy/4`): shorter than a
    /// snapshot, so a process of an older build that still has the file open reads a malformed record
    /// (``CanopyError/Code/corruptStore``), never a frozen snapshot.
    static let movedStateRecord: [UInt8] = [5]
    /// The bytes the format upgrade leaves in each extension's `ext.<name>.state` record of `canopy.info` (from
    /// `canopy/4` or `canopy/5`): one byte, which neither a view's state (20 bytes) nor a search index's (its version
    /// first) reads as, so a process of an older build that still has the file open fails on a malformed record
    /// (``CanopyError/Code/corruptStore``), never reads a state that no longer changes.
    static let movedExtensionStateRecord: [UInt8] = [6]

    /// The store's state as `txn` sees it (snapshot 0 for a store that never committed).
    /// - Throws: ``CanopyError/Code/corruptStore`` when the state is malformed or the commit log lost its newest entry;
    ///   ``CanopyError/Code/incompatibleFormat`` when another process upgraded a `canopy/4` file this one opened
    ///   read-only.
    func state(in txn: LMDB.ReadTransaction, path: String?) throws -> StoreState {
        guard layout.storeStateInLog else {
            return try StoreInfoRecords.state.withValue(in: txn, info: info) { bytes in
                guard let bytes else { return StoreState() }
                try Self.refuseMovedState(bytes, path: path)
                do { return try StoreState(decoding: bytes) } catch {
                    throw CanopyError(.corruptStore, "the store's state record is malformed (\(error)); run `canopy verify` on the database and restore it from a backup",
                                      path: path, underlying: error)
                }
            }
        }
        return try withNewestLogEntry(in: txn, path: path) { snapshot, bytes in
            try refuseNewestEntryVersion(bytes, snapshot: snapshot, path: path)
            let state: StoreState?
            do { state = try CommitLogEntry.state(decoding: bytes) } catch {
                throw Self.malformedState(snapshot: snapshot, path: path, underlying: error)
            }
            guard let state, state.snapshot == snapshot else {
                throw Self.malformedState(snapshot: snapshot, path: path, underlying: nil)
            }
            return state
        }
    }

    /// The store's snapshot as `txn` sees it, without decoding the rest of the state (0 for a store that never
    /// committed). Failure modes are those of ``state(in:path:)``.
    func snapshot(in txn: LMDB.ReadTransaction, path: String?) throws -> UInt64 {
        guard layout.storeStateInLog else {
            return try StoreInfoRecords.state.withValue(in: txn, info: info) { bytes in
                guard let bytes else { return 0 }
                try Self.refuseMovedState(bytes, path: path)
                guard let snapshot = StoreState.snapshot(in: bytes) else {
                    throw CanopyError(
                        .corruptStore,
                        "the store's state record is malformed (\(bytes.count) bytes, at least 8 expected); run `canopy verify` on the database and restore it from a backup",
                        path: path)
                }
                return snapshot
            }
        }
        return try withNewestLogEntry(in: txn, path: path) { snapshot, bytes in
            // The version and the snapshot the entry names (which must be its key's) are checked here; the rest of
            // the entry is decoded by whoever reads its state or changes.
            try refuseNewestEntryVersion(bytes, snapshot: snapshot, path: path)
            guard bytes.count >= 9, CommitLogEntry.snapshot(in: bytes) == snapshot else {
                throw Self.malformedState(snapshot: snapshot, path: path, underlying: nil)
            }
            return snapshot
        }
    }

    /// Calls `body` with the snapshot and bytes of the commit log's newest entry (feed records, under longer keys,
    /// are stepped over).
    /// - Throws: ``CanopyError/Code/corruptStore`` when the log holds no entry: a store's log begins with the entry of
    ///   snapshot 0 (written with the format record) and is never pruned to empty, so its entries were lost.
    private func withNewestLogEntry<R>(
        in txn: LMDB.ReadTransaction, path: String?, _ body: (UInt64, UnsafeRawBufferPointer) throws -> R
    ) throws -> R {
        try txn.withCursor(in: commits) { cursor in
            var entry = try cursor.last()
            while let current = entry {
                if current.key.count == 8 { return try body(current.key.loadBigEndianUInt64(at: 0), current.value) }
                entry = try cursor.previous()
            }
            throw CanopyError(
                .corruptStore,
                "the commit log holds no entry: the store's state (its newest entry) is lost; run `canopy verify` on the database and restore it from a backup",
                path: path)
        }
    }

    private static func malformedState(snapshot: UInt64, path: String?, underlying: (any Error)?) -> CanopyError {
        CanopyError(
            .corruptStore,
            "the store's state record (the newest commit log entry, snapshot \(snapshot)) is malformed; run `canopy verify` on the database and restore it from a backup",
            path: path, underlying: underlying)
    }

    /// Throws unless the newest entry (`bytes`) has the version this layout's commits write: in a `canopy/6` file an
    /// entry without the extensions' state records as the newest one is damage (`corruptStore`: reading it would
    /// lose them), and in a `canopy/5` file opened read-only a version-3 entry means another process upgraded it
    /// since (`incompatibleFormat`: open it again).
    private func refuseNewestEntryVersion(_ bytes: UnsafeRawBufferPointer, snapshot: UInt64, path: String?) throws {
        let version = CommitLogEntry.version(of: bytes)
        if version == layout.newestEntryVersion { return }
        if layout == .storeStateInLog, version == CommitLogEntry.version { throw Self.upgradedMeanwhile(from: layout, path: path) }
        throw Self.malformedState(snapshot: snapshot, path: path, underlying: nil)
    }

    /// Throws when `bytes` are what the format upgrade left in `canopy.info` (``movedStateRecord``): another process
    /// upgraded the file since this one opened it read-only as `canopy/4`.
    private static func refuseMovedState(_ bytes: UnsafeRawBufferPointer, path: String?) throws {
        guard bytes.elementsEqual(movedStateRecord) else { return }
        throw upgradedMeanwhile(from: .records, path: path)
    }

    private static func upgradedMeanwhile(from layout: StateLayout, path: String?) -> CanopyError {
        CanopyError(
            .incompatibleFormat,
            "the database was upgraded to \(formatTag) by another process after this one opened it read-only as \(layout.formatTag(checksummed: true)); open it again",
            path: path)
    }

    /// Calls `body` with the state record of extension `name` as `txn` sees it in a `canopy/4` or `canopy/5` file
    /// opened read-only (a record of `canopy.info`), or `nil` when it has none. In a `canopy/6` file the records are
    /// part of the state (``StoreState/extensionStates``), read by the transaction.
    /// - Throws: ``CanopyError/Code/incompatibleFormat`` when another process upgraded the file since this one opened
    ///   it (the record is ``movedExtensionStateRecord``); ``CanopyError/Code/corruptStore`` when it fails its checksum.
    func withExtensionStateRecord<R>(
        of name: String, in txn: LMDB.ReadTransaction, path: String?, _ body: (UnsafeRawBufferPointer?) throws -> R
    ) throws -> R {
        try StoreInfoRecords.extensionState(of: name).withValue(in: txn, info: info) { bytes in
            if let bytes, bytes.elementsEqual(Self.movedExtensionStateRecord) { throw Self.upgradedMeanwhile(from: layout, path: path) }
            return try body(bytes)
        }
    }

    /// The state records of every extension as `canopy.info` holds them (`ext.<name>.state`, in a `canopy/4` or
    /// `canopy/5` file), by extension name: what the format upgrade moves into the commit log.
    func extensionStateRecords(in txn: LMDB.ReadTransaction) throws -> [String: [UInt8]] {
        let prefix = Array(ExtensionTableName.prefix.utf8)
        let suffix = Array(".state".utf8)
        // The keys first, through a cursor that checks no checksum: it steps onto the record after the last one of
        // the prefix, which in an upgrade from `canopy/3` is the format record, not sealed yet. Each value is then read
        // with its checksum checked.
        var names: [String] = []
        try txn.forEach(in: info.withoutChecksums, prefix: prefix) { key, _ in
            // `ext.<name>.state`; the other records under the prefix are `ext.<name>.skipped`.
            guard key.count > prefix.count + suffix.count, key.suffix(suffix.count).elementsEqual(suffix) else { return true }
            names.append(String(decoding: key[prefix.count..<(key.count - suffix.count)], as: UTF8.self))
            return true
        }
        var records: [String: [UInt8]] = [:]
        for name in names {
            records[name] = try StoreInfoRecords.extensionState(of: name).withValue(in: txn, info: info) { $0.map { Array($0) } }
        }
        return records
    }
}
