import CLMDB

/// Flags and limits for opening an ``Environment``.
public struct EnvironmentOptions: Sendable, Hashable {
    /// Flags passed to `mdb_env_open`.
    public struct Flags: OptionSet, Sendable, Hashable {
        /// The raw `MDB_*` flag bits.
        public let rawValue: UInt32
        /// Creates flags from raw `MDB_*` bits.
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// `MDB_NOSUBDIR`: the path names the data file itself; the lock file is the path plus `-lock`.
        public static let noSubdirectory = Flags(rawValue: UInt32(MDB_NOSUBDIR))
        /// `MDB_RDONLY`: open read-only; write transactions fail.
        public static let readOnly = Flags(rawValue: UInt32(MDB_RDONLY))
        /// `MDB_NOSYNC`: don't fsync after commit. A system crash may lose the last commits (never corrupt the file
        /// unless `writeMap` is also set); call ``Environment/sync(force:)`` to flush.
        public static let noSync = Flags(rawValue: UInt32(MDB_NOSYNC))
        /// `MDB_NOMETASYNC`: fsync the data but not the meta page on commit; a system crash may lose the last commit.
        public static let noMetaSync = Flags(rawValue: UInt32(MDB_NOMETASYNC))
        /// `MDB_WRITEMAP`: write through a writable memory map (faster writes, less protection against stray pointers).
        public static let writeMap = Flags(rawValue: UInt32(MDB_WRITEMAP))
        /// `MDB_MAPASYNC`: with `writeMap`, flush asynchronously.
        public static let mapAsync = Flags(rawValue: UInt32(MDB_MAPASYNC))
        /// `MDB_NOTLS`: tie reader slots to transactions instead of threads, so that a read transaction may be used
        /// on several threads (one at a time) and a thread may hold several. ``Environment`` always sets it.
        public static let noThreadLocalStorage = Flags(rawValue: UInt32(MDB_NOTLS))
        /// `MDB_NOLOCK`: no locking; the caller guarantees a single writer and no stale readers.
        public static let noLock = Flags(rawValue: UInt32(MDB_NOLOCK))
        /// `MDB_NORDAHEAD`: turn off OS read-ahead (helps random reads of databases larger than RAM).
        public static let noReadAhead = Flags(rawValue: UInt32(MDB_NORDAHEAD))
        /// `MDB_NOMEMINIT`: don't zero malloc'ed pages before writing them.
        public static let noMemoryInit = Flags(rawValue: UInt32(MDB_NOMEMINIT))
    }

    /// Flags for `mdb_env_open`. ``Flags/noThreadLocalStorage`` is always added.
    public var flags: Flags
    /// The size of the memory map in bytes, rounded by LMDB to a multiple of the page size. It is the largest the
    /// database can grow to until the map is resized; on Linux the file only takes the space its pages use.
    public var mapSize: Int
    /// The maximum number of named databases (`mdb_env_set_maxdbs`).
    public var maxDatabases: Int
    /// The maximum number of concurrent read transactions across all processes (`mdb_env_set_maxreaders`).
    public var maxReaders: Int
    /// The permission bits of created files, such as `0o600`.
    public var fileMode: UInt32
    /// Whether handles opened with `checksummed: true` carry value checksums (default `true`). Off only to measure
    /// what the checksums cost (Canopy's benchmarks): every handle of the environment is then plain. A Canopy store
    /// opened so records it in its format tag, so that no ordinary open mistakes one kind of file for the other.
    package var valueChecksums = true

    /// Creates options.
    /// - Parameters:
    ///   - flags: `mdb_env_open` flags; ``Flags/noThreadLocalStorage`` is always added.
    ///   - mapSize: the map size in bytes (default 64 MiB).
    ///   - maxDatabases: the number of named databases (default 32).
    ///   - maxReaders: the number of reader slots (default 126, LMDB's own default).
    ///   - fileMode: permissions of created files (default `0o600`).
    public init(
        flags: Flags = [], mapSize: Int = 64 << 20, maxDatabases: Int = 32, maxReaders: Int = 126,
        fileMode: UInt32 = 0o600
    ) {
        self.flags = flags
        self.mapSize = mapSize
        self.maxDatabases = maxDatabases
        self.maxReaders = maxReaders
        self.fileMode = fileMode
    }
}
