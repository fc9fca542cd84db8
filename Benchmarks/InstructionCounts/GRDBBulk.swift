import Foundation
import GRDB

// The GRDB side of `bulk-insert-grdb-vs-canopy` (in a file of its own: GRDB and Canopy both name a type `Database`):
// StoreBenchmarks' "bulk-insert-grdb grdb", counted as `count.sh bulk-insert-grdb`.

/// The 100,000 records inserted in random order in one transaction into an SQLite table with one index per view of
/// `bulk-insert-2-views` (PeerBenchmarks.swift's schema), synced as GRDB's default and the Canopy side's `.full`.
func bulkInsertGRDB(iterations: Int) throws {
    func insert(_ order: ArraySlice<Int>, measuring: Bool) throws {
        let directory = TemporaryDirectory("grdb-bulk")
        defer { directory.remove() }
        let queue = try DatabaseQueue(path: directory.child("db.sqlite"))
        try queue.write { db in try db.execute(sql: grdbBulkSchema) }
        let (keys, records) = (Workload.keys, Workload.records)
        let body = {
            try queue.write { db in
                let insert = try db.makeStatement(sql: "INSERT INTO items VALUES (?, ?, ?, ?, ?, ?)")
                for index in order {
                    let record = records[index]
                    try insert.execute(arguments: [keys[index], record.priority, record.created.timeIntervalSinceReferenceDate,
                                                   record.title, record.note, record.done])
                }
            }
        }
        if measuring { try measured(body) } else { try body() }
        let count = try queue.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM items") }
        guard count == order.count else { throw DriverError("GRDB holds \(count ?? 0) rows of \(order.count)") }
    }
    try insert(Workload.permutation.prefix(1_000), measuring: false)  // warm-up
    for _ in 0..<iterations { try insert(Workload.permutation[...], measuring: true) }
}

/// PeerBenchmarks' `PeerWorkload.schema` (that file also holds the Canopy side, which this driver has its own of).
let grdbBulkSchema = """
    CREATE TABLE items(id TEXT PRIMARY KEY, grp INTEGER NOT NULL, created REAL NOT NULL, title TEXT NOT NULL,
                       note TEXT NOT NULL, done INTEGER NOT NULL);
    CREATE INDEX items_by_priority ON items(grp, created);
    CREATE INDEX items_by_state ON items(done, title);
    """
