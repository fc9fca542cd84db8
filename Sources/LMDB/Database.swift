import CLMDB

/// A handle to one database (a B-tree of sorted keys) inside an ``Environment``: the unnamed main database or a
/// named one.
///
/// Handles are plain values, valid for the life of the environment and usable in any transaction of it.
public struct Database: Sendable, Hashable {
    /// Flags a database is opened with (`mdb_dbi_open`).
    public struct Flags: OptionSet, Sendable, Hashable {
        /// The raw `MDB_*` flag bits.
        public let rawValue: UInt32
        /// Creates flags from raw bits.
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// `MDB_REVERSEKEY`: compare keys from their last byte to their first.
        public static let reverseKey = Flags(rawValue: UInt32(MDB_REVERSEKEY))
        /// `MDB_DUPSORT`: several sorted values per key.
        public static let duplicateSort = Flags(rawValue: UInt32(MDB_DUPSORT))
        /// `MDB_INTEGERKEY`: keys are native-endian unsigned integers of one size.
        public static let integerKey = Flags(rawValue: UInt32(MDB_INTEGERKEY))
        /// `MDB_DUPFIXED`: with `duplicateSort`, all values have one size.
        public static let duplicateFixed = Flags(rawValue: UInt32(MDB_DUPFIXED))
        /// `MDB_INTEGERDUP`: with `duplicateSort`, values are native-endian unsigned integers.
        public static let integerDuplicate = Flags(rawValue: UInt32(MDB_INTEGERDUP))
        /// `MDB_REVERSEDUP`: with `duplicateSort`, compare values from their last byte.
        public static let reverseDuplicate = Flags(rawValue: UInt32(MDB_REVERSEDUP))
        /// `MDB_CREATE`: create the named database if it does not exist (write transactions only).
        public static let create = Flags(rawValue: UInt32(MDB_CREATE))
    }

    /// The LMDB handle (`MDB_dbi`).
    public let handle: UInt32
    /// The database's name, or `nil` for the unnamed main database.
    public let name: String?
    /// Whether each value carries a ``ValueChecksum`` trailer, written by every put through this handle and checked
    /// (then hidden) by every read: a value whose bytes changed on disk throws ``LMDBError/Code/checksumMismatch``
    /// instead of being returned. A property of the handle, not of the stored database: the same database read through
    /// ``withoutChecksums`` shows the trailers (for tools that check every value and report, or that upgrade values
    /// written without them). Not for `duplicateSort` databases (the trailer would change how values sort).
    public let checksummed: Bool

    /// Creates a handle value; use ``Environment/openDatabase(named:flags:create:)`` or
    /// ``ReadTransaction/openDatabase(named:flags:checksummed:)`` to get a real one.
    package init(handle: UInt32, name: String?, checksummed: Bool = false) {
        self.handle = handle
        self.name = name
        self.checksummed = checksummed
    }

    /// The same database, read and written with value checksums (see ``checksummed``).
    public var withChecksums: Database { Database(handle: handle, name: name, checksummed: true) }

    /// The same database, its values read and written as stored, trailers included (see ``checksummed``).
    public var withoutChecksums: Database { Database(handle: handle, name: name, checksummed: false) }
}

/// Flags for a put (`mdb_put`, `mdb_cursor_put`).
public struct PutFlags: OptionSet, Sendable, Hashable {
    /// The raw `MDB_*` flag bits.
    public let rawValue: UInt32
    /// Creates flags from raw bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `MDB_NOOVERWRITE`: fail with ``LMDBError/Code/keyExists`` if the key exists.
    public static let noOverwrite = PutFlags(rawValue: UInt32(MDB_NOOVERWRITE))
    /// `MDB_NODUPDATA`: with `duplicateSort`, fail if the key/value pair exists.
    public static let noDuplicateData = PutFlags(rawValue: UInt32(MDB_NODUPDATA))
    /// `MDB_APPEND`: the key is known to sort after every existing key (fast bulk loading); fails otherwise.
    public static let append = PutFlags(rawValue: UInt32(MDB_APPEND))
    /// `MDB_APPENDDUP`: like `append`, for sorted duplicate values.
    public static let appendDuplicate = PutFlags(rawValue: UInt32(MDB_APPENDDUP))
    /// `MDB_CURRENT` (cursor puts only): replace the item at the cursor.
    public static let current = PutFlags(rawValue: UInt32(MDB_CURRENT))
}
