import Benchmark
import CLMDBBench
import Canopy
import Foundation
import LMDB

// The view engine's workloads (issue "View engine"): each measure is a pair of benchmarks whose names `ratios.py`
// divides. Two views over the records: "by-priority" (5 groups, by creation date) and "by-state" (open/done, by title).

enum ViewWorkload {
    /// One-row updates in one measured iteration of the observed-update workloads.
    static let updatesPerIteration = 100
    /// Updates per iteration of the GRDB comparison (GRDB refetches the whole list for each).
    static let grdbUpdatesPerIteration = 5
    /// Single-row inserts per measured iteration of the insert-cost workloads.
    static let insertsPerIteration = 200
    /// Rows of the large databases (per-insert cost and population).
    static let largeRowCount = 1_000_000

    /// Everything in one group "all", sorted by id: a group as large as the collection.
    static func single() -> View {
        View(
            name: "single",
            grouping: .byKey { _, _ in "all" },
            sorting: .byObject(benchRecords) { _, _, record in SortKey(.ascending(record.id)) },
            versionTag: "1")
    }

    /// Six more views, each of which an update of ``ViewStore/update(_:round:)`` moves the row in (its priority, state
    /// and creation date change): with ``byPriority()`` and ``byState()``, the eight views of "update-8-views".
    static func sixMore() -> [View] {
        [
            View(name: "by-priority-title", grouping: .byObject(benchRecords) { _, record in "p\(record.priority)" },
                 sorting: .byObject(benchRecords) { _, _, record in SortKey(.ascending(record.title)) }, versionTag: "1"),
            View(name: "by-state-created", grouping: .byObject(benchRecords) { _, record in record.done ? "done" : "open" },
                 sorting: .byObject(benchRecords) { _, _, record in SortKey(.descending(record.created)) }, versionTag: "1"),
            View(name: "by-priority-state", grouping: .byObject(benchRecords) { _, record in "p\(record.priority)-\(record.done)" },
                 sorting: .byObject(benchRecords) { _, _, record in SortKey(.ascending(record.created)) }, versionTag: "1"),
            View(name: "by-state-priority", grouping: .byObject(benchRecords) { _, record in record.done ? "d" : "o" },
                 sorting: .byObject(benchRecords) { _, _, record in SortKey(.ascending(record.priority), .ascending(record.created)) },
                 versionTag: "1"),
            View(name: "all-by-created", grouping: .byKey { _, _ in "all" },
                 sorting: .byObject(benchRecords) { _, _, record in SortKey(.ascending(record.created)) }, versionTag: "1"),
            View(name: "all-by-priority", grouping: .byKey { _, _ in "all" },
                 sorting: .byObject(benchRecords) { _, _, record in SortKey(.descending(record.priority), .ascending(record.created)) },
                 versionTag: "1"),
        ]
    }

    /// Mappings showing every group of a view.
    static func allGroups(of view: String) -> ViewMappings {
        ViewMappings(view: view, groupFilter: { _ in true })
    }

    /// Writes rows `range` (keys and records made on the fly) in transactions of 100k rows.
    static func load(_ connection: Connection, _ collection: TypedCollection<BenchRecord, NoMetadata>, _ range: Range<Int>) throws {
        for start in stride(from: range.lowerBound, to: range.upperBound, by: 100_000) {
            try connection.readWrite { txn in
                for index in start..<min(range.upperBound, start + 100_000) {
                    try txn.set(Workload.record(index), forKey: Workload.key(index), in: collection)
                }
            }
        }
    }

    /// Where the view-entry size is reported for `ratios.py`.
    static let entryBytesReport = NSTemporaryDirectory() + "/canopy-bench-view-entry-bytes.txt"
    /// Where iterations longer than package-benchmark's JMH export can carry are recorded for `ratios.py`.
    static let longTimingsReport = NSTemporaryDirectory() + "/canopy-bench-long-timings.txt"
}

