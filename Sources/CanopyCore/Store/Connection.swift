import Dispatch
import Foundation
import LMDB
import Synchronization

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
    let lock = Mutex<Void>(())
    let state: ConnectionState

    init(core: DatabaseCore, options: ConnectionOptions) {
        self.core = core
        self.state = ConnectionState(options: options)
    }

    deinit {
        core.environment.withAccess { state.pinned?.abort() }
    }

    /// The options the connection was created with.
    public var options: ConnectionOptions { state.options }

    /// The database this connection belongs to.
    public var database: Database { Database(sharing: core) }

    // MARK: Transactions

    /// The thread running a transaction of this connection now (0 when none): so that a nested call on the same
    /// thread is a typed error instead of waiting for itself.
    let owner = Atomic<UInt>(0)

    /// Runs `body` holding the connection's lock for a transaction, refusing a nested call from the thread that
    /// already holds it.
    private func entered<R>(_ what: String, _ body: () throws -> R) throws -> R {
        let me = currentThreadID()
        if owner.load(ordering: .relaxed) == me {
            throw CanopyError(
                .nestedTransaction,
                "\(what) was called inside a transaction of the same connection, on the same thread: use the transaction you are in (a read-write transaction reads too), or another connection",
                path: core.path)
        }
        return try lock.withLock { _ in
            owner.store(me, ordering: .relaxed)
            defer { owner.store(0, ordering: .relaxed) }
            return try body()
        }
    }

    /// Runs `body` in a read transaction: a consistent view of the database as of its start (or as of the pinned
    /// snapshot when the connection is pinned).
    ///
    /// The transaction is valid only inside `body`; using it after `body` returns throws
    /// ``CanopyError/Code/transactionEnded``. A read may run inside a transaction of *another* connection.
    ///
    /// - Throws: ``CanopyError/Code/nestedTransaction`` when called inside a transaction of this same connection on
    ///   the same thread; what `body` throws.
    @discardableResult
    public func read<R>(_ body: (ReadTransaction) throws -> R) throws -> R {
        try entered("read") { try readEntered(body) }
    }

    /// ``read(_:)`` holding the connection's lock.
    private func readEntered<R>(_ body: (ReadTransaction) throws -> R) throws -> R {
        do {
            return try core.environment.withAccess {
                if let pinned = state.pinned {
                    let txn = ReadTransaction(storage: pinned, connection: self, snapshot: state.pinnedSnapshot)
                    defer { txn.end() }
                    return try body(txn)
                }
                let storage = try core.environment.beginRead()
                defer { storage.abort() }
                let snapshot = try core.readSnapshot(storage)
                try state.synchronizeCaches(to: snapshot, core: core, txn: storage)
                let txn = ReadTransaction(storage: storage, connection: self, snapshot: snapshot)
                defer { txn.end() }
                return try body(txn)
            }
        } catch {
            throw CanopyError.wrap(error, path: core.path)
        }
    }

    /// Runs `body` in a read-write transaction that commits when `body` returns and rolls back when it throws.
    ///
    /// After the commit, observers receive a ``CommitNotification``. If the database's map fills up, the transaction
    /// is rolled back, the map grows (up to ``DatabaseOptions/maximumMapSize``; open read transactions and observers
    /// don't prevent it) and `body` runs again: keep `body` free of side effects outside the transaction. The
    /// transaction is valid only inside `body`, on the calling thread; it must not escape it.
    ///
    /// - Throws: ``CanopyError/Code/connectionPinned`` on a pinned connection; ``CanopyError/Code/readOnly`` on a
    ///   read-only database; ``CanopyError/Code/nestedTransaction`` when called inside a `read` or `readWrite` (of any
    ///   connection of this database) on the same thread — it would wait for itself; ``CanopyError/Code/databaseFull``
    ///   when the configured maximum map size is reached; ``CanopyError/Code/diskFull`` when the disk is; whatever
    ///   `body` throws (in every case nothing is written).
    @discardableResult
    public func readWrite<R>(_ body: (ReadWriteTransaction) throws -> R) throws -> R {
        try readWrite(body, isCancelled: nil)
    }

    func readWrite<R>(_ body: (ReadWriteTransaction) throws -> R, isCancelled: (() -> Bool)?) throws -> R {
        let me = currentThreadID()
        if core.writerThread.load(ordering: .relaxed) == me {
            throw CanopyError(
                .nestedTransaction,
                "readWrite was called inside another readWrite of this database on the same thread: it would wait for itself; do the writes in the outer transaction",
                path: core.path)
        }
        if core.environment.accessDepthOnCurrentThread > 0 {
            throw CanopyError(
                .nestedTransaction,
                "readWrite was called inside a read transaction of this database on the same thread (a read { } closure or an observer's read): end the read first, or do the reading in the readWrite",
                path: core.path)
        }
        return try entered("readWrite") { try readWriteEntered(body, isCancelled: isCancelled, thread: me) }
    }

    /// ``readWrite(_:isCancelled:)`` holding the connection's lock.
    private func readWriteEntered<R>(_ body: (ReadWriteTransaction) throws -> R, isCancelled: (() -> Bool)?, thread me: UInt) throws -> R {
        guard state.pinned == nil else {
            throw CanopyError(
                .connectionPinned,
                "this connection is pinned to snapshot \(state.pinnedSnapshot) (a long-lived read transaction); write through another connection, or unpin() first",
                path: core.path)
        }
        guard !core.options.readOnly else {
            throw CanopyError(.readOnly, "the database was opened read-only", path: core.path)
        }
        return try core.withWriteLock(thread: me) { try writeAttempts(body, isCancelled: isCancelled) }
    }

    /// The attempts of a write transaction (a full map grows and the closure runs again), holding the database's
    /// write lock.
    private func writeAttempts<R>(_ body: (ReadWriteTransaction) throws -> R, isCancelled: (() -> Bool)?) throws -> R {
        var attempt = 0
        // Nanoseconds of the monotonic clock, for the commit-duration metric: `ContinuousClock.Instant` is a type of
        // another module whose layout this one does not know, each copy a runtime call.
        let started = DispatchTime.now().uptimeNanoseconds
        while true {
            attempt += 1
            if isCancelled?() == true { throw CancellationError() }
            do {
                // (The result is returned, a full map thrown as `MapFullAttempt`: an enum generic over the result
                // would ask the runtime for its metadata on every write, this function not being specialized.)
                return try core.environment.withAccess {
                    let txn: ReadWriteTransaction
                    do {
                        let waitStart = core.logger.logLevel <= .debug ? DispatchTime.now().uptimeNanoseconds : nil
                        let storage = try core.environment.beginWrite()
                        if let waitStart { core.didWaitForWriteLock(since: waitStart) }
                        let state = try core.readState(storage, committed: storage.id - 1)
                        do {
                            try self.state.synchronizeCaches(to: state.snapshot, core: core, txn: storage)
                            txn = try ReadWriteTransaction(storage: storage, connection: self, state: state)
                        } catch {
                            storage.abort()
                            throw error
                        }
                    } catch {
                        throw CanopyError.wrap(error, path: core.path)
                    }
                    do {
                        let result = try body(txn)
                        if txn.sawMapFull { throw LMDBError(code: .mapFull, operation: "mdb_put", path: core.path) }
                        if isCancelled?() == true { throw CancellationError() }
                        let notification = try txn.commit()
                        txn.end()
                        if let notification {
                            core.didCommit(notification)
                            core.recordCommit(startedAt: started, bytesWritten: txn.bytesWritten)
                            core.clearStaleReadersPeriodically()
                        }
                        return result
                    } catch {
                        txn.rollback()
                        txn.end()
                        if txn.sawMapFull || (error as? LMDBError)?.code == .mapFull || (error as? CanopyError)?.code == .databaseFull
                            || (error as? CanopyError)?.lmdbError?.code == .mapFull
                        {
                            throw MapFullAttempt()
                        }
                        if error is CancellationError { throw error }
                        throw CanopyError.wrap(error, path: core.path)
                    }
                }
            } catch is MapFullAttempt {
                // Outside the access scope: growing remaps, which waits for this process's other uses of the map.
                if attempt < 16, try core.growMap() { continue }
                throw CanopyError(
                    .databaseFull,
                    "the database reached its configured maximum size (DatabaseOptions.maximumMapSize = \(core.options.maximumMapSize) bytes); the transaction was rolled back and nothing was written. Raise maximumMapSize (it reserves address space, not disk), or remove data",
                    path: core.path, underlying: LMDBError(code: .mapFull, operation: "mdb_put", path: core.path))
            }
        }
    }

    /// An attempt of a write transaction that filled the map (rolled back): the map grows and the closure runs again.
    /// Never leaves ``writeAttempts(_:isCancelled:)``.
    private struct MapFullAttempt: Error {}

    /// Runs `body` in a read transaction on a background thread (a thread of its own, not the cooperative pool).
    ///
    /// - Throws: `CancellationError` when the task is cancelled before the transaction starts; what the synchronous
    ///   ``read(_:)`` throws.
    @discardableResult
    public func read<R: Sendable>(_ body: @escaping @Sendable (ReadTransaction) throws -> R) async throws -> R {
        try Task.checkCancellation()
        let work = BackgroundWork(self, body)
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: work.run { connection, body in try connection.read(body) })
            }
        }
    }

    /// Runs `body` in a read-write transaction on a background thread (the whole transaction stays on that thread;
    /// no thread of the cooperative pool waits for the database's write lock).
    ///
    /// Cancellation: when the task is cancelled before the transaction commits — before the call, while it waits for
    /// the write lock, or while `body` runs — nothing is committed and the call throws `CancellationError`. A
    /// transaction that has committed stays committed.
    @discardableResult
    public func readWrite<R: Sendable>(_ body: @escaping @Sendable (ReadWriteTransaction) throws -> R) async throws -> R {
        try Task.checkCancellation()
        let cancelled = CancellationFlag()
        return try await withTaskCancellationHandler {
            let work = BackgroundWork(self, body)
            return try await withCheckedThrowingContinuation { continuation in
                DispatchQueue.global().async {
                    continuation.resume(with: work.run { connection, body in try connection.readWrite(body, isCancelled: { cancelled.isSet }) })
                }
            }
        } onCancel: {
            cancelled.set()
        }
    }

    // MARK: Long-lived reads

    /// Pins the connection to the latest snapshot: until ``advance()`` or ``unpin()``, every read transaction of this
    /// connection sees that snapshot. Returns the snapshot.
    ///
    /// A pinned connection holds an LMDB read transaction open: it keeps the pages of its snapshot from being reused,
    /// so the file can grow while it stays pinned (the map still grows when needed). Advance it regularly.
    ///
    /// - Throws: ``CanopyError/Code/nestedTransaction`` inside a transaction of this connection.
    @discardableResult
    public func pin() throws -> UInt64 {
        try entered("pin") { try pinEntered() }
    }

    /// ``pin()`` holding the connection's lock.
    private func pinEntered() throws -> UInt64 {
        if state.pinned != nil { return state.pinnedSnapshot }
        do {
            return try core.environment.withAccess {
                let storage = try core.environment.beginRead()
                let snapshot = try core.readSnapshot(storage)
                try state.synchronizeCaches(to: snapshot, core: core, txn: storage)
                state.pinned = storage
                state.pinnedSnapshot = snapshot
                return snapshot
            }
        } catch {
            throw CanopyError.wrap(error, path: core.path)
        }
    }

    /// Moves a pinned connection to the latest snapshot and returns, in order, the notifications of the commits it
    /// passed over (also commits of other processes, from the persisted commit log). Caches are brought up to date.
    ///
    /// - Throws: ``CanopyError/Code/connectionNotPinned`` when the connection is not pinned;
    ///   ``CanopyError/Code/snapshotMismatch`` when the commit log no longer holds all the commits passed over
    ///   (pinned for longer than ``DatabaseOptions/commitLogLimit`` commits), or does not list one of them (a commit
    ///   of more than 16,384 rows by another process, or one this process no longer remembers): the connection is still
    ///   advanced, and the caller must reload everything.
    public func advance() throws -> [CommitNotification] {
        try entered("advance") { try advancePinned(since: state.pinnedSnapshot) }
    }

    /// Moves the pinned connection to the latest snapshot and returns the notifications after `from` (which may be
    /// older than the snapshot it was pinned to, for an observer that starts from another one's state). The caches are
    /// brought up to date from the snapshot they hold, whatever `from` is.
    /// - Throws: ``CanopyError/Code/connectionNotPinned``; ``CanopyError/Code/snapshotMismatch`` when the commit log
    ///   no longer holds every commit after `from` (reload everything at the new snapshot).
    public func advance(since from: UInt64) throws -> [CommitNotification] {
        try entered("advance") { try advancePinned(since: from) }
    }

    /// ``advance(since:)`` for a caller holding the connection's lock.
    private func advancePinned(since from: UInt64) throws -> [CommitNotification] {
        guard let old = state.pinned else {
            throw CanopyError(.connectionNotPinned, "advance() needs a pinned connection; call pin() first", path: core.path)
        }
        do {
          return try core.environment.withAccess {
            // The pinned transaction moves to the latest snapshot keeping its reader slot (no new LMDB reader per
            // advance); if that fails it is ended, and the next advance begins it anew.
            try old.renew()
            let storage = old
            let to = try core.readSnapshot(storage)
            state.pinnedSnapshot = to
            let notifications = try core.notifications(after: from, upTo: to, in: storage)
            // The caches hold values of `cacheSnapshot`: a caller starting after it (another observer's later state)
            // is not told the commits in between, but the caches must drop what those changed.
            if let cached = state.cacheSnapshot, cached < from {
                state.applyToCaches(try core.notifications(after: cached, upTo: to, in: storage), snapshot: to)
            } else {
                state.applyToCaches(notifications, snapshot: to)
            }
            guard let notifications else {
                throw CanopyError(
                    .snapshotMismatch,
                    "the commit log no longer holds (or, for a commit of more than \(CommitLogEntry.maximumLoggedKeys) rows, never listed) every change of commits \(from + 1)...\(to); reload everything from snapshot \(to)",
                    path: core.path)
            }
            return notifications
          }
        } catch {
            throw CanopyError.wrap(error, path: core.path)
        }
    }

    /// Ends the long-lived read transaction; reads see the latest snapshot again.
    public func unpin() {
        withStateLock {
            state.pinned?.abort()
            state.pinned = nil
            state.pinnedSnapshot = 0
        }
    }

    /// Runs `body` under the connection's lock, or directly when this thread already holds it (inside a transaction
    /// of this connection), so that these small accessors never wait for their own thread.
    private func withStateLock<R>(_ body: () -> R) -> R {
        if owner.load(ordering: .relaxed) == currentThreadID() { return body() }
        return lock.withLock { _ in body() }
    }

    /// The snapshot the connection is pinned to, or `nil` when it is not pinned.
    public var pinnedSnapshot: UInt64? {
        withStateLock { state.pinned == nil ? nil : state.pinnedSnapshot }
    }

    // MARK: Caches

    /// Empties this connection's object and metadata caches.
    public func flushCaches() {
        withStateLock {
            state.objectCache.removeAll()
            state.metadataCache.removeAll()
        }
    }

    /// The number of cached objects and metadata values (for tests and diagnostics).
    public var cachedCounts: (objects: Int, metadata: Int) {
        withStateLock { (state.objectCache.count, state.metadataCache.count) }
    }
}

