import CLMDBBench
import Canopy
import Foundation

// The per-commit workloads: one-row updates with the two views (observed or not), the observed window of
// PeerBenchmarks, and the raw one-put commit they are divided by. Their stores hold `updateRowCount` rows (fewer
// than the benchmarks' 100k, so that the population outside the measured part stays short under callgrind; a
// commit's cost depends on the B-trees' depth, which is the same).

/// Rows in the update workloads' stores.
let updateRowCount = 20_000
/// One-row updates per measured iteration (the benchmark's `ViewWorkload.updatesPerIteration`).
let updatesPerIteration = 100

/// A `.none`-durability store holding rows `0..<updateRowCount`, with the two views registered after the load (as
/// the benchmark's `ViewStore`), and an observer of "by-priority" through `mappings` (all groups when `nil`) when
/// `observed`. With COMPACT_AFTER_SETUP=1, a compacted copy of it (``Database/backup(to:compact:)``), opened from
/// `directory`/compacted.
func openViewStore(_ label: String, observed: Bool, mappings: ViewMappings? = nil)
    throws -> (Database, Connection, ViewObserver?, TemporaryDirectory)
{
    let (database, connection, directory) = try openStore(label, durability: .none, populated: false)
    let loader = database.newConnection(options: ConnectionOptions(objectCacheLimit: 0, metadataCacheLimit: 0))
    try loader.readWrite { txn in
        for index in 0..<updateRowCount {
            try txn.set(Workload.records[index], forKey: Workload.keys[index], in: benchRecords)
        }
    }
    try database.register(byPriority())
    try database.register(byState())
    if ProcessInfo.processInfo.environment["COMPACT_AFTER_SETUP"] == "1" {
        // A compacted copy (free pages left out) in place of the store: what LMDB's free list, left deep by the
        // views' registration (it freed the rows' old tree at once), costs each later commit.
        let copy = directory.child("compacted")
        try database.backup(to: copy, compact: true)
        let compacted = try Database(path: copy, options: storeOptions(durability: .none))
        try compacted.register(byPriority())
        try compacted.register(byState())
        print("\(label): compacted after the registration; LMDB's free list was \(freeListShape(directory.child("db") + "/data.mdb")), is \(freeListShape(copy + "/data.mdb"))")
        let observer = observed
            ? try ViewObserver(database: compacted, mappings: mappings ?? ViewMappings(view: "by-priority", groupFilter: { _ in true }))
            : nil
        return (compacted, compacted.newConnection(), observer, directory)
    }
    let observer = observed
        ? try ViewObserver(database: database, mappings: mappings ?? ViewMappings(view: "by-priority", groupFilter: { _ in true }))
        : nil
    return (database, connection, observer, directory)
}

/// The benchmark's `ViewStore.update`: row `index` moves to another group of both views.
func updateRow(_ connection: Connection, _ index: Int, round: Int) throws {
    var record = Workload.records[index]
    record.priority = (record.priority + 1 + round) % 5
    record.done.toggle()
    record.created = record.created.addingTimeInterval(Double(round))
    try connection.readWrite { txn in try txn.set(record, forKey: Workload.keys[index], in: benchRecords) }
}

/// One-row updates with two views, each followed by the observer's advance when `observed`:
/// `update-2-views-observed-none canopy` (and the same without the observer).
func updates(iterations: Int, observed: Bool) throws {
    let (database, connection, observer, directory) = try openViewStore(observed ? "observed" : "update", observed: observed)
    defer { withExtendedLifetime((database, directory)) {} }
    var generator = XorShift()
    for round in -1..<iterations {  // -1: warm-up
        var changes = 0
        let work = {
            for _ in 0..<updatesPerIteration {
                try updateRow(connection, Int(generator.next() % UInt64(updateRowCount)), round: round + 1)
                if let observer { changes += try observer.advance().rowChanges.count }
            }
        }
        if round >= 0 { try measured(work) } else { try work() }
        if observed, changes != updatesPerIteration {
            throw DriverError("the observer saw \(changes) row changes for \(updatesPerIteration) updates")
        }
    }
    if let keep = ProcessInfo.processInfo.environment["KEEP_DATABASE"] {
        // For `mdb_stat -a KEEP_DATABASE`: which tables' pages an update writes (their depths).
        try FileManager.default.copyItem(atPath: directory.child("db"), toPath: keep)
    }
}

/// PeerBenchmarks' `observed-window-vs-grdb canopy`: one group's first 50 rows observed while updates move a row into
/// and out of them, 10 updates (and advances) per iteration.
func observedWindow(iterations: Int) throws {
    let group = "p2"
    var mappings = ViewMappings(groups: [group], view: "by-priority")
    mappings.setOptions(.init(range: .first(50)), forGroup: group)
    let (database, connection, observer, directory) = try openViewStore("window", observed: true, mappings: mappings)
    defer { withExtendedLifetime((database, directory)) {} }
    guard let observer else { throw DriverError("no observer") }
    var step = 0
    for iteration in -1..<iterations {  // -1: warm-up
        var changes = 0
        let work = {
            for _ in 0..<10 {
                let index = (step / 2 * 7_919 + 13) % updateRowCount
                var record = Workload.records[index]
                if step % 2 == 0 {
                    record.priority = 2
                    record.created = Date(timeIntervalSinceReferenceDate: 780_000_000 - Double(step + 1))
                } else {
                    record.priority = 3
                }
                step += 1
                try connection.readWrite { txn in try txn.set(record, forKey: Workload.keys[index], in: benchRecords) }
                changes += try observer.advance().rowChanges.isEmpty ? 0 : 1
            }
        }
        if iteration >= 0 { try measured(work) } else { try work() }
        guard changes == 10 else { throw DriverError("\(changes) of 10 updates changed the window") }
    }
}