/// Measures `body` and appends `<name> <microseconds>` to ``ViewWorkload/longTimingsReport``: the JMH export drops
/// a benchmark whose iterations take more than about 2 s (its throughput, iterations per second, rounds to 0), so the
/// long workloads report their times this way too (`ratios.py` takes the median).
func measureLong(_ benchmark: Benchmark, _ name: String, _ body: () throws -> Void) rethrows {
    let clock = ContinuousClock()
    benchmark.startMeasurement()
    let start = clock.now
    try body()
    let elapsed = clock.now - start
    benchmark.stopMeasurement()
    let microseconds = Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12
    if let handle = FileHandle(forWritingAtPath: ViewWorkload.longTimingsReport) ?? {
        FileManager.default.createFile(atPath: ViewWorkload.longTimingsReport, contents: nil)
        return FileHandle(forWritingAtPath: ViewWorkload.longTimingsReport)
    }() {
        handle.seekToEndOfFile()
        handle.write(Data("\(name) \(microseconds)\n".utf8))
        try? handle.close()
    }
}

/// A database with the records of `rows` and the views `views` registered, and an observer over the first view.
final class ViewStore {
    let store: CanopyStore
    let observer: ViewObserver?

    init(label: String, rows: Range<Int>, views: [View], durability: Durability, observe: Bool, mappings: ViewMappings? = nil,
         writeMap: Bool = false) {
        store = CanopyStore(label: label, cacheLimit: ConnectionOptions().objectCacheLimit, populated: false, durability: durability,
                            writeMap: writeMap)
        do {
            let loader = store.database.newConnection(options: ConnectionOptions(objectCacheLimit: 0, metadataCacheLimit: 0))
            try ViewWorkload.load(loader, store.collection, rows)
            for view in views { try store.database.register(view) }
            observer = observe ? try ViewObserver(database: store.database, mappings: mappings ?? ViewWorkload.allGroups(of: views[0].name)) : nil
        } catch {
            fatalError("cannot set up the view database: \(error)")
        }
    }

    /// Updates row `index` so that it moves to another group of both views.
    func update(_ index: Int, round: Int) throws {
        var record = Workload.records[index % Workload.rowCount]
        record.id = index
        record.priority = (record.priority + 1 + round) % 5
        record.done.toggle()
        record.created = record.created.addingTimeInterval(Double(round))
        try store.connection.readWrite { txn in try txn.set(record, forKey: Workload.key(index), in: store.collection) }
    }
}