/// The mutable state of a connection, used only under the connection's lock.
final class ConnectionState {
    let options: ConnectionOptions
    let objectCache: ObjectCaches
    let metadataCache: ObjectCaches
    /// The snapshot the caches are consistent with; `nil` before the first transaction.
    var cacheSnapshot: UInt64?
    var pinned: LMDB.ReadTransaction?
    var pinnedSnapshot: UInt64 = 0
    /// The collection records this connection read, consistent with `cacheSnapshot` as the object caches are: a
    /// record changes only when a migration changes the collection's codec (in this process or another), and such
    /// a commit reports the collection as wholly rewritten (``CommitNotification/removedCollections``), which drops
    /// the record here (as do `removedAll` and a gap of unknown commits); the next read takes it from its snapshot.
    var collections: [String: CollectionRecord] = [:]
    /// The record of `collections` used last, found without hashing its name (two properties rather than a tuple, so
    /// that comparing the name copies nothing).
    var lastCollectionName: String?
    var lastCollectionRecord = CollectionRecord(id: 0, codec: "")
    /// What the binary codec holds for the type it decoded last for this connection (`flatPlanType`), so that a
    /// decode asks the codec's shared table (under its lock) only when the type changes or was not learned yet.
    var flatPlanType: ObjectIdentifier?
    var flatPlan: FlatDecodePlans.Entry? {
        didSet { flatPlanReference = flatPlan?.plan.flatMap { $0.size <= Self.flatScratchSize ? Unmanaged.passUnretained($0) : nil } }
    }
    /// The plan of `flatPlan` (which holds it), when it fits ``flatScratch``: a typed read past the cache decodes with
    /// it without retaining it or copying the enum around it.
    private(set) var flatPlanReference: Unmanaged<FlatDecodePlan>?
    /// Whether the type of `flatPlan` is at most 16-byte aligned (as ``flatScratch`` is).
    var flatPlanAligned = false
    /// Where the binary codec's fast path assembles a value read past the cache before moving it out (the plan's
    /// fields are at most 8-byte aligned; the type's alignment is checked where it is used): allocated once, rather
    /// than a stack buffer zeroed and reached through `withUnsafeMutableBytes` on every read (unspecialized code, a
    /// generic call). Used only under the connection's lock, and only between a plan's decode and the move that
    /// follows it (no other code runs in between), so one buffer serves every read.
    let flatScratch = UnsafeMutableRawPointer.allocate(byteCount: ConnectionState.flatScratchSize, alignment: 16)
    static let flatScratchSize = 256
    /// The binary codec's root encoder and its buffer, kept between the values this connection's writes encode (see
    /// ``ReadWriteTransaction/encode(_:codec:id:)``); taken while in use, so that an encode inside another (an
    /// `encode(to:)` that writes) gets one of its own.
    var rootEncoder: BinaryEncoder?
    /// Which types promise synthesized decoding (``BinaryCodecSynthesizedDecoding``), and the type asked last: every
    /// write asks for the values it reads back, and the runtime's conformance lookup costs more than the rest of the
    /// check (see ``promisesSynthesizedDecoding(_:)``).
    private var synthesizedDecoding: [ObjectIdentifier: Bool] = [:]
    private var lastSynthesizedDecodingType: ObjectIdentifier?
    private var lastSynthesizedDecoding = false
    /// A connection that registers or unregisters extensions: its write transactions don't refuse to start when an
    /// extension's recorded definition differs (that is what they are there to fix).
    var isMaintenance = false

