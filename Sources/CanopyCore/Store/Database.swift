import Foundation
import LMDB

/// A Canopy database: one LMDB environment in a directory, holding typed objects by collection and key, with
/// optional metadata, and the extensions (views) registered on it.
///
/// Open a database once and share it: every `Database` opened on one path in a process shares one LMDB environment.
/// Work happens through connections (``newConnection(options:)``); each keeps its own caches and runs one transaction
/// at a time.
///
/// ```swift
/// let database = try Database(path: "/tmp/app.canopy")
/// let connection = database.newConnection()
/// try connection.readWrite { txn in try txn.set(reminder, forKey: "r1", in: reminders) }
/// ```
///
/// The database is a directory holding LMDB's `data.mdb` and `lock.mdb`; Debian's `mdb_stat -a DIR` reads it.
public final class Database: Sendable {
    let core: DatabaseCore

    /// Opens the database at `path`, creating the directory (not its parents) and the files when missing. Several
    /// processes may open a new database at once: one creates it, the others open what it made.
    ///
    /// - Throws: ``CanopyError`` with ``CanopyError/Code/cannotOpen`` for a missing parent directory, a file that is
    ///   not an LMDB database, or a `lock.mdb` or signal file that is a symbolic link (naming it);
    ///   ``CanopyError/Code/permissionDenied`` naming the file or directory and the permission it needs;
    ///   ``CanopyError/Code/incompatibleFormat`` for a database of another format (a `canopy/5`, `canopy/4` or
    ///   `canopy/3` file is upgraded in place by a read-write open, in one transaction; a read-only open reads a
    ///   `canopy/5` or `canopy/4` file as it is and refuses a `canopy/3` one);
    ///   ``CanopyError/Code/corruptStore`` for a damaged file (truncated, a broken meta page, a store record that fails
    ///   its checksum); ``CanopyError/Code/alreadyOpen`` when this process already has the path open with
    ///   other options.
    public init(path: String, options: DatabaseOptions = .init()) throws {
        core = try DatabaseCore.open(path: path, options: options)
        core.openRecordedExtensionTables()
    }

    init(sharing core: DatabaseCore) {
        self.core = core
    }

    /// The absolute path of the database directory.
    public var path: String { core.path }

    /// When this process's first open of the database upgraded it in place from an earlier format (`canopy/5`: the
    /// extensions' state records moved into the commit log; `canopy/4`: also the store's state record; `canopy/3`:
    /// also values without checksums) to the current one (`canopy/6`): the number of records it rewrote. `nil` when
    /// no upgrade happened.
    public var upgradedRecordCount: Int? { core.upgradedRecordCount?.records }

    /// The format this process's first open upgraded the database from (`canopy/3`, `canopy/4` or `canopy/5`), or `nil` when no
    /// upgrade happened.
    public var upgradedFromFormat: String? { core.upgradedRecordCount?.from }

    /// The options the database was opened with.
    public var options: DatabaseOptions { core.options }

    /// The LMDB environment underneath, for tools and extensions (statistics, backups).
    public var environment: Environment { core.environment }

    /// Creates a connection with its own caches.
    public func newConnection(options: ConnectionOptions = .init()) -> Connection {
        Connection(core: core, options: options)
    }

    /// The snapshot of the last commit (persisted; advanced by every commit that changes something).
    public func currentSnapshot() throws -> UInt64 {
        do {
            return try core.environment.read { txn in try core.readSnapshot(txn) }
        } catch {
            throw CanopyError.wrap(error, path: path)
        }
    }

    /// Flushes committed data to disk. Needed with ``Durability/none`` and ``Durability/metadataOnly`` to make the
    /// commits so far survive a system crash.
    public func sync() throws {
        do { try core.environment.sync(force: true) } catch { throw CanopyError.wrap(error, path: path) }
    }

