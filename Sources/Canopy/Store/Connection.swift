import Dispatch
import Foundation
import LMDB

/// A connection to a ``Database``: runs read and read-write transactions, one at a time, and keeps caches of decoded
/// objects and metadata that stay correct across connections and commits.
///
/// Use one connection per thread or task of work (a UI's connection, a background writer's connection). Transactions
/// of one connection are serialized; different connections read concurrently; write transactions are serialized by
/// the database.
///
/// A connection can be *pinned* to a snapshot (a long-lived read transaction, ``pin()``): its reads then all see that
/// snapshot until ``advance()`` moves it to the latest commit and returns the notifications passed over. This is how
/// a UI keeps showing one consistent state while writers commit.
public final class Connection: @unchecked Sendable {
    // @unchecked: all mutable state is in `state`, accessed only while holding `lock` (one transaction at a time).

    let core: DatabaseCore
    let lock = NSLock()
    let state: ConnectionState

    init(core: DatabaseCore, options: ConnectionOptions) {
        self.core = core
        self.state = ConnectionState(options: options)
    }

    deinit {
        state.pinned?.abort()
    }

    /// The options the connection was created with.
    public var options: ConnectionOptions { state.options }

    /// The database this connection belongs to.
    public var database: Database { Database(sharing: core) }

    // MARK: Transactions

    /// Runs `body` in a read transaction: a consistent view of the database as of its start (or as of the pinned
    /// snapshot when the connection is pinned).
    ///
    /// The transaction is valid only inside `body`; it must not escape it.
    public func read<R>(_ body: (ReadTransaction) throws -> R) throws -> R {
        lock.lock()
        defer { lock.unlock() }
        do {
            if let pinned = state.pinned {
                let txn = ReadTransaction(storage: pinned, connection: self, snapshot: state.pinnedSnapshot)
                return try body(txn)
            }
            let storage = try core.environment.beginRead()
            defer { storage.abort() }
            let snapshot = try core.readSnapshot(storage)
            try state.synchronizeCaches(to: snapshot, core: core, txn: storage)
            return try body(ReadTransaction(storage: storage, connection: self, snapshot: snapshot))
        } catch {
            throw CanopyError.wrap(error, path: core.path)
        }
    }

    /// Runs `body` in a read-write transaction that commits when `body` returns and rolls back when it throws.
    ///
    /// After the commit, observers receive a ``CommitNotification``. If the database's map fills up, the transaction
    /// is rolled back, the map grows (up to ``DatabaseOptions/maximumMapSize``) and `body` runs again: keep `body`
    /// free of side effects outside the transaction. The transaction is valid only inside `body`, on the calling
    /// thread; it must not escape it. Don't start a read-write transaction inside another one (it would wait for
    /// itself).
    ///
    /// - Throws: ``CanopyError/Code/connectionPinned`` on a pinned connection; ``CanopyError/Code/readOnly`` on a
    ///   read-only database; ``CanopyError/Code/databaseFull`` when the maximum map size is reached (nothing is
    ///   written); whatever `body` throws (nothing is written).
    public func readWrite<R>(_ body: (ReadWriteTransaction) throws -> R) throws -> R {
        lock.lock()
        defer { lock.unlock() }
        guard state.pinned == nil else {
            throw CanopyError(
                .connectionPinned,
                "this connection is pinned to snapshot \(state.pinnedSnapshot) (a long-lived read transaction); write through another connection, or unpin() first",
                path: core.path)
        }
        guard !core.options.readOnly else {
            throw CanopyError(.readOnly, "the database was opened read-only", path: core.path)
        }
        core.writeLock.lock()
        defer { core.writeLock.unlock() }
        var attempt = 0
        while true {
            attempt += 1
            let txn: ReadWriteTransaction
            do {
                let storage = try core.environment.beginWrite()
                let state = try DatabaseCore.readState(storage, core.tables)
                try self.state.synchronizeCaches(to: state.snapshot, core: core, txn: storage)
                txn = try ReadWriteTransaction(storage: storage, connection: self, state: state)
            } catch {
                throw CanopyError.wrap(error, path: core.path)
            }
            do {
                let result = try body(txn)
                if txn.sawMapFull { throw LMDBError(code: .mapFull, operation: "mdb_put", path: core.path) }
                let notification = try txn.commit()
                if let notification {
                    core.didCommit(notification)
                }
                return result
            } catch {
                txn.rollback()
                if txn.sawMapFull || (error as? LMDBError)?.code == .mapFull || (error as? CanopyError)?.code == .databaseFull
                    || (error as? CanopyError)?.lmdbError?.code == .mapFull
                {
                    if attempt < 8 && core.growMap() { continue }
                    throw CanopyError(
                        .databaseFull,
                        "the database reached its maximum map size (\(core.environment.mapSize) bytes of \(core.options.maximumMapSize)); the transaction was rolled back. Raise DatabaseOptions.maximumMapSize, or close long-lived read transactions so the map can grow",
                        path: core.path, underlying: LMDBError(code: .mapFull, operation: "mdb_put", path: core.path))
                }
                throw CanopyError.wrap(error, path: core.path)
            }
        }
    }

