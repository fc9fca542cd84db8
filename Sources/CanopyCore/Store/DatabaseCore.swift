import Foundation
import LMDB
import Logging
import Synchronization

/// The shared state of one open database file in this process: the LMDB environment, the store's tables, the
/// registered extensions, the recent commit notifications and the observers.
///
/// Every ``Database`` value opened on one path shares one core, so a process never opens two LMDB environments on one
/// file (which LMDB forbids).
final class DatabaseCore: Sendable {
    let environment: Environment
    let tables: StoreTables
    /// The change feed's tables; `nil` only in a database opened read-only that no writer of this build has opened.
    let feedTables: FeedTables?
    let options: DatabaseOptions
    /// Operational logs (``DatabaseOptions/logger``) and metrics (``DatabaseMetrics``).
    let logger: Logger
    let metrics: DatabaseMetrics
    let path: String
    let maxKeySize: Int
    /// The records rewritten when this open upgraded the file, and the format it had (see ``FormatUpgrade``), or `nil`.
    let upgradedRecordCount: (records: Int, from: String)?

    /// Serializes this process's write transactions, so that commit notifications are delivered in snapshot order.
    let writeLock = Mutex<Void>(())
    /// The thread holding ``writeLock`` (0 when none), so that a nested `readWrite` is a typed error, not a hang.
    let writerThread = Atomic<UInt>(0)

    /// Runs `body` holding ``writeLock``, as thread `thread` (``writerThread``).
    func withWriteLock<R>(thread: UInt, _ body: () throws -> R) throws -> R {
        try writeLock.withLock { _ in
            writerThread.store(thread, ordering: .relaxed)
            defer { writerThread.store(0, ordering: .relaxed) }
            return try body()
        }
    }
    /// Delivers callbacks in commit order, off the writer's thread.
    let deliveryQueue = DispatchQueue(label: "canopy.commit-notifications")

    struct State {
        var collections: [String: CollectionRecord] = [:]
        var recentCommits = RecentCommits(capacity: DatabaseCore.recentCommitLimit)
        var extensions: [any StoreExtension] = []
        var callbacks: [UInt64: @Sendable (CommitNotification) -> Void] = [:]
        var wakeups: [UInt64: @Sendable () -> Void] = [:]
        var streams: [UInt64: AsyncStream<CommitNotification>.Continuation] = [:]
        var nextObserverID: UInt64 = 1
        var lastCommittedSnapshot: UInt64 = 0
        /// Counts changes to ``extensions`` (registrations and unregistrations in this process).
        var extensionsGeneration: UInt64 = 0
        /// The store snapshot at which the recorded definitions of every extension in ``extensions`` (as of
        /// `generation`) were last found to match this process's, by a write transaction of this process that checked
        /// them and committed that snapshot (see ``extensionsForWrite(at:)``).
        var definitionsVerified: (snapshot: UInt64, generation: UInt64)?
    }
    let state: Mutex<State>
    /// Extension tables opened for reading by full name (see ``ReadTransaction/existingTable(_:of:keys:values:)``).
    let tableHandles = Mutex<[String: LMDB.Database]>([:])
    /// Values extensions keep per database (see ``ReadTransaction/databaseScopedValue(forKey:_:)``).
    let scopedValues = Mutex<[String: any AnyObject & Sendable]>([:])
    /// Tells observers in other processes of each commit (see CommitWakeup.swift).
    let commitBeacon = CommitBeacon()

    static let recentCommitLimit = 256

    // MARK: Opening

    /// Held while a database opens, so that two threads opening one path get one core (LMDB allows one environment
    /// per file and process). Opening an environment can take a while and can itself describe damage, so the
    /// registry below is a lock of its own.
    private static let opening = Mutex<Void>(())
    /// The cores open in this process, by canonical path. Its lock is only ever held for a dictionary read or write,
    /// never during an open, so that error messages can look a core up (``openCore(path:)``) from any thread.
    private static let registry = Mutex<[String: Weak]>([:])

    private struct Weak: @unchecked Sendable {
        // @unchecked: a weak reference to a Sendable class, only read and written under the registry's Mutex.
        weak var core: DatabaseCore?
    }

