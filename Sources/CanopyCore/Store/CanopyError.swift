import LMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An error of the Canopy store, with the context needed to act on it.
///
/// Switch on ``code``; read ``description`` for a sentence that names the database, collection, key, extension and
/// underlying cause. Stored values are never included (they may be private); keys and collection names are.
public struct CanopyError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure. A struct rather than an enum so that new codes can be added without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// A stable identifier, such as `"keyTooLong"`.
        public let rawValue: String
        /// Creates a code.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        /// The identifier.
        public var description: String { rawValue }

        /// The database could not be opened (missing parent directory, permissions, not an LMDB file...).
        public static let cannotOpen = Code("cannotOpen")
        /// The process lacks a permission the operation needs (`EACCES`, `EPERM`): the message names the file or
        /// directory and the permission needed (reading the data file, writing the lock file, searching the directory...).
        public static let permissionDenied = Code("permissionDenied")
        /// The database is already open in this process with different options.
        public static let alreadyOpen = Code("alreadyOpen")
        /// The file was written by an incompatible version of Canopy.
        public static let incompatibleFormat = Code("incompatibleFormat")
        /// A key (with its collection prefix) is longer than LMDB allows.
        public static let keyTooLong = Code("keyTooLong")
        /// A view's sort key for a row is longer than a view stores (`SortKey.maximumLength`, 1 MiB): the message names
        /// the view, the row and the length. The write (or the registration that placed the row) was rolled back and
        /// nothing was written; sort by a shorter value (a prefix of a long text, say).
        public static let sortKeyTooLong = Code("sortKeyTooLong")
        /// A collection name is empty or too long.
        public static let invalidCollectionName = Code("invalidCollectionName")
        /// A collection's recorded codec differs from the codec of the handle used to access it.
        public static let codecMismatch = Code("codecMismatch")
        /// Stored bytes could not be decoded into the requested type (corrupt bytes, or a different type).
        public static let decodingFailed = Code("decodingFailed")
        /// A value could not be encoded by the collection's codec.
        public static let encodingFailed = Code("encodingFailed")
        /// The database reached its maximum map size; the transaction was rolled back and nothing was lost.
        public static let databaseFull = Code("databaseFull")
        /// The connection is pinned to a snapshot (a long-lived read transaction), so it cannot write.
        public static let connectionPinned = Code("connectionPinned")
        /// The operation needs a pinned connection.
        public static let connectionNotPinned = Code("connectionNotPinned")
        /// The database is read-only: opened with ``DatabaseOptions/readOnly``, or on a read-only file system.
        public static let readOnly = Code("readOnly")
        /// Internal records of the store are corrupt.
        public static let corruptStore = Code("corruptStore")
        /// An extension threw while it was told of a change or prepared its commit; the transaction was rolled back
        /// (also when the transaction's closure caught the extension's error and returned).
        public static let extensionFailed = Code("extensionFailed")
        /// No extension (view) of that name is registered in this process (or, for unregistering, recorded at all).
        public static let extensionNotRegistered = Code("extensionNotRegistered")
        /// An extension of that name is already registered in this process.
        public static let extensionAlreadyRegistered = Code("extensionAlreadyRegistered")
        /// An extension another one depends on (a filtered view's parent) is not registered.
        public static let extensionDependencyMissing = Code("extensionDependencyMissing")
        /// An extension could not prepare or rebuild its storage at registration; nothing was registered.
        public static let extensionRebuildFailed = Code("extensionRebuildFailed")
        /// The extension registered in this process differs (version tag or kind) from the registration recorded in
        /// the database by another process; writing would leave its state wrong, so the write was rolled back.
        public static let extensionDefinitionMismatch = Code("extensionDefinitionMismatch")
        /// A transaction was started inside another one where that would wait for itself or is not allowed (a
        /// `readWrite` inside a `read` or `readWrite` on the same thread, a `read` inside the same connection's read).
        public static let nestedTransaction = Code("nestedTransaction")
        /// A transaction (or a row handed to a closure) was used after its closure returned.
        public static let transactionEnded = Code("transactionEnded")
        /// The disk (or the process's file size limit) is full; the transaction was rolled back and nothing was lost.
        public static let diskFull = Code("diskFull")
        /// The directory holds an LMDB environment that Canopy did not create (no Canopy format record).
        public static let foreignDatabase = Code("foreignDatabase")
        /// A view's (or another extension's) stored state lags the store: rows were written by a process that did not
        /// register it. The message names it and both snapshots. A process that registers it brings it up to date: at
        /// registration, at the start of its next write transaction, or with ``Database/catchUpExtensions()``.
        public static let staleView = Code("staleView")
        /// Notifications don't line up (a gap between snapshots).
        public static let snapshotMismatch = Code("snapshotMismatch")
        /// An LMDB call failed: the message says what happened and what to do; ``CanopyError/lmdbError`` holds
        /// LMDB's code.
        public static let storage = Code("storage")
        /// An argument is out of range or malformed.
        public static let invalidArgument = Code("invalidArgument")
        /// The change feed is not enabled on the database (``Database/enableChangeFeed()``).
        public static let changeFeedDisabled = Code("changeFeedDisabled")
        /// The change feed does not hold the commits asked for: they were pruned (no consumer checkpoint held them, or
        /// one held more than ``DatabaseOptions/changeFeedConsumerLimit``) or came before the feed was enabled. Reload
        /// the state and continue from the current snapshot.
        public static let changeFeedGap = Code("changeFeedGap")
        /// A migration step failed (the message names the step and the row; ``CanopyError/migrationStep`` holds the
        /// step), or the database's recorded steps do not fit the migrator's (a newer app migrated it, or a step was
        /// inserted rather than appended). The failed batch was rolled back.
        public static let migrationFailed = Code("migrationFailed")
    }

    /// What went wrong.
    public var code: Code
    /// A sentence describing the failure and, when there is one, what to do.
    public var message: String
    /// The database path.
    public var path: String?
    /// The collection involved.
    public var collection: String?
    /// The key involved.
    public var key: String?
    /// The extension (view) involved.
    public var extensionName: String?
    /// The underlying error (an `LMDBError` of the LMDB module, a `DecodingError`, ...), if any.
    public var underlying: (any Error)?
    /// The migration step involved (``Code/migrationFailed``).
    public var migrationStep: String?

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, path: String? = nil, collection: String? = nil, key: String? = nil,
        extensionName: String? = nil, underlying: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.path = path
        self.collection = collection
        self.key = key
        self.extensionName = extensionName
        self.underlying = underlying
    }

    /// The LMDB error behind this one, if any.
    public var lmdbError: LMDBError? { underlying as? LMDBError }

    /// The code, the message and the context in one line.
    public var description: String {
        var parts = ["\(code): \(message)"]
        if let collection { parts.append("collection '\(collection)'") }
        if let key { parts.append("key '\(key)'") }
        if let extensionName { parts.append("extension '\(extensionName)'") }
        if let migrationStep { parts.append("migration step '\(migrationStep)'") }
        if let path { parts.append("database \(path)") }
        if let underlying { parts.append("cause: \(underlying)") }
        return parts.joined(separator: ", ")
    }
}

