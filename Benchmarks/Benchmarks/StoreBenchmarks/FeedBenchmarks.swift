import Benchmark
import Canopy
import LMDB

// The durable change feed (issue 18, item 6):
//
// - "feed-commit feed" / "feed-commit plain": 1,000 one-row commits (unsynced) on a populated database, with the
//   change feed enabled (each commit also records the row's bytes in `canopy.feed`) and without. `ratios.py`:
//   feed-commit-overhead = feed / plain, target 1.2.
// - "feed-read-100k canopy" / "feed-read-100k raw": the feed of 100,000 one-row commits read in order, through
//   `Database.readChanges` (decoded records: keys, codec name, value bytes) and through a raw LMDB cursor over the
//   commit log touching each feed record's bytes. Reported, no target.

enum FeedWorkload {
    static let commitsPerIteration = 1_000
    static let feedCommits = 100_000
}

func feedBenchmarks() {
    let transactions = Benchmark.Configuration(
        metrics: [.wallClock, .throughput, .mallocCountTotal], warmupIterations: 2, maxDuration: .seconds(2), maxIterations: 300)
    let reads = Benchmark.Configuration(
        metrics: [.wallClock, .throughput, .mallocCountTotal], warmupIterations: 1, maxDuration: .seconds(4), maxIterations: 50)

    for (name, feed) in [("feed", true), ("plain", false)] {
        let fixture = Fixture<CanopyStore>()
        Benchmark("feed-commit \(name)", configuration: transactions) { benchmark in
            let store = fixture.value!
            let (keys, records, collection) = (Workload.keys, Workload.records, store.collection)
            var generator = store.generator
            let count = FeedWorkload.commitsPerIteration
            let round = store.round
            benchmark.startMeasurement()
            for j in 0..<count {
                let index = Int(generator.next() % UInt64(Workload.rowCount))
                var record = records[index]
                record.priority = round * count + j + 1
                try store.connection.readWrite { txn in try txn.set(record, forKey: keys[index], in: collection) }
            }
            benchmark.stopMeasurement()
            store.generator = generator
            store.round += 1
        } setup: {
            let store = CanopyStore(label: "feed-commit-\(name)", cacheLimit: ConnectionOptions().objectCacheLimit, populated: true,
                                    durability: .none)
            if feed { try store.database.enableChangeFeed() }
            fixture.value = store
        } teardown: {
            fixture.value = nil
        }
    }

    let readFixture = Fixture<CanopyStore>()
    let start = Fixture<Box<UInt64>>()
    Benchmark("feed-read-100k canopy", configuration: reads) { benchmark in
        let store = readFixture.value!
        benchmark.startMeasurement()
        let commits = try store.database.readChanges(since: start.value!.value, limit: FeedWorkload.feedCommits)
        benchmark.stopMeasurement()
        precondition(commits.count == FeedWorkload.feedCommits, "read \(commits.count) commits of \(FeedWorkload.feedCommits)")
    } setup: {
        (readFixture.value, start.value) = try feedStore(label: "feed-read-canopy")
    } teardown: {
        readFixture.value = nil
    }

    let rawFixture = Fixture<CanopyStore>()
    Benchmark("feed-read-100k raw", configuration: reads) { benchmark in
        let store = rawFixture.value!
        benchmark.startMeasurement()
        let (count, bytes) = try store.database.environment.read { txn in
            // The feed's records sit in the commit log: key = snapshot (8 bytes) + "F".
            let table = try txn.openDatabase(named: "canopy.commits")
            var count = 0
            var bytes = 0
            try txn.forEach(in: table) { key, value in
                guard key.count == 9 else { return true }
                count += 1
                for byte in value { bytes &+= Int(byte) }
                return true
            }
            return (count, bytes)
        }
        benchmark.stopMeasurement()
        blackHole(bytes)
        precondition(count >= FeedWorkload.feedCommits, "read \(count) records")
    } setup: {
        (rawFixture.value, _) = try feedStore(label: "feed-read-raw")
    } teardown: {
        rawFixture.value = nil
    }
}

final class Box<Value> {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// A database whose feed holds 100,000 one-row commits (a consumer registered before them holds them all).
private func feedStore(label: String) throws -> (CanopyStore, Box<UInt64>) {
    let store = CanopyStore(label: label, cacheLimit: 0, populated: false, durability: .none)
    let start = try store.database.enableChangeFeed()
    try store.database.registerFeedConsumer(named: "bench", after: start)
    let (keys, records, collection) = (Workload.keys, Workload.records, store.collection)
    for commit in 0..<FeedWorkload.feedCommits {
        let index = commit % Workload.rowCount
        try store.connection.readWrite { txn in try txn.set(records[index], forKey: keys[index], in: collection) }
    }
    return (store, Box(start))
}
