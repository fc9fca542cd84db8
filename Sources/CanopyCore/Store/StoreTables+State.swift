import LMDB

/// Where the store's state (``StoreState``) is read: the newest entry of the commit log (`canopy/5`, ``CommitLogEntry``),
/// or the `state` record of `canopy.info` in a `canopy/4` file opened read-only. Every reader of the state — a read or
/// write transaction's start, pinning and advancing, tools — goes through these two functions.
extension StoreTables {
    /// The bytes the format upgrade leaves in `canopy.info`'s `state` record of a `canopy/5` file: shorter than a
    /// snapshot, so a process of an older build that still has the file open reads a malformed record
    /// (``CanopyError/Code/corruptStore``), never a frozen snapshot.
    static let movedStateRecord: [UInt8] = [5]

    /// The store's state as `txn` sees it (snapshot 0 for a store that never committed).
    /// - Throws: ``CanopyError/Code/corruptStore`` when the state is malformed or the commit log lost its newest entry;
    ///   ``CanopyError/Code/incompatibleFormat`` when another process upgraded a `canopy/4` file this one opened
    ///   read-only.
    func state(in txn: LMDB.ReadTransaction, path: String?) throws -> StoreState {
        guard stateInCommitLog else {
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
        guard stateInCommitLog else {
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
            guard bytes.count >= 9, bytes[0] == CommitLogEntry.version, CommitLogEntry.snapshot(in: bytes) == snapshot else {
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

    /// Throws when `bytes` are what the format upgrade left in `canopy.info` (``movedStateRecord``): another process
    /// upgraded the file to `canopy/5` since this one opened it read-only as `canopy/4`.
    private static func refuseMovedState(_ bytes: UnsafeRawBufferPointer, path: String?) throws {
        guard bytes.elementsEqual(movedStateRecord) else { return }
        throw CanopyError(
            .incompatibleFormat,
            "the database was upgraded to \(formatTag) by another process after this one opened it read-only as \(previousFormatTag); open it again",
            path: path)
    }
}
