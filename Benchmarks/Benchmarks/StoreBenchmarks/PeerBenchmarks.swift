import Benchmark
import Canopy
import Foundation
import GRDB
import Synchronization

// Peer workloads (issue "View engine v3", item 4): what an app would do with GRDB instead, in the same run.
//
// - "bulk-insert-grdb grdb": the 100k records inserted in one transaction into an SQLite table with one index per
//   Canopy view of "bulk-insert-2-views canopy" (by priority then created, by done then title), default (synced)
//   durability like the Canopy side. `ratios.py` divides it by "bulk-insert-2-views canopy".
// - "observed-window-vs-grdb": one group's first 50 rows kept up to date while one-row updates move rows into and out
//   of that window — GRDB's `ValueObservation` of `WHERE grp = ? ORDER BY created LIMIT 50` against a `ViewObserver`
//   whose mappings show the first 50 rows of that group of the "by-priority" view (`.first(50)`). Unsynced on both
//   sides. The full-list comparison ("observed-update-vs-grdb", ViewBenchmarks.swift) stays as it is.

enum PeerWorkload {
    /// The group the observed window shows ("p2" in Canopy, `grp = 2` in SQLite).
    static let windowGroup = 2
    /// Rows in the observed window.
    static let windowLength = 50
    /// One-row updates per measured iteration of the window comparison.
    static let windowUpdatesPerIteration = 10

    /// The table and indexes of the GRDB side: the columns of ``BenchRecord``, `grp` for its priority.
    static let schema = """
        CREATE TABLE items(id TEXT PRIMARY KEY, grp INTEGER NOT NULL, created REAL NOT NULL, title TEXT NOT NULL,
                           note TEXT NOT NULL, done INTEGER NOT NULL);
        CREATE INDEX items_by_priority ON items(grp, created);
        CREATE INDEX items_by_state ON items(done, title);
        """

    /// The `step`-th update of the window workload (counted over all iterations): even steps move a row into the
    /// window's group ahead of every row there (so it enters the window, pushing its last row out), odd steps move
    /// the same row to another group (it leaves the window, whose next row moves in). Returns the row and its record.
    static func windowUpdate(step: Int) -> (index: Int, record: BenchRecord) {
        let index = (step / 2 * 7_919 + 13) % Workload.rowCount
        var record = Workload.records[index]
        if step % 2 == 0 {
            record.priority = windowGroup
            record.created = Date(timeIntervalSinceReferenceDate: 780_000_000 - Double(step + 1))
        } else {
            record.priority = windowGroup + 1
        }
        return (index, record)
    }

    /// Mappings showing the first ``windowLength`` rows of the window's group of the "by-priority" view.
    static func windowMappings() -> ViewMappings {
        let group = "p\(windowGroup)"
        var mappings = ViewMappings(groups: [group], view: "by-priority")
        mappings.setOptions(.init(range: .first(windowLength)), forGroup: group)
        return mappings
    }
}

/// The GRDB side of the window comparison: the records with the two indexes, and a `ValueObservation` of one group's
/// first rows.
final class GRDBWindowStore {
    let directory: TemporaryDirectory
    let queue: DatabaseQueue
    private var cancellable: AnyDatabaseCancellable?
    private let delivered = DispatchSemaphore(value: 0)
    private let lastCount = LockedCount()
    var step = 0

    init(rows: Int) throws {
        directory = TemporaryDirectory("grdb-window")
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = OFF") }
        queue = try DatabaseQueue(path: directory.child("db.sqlite"), configuration: configuration)
        try queue.write { db in
            try db.execute(sql: PeerWorkload.schema)
            let insert = try db.makeStatement(sql: "INSERT INTO items VALUES (?, ?, ?, ?, ?, ?)")
            for index in 0..<rows {
                let record = Workload.records[index]
                try insert.execute(arguments: [Workload.keys[index], record.priority, record.created.timeIntervalSinceReferenceDate,
                                               record.title, record.note, record.done])
            }
        }
        let observation = ValueObservation.tracking { db in
            try String.fetchAll(db, sql: "SELECT id FROM items WHERE grp = ? ORDER BY created LIMIT ?",
                                arguments: [PeerWorkload.windowGroup, PeerWorkload.windowLength])
        }
        let (delivered, lastCount) = (self.delivered, self.lastCount)
        cancellable = observation.start(
            in: queue, scheduling: .async(onQueue: DispatchQueue(label: "grdb-window-observation")),
            onError: { error in fatalError("GRDB observation failed: \(error)") },
            onChange: { ids in
                lastCount.set(ids.count)
                delivered.signal()
            })
        delivered.wait()  // the initial value
        precondition(lastCount.value == PeerWorkload.windowLength, "the window holds \(lastCount.value) rows")
    }

