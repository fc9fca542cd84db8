import CLMDB
import CLMDBGuard
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An open LMDB environment: one memory-mapped data file with its lock file, holding named databases.
///
/// Open an environment once per path per process (LMDB forbids opening the same environment twice in one process).
/// Read transactions may run concurrently on any thread; write transactions are serialized by LMDB and must stay on
/// the thread that began them, which the closure-scoped ``write(_:)`` guarantees.
///
/// ```swift
/// let env = try Environment(path: "/tmp/db", options: .init(maxDatabases: 4))
/// let table = try env.openDatabase(named: "people", create: true)
/// try env.write { txn in try txn.put(Array("Ada".utf8), forKey: Array("1".utf8), in: table) }
/// let name = try env.read { txn in try txn.value(forKey: Array("1".utf8), in: table) }
/// ```
///
/// ## Crashes inside LMDB
///
/// LMDB trusts its pages: a damaged branch or leaf page can make it read past the end of the file or fail one of its
/// assertions, which would end the process (SIGBUS, SIGSEGV, SIGABRT). Every call that reads pages runs guarded
/// (the `CLMDBGuard` target): such a crash throws ``LMDBError/Code/crashContained`` (saying what crashed and on which
/// page), the transaction is ended, and the environment is *damaged* for the rest of the process: every later call
/// throws ``LMDBError/Code/environmentDamaged`` without entering LMDB, writes included. A key or value LMDB hands
/// out that would run past the end of the file throws ``LMDBError/Code/valueOutsideFile`` before anything reads it.
/// Not contained: a fault outside LMDB's calls or at an address neither in the map nor near zero (a bug, not a
/// damaged page), and damage a write transaction copies from a broken page into its own memory before anything
/// faults. With the environment variable `CANOPY_LMDB_CONTAINMENT=off` crashes end the process as they would without
/// this layer.
public final class Environment: @unchecked Sendable {
    // @unchecked: `handle` is an MDB_env, which LMDB documents as safe to share between threads; `containment` is
    // written only at open and while remapping (no call of the environment runs then: AccessGate) and by the fault
    // handler through atomics; the only other mutable Swift state is `state`, behind a Mutex.

    @usableFromInline let handle: OpaquePointer
    /// The guard of this environment's calls: where the map is, and the first contained crash.
    @usableFromInline let containment: UnsafeMutablePointer<canopy_lmdb_guard>
    /// The path the environment was opened at (a directory, or the data file with ``EnvironmentOptions/Flags/noSubdirectory``).
    public let path: String
    /// The flags the environment was opened with.
    public let flags: EnvironmentOptions.Flags

    struct State {
        var activeTransactions = 0
        var mapSize: Int
        /// The call that crashed first (contained), and its database: for the errors of later calls.
        var firstCrash: (operation: String, database: String?)?
        /// Runs after a transaction's start adopted a map another process grew, before it begins again (tests only:
        /// another process grows the map once more in between).
        var afterAdoptingResizedMap: (@Sendable () -> Void)?
    }
    let state: Mutex<State>
    /// Serializes remapping (map growth) against uses of transactions; see ``withAccess(_:)``.
    let gate: AccessGate
    /// ``EnvironmentOptions/valueChecksums``: `false` makes every handle plain, `checksummed` or not.
    package let valueChecksums: Bool

