import Canopy
import CanopyCoreTestFixtures
import CanopyTestSupport
import CoreMetrics
import Foundation
import InMemoryLogging
import Logging
import MetricsTestKit
import Testing

@Suite("Telemetry: swift-metrics and swift-log")
struct TelemetryTests {
    /// A database with a test metrics backend and an in-memory logger at `level`.
    func withObservedDatabase(
        level: Logger.Level = .debug, options: DatabaseOptions = .init(durability: .none),
        _ body: (Database, TestMetrics, InMemoryLogHandler) throws -> Void
    ) throws {
        let metrics = TestMetrics()
        let logs = InMemoryLogHandler()
        var logger = Logger(label: "canopy-test", factory: { _ in logs })
        logger.logLevel = level
        var options = options
        options.logger = logger
        options.metricsFactory = metrics
        try withDatabase(options: options) { database, _ in try body(database, metrics, logs) }
    }

    @Test func metricsMoveWithCommitsRebuildsAndObservers() throws {
        try withObservedDatabase { database, metrics, _ in
            let dimensions = [("path", database.path)]
            let view = View(name: "by-title", grouping: .byObject(notes) { _, _ in "all" },
                            sorting: .byObject(notes) { _, _, note in SortKey(note.title) })
            try database.register(view)
            #expect(try metrics.expectCounter("canopy_extension_rebuilds_total", dimensions).totalValue == 1)

            let observer = try ViewObserver(database: database, mappings: ViewMappings(groups: ["all"], view: "by-title"))
            let connection = database.newConnection()
            for number in 0..<40 {
                try connection.readWrite { txn in
                    try txn.set(Note(title: "note \(number)", body: String(repeating: "x", count: 100)), forKey: "\(number)", in: notes)
                }
            }
            // The registration is a commit too.
            #expect(try metrics.expectCounter("canopy_commits_total", dimensions).totalValue == 41)
            #expect(try metrics.expectTimer("canopy_commit_duration", dimensions).values.count == 41)
            #expect(try metrics.expectCounter("canopy_bytes_written_total", dimensions).totalValue >= 40 * 100)
            // Every 32 commits: the map and reader gauges (the observer's pinned connection holds a reader slot).
            #expect(try metrics.expectGauge("canopy_map_size_bytes", dimensions).lastValue == Double(1 << 30))
            #expect(try (metrics.expectGauge("canopy_map_used_bytes", dimensions).lastValue ?? 0) > 0)
            #expect(try (metrics.expectGauge("canopy_reader_slots_in_use", dimensions).lastValue ?? 0) >= 1)

            try observer.advance()
            #expect(try metrics.expectRecorder("canopy_observer_lag_snapshots", dimensions).lastValue == 40)
        }
    }

    @Test func operationalEventsAreLoggedAtDebug() throws {
        // A tiny map, so that writing grows it.
        let options = DatabaseOptions(durability: .none, initialMapSize: 1 << 20)
        try withObservedDatabase(options: options) { database, _, logs in
            let view = View(name: "by-title", grouping: .byObject(notes) { _, _ in "all" },
                            sorting: .byObject(notes) { _, _, note in SortKey(note.title) })
            try database.register(view)
            let rebuilt = logs.entries.filter { $0.message.description == "rebuilding an extension" }
            #expect(rebuilt.count == 1)
            #expect(rebuilt.first?.level == .debug)
            #expect(rebuilt.first?.metadata["canopy.extension"] == "by-title")
            #expect(rebuilt.first?.metadata["canopy.reason"] != nil)

            let connection = database.newConnection()
            try connection.readWrite { txn in
                for number in 0..<300 {
                    try txn.set(Note(title: "\(number)", body: String(repeating: "y", count: 8_000)), forKey: "\(number)", in: notes)
                }
            }
            let grew = logs.entries.filter { $0.message.description == "the map grew" }
            #expect(!grew.isEmpty)
            #expect(grew.allSatisfy { $0.level == .debug })
            #expect(!logs.entries.contains { $0.level >= .warning })
        }
    }

    @Test func migrationsAreLoggedAtDebugAndSkippedRowsAreAWarning() throws {
        try withObservedDatabase { database, _, logs in
            let old = TypedCollection<ReminderV1, NoMetadata>("reminders")
            try database.newConnection().readWrite { txn in
                try txn.set(ReminderV1(title: "Buy milk", list: "home"), forKey: "r1", in: old)
                try txn.set(ReminderV1(title: "Call", list: "work"), forKey: "r2", in: old)
            }
            let reminders = TypedCollection<ListedReminder, NoMetadata>("reminders")
            let view = View(name: "by-list", grouping: .byObject(reminders) { _, reminder in reminder.list },
                            sorting: .byObject(reminders) { _, key, _ in SortKey(key) })
            // Registered before any migration: both old rows are left out, and an operator is told once.
            try database.register(view)
            let skipped = logs.entries.filter { $0.message.description == "an extension skipped rows it cannot decode" }
            #expect(skipped.count == 1)
            #expect(skipped.first?.level == .warning)
            #expect(skipped.first?.metadata["canopy.extension"] == "by-list")
            #expect(skipped.first?.metadata["canopy.skipped"] == "2")
            try database.unregisterExtension(named: "by-list", dropStorage: true)

            var migrator = Migrator()
            migrator.append(.typed("reminder-done", collection: "reminders", from: ReminderV1.self, to: ListedReminder.self) { _, old in
                ListedReminder(title: old.title, list: old.list, done: false)
            })
            try migrator.migrate(database)
            let applied = logs.entries.filter { $0.message.description == "applied a migration step" }
            #expect(applied.count == 1)
            #expect(applied.first?.level == .debug)
            #expect(applied.first?.metadata["canopy.migration"] == "reminder-done")
            #expect(applied.first?.metadata["canopy.rows"] == "2")
        }
    }

    @Test func aConsumerHoldingTooMuchOfTheFeedIsAWarning() throws {
        let options = DatabaseOptions(durability: .none, changeFeedConsumerLimit: 100)
        try withObservedDatabase(level: .warning, options: options) { database, _, logs in
            try database.enableChangeFeed()
            try database.registerFeedConsumer(named: "stuck")
            let connection = database.newConnection()
            for number in 0..<64 {
                try connection.readWrite { txn in try txn.set(Note(title: "\(number)"), forKey: "k", in: notes) }
            }
            let warnings = logs.entries.filter { $0.level == .warning && $0.metadata["canopy.consumer"] == "stuck" }
            #expect(warnings.count == 1)
            #expect(warnings.first?.metadata["canopy.behind"] == "64")
            // Nothing at debug is even formatted at this level.
            #expect(!logs.entries.contains { $0.level < .warning })
        }
    }
}