/// The denominator of `small-write-txn-none` and `update-2-views-observed-none`: raw LMDB (`MDB_NOSYNC`), one
/// 100-byte put per write transaction over 100k rows, 1,000 per iteration.
func rawSmallWrites(iterations: Int) throws {
    let directory = TemporaryDirectory("raw")
    defer { directory.remove() }
    var env: OpaquePointer?
    guard mdb_env_create(&env) == 0, let env, mdb_env_set_mapsize(env, 1 << 30) == 0,
          mdb_env_open(env, directory.path, UInt32(MDB_NOSYNC), 0o644) == 0 else { throw DriverError("cannot open LMDB") }
    defer { mdb_env_close(env) }
    var dbi = MDB_dbi()
    let key = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 8)
    let value = UnsafeMutableRawPointer.allocate(byteCount: 100, alignment: 8)
    defer { key.deallocate(); value.deallocate() }
    func put(_ txn: OpaquePointer?, _ index: UInt64, _ seed: UInt64) throws {
        key.storeBytes(of: index.bigEndian, as: UInt64.self)
        key.storeBytes(of: mix(index), toByteOffset: 8, as: UInt64.self)
        for offset in stride(from: 0, to: 96, by: 8) { value.storeBytes(of: mix(seed &+ UInt64(offset)), toByteOffset: offset, as: UInt64.self) }
        var k = MDB_val(mv_size: 16, mv_data: key)
        var v = MDB_val(mv_size: 100, mv_data: value)
        guard mdb_put(txn, dbi, &k, &v, 0) == 0 else { throw DriverError("mdb_put failed") }
    }
    var txn: OpaquePointer?
    guard mdb_txn_begin(env, nil, 0, &txn) == 0, mdb_dbi_open(txn, nil, 0, &dbi) == 0 else { throw DriverError("cannot begin") }
    for index in Workload.permutation { try put(txn, UInt64(index), UInt64(index)) }
    guard mdb_txn_commit(txn) == 0 else { throw DriverError("cannot commit the load") }
    var generator = XorShift()
    for round in -1..<iterations {  // -1: warm-up
        let writes = {
            for j in 0..<Workload.smallTransactionsPerIteration {
                var txn: OpaquePointer?
                guard mdb_txn_begin(env, nil, 0, &txn) == 0 else { throw DriverError("cannot begin") }
                try put(txn, generator.next() % UInt64(Workload.rowCount), UInt64((round + 1) * 1_000 + j))
                guard mdb_txn_commit(txn) == 0 else { throw DriverError("cannot commit") }
            }
        }
        if round >= 0 { try measured(writes) } else { try writes() }
    }
}

/// The pages each observed two-view update commits (`update-pages`): the commits of `update-2-views-observed`, each
/// commit's written bytes counted, printed as means per 100 commits, with LMDB's free list before and after. With
/// COMPACT_AFTER_SETUP=1 the updates run on a compacted copy (``openViewStore(_:observed:mappings:)``).
func updatePages(iterations: Int) throws {
    let (database, connection, observer, directory) = try openViewStore("update-pages", observed: true)
    defer { withExtendedLifetime((database, directory)) {} }
    let compacted = ProcessInfo.processInfo.environment["COMPACT_AFTER_SETUP"] == "1"
    let path = directory.child(compacted ? "compacted" : "db")
    print("update-pages: LMDB's free list before the updates: \(freeListShape(path + "/data.mdb"))")
    var generator = XorShift()
    var blocks: [Int] = []  // pages per block of `updatesPerIteration` commits
    var total = 0
    let commits = updatesPerIteration * max(1, iterations)
    for commit in 0..<commits {
        let before = bytesWritten()
        try updateRow(connection, Int(generator.next() % UInt64(updateRowCount)), round: commit + 1)
        let pages = (bytesWritten() - before) / 4_096
        if commit >= commits / 2 { total += pages }
        _ = try observer?.advance()
        if commit % updatesPerIteration == 0 { blocks.append(0) }
        blocks[blocks.count - 1] += pages
    }
    print("update-pages: mean pages per commit, per \(updatesPerIteration) commits: "
          + blocks.map { String(format: "%.1f", Double($0) / Double(updatesPerIteration)) }.joined(separator: " "))
    print("update-pages: mean pages per commit (second half): \(Double(total) / Double(commits - commits / 2))")
    print("update-pages: LMDB's free list at the end: \(freeListShape(path + "/data.mdb"))")
    if let keep = ProcessInfo.processInfo.environment["KEEP_DATABASE"] {
        try FileManager.default.copyItem(atPath: path, toPath: keep)
    }
}
