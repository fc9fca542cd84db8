import CLMDB
import CLMDBGuard

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An error returned by LMDB, with the operation and the environment it happened in.
///
/// Every LMDB return code has a named ``Code``; system errors (`errno` values such as `ENOENT` or `EACCES`) keep their
/// number in ``Code/rawValue``. Switch on ``code`` to react to a specific failure:
///
/// ```swift
/// do { try environment.write { txn in try txn.put(value, forKey: key, in: table) } }
/// catch let error as LMDBError where error.code == .mapFull { /* grow the map and retry */ }
/// ```
public struct LMDBError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure: one value per LMDB return code, or a system `errno`.
    ///
    /// A struct rather than an enum so that new codes can be added without breaking callers' `switch` statements.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The raw LMDB or `errno` value.
        public let rawValue: Int32

        /// Creates a code from an LMDB return value or an `errno` value.
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// `MDB_KEYEXIST`: the key/data pair already exists (a put with `noOverwrite` or `noDuplicateData`).
        public static let keyExists = Code(rawValue: MDB_KEYEXIST)
        /// `MDB_NOTFOUND`: no matching key/data pair.
        public static let notFound = Code(rawValue: MDB_NOTFOUND)
        /// `MDB_PAGE_NOTFOUND`: a requested page was not found; the database is probably corrupted.
        public static let pageNotFound = Code(rawValue: MDB_PAGE_NOTFOUND)
        /// `MDB_CORRUPTED`: a page has an invalid type; the database is corrupted.
        public static let corrupted = Code(rawValue: MDB_CORRUPTED)
        /// `MDB_PANIC`: a fatal error earlier in this environment; it must be closed and reopened.
        public static let panic = Code(rawValue: MDB_PANIC)
        /// `MDB_VERSION_MISMATCH`: the environment was written by an incompatible LMDB version.
        public static let versionMismatch = Code(rawValue: MDB_VERSION_MISMATCH)
        /// `MDB_INVALID`: the file is not an LMDB data file.
        public static let invalid = Code(rawValue: MDB_INVALID)
        /// `MDB_MAP_FULL`: the environment's map size has been reached.
        public static let mapFull = Code(rawValue: MDB_MAP_FULL)
        /// `MDB_DBS_FULL`: the environment's maximum number of named databases has been reached.
        public static let databasesFull = Code(rawValue: MDB_DBS_FULL)
        /// `MDB_READERS_FULL`: the environment's maximum number of readers has been reached.
        public static let readersFull = Code(rawValue: MDB_READERS_FULL)
        /// `MDB_TLS_FULL`: too many thread-local storage keys are in use.
        public static let threadLocalStorageFull = Code(rawValue: MDB_TLS_FULL)
        /// `MDB_TXN_FULL`: the write transaction has too many dirty pages.
        public static let transactionFull = Code(rawValue: MDB_TXN_FULL)
        /// `MDB_CURSOR_FULL`: the cursor stack is too deep (internal error).
        public static let cursorFull = Code(rawValue: MDB_CURSOR_FULL)
        /// `MDB_PAGE_FULL`: a page has no more space (internal error).
        public static let pageFull = Code(rawValue: MDB_PAGE_FULL)
        /// `MDB_MAP_RESIZED`: another process grew the map beyond this environment's map size.
        public static let mapResized = Code(rawValue: MDB_MAP_RESIZED)
        /// `MDB_INCOMPATIBLE`: the operation does not match the database's flags (e.g. a named database opened as data).
        public static let incompatible = Code(rawValue: MDB_INCOMPATIBLE)
        /// `MDB_BAD_RSLOT`: a reader lock table slot was reused incorrectly (a read transaction crossed threads without `noThreadLocalStorage`).
        public static let badReaderSlot = Code(rawValue: MDB_BAD_RSLOT)
        /// `MDB_BAD_TXN`: the transaction must abort, has a child, or is invalid.
        public static let badTransaction = Code(rawValue: MDB_BAD_TXN)
        /// `MDB_BAD_VALSIZE`: a key or data item is too large or empty where that is not allowed (keys are limited to 511 bytes).
        public static let badValueSize = Code(rawValue: MDB_BAD_VALSIZE)
        /// `MDB_BAD_DBI`: the database handle was changed unexpectedly.
        public static let badDatabase = Code(rawValue: MDB_BAD_DBI)
        /// `ENOENT`: no such file or directory.
        public static let noSuchFile = Code(rawValue: ENOENT)
        /// `EACCES`: permission denied.
        public static let permissionDenied = Code(rawValue: EACCES)
        /// `EPERM`: the operation is not permitted (an immutable or append-only file, a mount option...).
        public static let operationNotPermitted = Code(rawValue: EPERM)
        /// `EROFS`: the file system is read-only.
        public static let readOnlyFileSystem = Code(rawValue: EROFS)
        /// `EINVAL`: an invalid parameter.
        public static let invalidArgument = Code(rawValue: EINVAL)
        /// `ENOSPC`: no space left on the device.
        public static let noSpace = Code(rawValue: ENOSPC)
        /// `ENOMEM`: out of memory (or address space for the map).
        public static let outOfMemory = Code(rawValue: ENOMEM)
        /// `EIO`: an I/O error.
        public static let ioError = Code(rawValue: EIO)
        /// `EBUSY`: the resource is busy (e.g. the map cannot be resized while transactions are open).
        public static let busy = Code(rawValue: EBUSY)
        /// A disk quota was exceeded (`EDQUOT`).
        public static let quotaExceeded = Code(rawValue: EDQUOT)
        /// The file would exceed the process's file size limit (`EFBIG`, `RLIMIT_FSIZE`).
        public static let fileTooLarge = Code(rawValue: EFBIG)

        /// Not an LMDB code: a value of a checksummed ``Database`` does not match its CRC32C (see ``ValueChecksum``);
        /// the file was changed outside LMDB. ``LMDBError/key`` names the value's key.
        public static let checksumMismatch = Code(rawValue: -30_700)

        /// Not an LMDB code: the data file is shorter than the pages its meta page claims (a copy cut short, a
        /// truncated file); the environment was not opened, since reading a missing page would end the process with
        /// SIGBUS.
        public static let fileTruncated = Code(rawValue: -30_701)

        /// Not an LMDB code: LMDB crashed inside this call on a damaged page (a memory fault reading the map, or a
        /// failed assertion) and the crash was contained (see ``Environment``, "Crashes inside LMDB"). The call did
        /// nothing more; the environment is now damaged for this process: every later call throws
        /// ``environmentDamaged``. ``LMDBError/hint`` says what crashed and where.
        public static let crashContained = Code(rawValue: CANOPY_LMDB_CONTAINED)

        /// Not an LMDB code: the call was refused without entering LMDB, because an earlier call on the same
        /// environment crashed on a damaged page (``crashContained``). Nothing is read or written through the
        /// environment again in this process.
        public static let environmentDamaged = Code(rawValue: CANOPY_LMDB_REFUSED)

        /// Not an LMDB code: a key or value LMDB returned from a page would run past the end of the data file (a
        /// damaged node's offset or size); nothing was read from it. Reading it would end the process with SIGBUS or
        /// SIGSEGV. The environment stays usable: other pages may be intact.
        public static let valueOutsideFile = Code(rawValue: -30_704)

        /// LMDB's own description of the code (`mdb_strerror`).
        public var description: String {
            if self == .checksumMismatch { return "a stored value does not match its checksum" }
            if self == .fileTruncated { return "the data file is truncated" }
            if self == .crashContained { return "LMDB crashed on a damaged page (contained)" }
            if self == .environmentDamaged { return "LMDB crashed earlier on a damaged page of this environment" }
            if self == .valueOutsideFile { return "a key or value runs past the end of the data file" }
            return String(cString: mdb_strerror(rawValue))
        }
    }

    /// What went wrong.
    public var code: Code
    /// The LMDB operation that failed, such as `"mdb_put"` or `"mdb_env_open"`.
    public var operation: String
    /// The environment's path, when known.
    public var path: String?
    /// The named database the operation used, when known (`nil` for the unnamed main database).
    public var database: String?
    /// A sentence that says what to do about it, when there is something to say.
    public var hint: String?
    /// The key involved, when the failure concerns one value (``Code/checksumMismatch``).
    public var key: [UInt8]?
    /// What is damaged and where, for the codes that report damage LMDB met: for ``Code/crashContained`` and
    /// ``Code/environmentDamaged`` the environment's first contained crash ("SIGBUS reading page 1234 of data.mdb, in
    /// mdb_cursor_get of database 'canopy.objects'"), for ``Code/valueOutsideFile`` the value ("a value at page 10
    /// claims 4294967295 bytes, past the end of data.mdb (1495040 bytes)").
    public var damage: String?

    /// Creates an error.
    public init(
        code: Code, operation: String, path: String? = nil, database: String? = nil, hint: String? = nil, key: [UInt8]? = nil,
        damage: String? = nil
    ) {
        self.code = code
        self.operation = operation
        self.path = path
        self.database = database
        self.hint = hint
        self.key = key
        self.damage = damage
    }

    /// A one-line description: the operation, the code with LMDB's message, where, and what to do.
    public var description: String {
        var text = "\(operation) failed: \(code.description) (\(code.rawValue))"
        if let database { text += ", database '\(database)'" }
        if let key { text += ", key \(key.prefix(64).map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined(separator: " "))" }
        if let path { text += ", at \(path)" }
        if let hint { text += ". \(hint)" }
        return text
    }
}

