@_spi(Benchmarks) import CanopyCore
import Canopy
import Foundation

// The many-group lines of ManyGroupBenchmarks, counted: single-row inserts into a view whose rows land in 3 groups
// against a one-group view (`multigroup-insert-3` / `-1`, 10k rows), the same in 1M and 10k-row many-group views
// (`insert-multigroup-1m` / `-10k`), and one change's changeset in a many-group view (`changeset-multigroup-10000` /
// `-300`).

/// A `.none` store holding rows `0..<rows` (the benchmarks' `Workload.record`/`key`), with `view` registered after
/// the load and, with `mappings`, an observer. With MANY_GROUPS_DATABASE=DIR, the loaded store is kept in DIR-<label>
/// and copied from there by later runs (a million rows under callgrind take an hour on a loaded machine).
func loadedViewStore(_ label: String, rows: Int, view: View, mappings: ViewMappings? = nil)
    throws -> (Database, Connection, ViewObserver?, TemporaryDirectory)
{
    let saved = ProcessInfo.processInfo.environment["MANY_GROUPS_DATABASE"].map { "\($0)-\(label)" }
    let directory = TemporaryDirectory(label)
    if let saved, FileManager.default.fileExists(atPath: saved) {
        try FileManager.default.copyItem(atPath: saved, toPath: directory.child("db"))
    }
    let database = try Database(path: directory.child("db"), options: storeOptions(durability: .none))
    if try database.newConnection().read({ txn in try txn.count(inCollection: benchRecords.name) }) == 0 {
        let loader = database.newConnection(options: ConnectionOptions(objectCacheLimit: 0, metadataCacheLimit: 0))
        for start in stride(from: 0, to: rows, by: 100_000) {
            try loader.readWrite { txn in
                for index in start..<min(rows, start + 100_000) {
                    try txn.set(Workload.record(index), forKey: Workload.key(index), in: benchRecords)
                }
            }
        }
    }
    try database.register(view)
    if let saved, !FileManager.default.fileExists(atPath: saved) { try FileManager.default.copyItem(atPath: directory.child("db"), toPath: saved) }
    let observer = try mappings.map { try ViewObserver(database: database, mappings: $0) }
    return (database, database.newConnection(), observer, directory)
}

/// Single-row insert transactions into a store of `rows` rows with `view`, 200 per iteration (keys after the loaded
/// rows, records cycling through the workload's), as `multigroup-insert-*` and `insert-in-multigroup-view-*`.
func singleRowInserts(_ label: String, rows: Int, view: @escaping () -> View) -> (Int) throws -> Void {
    { iterations in
        let (database, connection, _, directory) = try loadedViewStore(label, rows: rows, view: view())
        defer { withExtendedLifetime((database, directory)) {} }
        for round in -1..<iterations {  // -1: warm-up
            let start = rows + (round + 1) * 200
            // (The measured closure also counts the batches: without it, its specialization of `measured` had the
            // same code as another workload's, the two were merged, and callgrind collected nothing.)
            if round >= 0 {
                try measured {
                    try insertRows(connection, from: start)
                    insertBatches += 1
                }
            } else {
                try insertRows(connection, from: start)
            }
        }
    }
}

/// Measured batches of ``insertRows(_:from:)``.
nonisolated(unsafe) var insertBatches = 0

/// 200 single-row insert transactions, keys from `start`.
func insertRows(_ connection: Connection, from start: Int) throws {
    for index in start..<(start + 200) {
        let record = Workload.record(index % Workload.rowCount)
        try connection.readWrite { txn in try txn.set(record, forKey: Workload.key(index), in: benchRecords) }
    }
}

/// One row moved within "all" (and maybe its priority group) of `all-and-priority` per commit, and only the
/// observer's advance measured: `changeset-multigroup-group-<size>`, 200 changesets per iteration.
func multigroupChangesets(size: Int) -> (Int) throws -> Void {
    { iterations in
        let view = ManyGroupWorkload.allAndPriority()
        let (database, connection, observer, directory) = try loadedViewStore(
            "changeset-multigroup-\(size)", rows: size, view: view, mappings: ViewMappings(view: view.name, groupFilter: { _ in true }))
        defer { withExtendedLifetime((database, directory)) {} }
        guard let observer else { throw DriverError("no observer") }
        var round = 0
        for iteration in -1..<iterations {  // -1: warm-up
            for _ in 0..<200 {
                var record = Workload.records[round % size]
                record.id = (round * 7_919) % size
                try connection.readWrite { txn in try txn.set(record, forKey: Workload.key(round % size), in: benchRecords) }
                var changes: ViewChangeset?
                if iteration >= 0 { try measured { changes = try observer.advance() } } else { changes = try observer.advance() }
                withExtendedLifetime(changes) {}
                round += 1
            }
        }
    }
}
