import Benchmark
import Canopy
import Foundation

// Views whose rows are in many groups (issue 20 item 1): the cost of inserting a row that lands in 3 groups against
// one that lands in 1 (`multigroup-insert-vs-single`), and the changeset and 1M-vs-10k scaling lines of the one-group
// views, for a many-group view.

// (ManyGroupWorkload, the views, is in BenchViews.swift: InstructionCounts counts the same views.)

func manyGroupBenchmarks() {
    let updates = Benchmark.Configuration(metrics: [.wallClock, .throughput], warmupIterations: 1,
                                          maxDuration: .seconds(3), maxIterations: 200)
    let rows = Workload.rowCount

    // MARK: Per-insert cost: a row in 3 groups of a many-group view / a row in 1 group of a one-group view (10k rows).

    // The same single-row transactions as insert-in-view-10k; `multigroup-insert-1` is the one-group view of that line.
    for (label, view) in [("3", ManyGroupWorkload.threeGroups), ("1", byPriority)] {
        let fixture = Fixture<ViewStore>()
        Benchmark("multigroup-insert-\(label) canopy", configuration: updates) { benchmark in
            let store = fixture.value!
            let start = 10_000 + store.store.round * ViewWorkload.insertsPerIteration
            let collection = store.store.collection
            benchmark.startMeasurement()
            for index in start..<(start + ViewWorkload.insertsPerIteration) {
                let record = Workload.record(index % rows)
                try store.store.connection.readWrite { txn in try txn.set(record, forKey: Workload.key(index), in: collection) }
            }
            benchmark.stopMeasurement()
            store.store.round += 1
        } setup: {
            fixture.value = ViewStore(label: "multigroup-insert-\(label)", rows: 0..<10_000, views: [view()], durability: .none, observe: false)
        } teardown: {
            fixture.value = nil
        }
    }

    // MARK: Changeset cost of one change in a many-group view: "all" of 10k rows / of 300 rows (each row also in a
    // priority group, shown too).

    for (label, size) in [("group-10000", 10_000), ("group-300", 300)] {
        let fixture = Fixture<ViewStore>()
        Benchmark("changeset-multigroup-\(label) canopy", configuration: .init(metrics: [.wallClock, .throughput], warmupIterations: 10,
                                                                                maxDuration: .seconds(2), maxIterations: 2_000)) { benchmark in
            let store = fixture.value!
            let round = store.store.round
            // Move one row to another place in "all" (its id sorts it), and in its priority group.
            var record = Workload.records[round % size]
            record.id = (round * 7_919) % size
            try store.store.connection.readWrite { txn in try txn.set(record, forKey: Workload.key(round % size), in: store.store.collection) }
            benchmark.startMeasurement()
            let changes = try store.observer!.advance()
            benchmark.stopMeasurement()
            blackHole(changes)
            store.store.round += 1
        } setup: {
            fixture.value = ViewStore(label: "changeset-multigroup-\(label)", rows: 0..<size, views: [ManyGroupWorkload.allAndPriority()],
                                      durability: .none, observe: true)
        } teardown: {
            fixture.value = nil
        }
    }

    // MARK: Per-insert cost with 1M rows in the many-group view / with 10k rows (each row in 3 groups).

    for (label, count) in [("1m", ViewWorkload.largeRowCount), ("10k", 10_000)] {
        let fixture = Fixture<ViewStore>()
        Benchmark("insert-in-multigroup-view-\(label) canopy", configuration: updates) { benchmark in
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
            fixture.value = ViewStore(label: "insert-multigroup-\(label)", rows: 0..<count, views: [ManyGroupWorkload.threeGroups()],
                                      durability: .none, observe: false)
        } teardown: {
            fixture.value = nil
        }
    }
}