    /// Applies update `step` and waits until the observation delivers the window.
    func updateAndWait(step: Int) throws {
        let (index, record) = PeerWorkload.windowUpdate(step: step)
        try queue.write { db in
            try db.execute(sql: "UPDATE items SET grp = ?, created = ? WHERE id = ?",
                           arguments: [record.priority, record.created.timeIntervalSinceReferenceDate, Workload.keys[index]])
        }
        delivered.wait()
        precondition(lastCount.value == PeerWorkload.windowLength, "the window holds \(lastCount.value) rows")
    }

    deinit {
        cancellable?.cancel()
        directory.remove()
    }
}

/// An integer shared between the observation's queue and the benchmark.
private final class LockedCount: Sendable {
    private let stored = Mutex(0)
    var value: Int { stored.withLock { $0 } }
    func set(_ value: Int) { stored.withLock { $0 = value } }
}

func peerBenchmarks() {
    let bulk = Benchmark.Configuration(metrics: [.wallClock, .throughput], warmupIterations: 0,
                                       maxDuration: .seconds(10), maxIterations: 4)
    let updates = Benchmark.Configuration(metrics: [.wallClock, .throughput], warmupIterations: 1,
                                          maxDuration: .seconds(3), maxIterations: 200)

    // MARK: Bulk insert into a table with the two views' indexes (ratio against "bulk-insert-2-views canopy").

    Benchmark("bulk-insert-grdb grdb", configuration: bulk) { benchmark in
        let directory = TemporaryDirectory("grdb-bulk")
        defer { directory.remove() }
        let queue = try DatabaseQueue(path: directory.child("db.sqlite"))
        try queue.write { db in try db.execute(sql: PeerWorkload.schema) }
        let (keys, records, order) = (Workload.keys, Workload.records, Workload.permutation)
        try measureLong(benchmark, "bulk-insert-grdb grdb") {
            try queue.write { db in
                let insert = try db.makeStatement(sql: "INSERT INTO items VALUES (?, ?, ?, ?, ?, ?)")
                for index in order {
                    let record = records[index]
                    try insert.execute(arguments: [keys[index], record.priority, record.created.timeIntervalSinceReferenceDate,
                                                   record.title, record.note, record.done])
                }
            }
        }
        let count = try queue.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM items") }
        precondition(count == order.count, "GRDB holds \(count ?? 0) rows of \(order.count)")
    } setup: {
        _ = (Workload.keys.count, Workload.records.count, Workload.permutation.count)
    }

    // MARK: One group's first 50 rows observed while one-row updates move rows into and out of them.

    let windowCanopy = Fixture<ViewStore>()
    Benchmark("observed-window-vs-grdb canopy", configuration: updates) { benchmark in
        let fixture = windowCanopy.value!
        let observer = fixture.observer!
        let (store, collection) = (fixture.store, fixture.store.collection)
        let first = store.round * PeerWorkload.windowUpdatesPerIteration
        var changes = 0
        benchmark.startMeasurement()
        for step in first..<(first + PeerWorkload.windowUpdatesPerIteration) {
            let (index, record) = PeerWorkload.windowUpdate(step: step)
            try store.connection.readWrite { txn in try txn.set(record, forKey: Workload.keys[index], in: collection) }
            let changeset = try observer.advance()
            changes += changeset.rowChanges.isEmpty ? 0 : 1
            blackHole(changeset)
        }
        benchmark.stopMeasurement()
        precondition(changes == PeerWorkload.windowUpdatesPerIteration, "\(changes) of the updates changed the window")
        store.round += 1
    } setup: {
        windowCanopy.value = ViewStore(
            label: "window", rows: 0..<Workload.rowCount, views: [byPriority(), byState()],
            durability: .none, observe: true, mappings: PeerWorkload.windowMappings())
    } teardown: {
        windowCanopy.value = nil
    }

    let windowGRDB = Fixture<GRDBWindowStore>()
    Benchmark("observed-window-vs-grdb grdb", configuration: updates) { benchmark in
        let store = windowGRDB.value!
        let first = store.step
        benchmark.startMeasurement()
        for step in first..<(first + PeerWorkload.windowUpdatesPerIteration) {
            try store.updateAndWait(step: step)
        }
        benchmark.stopMeasurement()
        store.step += PeerWorkload.windowUpdatesPerIteration
    } setup: {
        windowGRDB.value = try GRDBWindowStore(rows: Workload.rowCount)
    } teardown: {
        windowGRDB.value = nil
    }
}
