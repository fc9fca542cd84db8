import Benchmark
import Canopy
import Foundation

// Model evolution: a typed migration step over 1M rows (read, decode as the old type, convert, encode, write; batches
// of 10,000 rows per commit) against a bulk rewrite of the same rows with values built beforehand (encode and write
// only, same batches). Both change `done` on every row, so each iteration rewrites all of them. `ratios.py`'s line
// migration-1m-vs-bulk divides the two (target 1.5).

func migrationBenchmarks() {
    let large = Benchmark.Configuration(metrics: [.wallClock, .throughput], warmupIterations: 0,
                                        maxDuration: .seconds(30), maxIterations: 3)
    let rows = ViewWorkload.largeRowCount
    let batch = Migrator().batchSize

    let stepStore = Fixture<CanopyStore>()
    Benchmark("migration-1m step", configuration: large) { benchmark in
        let store = stepStore.value!
        store.round += 1
        // A new step each iteration (a step is applied once per database), after those of the earlier iterations.
        var migrator = Migrator()
        for round in 1...store.round {
            migrator.append(.typed("flip-done-\(round)", collection: store.collection.name, from: BenchRecord.self, to: BenchRecord.self) { _, old in
                var record = old
                record.done.toggle()
                return record
            })
        }
        var applied: [AppliedMigration] = []
        try measureLong(benchmark, "migration-1m step") {
            applied = try migrator.migrate(store.database)
        }
        precondition(applied.first?.rows == rows, "the step rewrote \(applied.first.map { "\($0.rows)" } ?? "nothing") rows")
    } setup: {
        let store = CanopyStore(label: "migration-step", cacheLimit: 0, populated: false, durability: .none)
        try ViewWorkload.load(store.connection, store.collection, 0..<rows)
        stepStore.value = store
    } teardown: {
        stepStore.value = nil
    }

    let bulkStore = Fixture<CanopyStore>()
    Benchmark("migration-1m bulk", configuration: large) { benchmark in
        let store = bulkStore.value!
        let collection = store.collection
        store.round += 1
        // The same rows rewritten with values built beforehand: what writing them costs, without reading them.
        let round = store.round
        let records = (0..<rows).map { index in
            var record = Workload.record(index)
            record.done = (record.done != (round % 2 == 1))
            return (Workload.key(index), record)
        }
        try measureLong(benchmark, "migration-1m bulk") {
            for start in stride(from: 0, to: rows, by: batch) {
                try store.connection.readWrite { txn in
                    for (key, record) in records[start..<min(rows, start + batch)] { try txn.set(record, forKey: key, in: collection) }
                }
            }
        }
    } setup: {
        let store = CanopyStore(label: "migration-bulk", cacheLimit: 0, populated: false, durability: .none)
        try ViewWorkload.load(store.connection, store.collection, 0..<rows)
        bulkStore.value = store
    } teardown: {
        bulkStore.value = nil
    }
}