func viewBenchmarks() {
    let bulk = Benchmark.Configuration(metrics: [.wallClock, .throughput, .mallocCountTotal], warmupIterations: 0,
                                       maxDuration: .seconds(10), maxIterations: 4)
    let updates = Benchmark.Configuration(metrics: [.wallClock, .throughput], warmupIterations: 1,
                                          maxDuration: .seconds(3), maxIterations: 200)
    let large = Benchmark.Configuration(metrics: [.wallClock, .throughput], warmupIterations: 0,
                                        maxDuration: .seconds(30), maxIterations: 3)
    let rows = Workload.rowCount

    // MARK: Bulk insert with two views / raw LMDB doing three puts per record, one transaction.

    Benchmark("bulk-insert-2-views canopy", configuration: bulk) { benchmark in
        let store = CanopyStore(label: "bulk-views", cacheLimit: ConnectionOptions().objectCacheLimit, populated: false)
        try store.database.register(byPriority())
        try store.database.register(byState())
        let (keys, records, order, collection) = (Workload.keys, Workload.records, Workload.permutation, store.collection)
        try measureLong(benchmark, "bulk-insert-2-views canopy") {
            try store.connection.readWrite { txn in
                for index in order { try txn.set(records[index], forKey: keys[index], in: collection) }
            }
        }
        store.close()
    } setup: {
        _ = (Workload.keys.count, Workload.records.count, Workload.permutation.count)
    }

    Benchmark("bulk-insert-2-views raw", configuration: bulk) { benchmark in
        let store = RawStore(label: "bulk-3", flags: 0, populated: false)
        measureLong(benchmark, "bulk-insert-2-views raw") {
            store.environment.insertWithTwoIndexes(Workload.permutation)
        }
        store.close()
    } setup: {
        _ = Workload.permutation.count
    }

    // MARK: One-row update with two views and an observer receiving its changeset / raw one-put transaction.

    for (name, durability, flags) in [("none", Durability.none, Int32(MDB_NOSYNC)), ("full", Durability.full, Int32(0))] {
        let observed = Fixture<ViewStore>()
        let perIteration = durability == .none ? ViewWorkload.updatesPerIteration : 10
        Benchmark("update-2-views-observed-\(name) canopy", configuration: updates) { benchmark in
            let fixture = observed.value!
            let observer = fixture.observer!
            var generator = fixture.store.generator
            let round = fixture.store.round
            var changes = 0
            benchmark.startMeasurement()
            for _ in 0..<perIteration {
                try fixture.update(Int(generator.next() % UInt64(rows)), round: round)
                changes += try observer.advance().rowChanges.count
            }
            benchmark.stopMeasurement()
            precondition(changes == perIteration, "the observer saw \(changes) row changes for \(perIteration) updates")
            fixture.store.generator = generator
            fixture.store.round += 1
        } setup: {
            observed.value = ViewStore(label: "observed-\(name)", rows: 0..<rows, views: [byPriority(), byState()],
                                       durability: durability, observe: true)
        } teardown: {
            observed.value = nil
        }

        let raw = Fixture<RawStore>()
        Benchmark("update-2-views-observed-\(name) raw", configuration: updates) { benchmark in
            let store = raw.value!
            benchmark.startMeasurement()
            store.environment.smallTransactions(perIteration, generator: &store.generator, round: store.round)
            benchmark.stopMeasurement()
            store.round += 1
        } setup: {
            raw.value = RawStore(label: "observed-\(name)", flags: flags, populated: true)
        } teardown: {
            raw.value = nil
        }
    }

    // MARK: The `.none` observed update with eight views instead of two (same observer over "by-priority"): what each
    // further view costs (a report line: "update-8-views canopy" / "update-2-views-observed-none canopy").

    let eightViews = Fixture<ViewStore>()
    Benchmark("update-8-views canopy", configuration: updates) { benchmark in
        let fixture = eightViews.value!
        let observer = fixture.observer!
        var generator = fixture.store.generator
        let round = fixture.store.round
        var changes = 0
        benchmark.startMeasurement()
        for _ in 0..<ViewWorkload.updatesPerIteration {
            try fixture.update(Int(generator.next() % UInt64(rows)), round: round)
            changes += try observer.advance().rowChanges.count
        }
        benchmark.stopMeasurement()
        precondition(changes == ViewWorkload.updatesPerIteration, "the observer saw \(changes) row changes")
        fixture.store.generator = generator
        fixture.store.round += 1
    } setup: {
        eightViews.value = ViewStore(label: "observed-8", rows: 0..<rows,
                                     views: [byPriority(), byState()] + ViewWorkload.sixMore(),
                                     durability: .none, observe: true)
    } teardown: {
        eightViews.value = nil
    }

    // MARK: The `.none` observed update with the opt-in write map (DatabaseOptions.writeMap), against the same raw
    // one-put commits: what writing pages in place saves (a report line).

    let writeMapped = Fixture<ViewStore>()
    Benchmark("update-2-views-observed-none-writemap canopy", configuration: updates) { benchmark in
        let fixture = writeMapped.value!
        let observer = fixture.observer!
        var generator = fixture.store.generator
        let round = fixture.store.round
        var changes = 0
        benchmark.startMeasurement()
        for _ in 0..<ViewWorkload.updatesPerIteration {
            try fixture.update(Int(generator.next() % UInt64(rows)), round: round)
            changes += try observer.advance().rowChanges.count
        }
        benchmark.stopMeasurement()
        precondition(changes == ViewWorkload.updatesPerIteration, "the observer saw \(changes) row changes")
        fixture.store.generator = generator
        fixture.store.round += 1
    } setup: {
        writeMapped.value = ViewStore(label: "observed-writemap", rows: 0..<rows, views: [byPriority(), byState()],
                                      durability: .none, observe: true, writeMap: true)
    } teardown: {
        writeMapped.value = nil
    }

    // MARK: The same observed update, through Canopy and through GRDB's ValueObservation (same iteration size).

    let grdbCanopy = Fixture<ViewStore>()
    Benchmark("observed-update-vs-grdb canopy", configuration: updates) { benchmark in
        let fixture = grdbCanopy.value!
        let observer = fixture.observer!
        let round = fixture.store.round
        benchmark.startMeasurement()
        for step in 0..<ViewWorkload.grdbUpdatesPerIteration {
            try fixture.update((round * 7_919 + step * 104_729) % rows, round: round)
            blackHole(try observer.advance())
        }
        benchmark.stopMeasurement()
        fixture.store.round += 1
    } setup: {
        grdbCanopy.value = ViewStore(label: "vs-grdb", rows: 0..<rows, views: [byPriority(), byState()],
                                     durability: .none, observe: true)
    } teardown: {
        grdbCanopy.value = nil
    }

    let grdb = Fixture<GRDBStore>()
    Benchmark("observed-update-vs-grdb grdb", configuration: updates) { benchmark in
        let store = grdb.value!
        let round = store.round
        benchmark.startMeasurement()
        for step in 0..<ViewWorkload.grdbUpdatesPerIteration {
            try store.updateAndWait((round * 7_919 + step * 104_729) % rows, round: round)
        }
        benchmark.stopMeasurement()
        store.round += 1
    } setup: {
        grdb.value = try GRDBStore(rows: rows)
    } teardown: {
        grdb.value = nil
    }

    // MARK: Changeset cost of one change in a 10k-row group / in a 300-row group / in a 10k-row group through a window.

    // The same with the group shown through a flexible window of its last 100 rows (at most 150) whose cells depend
    // on both neighbours, in a 10k-row group and in a 300-row group: the same mappings at two sizes.
    let flexibleMappings: ViewMappings = {
        var mappings = ViewMappings(groups: ["all"], view: "single")
        mappings.setOptions(.init(range: .flexible(.init(length: 100, from: .end, maxLength: 150, growth: .both)),
                                  drawingDependencies: [-1, 1]), forGroup: "all")
        return mappings
    }()
    let changesetCases: [(label: String, size: Int, mappings: ViewMappings?)] = [
        ("group-10000", 10_000, nil), ("group-300", 300, nil), ("group-flexible-10000", 10_000, flexibleMappings),
        ("group-flexible-300", 300, flexibleMappings),
    ]
    for (label, size, mappings) in changesetCases {
        let fixture = Fixture<ViewStore>()
        Benchmark("changeset-\(label) canopy", configuration: .init(metrics: [.wallClock, .throughput], warmupIterations: 10,
                                                                         maxDuration: .seconds(2), maxIterations: 2_000)) { benchmark in
            let store = fixture.value!
            let round = store.store.round
            // Move one row of the group to another place in it (its id sorts it).
            var record = Workload.records[round % size]
            record.id = (round * 7_919) % size
            try store.store.connection.readWrite { txn in try txn.set(record, forKey: Workload.key(round % size), in: store.store.collection) }
            benchmark.startMeasurement()
            let changes = try store.observer!.advance()
            benchmark.stopMeasurement()
            blackHole(changes)
            store.store.round += 1
        } setup: {
            fixture.value = ViewStore(label: "changeset-\(label)", rows: 0..<size, views: [ViewWorkload.single()], durability: .none, observe: true,
                                      mappings: mappings)
        } teardown: {
            fixture.value = nil
        }
    }

    // MARK: Per-insert cost with 1M rows in the view / with 10k rows (single-row transactions, no sync).

    for (label, count) in [("1m", ViewWorkload.largeRowCount), ("10k", 10_000)] {
        let fixture = Fixture<ViewStore>()
        Benchmark("insert-in-view-\(label) canopy", configuration: updates) { benchmark in
            let store = fixture.value!
            let start = count + store.store.round * ViewWorkload.insertsPerIteration
            let collection = store.store.collection
            benchmark.startMeasurement()
            for index in start..<(start + ViewWorkload.insertsPerIteration) {
                let record = Workload.record(index % rows)
                try store.store.connection.readWrite { txn in try txn.set(record, forKey: Workload.key(index), in: collection) }
            }
            benchmark.stopMeasurement()
            store.store.round += 1
        } setup: {
            fixture.value = ViewStore(label: "insert-\(label)", rows: 0..<count, views: [byPriority()], durability: .none, observe: false)
        } teardown: {
            fixture.value = nil
        }
    }

    // MARK: Population of a view over 1M rows / bulk insert of the same rows without views.

    let populated = Fixture<CanopyStore>()
    Benchmark("population-1m view", configuration: large) { benchmark in
        let store = populated.value!
        let view = byPriority()
        try measureLong(benchmark, "population-1m view") {
            try store.database.register(view)
        }
        precondition(view.lastPopulation?.rowsIndexed == ViewWorkload.largeRowCount, "population indexed \(view.lastPopulation.map { "\($0.rowsIndexed)" } ?? "nothing")")
        try store.database.unregisterExtension(named: view.name, dropStorage: true)
    } setup: {
        let store = CanopyStore(label: "population", cacheLimit: 0, populated: false, durability: .none)
        try ViewWorkload.load(store.connection, store.collection, 0..<ViewWorkload.largeRowCount)
        populated.value = store
    } teardown: {
        if let store = populated.value {
            try? reportEntryBytes(store)
        }
        populated.value = nil
    }

    // MARK: Registration of an unchanged, current view over 1M rows: a read that spot-checks the closures.

    let registered = Fixture<CanopyStore>()
    let checks = Benchmark.Configuration(metrics: [.wallClock, .throughput], warmupIterations: 1, maxDuration: .seconds(20), maxIterations: 10)
    Benchmark("registration-check-1m canopy", configuration: checks) { benchmark in
        let store = registered.value!
        try store.reopen()  // as an app starting: nothing registered, no page directory in memory
        let view = byPriority()
        benchmark.startMeasurement()
        let outcome = try store.database.register(view)
        benchmark.stopMeasurement()
        precondition(outcome == .current, "the registration of an unchanged view was not a read: \(outcome)")
    } setup: {
        let store = CanopyStore(label: "registration-check", cacheLimit: 0, populated: false, durability: .none)
        try ViewWorkload.load(store.connection, store.collection, 0..<ViewWorkload.largeRowCount)
        try store.database.register(byPriority())
        registered.value = store
    } teardown: {
        registered.value = nil
    }

    Benchmark("population-1m insert", configuration: large) { benchmark in
        let store = CanopyStore(label: "population-insert", cacheLimit: 0, populated: false, durability: .none)
        let collection = store.collection
        let records = (0..<ViewWorkload.largeRowCount).map { (Workload.key($0), Workload.record($0 % rows)) }
        try measureLong(benchmark, "population-1m insert") {
            try store.connection.readWrite { txn in
                for (key, record) in records { try txn.set(record, forKey: key, in: collection) }
            }
        }
        store.close()
    }
}

