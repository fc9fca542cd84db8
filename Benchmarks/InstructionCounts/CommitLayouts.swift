import CLMDBBench
import Foundation

/// What the layout of a store's tables costs a one-row commit, in raw LMDB (no Canopy): the raw baseline's 100,000
/// rows (16-byte keys, 100-byte values), then one-put commits that also append a 60-byte commit-log entry and prune
/// the log to 1,024 entries in batches of 64 (as Canopy's commit does), with the rows and the log in different places.
/// `layout-<variant>`: 1,000 commits per iteration, `MDB_NOSYNC`; prints the pages each commit wrote (mean of the
/// second half) besides what the driver measures.
///
/// - `main`: the raw baseline (rows in LMDB's main table, no log);
/// - `named`: rows in a named table, no log (what a named table alone costs);
/// - `named-log`: rows and log in two named tables (Canopy's layout);
/// - `same-log`: rows and log in one named table, the log's keys after every row's;
/// - `main-log`: rows and log in the main table (the log's keys after every row's and every table's name);
/// - `main-named-log`: rows in the main table, the log in a named table (format `canopy/7`'s layout).
///
/// With `-bigfree`, the log's first entry is 1.7 MB (a 100,000-key bulk commit's), so that pruning it frees about
/// 420 pages at once, as in `small-write-txn-none` (whose population commit is such an entry).
enum CommitLayout: String {
    case main, named, namedLog = "named-log", sameLog = "same-log", mainLog = "main-log", mainNamedLog = "main-named-log"
}