    init(options: ConnectionOptions) {
        self.options = options
        objectCache = ObjectCaches(limit: options.objectCacheLimit)
        metadataCache = ObjectCaches(limit: options.metadataCacheLimit)
    }

    deinit { flatScratch.deallocate() }

    var cachesEnabled: Bool { objectCache.limit > 0 || metadataCache.limit > 0 }

    /// Whether `type` conforms to ``BinaryCodecSynthesizedDecoding``, remembered per type (conformances never change
    /// while the process runs).
    func promisesSynthesizedDecoding(_ type: any Any.Type) -> Bool {
        let id = ObjectIdentifier(type)
        if lastSynthesizedDecodingType == id { return lastSynthesizedDecoding }
        let answer: Bool
        if let known = synthesizedDecoding[id] {
            answer = known
        } else {
            answer = type is any BinaryCodecSynthesizedDecoding.Type
            synthesizedDecoding[id] = answer
        }
        lastSynthesizedDecodingType = id
        lastSynthesizedDecoding = answer
        return answer
    }

    /// Drops every remembered collection record (see ``collections``).
    func forgetCollectionRecords() {
        guard !collections.isEmpty || lastCollectionName != nil else { return }
        collections.removeAll()
        lastCollectionName = nil
    }

    /// Remembers `record` for `collection` (read from the snapshot the caches hold, or written by this connection's
    /// commit: a new collection, or a codec changed), in ``lastCollectionRecord`` too when that is `collection`'s.
    func rememberCollectionRecord(_ record: CollectionRecord, for collection: String) {
        collections[collection] = record
        if lastCollectionName == collection { lastCollectionRecord = record }
    }