/// Below this many free bytes on the database's file system, an I/O error from LMDB is reported as ``CanopyError/Code/diskFull``.
let diskFullThreshold: UInt64 = 1 << 20

/// The bytes an unprivileged process may still write on the file system holding `path` (`statvfs`), if known.
func freeBytes(at path: String) -> UInt64? {
    var status = statvfs()
    guard statvfs(path, &status) == 0 else { return nil }
    return UInt64(status.f_bavail) * UInt64(status.f_frsize)
}

extension CanopyError {
    /// Wraps any error thrown by a lower layer into a CanopyError with context; CanopyErrors pass through.
    static func wrap(_ error: any Error, path: String?, collection: String? = nil, key: String? = nil) -> any Error {
        if error is CanopyError { return error }
        if let lmdb = error as? LMDBError {
            switch lmdb.code {
            case .mapFull:
                return CanopyError(
                    .databaseFull,
                    "the database reached its map size; the transaction was rolled back and nothing was written. Raise DatabaseOptions.maximumMapSize (it reserves address space, not disk), or remove data",
                    path: path, collection: collection, key: key, underlying: lmdb)
            case .noSpace, .quotaExceeded, .fileTooLarge:
                return CanopyError(
                    .diskFull,
                    "the disk is full (or a quota or file size limit was reached); the transaction was rolled back and nothing was lost: free space and retry",
                    path: path, collection: collection, key: key, underlying: lmdb)
            case .badTransaction:
                return CanopyError(
                    .transactionEnded,
                    "the transaction was used after its closure returned; a transaction is valid only inside read { } or readWrite { }",
                    path: path, collection: collection, key: key, underlying: lmdb)
            case .checksumMismatch:
                return StoredRecordDamage.error(lmdb, path: path)
            case .crashContained, .environmentDamaged, .valueOutsideFile, .corrupted, .pageNotFound:
                return BrokenPageDamage.error(lmdb, path: path, collection: collection, key: key)
            case .permissionDenied, .operationNotPermitted:
                return CanopyError(.permissionDenied, "permission denied reading or writing the database files: \(lmdb.description); check their owner and permissions",
                                   path: path, collection: collection, key: key, underlying: lmdb)
            case .ioError:
                // LMDB turns a short write (what a full file system gives a pwrite that only partly fits) into EIO.
                if let path, let free = freeBytes(at: path), free < diskFullThreshold {
                    return CanopyError(
                        .diskFull,
                        "the disk is full (\(free) bytes free where the database is; LMDB reported the short write as an I/O error); the transaction was rolled back and nothing was lost: free space and retry",
                        path: path, collection: collection, key: key, underlying: lmdb)
                }
                return CanopyError(.storage, "an I/O error occurred reading or writing the database file (check the disk); the transaction was rolled back",
                                   path: path, collection: collection, key: key, underlying: lmdb)
            case .readOnlyFileSystem:
                return CanopyError(.readOnly, StorageFailure.message(for: lmdb), path: path, collection: collection, key: key, underlying: lmdb)
            default:
                break
            }
            return CanopyError(.storage, StorageFailure.message(for: lmdb), path: path, collection: collection, key: key, underlying: lmdb)
        }
        return error
    }
}