    /// Opens (creating the files if needed) the environment at `path`.
    ///
    /// Without ``EnvironmentOptions/Flags/noSubdirectory`` the directory must exist; LMDB creates `data.mdb` and
    /// `lock.mdb` inside it.
    /// - Throws: ``LMDBError`` with `.noSuchFile` for a missing directory, `.permissionDenied` for a location that
    ///   cannot be written, `.invalid` for a file that is not an LMDB database, `.versionMismatch` for another format,
    ///   `.fileTruncated` for a data file shorter than the pages its meta page claims (checked before mapping it).
    public init(path: String, options: EnvironmentOptions = .init()) throws {
        // Before LMDB maps the file: a truncated file would end the process with SIGBUS at its first missing page.
        try DataFileCheck.check(environmentPath: path, flags: options.flags)
        var env: OpaquePointer?
        try check(mdb_env_create(&env), "mdb_env_create", path: path)
        guard let env else { throw LMDBError(code: .outOfMemory, operation: "mdb_env_create", path: path) }
        guard let containment = canopy_lmdb_guard_create(env) else {
            mdb_env_close(env)
            throw LMDBError(code: .outOfMemory, operation: "mdb_env_create", path: path)
        }
        var flags = options.flags
        flags.insert(.noThreadLocalStorage)
        do {
            try check(mdb_env_set_mapsize(env, options.mapSize), "mdb_env_set_mapsize", path: path)
            try check(mdb_env_set_maxdbs(env, MDB_dbi(options.maxDatabases)), "mdb_env_set_maxdbs", path: path)
            try check(mdb_env_set_maxreaders(env, UInt32(options.maxReaders)), "mdb_env_set_maxreaders", path: path)
            try check(mdb_env_open(env, path, flags.rawValue, mdb_mode_t(options.fileMode)), "mdb_env_open", path: path)
        } catch {
            mdb_env_close(env)
            canopy_lmdb_guard_destroy(containment)
            throw error
        }
        canopy_lmdb_guard_refresh_map(containment)
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        self.handle = env
        self.containment = containment
        self.path = path
        self.flags = flags
        self.valueChecksums = options.valueChecksums
        self.state = Mutex(State(mapSize: info.me_mapsize))
        self.gate = AccessGate(identity: UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(env))))
    }

    deinit {
        mdb_env_close(handle)
        canopy_lmdb_guard_destroy(containment)
    }

    // MARK: Transactions

    /// Runs `body` in a read transaction: a consistent snapshot of the environment as of its start.
    ///
    /// The transaction is valid only inside `body`; it must not escape it.
    public func read<R>(_ body: (ReadTransaction) throws -> R) throws -> R {
        try withAccess {
            let txn = try beginRead()
            defer { txn.abort() }
            return try body(txn)
        }
    }

    /// Runs `body` in a write transaction, committing when it returns and aborting when it throws.
    ///
    /// Write transactions are serialized (across processes too): this call waits for any other writer. The
    /// transaction is valid only inside `body`, on the calling thread; it must not escape it.
    public func write<R>(_ body: (WriteTransaction) throws -> R) throws -> R {
        try withAccess {
            let txn = try beginWrite()
            do {
                let result = try body(txn)
                try txn.commit()
                return result
            } catch {
                txn.abort()
                throw error
            }
        }
    }

    /// Runs `body` as a *use* of this environment's transactions: the map is not remapped (grown) while any use is in
    /// progress, in any thread of this process.
    ///
    /// ``read(_:)`` and ``write(_:)`` do this for you. Layers that keep a transaction open between uses (a pinned
    /// snapshot from `beginRead()`) must make every use of it, and every pointer into the map it hands out, stay
    /// inside a `withAccess` scope; between scopes the transaction may stay open while another thread grows the map.
    /// Scopes nest on one thread at no cost. Don't wait, inside a scope, for another thread that grows the map.
    @inline(__always)
    public func withAccess<R>(_ body: () throws -> R) rethrows -> R {
        try gate.shared(body)
    }

    /// How many ``withAccess(_:)`` scopes the calling thread is inside (0 when it uses no transaction of this
    /// environment now).
    public var accessDepthOnCurrentThread: Int { gate.depthOnCurrentThread }

    /// Begins a read transaction that the caller must end with ``ReadTransaction/abort()``.
    ///
    /// For long-lived readers (a pinned snapshot) in the layers above; everyone else uses ``read(_:)``. Begin it and
    /// use it only inside ``withAccess(_:)`` scopes.
    package func beginRead() throws -> ReadTransaction {
        try ReadTransaction(environment: self, parent: nil, flags: UInt32(MDB_RDONLY))
    }

    /// Begins a write transaction that the caller must commit or abort on the same thread.
    package func beginWrite() throws -> WriteTransaction {
        try WriteTransaction(environment: self, parent: nil, flags: 0)
    }

    func transactionBegan() {
        state.withLock { $0.activeTransactions += 1 }
    }

    func transactionEnded() {
        state.withLock { $0.activeTransactions -= 1 }
    }

    // MARK: Databases

    /// Opens a named database (or the unnamed main one with `name == nil`), creating it if asked to.
    ///
    /// The handle stays valid for the life of the environment. Opening runs in its own write transaction when
    /// `create` is true, and in a read transaction otherwise.
    /// - Throws: ``LMDBError`` with `.notFound` when the database does not exist and `create` is false, or
    ///   `.databasesFull` when ``EnvironmentOptions/maxDatabases`` is reached.
    public func openDatabase(named name: String?, flags: Database.Flags = [], create: Bool = false) throws -> Database {
        if create && !self.flags.contains(.readOnly) {
            return try write { txn in try txn.openDatabase(named: name, flags: flags.union(.create)) }
        }
        return try read { txn in try txn.openDatabase(named: name, flags: flags.subtracting(.create)) }
    }

    // MARK: Maintenance

    /// The current map size in bytes.
    public var mapSize: Int { state.withLock { $0.mapSize } }

    /// Sets a new map size, remapping the file. Never shrinks below the size in use by the file's last commit.
    ///
    /// Waits until no thread is inside a ``withAccess(_:)`` scope (read transactions may stay open: they continue over
    /// the new mapping). Passing `0` adopts the size another process set (after ``LMDBError/Code/mapResized``).
    /// - Throws: ``LMDBError`` `.busy` when the calling thread is itself inside a ``withAccess(_:)`` scope (it would
    ///   wait for itself) or a write transaction is open.
    public func setMapSize(_ size: Int) throws {
        let done: Void? = try gate.exclusive(allowingOwnScope: false) { try remap(to: size) }
        if done == nil {
            throw LMDBError(
                code: .busy, operation: "mdb_env_set_mapsize", path: path,
                hint: "called while this thread is using a transaction of the environment; call it outside read/write")
        }
    }

    /// Sets what runs after a transaction's start adopted a map another process grew and before it begins again
    /// (tests only: the window in which another process may grow the map once more).
    package func setAfterAdoptingResizedMap(_ body: (@Sendable () -> Void)?) {
        state.withLock { $0.afterAdoptingResizedMap = body }
    }

    /// What ``setAfterAdoptingResizedMap(_:)`` set, if anything.
    var afterAdoptingResizedMap: (@Sendable () -> Void)? { state.withLock { $0.afterAdoptingResizedMap } }

    /// Adopts a larger map set by another process, for a transaction that got `MDB_MAP_RESIZED` at its start.
    /// The calling thread may be inside one access scope (the one beginning the transaction), not more.
    func adoptResizedMap() throws {
        let done: Void? = try gate.exclusive(allowingOwnScope: true) { try remap(to: 0) }
        if done == nil {
            throw LMDBError(
                code: .mapResized, operation: "mdb_txn_begin", path: path,
                hint: "another process grew the map while this thread is inside nested transactions; end them and retry")
        }
    }

    /// Remaps to `size` (0: the size recorded by the last commit), never below the current size. Holds the gate.
    private func remap(to size: Int) throws {
        // Guarded (LMDB reads the meta pages), and the guard learns the new map's place. A failure is turned into an
        // error after the lock is released (`failure` takes it).
        let rc: Int32 = state.withLock { state in
            let previous = state.mapSize
            var rc = canopy_mdb_env_set_mapsize(containment, size)
            if rc != 0 { return rc }
            var info = MDB_envinfo()
            mdb_env_info(handle, &info)
            if info.me_mapsize < previous && size == 0 {
                // The last writer's recorded size is smaller than ours: keep ours (more room, same file).
                rc = canopy_mdb_env_set_mapsize(containment, previous)
                if rc != 0 { return rc }
                mdb_env_info(handle, &info)
            }
            state.mapSize = info.me_mapsize
            return 0
        }
        if rc != 0 { throw failure(rc, "mdb_env_set_mapsize", database: nil) }
    }

    /// The number of transactions of this process that are open now.
    public var activeTransactionCount: Int { state.withLock { $0.activeTransactions } }

    /// Figures of the whole environment (`mdb_env_info`).
    public func info() -> EnvironmentInfo {
        var info = MDB_envinfo()
        // Inside an access scope: mdb_env_info reads the meta pages in the map, which setMapSize remaps.
        withAccess { _ = mdb_env_info(handle, &info) }
        return EnvironmentInfo(info)
    }

    /// B-tree figures of the main (unnamed) database (`mdb_env_stat`).
    public func statistics() -> DatabaseStatistics {
        var stat = MDB_stat()
        // Inside an access scope: mdb_env_stat reads the meta pages in the map, which setMapSize remaps.
        withAccess { _ = mdb_env_stat(handle, &stat) }
        return DatabaseStatistics(stat)
    }

    /// Flushes the data to disk (`mdb_env_sync`). Needed only with ``EnvironmentOptions/Flags/noSync`` or
    /// ``EnvironmentOptions/Flags/noMetaSync``; `force` flushes even with `mapAsync`.
    public func sync(force: Bool = true) throws {
        try check(mdb_env_sync(handle, force ? 1 : 0), "mdb_env_sync", path: path)
    }

    /// Removes the reader slots of processes that died without closing their read transactions
    /// (`mdb_reader_check`), and returns how many were cleared.
    @discardableResult
    public func readerCheck() throws -> Int {
        var dead: Int32 = 0
        try check(mdb_reader_check(handle, &dead), "mdb_reader_check", path: path)
        return Int(dead)
    }

    /// Copies the environment to an existing empty directory (or to a file with ``EnvironmentOptions/Flags/noSubdirectory``)
    /// while it is in use (a hot backup), optionally compacting: free pages are left out and pages renumbered.
    ///
    /// The copy is atomic: it is written to a temporary name next to the destination (``partialCopySuffix`` and this
    /// process's id after `data.mdb`), flushed to disk, and only then given its name — so a copy killed half way
    /// leaves a `data.mdb.partial-<pid>` file, never a half-written `data.mdb` that would be mistaken for a database.
    /// The copy's data file is created with `fileMode` (default `0o600`: a backup is as private as the database).
    /// - Throws: ``LMDBError`` with the `errno` of the failing call: `EEXIST` when the destination already has a data
    ///   file, `ENOSPC` when the disk fills (the partial file is removed).
    public func copy(to destination: String, compact: Bool = false, fileMode: UInt32 = 0o600) throws {
        let flags: UInt32 = compact ? UInt32(MDB_CP_COMPACT) : 0
        let file = self.flags.contains(.noSubdirectory) ? destination : destination + "/data.mdb"
        let partial = file + Self.partialCopySuffix + "\(getpid())"
        var existing = stat()
        if lstat(file, &existing) == 0 {
            throw LMDBError(code: LMDBError.Code(rawValue: EEXIST), operation: "mdb_env_copy2", path: path,
                            hint: "\(file) exists: the destination must be an existing directory without a data.mdb")
        }
        // mdb_env_copy2 would create the file 0666 & ~umask; open it ourselves with the mode asked for.
        let descriptor = open(partial, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode_t(fileMode))
        guard descriptor >= 0 else {
            throw LMDBError(code: LMDBError.Code(rawValue: errno), operation: "mdb_env_copy2", path: path,
                            hint: "cannot create \(partial): the destination must be an existing, writable directory")
        }
        _ = fchmod(descriptor, mode_t(fileMode))  // the umask may have taken bits away
        var isOpen = true
        do {
            // The copy runs a read transaction of its own: a use of the map.
            try withAccess {
                let rc = canopy_mdb_env_copyfd2(containment, descriptor, flags)
                if rc != 0 { throw failure(rc, "mdb_env_copyfd2", database: nil) }
            }
            guard fsync(descriptor) == 0 else {
                throw LMDBError(code: LMDBError.Code(rawValue: errno), operation: "fsync", path: path, hint: "the copy could not be flushed to disk")
            }
            close(descriptor)
            isOpen = false
            // link + unlink: gives the copy its name only if nothing took that name meanwhile (rename would replace it).
            if link(partial, file) == 0 {
                unlink(partial)
            } else if errno == EEXIST {
                throw LMDBError(code: LMDBError.Code(rawValue: EEXIST), operation: "link", path: path,
                                hint: "\(file) appeared while the copy was written; the copy is left out")
            } else if rename(partial, file) != 0 {  // a filesystem without hard links
                throw LMDBError(code: LMDBError.Code(rawValue: errno), operation: "rename", path: path, hint: "cannot name the copy \(file)")
            }
            let directory = String(file[..<(file.lastIndex(of: "/") ?? file.startIndex)])
            let directoryDescriptor = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if directoryDescriptor >= 0 {
                _ = fsync(directoryDescriptor)  // the new name survives a system crash
                close(directoryDescriptor)
            }
        } catch {
            if isOpen { close(descriptor) }
            unlink(partial)
            throw error
        }
    }

    /// What follows `data.mdb` in the name of a copy being written by ``copy(to:compact:fileMode:)`` (then the
    /// writing process's id): a file of that name is an unfinished copy, never a database.
    public static let partialCopySuffix = ".partial-"

    /// The largest key LMDB accepts in this environment, in bytes (511 with the default build).
    public var maxKeySize: Int { Int(mdb_env_get_maxkeysize(handle)) }

    /// The number of reader slots the environment has (`mdb_env_get_maxreaders`).
    public var maxReaders: Int {
        var readers: UInt32 = 0
        mdb_env_get_maxreaders(handle, &readers)
        return Int(readers)
    }
}