/// Registers "by-priority" over the store's rows and writes the bytes each entry takes beyond the entry's key
/// (collection id and key: 4 + 16 bytes) to ``ViewWorkload/entryBytesReport``: all pages of the view's LMDB databases
/// (`ext.by-priority.*`) plus what the rows' records (`canopy.objects`) grew by when the view attached its entries to
/// them, times the page size, divided by the entries.
func reportEntryBytes(_ store: CanopyStore) throws {
    func pages(_ tables: [String]) throws -> Int {
        try store.database.environment.read { txn in
            try tables.reduce(0) { total, table in
                let stats = try txn.statistics(of: try txn.openDatabase(named: table))
                return total + (stats.branchPages + stats.leafPages + stats.overflowPages) * stats.pageSize
            }
        }
    }
    let objectsBefore = try pages(["canopy.objects"])
    try store.database.register(byPriority())
    let entries = try store.connection.read { txn in try txn.view("by-priority").count() }
    let bytes = try pages(["ext.by-priority.pages", "ext.by-priority.groups"]) + (try pages(["canopy.objects"]) - objectsBefore)
    let perEntry = Double(bytes) / Double(max(1, entries)) - 20
    try "\(perEntry) \(entries) \(bytes)\n".write(toFile: ViewWorkload.entryBytesReport, atomically: true, encoding: .utf8)
}
