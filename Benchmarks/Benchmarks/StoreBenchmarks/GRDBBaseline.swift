import Dispatch
import Foundation
import Benchmark
import GRDB

/// The GRDB side of the observed-update comparison: the records in an SQLite table with an index for each of the two
/// Canopy views, and a `ValueObservation` of the query that lists the first view's rows in order (`ORDER BY grp,
/// created`) — what a GRDB app does to keep a grouped, sorted list up to date. Synchronous off, like Canopy's
/// `.none` durability on the other side.
final class GRDBStore {
    let directory: TemporaryDirectory
    let queue: DatabaseQueue
    private var cancellable: AnyDatabaseCancellable?
    private let delivered = DispatchSemaphore(value: 0)
    var round = 0

    init(rows: Int) throws {
        directory = TemporaryDirectory("grdb")
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = OFF") }
        queue = try DatabaseQueue(path: directory.child("db.sqlite"), configuration: configuration)
        try queue.write { db in
            try db.execute(sql: """
                CREATE TABLE items(id TEXT PRIMARY KEY, grp INTEGER NOT NULL, created REAL NOT NULL, title TEXT NOT NULL,
                                   note TEXT NOT NULL, done INTEGER NOT NULL);
                CREATE INDEX items_by_priority ON items(grp, created);
                CREATE INDEX items_by_state ON items(done, title);
                """)
            let insert = try db.makeStatement(sql: "INSERT INTO items VALUES (?, ?, ?, ?, ?, ?)")
            for index in 0..<rows {
                let record = Workload.records[index]
                try insert.execute(arguments: [Workload.keys[index], record.priority, record.created.timeIntervalSinceReferenceDate,
                                               record.title, record.note, record.done])
            }
        }
        let observation = ValueObservation.tracking { db in
            try String.fetchAll(db, sql: "SELECT id FROM items ORDER BY grp, created")
        }
        let delivered = self.delivered
        cancellable = observation.start(
            in: queue, scheduling: .async(onQueue: DispatchQueue(label: "grdb-observation")),
            onError: { error in fatalError("GRDB observation failed: \(error)") },
            onChange: { ids in
                blackHole(ids.count)
                delivered.signal()
            })
        delivered.wait()  // the initial value
    }

    /// Updates row `index` as ``ViewStore/update(_:round:)`` does and waits until the observation delivers the list.
    func updateAndWait(_ index: Int, round: Int) throws {
        let record = Workload.records[index]
        try queue.write { db in
            try db.execute(
                sql: "UPDATE items SET grp = ?, created = ?, done = NOT done WHERE id = ?",
                arguments: [(record.priority + 1 + round) % 5, record.created.timeIntervalSinceReferenceDate + Double(round), Workload.keys[index]])
        }
        delivered.wait()
    }

    deinit {
        cancellable?.cancel()
    }
}
