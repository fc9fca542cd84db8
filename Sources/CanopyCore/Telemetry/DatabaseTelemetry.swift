import CoreMetrics
import Logging
import Synchronization

/// Where a database sends its operational logs and metrics: a swift-log `Logger` and a swift-metrics factory.
///
/// Part of ``DatabaseOptions`` (``DatabaseOptions/logger``, ``DatabaseOptions/metricsFactory``), but not compared
/// with the other options: two `Database` values opened on one path share the first one's telemetry.
public struct DatabaseTelemetry: Sendable, Hashable {
    /// The logger; by default one that prints nothing.
    public var logger: Logger
    /// The metrics factory; `nil` for the process's `MetricsSystem.factory` (no metrics unless the app bootstrapped
    /// a backend).
    public var metricsFactory: (any MetricsFactory)?

    /// Creates telemetry: no logs, and metrics through `MetricsSystem` unless `metricsFactory` is given.
    public init(logger: Logger = DatabaseTelemetry.silentLogger, metricsFactory: (any MetricsFactory)? = nil) {
        self.logger = logger
        self.metricsFactory = metricsFactory
    }

    /// A logger that prints nothing (swift-log's no-op handler), the default.
    public static var silentLogger: Logger { Logger(label: "canopy", factory: { _ in SwiftLogNoOpLogHandler() }) }

    /// Always true: telemetry does not make options different.
    public static func == (lhs: DatabaseTelemetry, rhs: DatabaseTelemetry) -> Bool { true }

    /// Hashes nothing (see ``==(_:_:)``).
    public func hash(into hasher: inout Hasher) {}
}

/// The metrics of one open database (labels `canopy_…`, dimension `path`).
///
/// | label | kind | what |
/// | --- | --- | --- |
/// | `canopy_commits_total` | counter | commits that wrote something |
/// | `canopy_commit_duration` | timer | a write transaction, from its start to its commit (nanoseconds) |
/// | `canopy_bytes_written_total` | counter | bytes of objects and metadata written by commits |
/// | `canopy_map_size_bytes` | gauge | the map size (address space reserved) |
/// | `canopy_map_used_bytes` | gauge | the pages in use up to the last one |
/// | `canopy_extension_rebuilds_total` | counter | extensions (views, indexes) rebuilt |
/// | `canopy_observer_lag_snapshots` | recorder | snapshots an observer passed over in one advance |
/// | `canopy_reader_slots_in_use` | gauge | LMDB reader slots in use (all processes) |
final class DatabaseMetrics: Sendable {
    let commits: Counter
    let commitDuration: CoreMetrics.Timer
    let bytesWritten: Counter
    let mapSize: Gauge
    let mapUsed: Gauge
    let rebuilds: Counter
    let observerLag: Recorder
    let readerSlotsInUse: Gauge

    init(path: String, factory: (any MetricsFactory)?) {
        let dimensions = [("path", path)]
        let factory = factory ?? MetricsSystem.factory
        commits = Counter(label: "canopy_commits_total", dimensions: dimensions, factory: factory)
        commitDuration = CoreMetrics.Timer(label: "canopy_commit_duration", dimensions: dimensions, factory: factory)
        bytesWritten = Counter(label: "canopy_bytes_written_total", dimensions: dimensions, factory: factory)
        mapSize = Gauge(label: "canopy_map_size_bytes", dimensions: dimensions, factory: factory)
        mapUsed = Gauge(label: "canopy_map_used_bytes", dimensions: dimensions, factory: factory)
        rebuilds = Counter(label: "canopy_extension_rebuilds_total", dimensions: dimensions, factory: factory)
        observerLag = Recorder(label: "canopy_observer_lag_snapshots", dimensions: dimensions, aggregate: true, factory: factory)
        readerSlotsInUse = Gauge(label: "canopy_reader_slots_in_use", dimensions: dimensions, factory: factory)
    }
}