    /// The core for `path`: the one already open in this process, or a new one.
    static func open(path: String, options: DatabaseOptions) throws -> DatabaseCore {
        let canonical = try canonicalPath(path, options: options)
        return try opening.withLock { _ in
            if let existing = registry.withLock({ $0[canonical]?.core }) {
                guard existing.options == options else {
                    throw CanopyError(
                        .alreadyOpen,
                        "the database is already open in this process with other options; reuse that Database or close it first",
                        path: canonical)
                }
                return existing
            }
            let core = try DatabaseCore(path: canonical, options: options)
            registry.withLock { registry in
                registry = registry.filter { $0.value.core != nil }  // databases closed since
                registry[canonical] = Weak(core: core)
            }
            return core
        }
    }

    /// Runs `body` while an open holds its lock, as an open in progress on another thread does (tests only).
    static func whileOpening<R>(_ body: () throws -> R) rethrows -> R {
        try opening.withLock { _ in try body() }
    }

    /// The core open on `path` (canonical) in this process, if any. Serves error messages: it never waits for an open
    /// in progress (it did, through one lock for both, and under load a message lost its collection's name).
    static func openCore(path: String) -> DatabaseCore? {
        registry.withLock { $0[path]?.core }
    }

    /// Creates the database directory if needed (not its parents) and returns its absolute, resolved path.
    private static func canonicalPath(_ path: String, options: DatabaseOptions) throws -> String {
        guard !path.isEmpty else {
            throw CanopyError(.invalidArgument, "the database path is empty; pass the path of the database directory (it is created if missing)")
        }
        let url = URL(fileURLWithPath: path)
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        if let problem = FilePermissions.searchProblem(url.path) {
            throw CanopyError(.permissionDenied, problem, path: url.path)
        }
        if manager.fileExists(atPath: url.path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw CanopyError(.cannotOpen, "the path is a file; a Canopy database is a directory", path: url.path)
            }
        } else {
            guard !options.readOnly else {
                throw CanopyError(.cannotOpen, "the database directory does not exist (opening read-only creates nothing)", path: url.path)
            }
            let parent = url.deletingLastPathComponent()
            guard manager.fileExists(atPath: parent.path) else {
                throw CanopyError(.cannotOpen, "the parent directory does not exist; create it first", path: url.path)
            }
            beforeCreatingDirectory.withLock { $0 }?(url.path)
            do {
                try manager.createDirectory(at: url, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            } catch {
                // Another process (or thread) opening the same new database created it since the look above: a
                // concurrent first open is legitimate, and opens the directory the other one made.
                var isDirectory: ObjCBool = false
                guard manager.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
                    throw CanopyError(.cannotOpen, "cannot create the database directory: check the permissions of its parent", path: url.path,
                                      underlying: error)
                }
                guard isDirectory.boolValue else {
                    throw CanopyError(.cannotOpen, "the path is a file; a Canopy database is a directory", path: url.path)
                }
            }
        }
        return url.resolvingSymlinksInPath().standardizedFileURL.path
    }

    /// Called with the path just before an open creates the database directory (tests only: another process creating
    /// it at that moment, between the look and the creation).
    static let beforeCreatingDirectory = Mutex<(@Sendable (String) -> Void)?>(nil)

    /// What is wrong with the directory's `data.mdb` when LMDB could not open it, if that is visible from outside: a
    /// directory in its place, or (read-only, which creates nothing) an empty file.
    private static func dataFileProblem(in path: String, readOnly: Bool) -> String? {
        var status = stat()
        guard stat(path + "/data.mdb", &status) == 0 else { return nil }
        if status.st_mode & S_IFMT == S_IFDIR {
            return "data.mdb in the database directory is a directory, not a database file; move it away (or pass the directory that holds the database)"
        }
        if readOnly, status.st_size == 0 {
            return "data.mdb is empty (0 bytes): no database was ever committed there, or the file was cut short (a copy, a full disk); restore a backup"
        }
        return nil
    }

    private init(path: String, options: DatabaseOptions) throws {
        var flags: EnvironmentOptions.Flags = []
        switch options.durability {
        case .full: break
        case .metadataOnly: flags.insert(.noMetaSync)
        case .none: flags.insert(.noSync)
        }
        if options.readOnly { flags.insert(.readOnly) }
        if options.writeMap && !options.readOnly { flags.insert(.writeMap) }
        if options.noLock {
            guard options.readOnly else {
                throw CanopyError(.invalidArgument, "noLock (no lock file) is for read-only inspection: set readOnly too", path: path)
            }
            flags.insert(.noLock)
        }
        try Self.refuseSymbolicLinks(in: path)
        let environment: Environment
        do {
            var environmentOptions = EnvironmentOptions(
                flags: flags, mapSize: min(options.initialMapSize, options.maximumMapSize),
                maxDatabases: options.maxTables, maxReaders: options.maxReaders, fileMode: options.fileMode)
            environmentOptions.valueChecksums = options.valueChecksums
            environment = try Environment(path: path, options: environmentOptions)
        } catch let error as LMDBError {
            if let damage = DamagedFile.error(opening: error, path: path) { throw damage }
            let what: String
            switch error.code {
            case .invalid:
                what = "the directory's data.mdb is not an LMDB database (nothing was changed): check the path, or move the file away to create a new database there"
            case .versionMismatch:
                what = "the database was written by an LMDB version whose file format differs from this one's (nothing was changed): open it with the build that wrote it and export it (`canopy export`), then import it here"
            case .permissionDenied, .operationNotPermitted:
                throw CanopyError(.permissionDenied, FilePermissions.problem(inDatabase: path, readOnly: options.readOnly), path: path, underlying: error)
            case .readOnlyFileSystem:
                what = options.readOnly
                    ? "the database is on a read-only file system, where its lock file cannot be written; inspect it without the lock file (DatabaseOptions.noLock, `canopy --no-lock`), safe only when no process writes"
                    : "the database is on a read-only file system: open it read-only"
            case .noSuchFile:
                what = "the database files do not exist: check the path (a read-only open creates none; a read-write open creates the database's directory, not its parent)"
            default:
                what = Self.dataFileProblem(in: path, readOnly: options.readOnly)
                    ?? "LMDB could not open the environment: \(StorageFailure.message(for: error))"
            }
            throw CanopyError(.cannotOpen, what, path: path, underlying: error)
        }
        // Readers of processes that died (kill -9) keep their slots until someone clears them.
        let clearedReaderSlots = (try? environment.readerCheck()) ?? 0

        let tables: StoreTables
        var initialState = StoreState()
        var upgraded: (records: Int, from: String)?
        var feedTables: FeedTables?
        do {
            if options.readOnly {
                var opened = try environment.read { txn in try StoreTables.open(in: txn, create: false) }
                feedTables = try environment.read { txn in try FeedTables.openIfPresent(in: txn, commitLog: opened.commits) }
                opened.layout = try environment.read { txn in try Self.checkFormat(txn, opened, path: path, readOnly: true) }
                tables = opened
                initialState = try environment.read { txn in try tables.state(in: txn, path: path) }
            } else {
                (tables, initialState) = try Self.writeGrowingMap(environment, options: options, path: path) { txn in
                    try Self.refuseForeignEnvironment(txn, path: path, options: options)
                    let tables = try StoreTables.open(in: txn, create: true)
                    switch try tables.format(in: txn) {
                    case nil:
                        try tables.writeFormat(in: txn)
                        try FormatUpgrade.writeFirstLogEntry(txn, tables: tables)
                    case StoreTables.upgradableFormatTag? where tables.checksummed:
                        upgraded = (try FormatUpgrade.upgrade(txn, tables: tables, path: path), StoreTables.upgradableFormatTag)
                    case let format where tables.layout(ofFormat: format) == .records:
                        upgraded = (try FormatUpgrade.moveState(txn, tables: tables, path: path), format ?? "")
                    case let format where tables.layout(ofFormat: format) == .storeStateInLog:
                        upgraded = (try FormatUpgrade.moveExtensionStates(txn, tables: tables, path: path), format ?? "")
                    default:
                        _ = try Self.checkFormat(txn, tables, path: path, readOnly: false)
                    }
                    feedTables = try FeedTables.create(in: txn, commitLog: tables.commits)
                    return (tables, try tables.state(in: txn, path: path))
                }
            }
        } catch let error as CanopyError {
            throw error
        } catch let error as LMDBError where error.code == .checksumMismatch {
            throw StoredRecordDamage.error(error, path: path)
        } catch let error as LMDBError where BrokenPageDamage.isBrokenPage(error.code) {
            throw BrokenPageDamage.error(error, path: path)
        } catch let error as LMDBError where error.code == .notFound {
            if DamagedFile.holdsCanopyTables(path: path) {
                throw DamagedFile.damaged("its main table (reached through the meta pages) lists no Canopy format record", path: path, underlying: error)
            }
            throw CanopyError(.foreignDatabase, "the directory holds an LMDB database that Canopy did not create (no Canopy format record)",
                              path: path, underlying: error)
        } catch {
            throw CanopyError(.cannotOpen, "cannot read the store's records", path: path, underlying: error)
        }
        self.environment = environment
        self.tables = tables
        self.feedTables = feedTables
        self.options = options
        self.logger = options.logger
        self.metrics = DatabaseMetrics(path: path, factory: options.metricsFactory)
        self.path = path
        self.maxKeySize = environment.maxKeySize
        self.upgradedRecordCount = upgraded
        self.state = Mutex(State(lastCommittedSnapshot: initialState.snapshot))
        didClearReaderSlots(clearedReaderSlots)
    }

    /// Throws ``CanopyError/Code/cannotOpen`` naming the file when `lock.mdb` or the commit signal file is a symbolic
    /// link: LMDB writes the lock file it opens, and writers read (and create) the signal file, so a link would make
    /// opening the database — read-only too — write into whatever file the link points at.
    static func refuseSymbolicLinks(in directory: String) throws {
        for name in ["lock.mdb", CommitBeacon.fileName] {
            let file = directory + "/" + name
            var status = stat()
            guard lstat(file, &status) == 0, status.st_mode & S_IFMT == S_IFLNK else { continue }
            throw CanopyError(
                .cannotOpen,
                "\(file) is a symbolic link; Canopy does not follow links in the database directory (opening would write into the file it points at). Remove the link (the file is recreated) and open again",
                path: file)
        }
    }

    /// Throws ``CanopyError/Code/foreignDatabase`` when the environment holds data but no Canopy format record —
    /// an LMDB database of another program, which Canopy must not add its tables to — unless the options allow it.
    private static func refuseForeignEnvironment(_ txn: LMDB.WriteTransaction, path: String, options: DatabaseOptions) throws {
        let main = try txn.openDatabase(named: nil)
        var foreignNames: [String] = []
        var hasCanopyInfo = false
        try txn.forEach(in: main) { key, _ in
            let name = String(decoding: key, as: UTF8.self)
            if name == StoreTableName.info { hasCanopyInfo = true } else if !StoreTableName.isCanopyTable(name) {
                foreignNames.append(name)
            }
            return foreignNames.count < 5
        }
        if hasCanopyInfo { return }
        let count = try txn.count(of: main)
        // No transaction ever committed (this write is the environment's first: LMDB numbers it 1) and the main table
        // is empty: a new file. Canopy's table names in it are the pages of a first transaction that never committed
        // (its process was killed in it, or it failed), which LMDB does not read: initializing is right, not "damaged".
        if count == 0 && txn.id <= 1 { return }
        if DamagedFile.holdsCanopyTables(path: path) {
            // Canopy's tables are in the file but not in the main table its meta page leads to: damage, not a new
            // or foreign environment (initializing or adopting it would write into the broken file).
            throw DamagedFile.damaged("its main table (reached through the meta pages) lists \(count == 0 ? "no tables" : "no Canopy format record")", path: path)
        }
        guard !options.adoptForeignEnvironment, count > 0 else { return }
        throw CanopyError(
            .foreignDatabase,
            "the directory holds an LMDB database that Canopy did not create (\(count) entries in its main table, such as \(foreignNames.map { "'\($0)'" }.joined(separator: ", "))) and no Canopy format record; Canopy leaves it untouched. Open another directory, or set DatabaseOptions.adoptForeignEnvironment to add Canopy's tables to it",
            path: path)
    }

    /// Checks the format record; returns where the state is (``StoreTables/layout``): ``StateLayout/inLog`` for this
    /// build's format, the layout of a `canopy/4` or `canopy/5` file opened read-only (read as it is).
    private static func checkFormat(_ txn: LMDB.ReadTransaction, _ tables: StoreTables, path: String, readOnly: Bool) throws -> StateLayout {
        let format = try tables.format(in: txn)
        if format == tables.expectedFormatTag { return .inLog }
        if readOnly, let layout = tables.layout(ofFormat: format) { return layout }
        if format == StoreTables.upgradableFormatTag && readOnly {
            throw CanopyError(
                .incompatibleFormat,
                "the store format is '\(StoreTables.upgradableFormatTag)'; this build reads '\(StoreTables.formatTag)' (every record checksummed) and upgrades a '\(StoreTables.upgradableFormatTag)' file in place, in one transaction, when it opens it for writing. Opened read-only, nothing was changed: upgrade it with `canopy upgrade \(path)` (close the processes of older builds first), or open it read-write once",
                path: path)
        }
        let older = [StateLayout.records, .storeStateInLog].map { "'\($0.formatTag(checksummed: tables.checksummed))'" }.joined(separator: " and ")
        throw CanopyError(
            .incompatibleFormat,
            "the store format is '\(format ?? "none")'; this build reads '\(tables.expectedFormatTag)' (and \(older) read-only) and upgrades \(older) and '\(StoreTables.upgradableFormatTag)'. Nothing was changed: if a newer release wrote it, open it with that release; for an older one, export the data with the `canopy export` of the release that wrote it, then `canopy import` it into a new database with this one (views are rebuilt at registration); a format record that is neither may be damaged (restore a backup)",
            path: path)
    }

    /// Runs `body` in a write transaction of its own; when the map is full (an upgrade rewrites every record), grows
    /// the map (doubling, up to the maximum) and runs it again.
    private static func writeGrowingMap<R>(
        _ environment: Environment, options: DatabaseOptions, path: String, _ body: (LMDB.WriteTransaction) throws -> R
    ) throws -> R {
        while true {
            do {
                return try environment.write(body)
            } catch let error as LMDBError where error.code == .mapFull && environment.mapSize < options.maximumMapSize {
                let current = environment.mapSize
                try environment.setMapSize(min(options.maximumMapSize, current * 2))
            }
        }
    }

    /// The store's state as `txn` sees it (see ``StoreTables/state(in:path:)``).
    static func readState(_ txn: LMDB.ReadTransaction, _ tables: StoreTables) throws -> StoreState {
        try tables.state(in: txn, path: nil)
    }

    /// The attachment slots last decoded, with their bytes (see ``DecodedRecordCache``).
    let attachmentSlotsCache = DecodedRecordCache<AttachmentSlots>()

    /// The store's state as of one committed LMDB transaction (its id): every transaction that begins after it, with
    /// no commit between, sees that state, so it is read from the commit log once per commit, not once per
    /// transaction. LMDB numbers every commit that changes the file (by any process), so an id names one state of
    /// the file; a transaction with another id reads the state.
    let committedState = Mutex<(transaction: Int, state: StoreState)?>(nil)

    /// The store's state as of the committed transaction `committed`, read through `txn` (which sees it: a read
    /// transaction whose id it is, or a write transaction that began right after it) unless it is known.
    func readState(_ txn: LMDB.ReadTransaction, committed: Int) throws -> StoreState {
        if let known = committedState.withLock({ $0 }), known.transaction == committed { return known.state }
        let state = try tables.state(in: txn, path: path)
        committedState.withLock { $0 = (committed, state) }
        return state
    }

    /// Whether the change feed is on, as of one committed transaction (see ``feedEnabledSince(_:committed:)``).
    let committedFeed = Mutex<(transaction: Int, enabledSince: UInt64?)?>(nil)

    /// Records the state a commit of this process made, as of its transaction id.
    func rememberCommittedState(_ state: StoreState, transaction: Int) {
        committedState.withLock { $0 = (transaction, state) }
    }

    /// Reads the snapshot number only (0 for a store that never committed).
    /// - Throws: ``CanopyError/Code/corruptStore`` when the state is malformed: reading it as 0 would take every
    ///   reader back to the empty store (observers would skip or replay commits).
    func readSnapshot(_ txn: LMDB.ReadTransaction) throws -> UInt64 {
        // A write transaction's id is the one it will commit as, not the state it sees: read it.
        if txn is LMDB.WriteTransaction { return try tables.snapshot(in: txn, path: path) }
        let id = txn.id
        if let snapshot = committedState.withLock({ $0?.transaction == id ? $0?.state.snapshot : nil }) { return snapshot }
        return try readState(txn, committed: id).snapshot
    }

    // MARK: Collections

    func remember(_ records: [String: CollectionRecord]) {
        guard !records.isEmpty else { return }
        state.withLock { state in
            for (name, record) in records { state.collections[name] = record }
        }
    }

    // MARK: Commits

    /// Records a committed notification and delivers it to the observers, in snapshot order.
    func didCommit(_ notification: CommitNotification) {
        commitBeacon.signal(directory: path, mode: options.fileMode)
        let (callbacks, streams, wakeups) = state.withLock { state in
            state.lastCommittedSnapshot = notification.snapshot
            state.recentCommits.append(notification)
            return (Array(state.callbacks.values), Array(state.streams.values), Array(state.wakeups.values))
        }
        for wake in wakeups { wake() }
        for stream in streams { stream.yield(notification) }
        if !callbacks.isEmpty {
            deliveryQueue.async {
                for callback in callbacks { callback(notification) }
            }
        }
    }

    /// The notifications of the snapshots in `(from, to]`, from memory when they are all there, otherwise from the
    /// persisted commit log (read in `txn`). `nil` when some are missing from both (pruned): the caller must treat
    /// everything as changed.
    func notifications(after from: UInt64, upTo to: UInt64, in txn: LMDB.ReadTransaction) throws -> [CommitNotification]? {
        guard to > from else { return [] }
        let fromMemory: [CommitNotification]? = state.withLock { state in
            guard let first = state.recentCommits.first, first.snapshot <= from + 1,
                  let last = state.recentCommits.last, last.snapshot >= to else { return nil }
            // Snapshots ascend: find the first one after `from` by binary search, then take the span.
            var low = 0
            var high = state.recentCommits.count
            while low < high {
                let mid = (low + high) / 2
                if state.recentCommits[mid].snapshot <= from { low = mid + 1 } else { high = mid }
            }
            var slice: [CommitNotification] = []
            slice.reserveCapacity(Int(to - from))
            for index in low..<state.recentCommits.count {
                let notification = state.recentCommits[index]
                guard notification.snapshot <= to else { break }
                slice.append(notification)
            }
            return slice.count == Int(to - from) ? slice : nil
        }
        if let fromMemory { return fromMemory }
        var result: [CommitNotification] = []
        result.reserveCapacity(Int(min(to - from, 4096)))
        var expected = from + 1
        var complete = true
        try txn.forEach(in: tables.commits, from: SnapshotKey.bytes(from + 1)) { key, value in
            guard key.count == 8 else { return true }
            let snapshot = key.loadBigEndianUInt64(at: 0)
            if snapshot > to { return false }
            if snapshot != expected {
                complete = false
                return false
            }
            let entry = try CommitLogEntry(decoding: value)
            // An entry whose changes are unknown (the format upgrade's, for a commit the old log no longer held) is
            // a gap: the caller reloads.
            if entry.changesUnknown || entry.notification.snapshot != snapshot {
                complete = false
                return false
            }
            result.append(entry.notification)
            expected += 1
            return true
        }
        return complete && expected == to + 1 ? result : nil
    }

    // MARK: Observers

    func addCallback(_ callback: @escaping @Sendable (CommitNotification) -> Void) -> UInt64 {
        state.withLock { state in
            let id = state.nextObserverID
            state.nextObserverID += 1
            state.callbacks[id] = callback
            return id
        }
    }

    func addWakeup(_ wake: @escaping @Sendable () -> Void) -> UInt64 {
        state.withLock { state in
            let id = state.nextObserverID
            state.nextObserverID += 1
            state.wakeups[id] = wake
            return id
        }
    }

    func removeObserver(_ id: UInt64) {
        let stream = state.withLock { state in
            state.callbacks[id] = nil
            state.wakeups[id] = nil
            return state.streams.removeValue(forKey: id)
        }
        stream?.finish()
    }

    func makeStream() -> AsyncStream<CommitNotification> {
        let (stream, continuation) = AsyncStream<CommitNotification>.makeStream(bufferingPolicy: .unbounded)
        let id = state.withLock { state in
            let id = state.nextObserverID
            state.nextObserverID += 1
            state.streams[id] = continuation
            return id
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.streams.removeValue(forKey: id) }
        }
        return stream
    }

    // MARK: Extensions

    var extensions: [any StoreExtension] { state.withLock { $0.extensions } }

    /// The registered extensions for a write transaction that begins at `snapshot`, their generation, and whether
    /// their recorded definitions are known to match: when this process's last write transaction that checked them
    /// committed `snapshot` (or began and ended at it), no commit came between — by any process, since every commit
    /// that writes, a registration included, advances the snapshot — so the records are still the ones it checked.
    func extensionsForWrite(at snapshot: UInt64) -> (extensions: [any StoreExtension], generation: UInt64, definitionsVerified: Bool) {
        state.withLock { state in
            let verified = state.definitionsVerified.map { $0.snapshot == snapshot && $0.generation == state.extensionsGeneration } ?? false
            return (state.extensions, state.extensionsGeneration, verified)
        }
    }

    /// Records that the definitions of the extensions of `generation` matched their records at `snapshot`.
    func rememberVerifiedDefinitions(at snapshot: UInt64, generation: UInt64) {
        state.withLock { state in
            guard state.extensionsGeneration == generation else { return }
            state.definitionsVerified = (snapshot, generation)
        }
    }

    func registeredExtension(named name: String) -> (any StoreExtension)? {
        state.withLock { state in state.extensions.first { $0.name == name } }
    }

    /// Adds a registered extension before the extensions that depend on it (those registered while it was not, and
    /// kept), so that write transactions tell dependencies of each change first.
    func addExtension(_ ext: any StoreExtension) {
        state.withLock { state in
            let firstDependent = state.extensions.firstIndex { $0.dependencies.contains(ext.name) }
            state.extensions.insert(ext, at: firstDependent ?? state.extensions.endIndex)
            state.extensionsGeneration += 1
        }
    }

    /// ``addExtension(_:)`` for a registration that wrote nothing.
    /// - Throws: ``CanopyError/Code/extensionAlreadyRegistered`` when another thread registered the name meanwhile.
    func addExtensionIfAbsent(_ ext: any StoreExtension) throws {
        let added = state.withLock { state -> Bool in
            guard !state.extensions.contains(where: { $0.name == ext.name }) else { return false }
            let firstDependent = state.extensions.firstIndex { $0.dependencies.contains(ext.name) }
            state.extensions.insert(ext, at: firstDependent ?? state.extensions.endIndex)
            state.extensionsGeneration += 1
            return true
        }
        guard added else {
            throw CanopyError(.extensionAlreadyRegistered, "an extension with this name is already registered in this process", path: path, extensionName: ext.name)
        }
    }

    func removeExtension(named name: String) {
        let removed = state.withLock { state -> [any StoreExtension] in
            let removed = state.extensions.filter { $0.name == name }
            state.extensions.removeAll { $0.name == name }
            state.extensionsGeneration += 1
            return removed
        }
        for ext in removed { releaseExtensionObject(ext) }
    }

    // MARK: Extension objects

    /// The database each extension object is registered in (or being registered in), by the object's identity: an
    /// extension object keeps state for one database (its tables' handles, which are the environment's; caches of
    /// decoded state by version), so the same object registered in a second open database would read and write the
    /// first one's state through the second. A claim whose database was closed (its core released) is void.
    private static let extensionOwners = Mutex<[ObjectIdentifier: Weak]>([:])

    /// Claims `ext` for this database at the start of its registration.
    /// - Throws: ``CanopyError/Code/extensionAlreadyRegistered`` when the object is registered (or being registered)
    ///   in another open database of this process.
    func claimExtensionObject(_ ext: any StoreExtension) throws {
        let id = ObjectIdentifier(ext)
        let owner = Self.extensionOwners.withLock { owners -> DatabaseCore? in
            if let other = owners[id]?.core, other !== self { return other }
            owners = owners.filter { $0.value.core != nil }  // the claims of databases closed since
            owners[id] = Weak(core: self)
            return nil
        }
        guard let owner else { return }
        throw CanopyError(
            .extensionAlreadyRegistered,
            "this extension object is registered in another open database (\(owner.path)): an extension object keeps its tables and caches for one database. Make a second value with the same definition (another View(…), SearchIndex(…)) for this database, or unregister it from the other first",
            path: path, extensionName: ext.name)
    }

    /// Gives up this database's claim on `ext` (its registration failed, or it was unregistered), unless `ext` is
    /// registered here.
    func releaseExtensionObject(_ ext: any StoreExtension) {
        guard !extensions.contains(where: { $0 === ext }) else { return }
        let id = ObjectIdentifier(ext)
        Self.extensionOwners.withLock { owners in
            if let claim = owners[id], claim.core === self || claim.core == nil { owners[id] = nil }
        }
    }

    // MARK: Extension currency

    /// The extensions' consistent snapshots as recorded at one store snapshot (immutable once committed), so that
    /// reads through registered extensions check currency without decoding the state record each time.
    let currencyCache = Mutex<(snapshot: UInt64, extensions: [String: UInt64])?>(nil)

    /// Remembers the extensions' snapshots a commit of this process recorded.
    func rememberExtensionSnapshots(_ state: StoreState) {
        currencyCache.withLock { $0 = (state.snapshot, state.extensionSnapshots) }
    }

    func extensionSnapshots(at snapshot: UInt64, read: () throws -> StoreState) throws -> [String: UInt64] {
        if let cached = currencyCache.withLock({ $0 }), cached.snapshot == snapshot { return cached.extensions }
        let state = try read()
        currencyCache.withLock { $0 = (state.snapshot, state.extensionSnapshots) }
        return state.extensionSnapshots
    }

    // MARK: Extension definitions

    /// Per extension, the stored registration record last found to match this process's definition.
    let verifiedRecords = Mutex<[String: [UInt8]]>([:])

    func isVerifiedRecord(_ bytes: UnsafeRawBufferPointer, of name: String) -> Bool {
        verifiedRecords.withLock { records in records[name].map { bytes.elementsEqual($0) } ?? false }
    }

    func rememberVerifiedRecord(_ bytes: [UInt8], of name: String) {
        verifiedRecords.withLock { $0[name] = bytes }
    }

    // MARK: Map growth

    /// Grows the map (doubling, up to the maximum) after an `MDB_MAP_FULL`. Remapping waits until no thread of this
    /// process is inside a use of the map (open read transactions, pinned connections and observers carry on over the
    /// new mapping). Returns false when the map is already at the configured maximum.
    /// - Throws: ``CanopyError/Code/storage`` when the system refuses the larger mapping (address space).
    func growMap() throws -> Bool {
        let current = environment.mapSize
        guard current < options.maximumMapSize else { return false }
        let target = min(options.maximumMapSize, max(current * 2, current + (16 << 20)))
        do {
            try environment.setMapSize(target)
            didGrowMap(from: current, to: target)
            return true
        } catch {
            throw CanopyError(.storage, "cannot grow the map from \(current) to \(target) bytes: the system refused the mapping",
                              path: path, underlying: error)
        }
    }

    // MARK: Stale readers

    /// Commits since the reader table was last checked for slots of dead processes.
    let commitsSinceReaderCheck = Atomic<Int>(0)
    /// Periodic reader checks so far (every 32nd also looks for old pinned snapshots, when the logger would warn).
    let readerChecks = Atomic<Int>(0)
    /// How often (in commits) a running writer clears dead readers' slots.
    static let readerCheckInterval = 32

    /// Clears reader slots left by processes that died (kill -9) every ``readerCheckInterval`` commits: a dead
    /// reader's slot pins its snapshot's pages, so LMDB could not reuse them and the file would grow with every commit.
    /// `mdb_reader_check` scans the lock file's reader table (a few microseconds), so this costs well under 1% of a
    /// commit.
    func clearStaleReadersPeriodically() {
        guard commitsSinceReaderCheck.add(1, ordering: .relaxed).newValue >= Self.readerCheckInterval else { return }
        commitsSinceReaderCheck.store(0, ordering: .relaxed)
        // A failure here (a lock-file error) would show up in the next transaction; it must not fail this commit.
        didClearReaderSlots((try? environment.readerCheck()) ?? 0)
        recordEnvironmentGauges(check: readerChecks.add(1, ordering: .relaxed).newValue)
    }
}