func commitLayoutWorkload(_ layout: CommitLayout, bigFree: Bool) -> (Int) throws -> Void {
    { iterations in
        let directory = TemporaryDirectory("layout")
        var env: OpaquePointer?
        check(mdb_env_create(&env), "mdb_env_create")
        check(mdb_env_set_mapsize(env, 1 << 30), "mdb_env_set_mapsize")
        check(mdb_env_set_maxdbs(env, 8), "mdb_env_set_maxdbs")
        check(mdb_env_open(env, directory.path, UInt32(MDB_NOSYNC), 0o644), "mdb_env_open")
        defer { mdb_env_close(env) }
        var rows = MDB_dbi(), log = MDB_dbi()
        var txn: OpaquePointer?
        check(mdb_txn_begin(env, nil, 0, &txn), "mdb_txn_begin")
        switch layout {
        case .main, .mainLog:
            check(mdb_dbi_open(txn, nil, 0, &rows), "mdb_dbi_open")
            log = rows
        case .named, .sameLog:
            check(mdb_dbi_open(txn, "rows", UInt32(MDB_CREATE), &rows), "mdb_dbi_open")
            log = rows
        case .namedLog:
            check(mdb_dbi_open(txn, "rows", UInt32(MDB_CREATE), &rows), "mdb_dbi_open")
            check(mdb_dbi_open(txn, "log", UInt32(MDB_CREATE), &log), "mdb_dbi_open")
        case .mainNamedLog:
            check(mdb_dbi_open(txn, nil, 0, &rows), "mdb_dbi_open")
            check(mdb_dbi_open(txn, "log", UInt32(MDB_CREATE), &log), "mdb_dbi_open")
        }
        // Other tables, as a store has (their records sit in the main table).
        for name in ["info", "collections", "extensions", "metadata"] {
            var other = MDB_dbi()
            check(mdb_dbi_open(txn, name, UInt32(MDB_CREATE), &other), "mdb_dbi_open")
        }
        check(mdb_txn_commit(txn), "mdb_txn_commit")
        let hasLog = layout != .main && layout != .named
        let key = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 8)
        let value = UnsafeMutableRawPointer.allocate(byteCount: 1_800_000, alignment: 8)
        let logKey = UnsafeMutableRawPointer.allocate(byteCount: 12, alignment: 8)
        defer { key.deallocate(); value.deallocate(); logKey.deallocate() }
        value.initializeMemory(as: UInt8.self, repeating: 7, count: 1_800_000)
        var snapshot: UInt64 = 0
        func putRow(_ txn: OpaquePointer?, _ index: UInt64, _ seed: UInt64) {
            // Row keys begin with a 4-byte collection id (1), as Canopy's.
            key.storeBytes(of: UInt32(1).bigEndian, as: UInt32.self)
            key.storeBytes(of: UInt32(truncatingIfNeeded: index).bigEndian, toByteOffset: 4, as: UInt32.self)
            key.storeBytes(of: mix(index), toByteOffset: 8, as: UInt64.self)
            value.storeBytes(of: mix(seed), as: UInt64.self)
            var k = MDB_val(mv_size: 16, mv_data: key)
            var v = MDB_val(mv_size: 100, mv_data: value)
            check(mdb_put(txn, rows, &k, &v, 0), "mdb_put")
        }
        func logKeyBytes(_ snapshot: UInt64) -> MDB_val {
            // After every row (collection ids are small) and every table name (ASCII): 0xFFFFFFFF, then the snapshot.
            logKey.storeBytes(of: UInt32.max, as: UInt32.self)
            logKey.storeBytes(of: snapshot.bigEndian, toByteOffset: 4, as: UInt64.self)
            return MDB_val(mv_size: 12, mv_data: logKey)
        }
        func appendLog(_ txn: OpaquePointer?, size: Int) {
            snapshot += 1
            var k = logKeyBytes(snapshot)
            var v = MDB_val(mv_size: size, mv_data: value)
            check(mdb_put(txn, log, &k, &v, UInt32(MDB_APPEND)), "mdb_put log")
            if snapshot > 1_024, snapshot % 64 == 0 {
                var cursor: OpaquePointer?
                check(mdb_cursor_open(txn, log, &cursor), "mdb_cursor_open")
                var first = logKeyBytes(0)
                var data = MDB_val()
                var rc = mdb_cursor_get(cursor, &first, &data, MDB_SET_RANGE)
                while rc == 0, first.mv_size == 12, first.mv_data.load(as: UInt32.self) == UInt32.max,
                      UInt64(bigEndian: first.mv_data.loadUnaligned(fromByteOffset: 4, as: UInt64.self)) <= snapshot - 1_024 {
                    check(mdb_cursor_del(cursor, 0), "mdb_cursor_del")
                    rc = mdb_cursor_get(cursor, &first, &data, MDB_GET_CURRENT)
                }
                mdb_cursor_close(cursor)
            }
        }
        // Population: every row, in random order, in one transaction (with its log entry: 17 bytes a key).
        check(mdb_txn_begin(env, nil, 0, &txn), "mdb_txn_begin")
        for index in Workload.permutation { putRow(txn, UInt64(index), UInt64(index)) }
        if hasLog { appendLog(txn, size: bigFree ? 1_700_000 : 60) }
        check(mdb_txn_commit(txn), "mdb_txn_commit")
        var generator = XorShift()
        var pages: [Double] = []
        // -1: warm-up; `iterations`: the pages counted (reading /proc per commit costs more than a commit).
        for round in -1...iterations {
            let counting = round == iterations
            let commits = {
                for j in 0..<Workload.smallTransactionsPerIteration {
                    let index = generator.next() % UInt64(Workload.rowCount)
                    let before = counting ? bytesWritten() : 0
                    var txn: OpaquePointer?
                    check(mdb_txn_begin(env, nil, 0, &txn), "mdb_txn_begin")
                    putRow(txn, index, UInt64((round + 1) * 1_000 + j))
                    if hasLog { appendLog(txn, size: 60) }
                    check(mdb_txn_commit(txn), "mdb_txn_commit")
                    if counting { pages.append(Double(bytesWritten() - before) / 4_096) }
                }
            }
            if round >= 0 && !counting { measured(commits) } else { commits() }
        }
        let steady = pages[...]
        print("layout-\(layout.rawValue)\(bigFree ? "-bigfree" : ""): pages written per commit (after the measured ones) \(steady.reduce(0, +) / Double(max(1, steady.count)))")
    }
}