    /// Drops the remembered record of `collection` (see ``collections``).
    func forgetCollectionRecord(_ collection: String) {
        collections[collection] = nil
        if lastCollectionName == collection { lastCollectionName = nil }
    }

    /// Brings the caches from `cacheSnapshot` to `snapshot` by applying the commits in between, or empties them when
    /// those commits are not known.
    func synchronizeCaches(to snapshot: UInt64, core: DatabaseCore, txn: LMDB.ReadTransaction) throws {
        guard cacheSnapshot != snapshot else { return }
        guard let from = cacheSnapshot, cachesEnabled, from < snapshot else {
            objectCache.removeAll()
            metadataCache.removeAll()
            forgetCollectionRecords()
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
            forgetCollectionRecords()
            return
        }
        for notification in notifications {
            if notification.removedAll {
                objectCache.removeAll()
                metadataCache.removeAll()
                forgetCollectionRecords()
                continue
            }
            for collection in notification.removedCollections {
                objectCache.removeAll(inCollection: collection)
                metadataCache.removeAll(inCollection: collection)
                forgetCollectionRecord(collection)
            }
            // Key by key as the commit listed them (a bulk commit's sets are not built for this).
            let keys = notification.keySets
            if objectCache.count > 0 { keys.forEachKey(in: .changedObjects) { objectCache.remove(key: $1, in: $0) } }
            if metadataCache.count > 0 { keys.forEachKey(in: .changedMetadata) { metadataCache.remove(key: $1, in: $0) } }
            keys.forEachKey(in: .removedKeys) { collection, key in
                objectCache.remove(key: key, in: collection)
                metadataCache.remove(key: key, in: collection)
            }
        }
    }
}

/// An async transaction's connection and closure, handed to the background thread that runs it and let go of there
/// before the awaiting task resumes. Captured directly, they stayed referenced by the dispatched block until that
/// thread got around to releasing it — under load, tens of milliseconds after the caller had gone on —, so a database
/// the caller released right after the await was still open in the process, and opening its path again with other
/// options (a tool run in the same process) failed with `alreadyOpen`.
private final class BackgroundWork<Body>: @unchecked Sendable {
    // @unchecked: `work` is set at init and taken once, by the one thread that runs it (the dispatch orders the two).
    private var work: (connection: Connection, body: Body)?

    init(_ connection: Connection, _ body: Body) {
        work = (connection, body)
    }

    /// Runs `transaction` with the connection and the closure, which are released when this returns.
    func run<R>(_ transaction: (Connection, Body) throws -> R) -> Result<R, any Error> {
        guard let (connection, body) = work.take() else {
            return .failure(CanopyError(.invalidArgument, "an async transaction ran twice"))
        }
        return Result { try transaction(connection, body) }
    }
}