    /// Runs `body` in a read transaction on a background thread.
    public func read<R: Sendable>(_ body: @escaping @Sendable (ReadTransaction) throws -> R) async throws -> R {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try self.read(body) })
            }
        }
    }

    /// Runs `body` in a read-write transaction on a background thread (the whole transaction stays on that thread).
    public func readWrite<R: Sendable>(_ body: @escaping @Sendable (ReadWriteTransaction) throws -> R) async throws -> R {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try self.readWrite(body) })
            }
        }
    }

    // MARK: Long-lived reads

    /// Pins the connection to the latest snapshot: until ``advance()`` or ``unpin()``, every read transaction of this
    /// connection sees that snapshot. Returns the snapshot.
    ///
    /// A pinned connection holds an LMDB read transaction open: it keeps the pages of its snapshot from being reused,
    /// so the file can grow while it stays pinned, and the map cannot be resized. Advance it regularly.
    @discardableResult
    public func pin() throws -> UInt64 {
        lock.lock()
        defer { lock.unlock() }
        if state.pinned != nil { return state.pinnedSnapshot }
        do {
            let storage = try core.environment.beginRead()
            let snapshot = try core.readSnapshot(storage)
            try state.synchronizeCaches(to: snapshot, core: core, txn: storage)
            state.pinned = storage
            state.pinnedSnapshot = snapshot
            return snapshot
        } catch {
            throw CanopyError.wrap(error, path: core.path)
        }
    }

    /// Moves a pinned connection to the latest snapshot and returns, in order, the notifications of the commits it
    /// passed over (also commits of other processes, from the persisted commit log). Caches are brought up to date.
    ///
    /// - Throws: ``CanopyError/Code/connectionNotPinned`` when the connection is not pinned;
    ///   ``CanopyError/Code/snapshotMismatch`` when the commit log no longer holds all the commits passed over
    ///   (pinned for longer than ``DatabaseOptions/commitLogLimit`` commits): the connection is still advanced, and the
    ///   caller must reload everything.
    public func advance() throws -> [CommitNotification] {
        lock.lock()
        defer { lock.unlock() }
        guard let old = state.pinned else {
            throw CanopyError(.connectionNotPinned, "advance() needs a pinned connection; call pin() first", path: core.path)
        }
        let from = state.pinnedSnapshot
        do {
            let storage = try core.environment.beginRead()
            old.abort()
            state.pinned = storage
            let to = try core.readSnapshot(storage)
            state.pinnedSnapshot = to
            let notifications = try core.notifications(after: from, upTo: to, in: storage)
            state.applyToCaches(notifications, snapshot: to)
            guard let notifications else {
                throw CanopyError(
                    .snapshotMismatch,
                    "the commit log no longer holds commits \(from + 1)...\(to); reload everything from snapshot \(to)",
                    path: core.path)
            }
            return notifications
        } catch {
            throw CanopyError.wrap(error, path: core.path)
        }
    }

    /// Ends the long-lived read transaction; reads see the latest snapshot again.
    public func unpin() {
        lock.lock()
        defer { lock.unlock() }
        state.pinned?.abort()
        state.pinned = nil
        state.pinnedSnapshot = 0
    }

    /// The snapshot the connection is pinned to, or `nil` when it is not pinned.
    public var pinnedSnapshot: UInt64? {
        lock.lock()
        defer { lock.unlock() }
        return state.pinned == nil ? nil : state.pinnedSnapshot
    }

    // MARK: Caches

    /// Empties this connection's object and metadata caches.
    public func flushCaches() {
        lock.lock()
        defer { lock.unlock() }
        state.objectCache.removeAll()
        state.metadataCache.removeAll()
    }

    /// The number of cached objects and metadata values (for tests and diagnostics).
    public var cachedCounts: (objects: Int, metadata: Int) {
        lock.lock()
        defer { lock.unlock() }
        return (state.objectCache.count, state.metadataCache.count)
    }
}

