import CoreMetrics
import Logging

/// How much a commit waits for the disk: the trade-off between durability and write latency.
public enum Durability: String, Sendable, Hashable, CaseIterable, Codable {
    /// fsync the data and the meta page on every commit: a committed transaction survives a power loss.
    /// The slowest option (one or two fsyncs per commit).
    case full
    /// fsync the data but not the meta page (`MDB_NOMETASYNC`): a system crash may lose the last commit, never
    /// corrupt the file.
    case metadataOnly
    /// No fsync on commit (`MDB_NOSYNC`): a process crash loses nothing, a system crash may lose the commits since the
    /// last ``Database/sync()``. The database stays consistent either way.
    case none
}

/// Options for opening a ``Database``.
public struct DatabaseOptions: Sendable, Hashable {
    /// How much each commit waits for the disk. Default ``Durability/full``.
    public var durability: Durability
    /// The map size the database starts with, in bytes (default 1 GiB). It is address space, not disk: the file
    /// grows only with the data. When a write needs more, the map grows (doubling) up to ``maximumMapSize`` — also
    /// while read transactions, pinned connections and observers are open — and other processes adopt the larger map
    /// at their next transaction.
    public var initialMapSize: Int
    /// The largest the database may grow to (default 64 GiB). A write beyond it fails with
    /// ``CanopyError/Code/databaseFull`` and changes nothing.
    public var maximumMapSize: Int
    /// The number of concurrent read transactions across all processes.
    public var maxReaders: Int
    /// The number of LMDB named databases: the store uses 6, each view a few more.
    public var maxTables: Int
    /// Permissions of the files the database creates. Default `0o600`.
    public var fileMode: UInt32
    /// Open without writing: write transactions fail with ``CanopyError/Code/readOnly``.
    public var readOnly: Bool
    /// How many commits the store keeps in its persisted commit log, so that pinned connections, caches and
    /// observers (also in other processes) can learn what changed. Older entries are pruned, in batches of up to 64
    /// (so the log holds between `commitLogLimit` and `commitLogLimit + 63` entries).
    public var commitLogLimit: Int
    /// Whether to add Canopy's tables to an existing LMDB environment that Canopy did not create. By default such an
    /// environment is refused with ``CanopyError/Code/foreignDatabase`` and left untouched.
    public var adoptForeignEnvironment: Bool
    /// Write committed pages in place through a writable memory map (LMDB's `MDB_WRITEMAP`) instead of copying them
    /// and writing them with `pwrite`: commits write less (a one-row commit with two views about 25 LMDB pages).
    /// Off by default, because of what it trades:
    /// - a stray write through a bad pointer anywhere in the process (C code, `unsafe` Swift) lands in the database
    ///   file instead of crashing on a read-only page;
    /// - with ``Durability/none``, a system crash (not a process crash) can leave the file corrupt, where without it
    ///   only the last commits are lost;
    /// - the data file is extended to the map size at once (sparse on Linux filesystems: `ls -l` shows the map size,
    ///   `du` the pages used).
    public var writeMap: Bool
    /// The most commits a change feed consumer's checkpoint may hold in the feed (default 100,000). A consumer further
    /// behind stops holding it: older records are pruned and the consumer's next read throws
    /// ``CanopyError/Code/changeFeedGap``. Past half of it, the database's logger warns at each pruning (every 64
    /// commits). See ``Database/registerFeedConsumer(named:after:)``.
    public var changeFeedConsumerLimit: Int
    /// Where the database logs operational events and records its metrics (see ``DatabaseTelemetry``). Not compared
    /// with the other options: a second `Database` opened on the same path in this process shares the first one's.
    public var telemetry: DatabaseTelemetry

    /// The swift-log logger for operational events (default: prints nothing). The database logs at `debug` what an
    /// operator may want to see (the map grew, dead processes' reader slots cleared, an extension rebuilt and why, a
    /// migration step applied, a write that waited for another process's write lock) and at `warning` only what needs
    /// action (a pinned snapshot holding the file's pages for many commits, a change feed consumer far behind, an
    /// extension that skipped more rows it cannot decode). Nothing is formatted below the logger's level.
    public var logger: Logger {
        get { telemetry.logger }
        set { telemetry.logger = newValue }
    }

    /// The swift-metrics factory the database's metrics go to (``DatabaseTelemetry``); `nil` (default) for
    /// `MetricsSystem.factory`.
    public var metricsFactory: (any MetricsFactory)? {
        get { telemetry.metricsFactory }
        set { telemetry.metricsFactory = newValue }
    }
    /// Open without LMDB's lock file (`MDB_NOLOCK`), for inspecting a read-only copy: a backup on read-only media, a
    /// directory whose `lock.mdb` cannot be written or created. Requires ``readOnly``.
    ///
    /// Safe only when no process writes the database meanwhile: without the lock file, readers are not registered, so
    /// a writer may reuse the pages a read is looking at, and the read sees torn or wrong data.
    public var noLock: Bool
    /// Whether every record carries its CRC32C checksum (default `true`; see the README's "LMDB's limits"). Switched
    /// off only to measure what the checksums cost (the benchmarks' `checksum-cost-*` lines): such a store is tagged
    /// `canopy/5-without-checksums`, which an ordinary open refuses (and such an open refuses ordinary stores) with
    /// ``CanopyError/Code/incompatibleFormat``. Not part of the API: a store without checksums reads a changed byte
    /// as data.
    @_spi(Benchmarks) public var valueChecksums = true

    /// Creates options.
    public init(
        durability: Durability = .full,
        initialMapSize: Int = 1 << 30,
        maximumMapSize: Int = 64 << 30,
        maxReaders: Int = 126,
        maxTables: Int = 128,
        fileMode: UInt32 = 0o600,
        readOnly: Bool = false,
        commitLogLimit: Int = 1024,
        adoptForeignEnvironment: Bool = false,
        writeMap: Bool = false,
        changeFeedConsumerLimit: Int = 100_000,
        telemetry: DatabaseTelemetry = .init(),
        noLock: Bool = false
    ) {
        self.durability = durability
        self.initialMapSize = initialMapSize
        self.maximumMapSize = maximumMapSize
        self.maxReaders = maxReaders
        self.maxTables = maxTables
        self.fileMode = fileMode
        self.readOnly = readOnly
        self.commitLogLimit = commitLogLimit
        self.adoptForeignEnvironment = adoptForeignEnvironment
        self.writeMap = writeMap
        self.changeFeedConsumerLimit = changeFeedConsumerLimit
        self.telemetry = telemetry
        self.noLock = noLock
    }
}

/// Options for one ``Connection``.
public struct ConnectionOptions: Sendable, Hashable {
    /// How many decoded objects the connection keeps (least recently used are evicted). 0 turns the cache off.
    public var objectCacheLimit: Int
    /// How many decoded metadata values the connection keeps. 0 turns the cache off.
    public var metadataCacheLimit: Int

    /// Creates options.
    public init(objectCacheLimit: Int = 250, metadataCacheLimit: Int = 500) {
        self.objectCacheLimit = objectCacheLimit
        self.metadataCacheLimit = metadataCacheLimit
    }
}
