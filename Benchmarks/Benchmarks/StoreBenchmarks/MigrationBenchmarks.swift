import Benchmark
import Canopy
import Foundation

// Model evolution: a typed migration step over 1M rows against the bulk rewrite an app would write by hand (read each
// row, change it, write it back, in transactions of the migrator's batch size). Both change `done` on every row, so
// each iteration rewrites all of them. `ratios.py`'s line migration-1m-vs-bulk divides the two (target 1.5).

func migrationBenchmarks() {
    let large = Benchmark.Configuration(metrics: [.wallClock, .throughput], warmupIterations: 0,
                                        maxDuration: .seconds(30), maxIterations: 3)
    let rows = ViewWorkload.largeRowCount
    let batch = Migrator().batchSize

    let stepStore = Fixture<CanopyStore>()
    Benchmark("migration-1m step", configuration: large) { benchmark in
        let store = stepStore.value!
        store.round += 1
        // A new step each iteration (a step is applied once per database).
        var migrator = Migrator()
        migrator.append(.typed("flip-done-\(store.round)", collection: store.collection.name, from: BenchRecord.self, to: BenchRecord.self) { _, old in
            var record = old
            record.done.toggle()
            return record
        })
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
        try measureLong(benchmark, "migration-1m bulk") {
            var after: String?
            var done = false
            while !done {
                try store.connection.readWrite { txn in
                    let keys = try txn.keys(inCollection: collection.name, after: after, limit: batch)
                    for key in keys {
                        guard var record = try txn.object(forKey: key, in: collection) else { continue }
                        record.done.toggle()
                        try txn.set(record, forKey: key, in: collection)
                    }
                    after = keys.last
                    done = keys.count < batch
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
