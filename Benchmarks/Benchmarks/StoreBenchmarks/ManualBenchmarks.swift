import Benchmark
import Canopy
import Foundation

// Manual views (issue 20 item 4): the cost of moving one row of a user-ordered list, in a 1M-row list and in a
// 10k-row list (`manual-move-1m-vs-10k` in ratios.py: a move costs about log(list size), so the ratio stays small).

enum ManualWorkload {
    /// Single-move transactions per measured iteration.
    static let movesPerIteration = 200

    /// A manual view over the records.
    static func list() -> View {
        ManualView.make(name: "manual", collections: [benchRecords.name])
    }

    /// Appends the first `count` records to the list, in their key order, 100k per transaction.
    static func fill(_ store: CanopyStore, count: Int) throws {
        for start in stride(from: 0, to: count, by: 100_000) {
            try store.connection.readWrite { txn in
                let list = try txn.manualList("manual")
                for index in start..<min(count, start + 100_000) {
                    try list.append(key: Workload.key(index), inCollection: store.collection.name)
                }
            }
        }
    }
}

func manualBenchmarks() {
    let moves = Benchmark.Configuration(metrics: [.wallClock, .throughput], warmupIterations: 1,
                                        maxDuration: .seconds(3), maxIterations: 200)
    for (label, count) in [("1m", ViewWorkload.largeRowCount), ("10k", 10_000)] {
        let fixture = Fixture<ViewStore>()
        Benchmark("manual-move-\(label) canopy", configuration: moves) { benchmark in
            let store = fixture.value!
            var random = SystemRandomNumberGenerator()
            let pairs = (0..<ManualWorkload.movesPerIteration).map { _ in (Int.random(in: 0..<count, using: &random), Int.random(in: 0..<count, using: &random)) }
            benchmark.startMeasurement()
            for (from, to) in pairs {
                try store.store.connection.readWrite { txn in try txn.manualList("manual").move(from: from, to: to) }
            }
            benchmark.stopMeasurement()
        } setup: {
            let store = ViewStore(label: "manual-\(label)", rows: 0..<count, views: [ManualWorkload.list()], durability: .none, observe: false)
            try ManualWorkload.fill(store.store, count: count)
            fixture.value = store
        } teardown: {
            fixture.value = nil
        }
    }
}