/// The mutable state of a connection, used only under the connection's lock.
final class ConnectionState {
    let options: ConnectionOptions
    var objectCache: ObjectCache
    var metadataCache: ObjectCache
    /// The snapshot the caches are consistent with; `nil` before the first transaction.
    var cacheSnapshot: UInt64?
    var pinned: LMDB.ReadTransaction?
    var pinnedSnapshot: UInt64 = 0
    var collections: [String: CollectionRecord] = [:]

    init(options: ConnectionOptions) {
        self.options = options
        objectCache = ObjectCache(limit: options.objectCacheLimit)
        metadataCache = ObjectCache(limit: options.metadataCacheLimit)
    }

    var cachesEnabled: Bool { objectCache.limit > 0 || metadataCache.limit > 0 }

    /// Brings the caches from `cacheSnapshot` to `snapshot` by applying the commits in between, or empties them when
    /// those commits are not known.
    func synchronizeCaches(to snapshot: UInt64, core: DatabaseCore, txn: LMDB.ReadTransaction) throws {
        guard cacheSnapshot != snapshot else { return }
        guard let from = cacheSnapshot, cachesEnabled, from < snapshot else {
            objectCache.removeAll()
            metadataCache.removeAll()
            cacheSnapshot = snapshot
            return
        }
        let notifications = snapshot - from <= 64 ? try core.notifications(after: from, upTo: snapshot, in: txn) : nil
        applyToCaches(notifications, snapshot: snapshot)
    }

    func applyToCaches(_ notifications: [CommitNotification]?, snapshot: UInt64) {
        defer { cacheSnapshot = snapshot }
        guard let notifications, cacheSnapshot != nil else {
            objectCache.removeAll()
            metadataCache.removeAll()
            return
        }
        for notification in notifications {
            if notification.removedAll {
                objectCache.removeAll()
                metadataCache.removeAll()
                continue
            }
            for collection in notification.removedCollections {
                objectCache.removeAll(inCollection: collection)
                metadataCache.removeAll(inCollection: collection)
            }
            for (collection, keys) in notification.changedObjects {
                for key in keys { objectCache.remove(RowID(collection: collection, key: key)) }
            }
            for (collection, keys) in notification.changedMetadata {
                for key in keys { metadataCache.remove(RowID(collection: collection, key: key)) }
            }
            for (collection, keys) in notification.removedKeys {
                for key in keys {
                    let id = RowID(collection: collection, key: key)
                    objectCache.remove(id)
                    metadataCache.remove(id)
                }
            }
        }
    }
}
