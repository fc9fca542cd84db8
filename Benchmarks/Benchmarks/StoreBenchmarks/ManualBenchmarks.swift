import Benchmark
import Canopy
import Foundation

// Manual views (issue 20 item 4): the cost of moving one row of a user-ordered list, in a 1M-row list and in a
// 10k-row list (`manual-move-1m-vs-10k` in ratios.py: a move costs about log(list size), so the ratio stays small).
//
// Both lists are measured as an app finds them when it opens its database: the fill synced, the database closed, the
// data file dropped from the kernel's page cache and opened again (the first iteration, a warm-up, faults most of the
// list back in). Right after filling a list the same process pays more for every small commit, at 1M rows: the fill's
// own writes left the file's page cache in large folios (LMDB writes a big commit's contiguous pages 64 at a time),
// and each later one-page `pwrite` into such a folio walks the buffer heads of all its blocks, cold in a 346 MB file.
// That state is measured too, as `manual-move-after-fill-*` (reported, not a target): see the manual view's DocC
// article, "What a move costs".

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

    /// A store whose list holds `count` rows; unless `afterFill`, synced, evicted from the page cache and opened
    /// again (the list registered again, as an app does at launch).
    static func store(_ label: String, count: Int, afterFill: Bool) throws -> ViewStore {
        let store = ViewStore(label: label, rows: 0..<count, views: [list()], durability: .none, observe: false)
        try fill(store.store, count: count)
        if !afterFill {
            try store.store.database.sync()
            try store.store.reopen(evictingPageCache: true)
            try store.store.database.register(list())
        }
        return store
    }
}

func manualBenchmarks() {
    let moves = Benchmark.Configuration(metrics: [.wallClock, .throughput], warmupIterations: 1,
                                        maxDuration: .seconds(3), maxIterations: 200)
    for afterFill in [false, true] {
        for (label, count) in [("1m", ViewWorkload.largeRowCount), ("10k", 10_000)] {
            let fixture = Fixture<ViewStore>()
            let name = afterFill ? "manual-move-after-fill-\(label)" : "manual-move-\(label)"
            Benchmark("\(name) canopy", configuration: moves) { benchmark in
                let store = fixture.value!
                var random = SystemRandomNumberGenerator()
                let pairs = (0..<ManualWorkload.movesPerIteration).map { _ in (Int.random(in: 0..<count, using: &random), Int.random(in: 0..<count, using: &random)) }
                benchmark.startMeasurement()
                for (from, to) in pairs {
                    try store.store.connection.readWrite { txn in try txn.manualList("manual").move(from: from, to: to) }
                }
                benchmark.stopMeasurement()
            } setup: {
                fixture.value = try ManualWorkload.store(name, count: count, afterFill: afterFill)
            } teardown: {
                fixture.value = nil
            }
        }
    }
}