    /// Copies the database, while it is in use (a consistent snapshot; writers carry on), into `directory`,
    /// compacting it.
    ///
    /// The directory is created when missing (its parent must exist) and must otherwise be empty. The backup is as
    /// private as the database: the directory gets mode `0700` and `data.mdb` the database's
    /// ``DatabaseOptions/fileMode`` (default `0600`). Open the backup with `Database(path: directory)`.
    ///
    /// The backup is atomic: the copy is written as `data.mdb.partial-<pid>`, flushed to disk, and only then named
    /// `data.mdb`, so a process killed during a backup leaves no `data.mdb` that could be mistaken for a database.
    /// - Throws: ``CanopyError/Code/invalidArgument`` when the directory is not empty or is a file;
    ///   ``CanopyError/Code/cannotOpen`` when it cannot be created; ``CanopyError/Code/diskFull``.
    public func backup(to directory: String, compact: Bool = true) throws {
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        if manager.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw CanopyError(.invalidArgument, "the backup destination \(directory) is a file; pass a directory", path: path)
            }
            let contents: [String]
            do {
                contents = try manager.contentsOfDirectory(atPath: directory)
            } catch {
                throw CanopyError(.cannotOpen, "cannot read the backup destination \(directory): check its permissions", path: path, underlying: error)
            }
            guard contents.isEmpty else {
                throw CanopyError(.invalidArgument, "the backup destination \(directory) is not empty; pass a new or empty directory", path: path)
            }
        } else {
            do {
                try manager.createDirectory(atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            } catch {
                throw CanopyError(.cannotOpen, "cannot create the backup directory \(directory): check that its parent exists and is writable",
                                  path: path, underlying: error)
            }
        }
        _ = chmod(directory, 0o700)
        do {
            try core.environment.copy(to: directory, compact: compact, fileMode: core.options.fileMode)
        } catch {
            throw CanopyError.wrap(error, path: path)
        }
    }

    // MARK: Notifications

    /// Commit notifications as an asynchronous sequence: one element per commit of this process, in order, starting
    /// with the next commit. The sequence ends when the task iterating it is cancelled.
    public func commits() -> AsyncStream<CommitNotification> {
        core.makeStream()
    }

    /// Calls `callback` after every commit of this process, in commit order, on a private serial queue.
    /// - Returns: a token; the callback stays registered until ``removeObserver(_:)``.
    @discardableResult
    public func addCommitObserver(_ callback: @escaping @Sendable (CommitNotification) -> Void) -> ObserverToken {
        ObserverToken(id: core.addCallback(callback))
    }

    /// Calls `wake` on the committing thread right after every commit of this process, before its `readWrite`
    /// returns: a wake-up that costs no thread hop (an observer signalling the task that waits for commits). `wake`
    /// must return at once and must not use the database; for work, use ``addCommitObserver(_:)``.
    /// - Returns: a token; the wake-up stays registered until ``removeObserver(_:)``.
    @discardableResult
    public func addCommitWakeup(_ wake: @escaping @Sendable () -> Void) -> ObserverToken {
        ObserverToken(id: core.addWakeup(wake))
    }

    /// Stops the callback, wake-up or stream of `token`.
    public func removeObserver(_ token: ObserverToken) {
        core.removeObserver(token.id)
    }

    // MARK: Extensions

    /// Registers an extension (such as a view): from then on it is told of every change, in every write transaction
    /// of this process.
    ///
    /// What it does depends on what the database records (see ``RegistrationOutcome``):
    /// - the same definition (version tag, kind, ``StoreExtension/options``) and a current state, which the extension's
    ///   own check accepts (a view recomputes the group and sort key of a sample of its stored entries): nothing is
    ///   written — a read, which works on a read-only file system and wakes no observer;
    /// - the same definition, but rows written meanwhile by processes that did not register it: caught up from the
    ///   commit log's changed keys when the log covers them, otherwise rebuilt;
    /// - a new or changed definition, or a check that fails: recorded and rebuilt from the rows, with the reason.
    ///
    /// An extension object belongs to one database: it keeps that database's table handles and caches. Registering
    /// the same object in a second open database of this process is refused; make a second value with the same
    /// definition for it (the object can move once the first database unregisters it or is closed).
    ///
    /// - Returns: what the registration did, and why it rebuilt (for logs).
    /// - Throws: ``CanopyError/Code/extensionAlreadyRegistered`` when an extension of that name is already registered,
    ///   or when this object is registered in another open database;
    ///   ``CanopyError/Code/invalidArgument`` for an empty name or one too long for LMDB's table names;
    ///   ``CanopyError/Code/extensionDependencyMissing`` when a filtered view's parent is not registered;
    ///   ``CanopyError/Code/extensionRebuildFailed`` (or the ``CanopyError`` it threw) when the extension's preparation
    ///   fails (then nothing is registered); ``CanopyError/Code/nestedTransaction`` inside a transaction;
    ///   ``CanopyError/Code/readOnly`` on a read-only database when the registration has to write.
    @discardableResult
    public func register(_ ext: any StoreExtension) throws -> RegistrationOutcome {
        try Self.validateExtensionName(ext.name, maxKeySize: core.maxKeySize, path: path)
        // Before anything reads or opens through it: the object may hold another open database's state.
        try core.claimExtensionObject(ext)
        do {
            return try registerClaimed(ext)
        } catch {
            core.releaseExtensionObject(ext)
            throw error
        }
    }

    private func registerClaimed(_ ext: any StoreExtension) throws -> RegistrationOutcome {
        guard core.registeredExtension(named: ext.name) == nil else {
            throw CanopyError(.extensionAlreadyRegistered, "an extension with this name is already registered in this process", path: path, extensionName: ext.name)
        }
        for dependency in ext.dependencies where core.registeredExtension(named: dependency) == nil {
            throw CanopyError(.extensionDependencyMissing, "the extension depends on '\(dependency)', which must be registered first",
                              path: path, extensionName: ext.name)
        }
        let connection = maintenanceConnection()
        // The read: an unchanged definition with a current state that passes its check is registered without a write.
        let check = {
            try connection.read { txn -> StoredStateCheck? in
                guard let record = try txn.extensionRecords().first(where: { $0.name == ext.name }),
                      try ext.matchesDefinition(of: record) else { return nil }
                let snapshots = try txn.extensionSnapshots()
                guard snapshots.extensions[ext.name] == snapshots.store else { return nil }
                return try ext.checkStoredState(in: txn)
            }
        }
        // The extension's tables may have been created (by another process) after this process opened the database:
        // each attempt opens the handle of one more of them, which serves the transactions that begin afterwards.
        var checked: StoredStateCheck?
        var attempts = 0
        while true {
            do {
                checked = try check()
                break
            } catch let error as CanopyError where error.code == .extensionFailed && attempts < 16 {
                attempts += 1
            }
        }
        if checked == .usable {
            try core.addExtensionIfAbsent(ext)
            return .current
        }
        return try connection.readWrite { txn in
            try txn.registerExtension(ext, checked: checked == .needsWrite ? nil : checked)
        }
    }

    /// Brings every extension registered in this process whose state lags the store (other processes wrote rows
    /// without registering it) up to date now, in a write transaction of its own: from the commit log's changed keys
    /// when it covers them, otherwise by a rebuild. Every write transaction does this first anyway; call it where a
    /// read found a registered view stale (``CanopyError/Code/staleView``) and there is nothing to write.
    ///
    /// - Returns: whether something lagged (and was brought up to date); when nothing did, nothing is written.
    /// - Throws: ``CanopyError/Code/readOnly`` on a read-only database when something lags; what a write throws.
    @discardableResult
    public func catchUpExtensions() throws -> Bool {
        let connection = newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
        let registered = core.extensions.map(\.name)
        guard !registered.isEmpty else { return false }
        let lagging = try connection.read { txn in
            let snapshots = try txn.extensionSnapshots()
            return registered.contains { snapshots.extensions[$0] != snapshots.store }
        }
        guard lagging else { return false }
        try connection.readWrite { _ in }
        return true
    }

    /// Unregisters the extension named `name` — registered in this process, or only recorded in the database by an
    /// earlier run; with `dropStorage` its stored state is deleted too.
    ///
    /// - Throws: ``CanopyError/Code/extensionNotRegistered`` when no extension of that name is registered here or
    ///   recorded in the database; ``CanopyError/Code/nestedTransaction`` inside a transaction.
    public func unregisterExtension(named name: String, dropStorage: Bool = false) throws {
        let connection = maintenanceConnection()
        try connection.readWrite { txn in
            guard try core.registeredExtension(named: name) != nil || txn.extensionRecords().contains(where: { $0.name == name }) else {
                throw CanopyError(
                    .extensionNotRegistered,
                    "no extension named '\(name)' is registered in this process or recorded in the database; nothing to unregister (see recordedExtensions())",
                    path: path, extensionName: name)
            }
            try txn.unregisterExtension(named: name, dropStorage: dropStorage)
        }
    }

    /// A connection without caches whose writes may run while an extension's recorded definition differs.
    private func maintenanceConnection() -> Connection {
        let connection = newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
        connection.state.isMaintenance = true
        return connection
    }

    /// Extension names become LMDB table names (`ext.<name>.<table>`): non-empty, and short enough for a key.
    static func validateExtensionName(_ name: String, maxKeySize: Int, path: String) throws {
        guard !name.isEmpty else {
            throw CanopyError(.invalidArgument, "an extension (view) name must not be empty", path: path)
        }
        guard name.utf8.count <= maxKeySize - 64 else {
            throw CanopyError(.invalidArgument, "an extension (view) name must be at most \(maxKeySize - 64) bytes of UTF-8",
                              path: path, extensionName: String(name.prefix(64)))
        }
    }

    /// The extension registered under `name` in this process, if any.
    public func registeredExtension(named name: String) -> (any StoreExtension)? {
        core.registeredExtension(named: name)
    }

    /// The extensions recorded in the database (registered by any process, now or before).
    public func recordedExtensions() throws -> [ExtensionRecord] {
        try newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0)).read { txn in try txn.extensionRecords() }
    }
}

/// Identifies a commit observer, to remove it.
public struct ObserverToken: Hashable, Sendable {
    let id: UInt64
}
