import Benchmark
import Canopy
import Foundation
import GRDB

// Read workloads against GRDB (issue "Write path v4", item 4), in the same run as Canopy's:
//
// - "full-scan-grdb grdb": every row of a 100k-row SQLite table decoded into a struct, through a GRDB record cursor
//   (`FetchableRecord` by `Codable`, as GRDB's documentation recommends). `ratios.py` divides it by "full-scan canopy"
//   (the typed scan of the same records, cache off).
// - "point-read-grdb grdb": 10,000 random primary-key fetches of a decoded record in one read transaction
//   (`fetchOne(db, key:)`), divided by "point-read-cache-miss canopy" (typed reads, cache off).
//
// Both sides decode the same six fields through a synthesized `Decodable`. GRDB's table has the columns of
// ``BenchRecord`` (`grp` for its priority, `created` as seconds since the reference date) and its primary key only.

/// The GRDB side's record: the columns of `PeerWorkload.schema`'s table.
struct GRDBItem: Codable, FetchableRecord, TableRecord {
    static let databaseTableName = "items"
    var id: String
    var grp: Int
    var created: Double
    var title: String
    var note: String
    var done: Bool
}

/// An SQLite database holding every workload row in a table without secondary indexes.
final class GRDBReadStore {
    let directory: TemporaryDirectory
    let queue: DatabaseQueue
    var generator = XorShift()

    init() throws {
        directory = TemporaryDirectory("grdb-read")
        queue = try DatabaseQueue(path: directory.child("db.sqlite"))
        try queue.write { db in
            try db.execute(sql: """
                CREATE TABLE items(id TEXT PRIMARY KEY, grp INTEGER NOT NULL, created REAL NOT NULL, title TEXT NOT NULL,
                                   note TEXT NOT NULL, done INTEGER NOT NULL);
                """)
            let insert = try db.makeStatement(sql: "INSERT INTO items VALUES (?, ?, ?, ?, ?, ?)")
            for index in Workload.permutation {
                let record = Workload.records[index]
                try insert.execute(arguments: [Workload.keys[index], record.priority, record.created.timeIntervalSinceReferenceDate,
                                               record.title, record.note, record.done])
            }
        }
    }

    deinit { directory.remove() }
}

func readPeerBenchmarks() {
    let reads = Benchmark.Configuration(metrics: [.wallClock, .throughput], warmupIterations: 3,
                                        maxDuration: .seconds(2), maxIterations: 1_000)
    let scans = Benchmark.Configuration(metrics: [.wallClock, .throughput], warmupIterations: 2,
                                        maxDuration: .seconds(2), maxIterations: 200)
    let rows = UInt64(Workload.rowCount)

    let scanStore = Fixture<GRDBReadStore>()
    Benchmark("full-scan-grdb grdb", configuration: scans) { benchmark in
        let store = scanStore.value!
        var count = 0
        // (Timed also by `measureLong`: an iteration past about 2 s on a loaded machine would drop out of the JMH
        // export, and `ratios.py` would miss the line.)
        try measureLong(benchmark, "full-scan-grdb grdb") {
            try store.queue.read { db in
                let items = try GRDBItem.fetchCursor(db)
                while let item = try items.next() {
                    blackHole(item)
                    count += 1
                }
            }
        }
        precondition(count == Workload.rowCount, "scanned \(count) rows of \(Workload.rowCount)")
    } setup: {
        scanStore.value = try GRDBReadStore()
    } teardown: {
        scanStore.value = nil
    }

    let pointStore = Fixture<GRDBReadStore>()
    Benchmark("point-read-grdb grdb", configuration: reads) { benchmark in
        let store = pointStore.value!
        let keys = Workload.keys
        var generator = store.generator
        var missing = 0
        try measureLong(benchmark, "point-read-grdb grdb") {
            try store.queue.read { db in
                for _ in 0..<Workload.readsPerIteration {
                    let index = Int(generator.next() % rows)
                    if let item = try GRDBItem.fetchOne(db, key: keys[index]) {
                        blackHole(item)
                    } else {
                        missing += 1
                    }
                }
            }
        }
        store.generator = generator
        precondition(missing == 0, "\(missing) rows not found")
    } setup: {
        pointStore.value = try GRDBReadStore()
    } teardown: {
        pointStore.value = nil
    }
}