extension LMDBError.Code {
    /// A default hint for codes where the remedy is always the same.
    var defaultHint: String? {
        switch self {
        case .mapFull: return "Raise the environment's map size."
        case .readersFull: return "Raise maxReaders, or clear stale readers with readerCheck()."
        case .databasesFull: return "Raise maxDatabases when opening the environment."
        case .invalid: return "The file is not an LMDB database."
        case .versionMismatch: return "The database was written by an incompatible LMDB version."
        case .badValueSize: return "LMDB keys must be 1 to 511 bytes long."
        case .badReaderSlot: return "Open the environment with noThreadLocalStorage to use read transactions across threads."
        case .noSuchFile: return "Check that the directory exists."
        case .permissionDenied, .operationNotPermitted, .readOnlyFileSystem: return "Check the file permissions, or open the environment read-only."
        case .keyExists: return "The key is there already (a put with noOverwrite), or an append's key does not sort after the table's last: put without those flags."
        case .corrupted, .pageNotFound: return "The file is damaged: restore a backup."
        case .cursorFull, .pageFull: return "LMDB met a tree it cannot hold (the file may be damaged): check it, and restore a backup if it is."
        case .panic: return "Close the environment and open it again."
        case .transactionFull: return "Split the write into smaller transactions."
        case .mapResized: return "Another process grew the map: begin the transaction again."
        case .incompatible: return "Open the database with the flags it was created with."
        case .badTransaction: return "The transaction failed earlier or has ended: abort it and begin a new one."
        case .badDatabase: return "Open the database handle again."
        case .threadLocalStorageFull: return "Close environments this process no longer uses."
        case .noSpace, .quotaExceeded, .fileTooLarge: return "Free space on the disk (or raise the quota or file size limit) and retry."
        case .ioError: return "Check the disk (a full file system also reports a short write as EIO)."
        case .outOfMemory: return "Lower the map size, or close other environments."
        case .busy: return "Retry once this process's transactions have ended."
        default: return nil
        }
    }
}

/// Turns an LMDB return code into a thrown ``LMDBError``.
@inlinable @inline(__always)
package func check(_ rc: Int32, _ operation: @autoclosure () -> String, path: String? = nil, database: String? = nil) throws(LMDBError) {
    if rc != 0 {
        throw makeError(rc, operation(), path: path, database: database)
    }
}

@usableFromInline
package func makeError(_ rc: Int32, _ operation: String, path: String?, database: String?) -> LMDBError {
    let code = LMDBError.Code(rawValue: rc)
    return LMDBError(code: code, operation: operation, path: path, database: database, hint: code.defaultHint)
}
