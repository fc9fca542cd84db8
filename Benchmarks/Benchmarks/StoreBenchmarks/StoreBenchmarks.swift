import Benchmark
import CLMDBBench
import Canopy

// Each workload runs twice in one run, as a pair named "<workload> canopy" and "<workload> raw": through Canopy, and
// through LMDB's C API doing the same LMDB work. `ratios.py` turns the pairs' medians into the lines `make bench`
// ends with. Every benchmark runs in its own process (package-benchmark's rule), so its fixture is built in its setup
// hook, outside the measurement, and removed in its teardown.
//
// Sizes are in `Workload`; what one iteration does is in `ratios.py`'s table of operations per iteration.

/// The metrics of every benchmark: JMH export (which `ratios.py` reads) needs throughput next to wall clock.
private let metrics: [BenchmarkMetric] = [.wallClock, .throughput, .mallocCountTotal]

private func configuration(warmup: Int, iterations: Int, seconds: Int) -> Benchmark.Configuration {
    .init(metrics: metrics, warmupIterations: warmup, maxDuration: .seconds(seconds), maxIterations: iterations)
}

let benchmarks: @Sendable () -> Void = {
    let reads = configuration(warmup: 3, iterations: 1_000, seconds: 2)
    let bulk = configuration(warmup: 1, iterations: 8, seconds: 8)
    let syncedTransactions = configuration(warmup: 1, iterations: 8, seconds: 4)
    let unsyncedTransactions = configuration(warmup: 2, iterations: 300, seconds: 2)
    let scans = configuration(warmup: 2, iterations: 200, seconds: 2)
    let rows = UInt64(Workload.rowCount)

    // MARK: 1. Typed point read, cache miss: the connection's cache is off, every read decodes.

    // The same with the store's records without their CRC32C checksums (`checksum-cost-point-read`: the checks' cost).
    for (suffix, checksums) in [("canopy", true), ("no-checksums", false)] {
        let missStore = Fixture<CanopyStore>()
        Benchmark("point-read-cache-miss \(suffix)", configuration: reads) { benchmark in
            let store = missStore.value!
            let (keys, collection) = (Workload.keys, store.collection)
            var generator = store.generator
            var missing = 0
            benchmark.startMeasurement()
            try store.connection.read { txn in
                for _ in 0..<Workload.readsPerIteration {
                    let index = Int(generator.next() % rows)
                    if let object = try txn.object(forKey: keys[index], in: collection) {
                        blackHole(object)
                    } else {
                        missing += 1
                    }
                }
            }
            benchmark.stopMeasurement()
            store.generator = generator
            precondition(missing == 0, "\(missing) rows not found")
        } setup: {
            missStore.value = CanopyStore(label: "miss", cacheLimit: 0, populated: true, checksums: checksums)
        } teardown: {
            missStore.value = nil
        }
    }

    let missRaw = Fixture<RawStore>()
    Benchmark("point-read-cache-miss raw", configuration: reads) { benchmark in
        let store = missRaw.value!
        benchmark.startMeasurement()
        store.environment.pointReads(Workload.readsPerIteration, generator: &store.generator)
        benchmark.stopMeasurement()
    } setup: {
        missRaw.value = RawStore(label: "miss", flags: 0, populated: true)
    } teardown: {
        missRaw.value = nil
    }

    // MARK: 2. Typed point read, cache hit: a hot set of keys that the connection's cache holds.

    let hitStore = Fixture<CanopyStore>()
    Benchmark("point-read-cache-hit canopy", configuration: reads) { benchmark in
        let store = hitStore.value!
        let (keys, hot, collection) = (Workload.keys, Workload.hotRows, store.collection)
        var generator = store.generator
        var missing = 0
        benchmark.startMeasurement()
        try store.connection.read { txn in
            for _ in 0..<Workload.readsPerIteration {
                let index = hot[Int(generator.next() % UInt64(hot.count))]
                if let object = try txn.object(forKey: keys[index], in: collection) {
                    blackHole(object)
                } else {
                    missing += 1
                }
            }
        }
        benchmark.stopMeasurement()
        store.generator = generator
        precondition(missing == 0, "\(missing) rows not found")
    } setup: {
        let store = CanopyStore(label: "hit", cacheLimit: 2 * Workload.hotKeyCount, populated: true)
        try store.connection.read { txn in
            for index in Workload.hotRows { _ = try txn.object(forKey: Workload.keys[index], in: store.collection) }
        }
        precondition(store.connection.cachedCounts.objects == Workload.hotKeyCount, "the hot set is not all cached")
        hitStore.value = store
    } teardown: {
        if let store = hitStore.value {
            precondition(store.connection.cachedCounts.objects == Workload.hotKeyCount, "the cache lost hot rows")
        }
        hitStore.value = nil
    }

    let hitRaw = Fixture<RawStore>()
    Benchmark("point-read-cache-hit raw", configuration: reads) { benchmark in
        let store = hitRaw.value!
        let hot = Workload.hotRows
        benchmark.startMeasurement()
        store.environment.pointReads(Workload.readsPerIteration, generator: &store.generator, hotRows: hot)
        benchmark.stopMeasurement()
    } setup: {
        let store = RawStore(label: "hit", flags: 0, populated: true)
        var generator = XorShift()
        store.environment.pointReads(Workload.hotKeyCount, generator: &generator, hotRows: Workload.hotRows)
        hitRaw.value = store
    } teardown: {
        hitRaw.value = nil
    }

    // MARK: 3. Bulk insert of every row, in random order, in one transaction into a new database (synced commit).

    // Also without the records' checksums (`checksum-cost-bulk-insert`).
    for (suffix, checksums) in [("canopy", true), ("no-checksums", false)] {
        Benchmark("bulk-insert \(suffix)", configuration: bulk) { benchmark in
            let store = CanopyStore(label: "bulk", cacheLimit: ConnectionOptions().objectCacheLimit, populated: false, checksums: checksums)
            let (keys, records, order, collection) = (Workload.keys, Workload.records, Workload.permutation, store.collection)
            benchmark.startMeasurement()
            try store.connection.readWrite { txn in
                for index in order {
                    try txn.set(records[index], forKey: keys[index], in: collection)
                }
            }
            benchmark.stopMeasurement()
            store.close()
        } setup: {
            _ = (Workload.keys.count, Workload.records.count, Workload.permutation.count)
        }
    }

    Benchmark("bulk-insert raw", configuration: bulk) { benchmark in
        let store = RawStore(label: "bulk", flags: 0, populated: false)
        benchmark.startMeasurement()
        store.environment.insert(Workload.permutation)
        benchmark.stopMeasurement()
        store.close()
    } setup: {
        _ = Workload.permutation.count
    }

    // The codec's own share of the bulk insert: encoding every object once.
    Benchmark("bulk-insert encode", configuration: bulk) { benchmark in
        let codec = BinaryCodec()
        let (records, order) = (Workload.records, Workload.permutation)
        benchmark.startMeasurement()
        for index in order {
            blackHole(try codec.encode(records[index]))
        }
        benchmark.stopMeasurement()
    } setup: {
        // The workload is about 100-byte values: check that the codec still makes them so.
        let codec = BinaryCodec()
        let sample = try Workload.records.prefix(1_000).map { try codec.encode($0).count }
        let average = Double(sample.reduce(0, +)) / Double(sample.count)
        precondition((90...110).contains(average), "objects encode to \(average) bytes on average, not about 100")
    }

    // MARK: 4. Small write transactions: one row updated per transaction, per durability mode.

    for (name, durability, flags) in [
        ("full", Durability.full, Int32(0)),
        ("metadata-only", Durability.metadataOnly, Int32(MDB_NOMETASYNC)),
        ("none", Durability.none, Int32(MDB_NOSYNC)),
    ] {
        let config = durability == .none ? unsyncedTransactions : syncedTransactions
        let canopy = Fixture<CanopyStore>()
        Benchmark("small-write-txn-\(name) canopy", configuration: config) { benchmark in
            let store = canopy.value!
            let (keys, records, collection) = (Workload.keys, Workload.records, store.collection)
            var generator = store.generator
            let count = Workload.smallTransactionsPerIteration
            let round = store.round
            // Timed also by `measureLong`: 1,000 synced commits pass 2 s when the disk is slow (fsync of several ms),
            // and such an iteration drops out of the JMH export.
            try measureLong(benchmark, "small-write-txn-\(name) canopy") {
                for j in 0..<count {
                    let index = Int(generator.next() % rows)
                    var record = records[index]
                    record.priority = round * count + j + 1
                    try store.connection.readWrite { txn in
                        try txn.set(record, forKey: keys[index], in: collection)
                    }
                }
            }
            store.generator = generator
            store.round += 1
        } setup: {
            canopy.value = CanopyStore(label: "txn-\(name)", cacheLimit: ConnectionOptions().objectCacheLimit, populated: true,
                                       durability: durability)
        } teardown: {
            canopy.value = nil
        }

        let raw = Fixture<RawStore>()
        Benchmark("small-write-txn-\(name) raw", configuration: config) { benchmark in
            let store = raw.value!
            measureLong(benchmark, "small-write-txn-\(name) raw") {
                store.environment.smallTransactions(Workload.smallTransactionsPerIteration, generator: &store.generator,
                                                    round: store.round)
            }
            store.round += 1
        } setup: {
            raw.value = RawStore(label: "txn-\(name)", flags: flags, populated: true)
        } teardown: {
            raw.value = nil
        }
    }

    // MARK: 5. Full scan: every row of the collection, decoded (cache off), values only (the raw walk makes no keys
    // either; the keyed scan's extra cost per row is counted by InstructionCounts' `full-scan-keyed`).

    let scanStore = Fixture<CanopyStore>()
    Benchmark("full-scan canopy", configuration: scans) { benchmark in
        let store = scanStore.value!
        let collection = store.collection
        var count = 0
        benchmark.startMeasurement()
        try store.connection.read { txn in
            try txn.enumerateObjects(in: collection) { object in
                blackHole(object)
                count += 1
                return true
            }
        }
        benchmark.stopMeasurement()
        precondition(count == Workload.rowCount, "scanned \(count) rows of \(Workload.rowCount)")
    } setup: {
        scanStore.value = CanopyStore(label: "scan", cacheLimit: 0, populated: true)
    } teardown: {
        scanStore.value = nil
    }

    let scanRaw = Fixture<RawStore>()
    Benchmark("full-scan raw", configuration: scans) { benchmark in
        let store = scanRaw.value!
        benchmark.startMeasurement()
        let count = store.environment.scan()
        benchmark.stopMeasurement()
        precondition(count == Workload.rowCount, "scanned \(count) rows of \(Workload.rowCount)")
    } setup: {
        scanRaw.value = RawStore(label: "scan", flags: 0, populated: true)
    } teardown: {
        scanRaw.value = nil
    }

    viewBenchmarks()
    migrationBenchmarks()
    manualBenchmarks()
    manyGroupBenchmarks()
    searchBenchmarks()
    sourceBenchmarks()
    arrayDiffBenchmarks()
    peerBenchmarks()
    readPeerBenchmarks()
    feedBenchmarks()
}
