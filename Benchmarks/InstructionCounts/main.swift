@_spi(Benchmarks) import CanopyCore
import CLMDBBench
import Canopy
import Foundation

// Runs one workload of StoreBenchmarks a fixed number of times, so that `valgrind --tool=callgrind` can count its
// instructions: on a loaded machine timings vary by ±30%, instruction counts by well under 1%. Only the workload's
// measured part is collected (`count.sh` toggles collection in `canopy_measured_workload`, whose specializations keep
// the name); the setup (population, opening) and a warm-up (one-time work of the codec and the runtime) run outside
// it, as in the benchmark.
//
// Usage: InstructionCounts WORKLOAD[-no-checksums] [ITERATIONS]   (see `workloads` for the names; the suffix opens the
// stores without value checksums, as the benchmarks' `checksum-cost-*` lines do)

/// Runs `body`: the only function whose instructions callgrind collects. Its symbol is fixed and it is never
/// inlined or specialized, so `--toggle-collect` finds it in every build.
@_optimize(none) @inline(never) @_silgen_name("canopy_measured_workload")
func measured(_ body: () throws -> Void) rethrows {
    let usage = ResourceUsage.now()
    let start = ContinuousClock.now
    try body()
    measuredTime += ContinuousClock.now - start
    measuredUsage = measuredUsage + (ResourceUsage.now() - usage)
}

/// What the process spent inside ``measured(_:)`` besides instructions (printed at the end): on a loaded machine the
/// times are rough, the faults and bytes exact. A move in a big list costs more time than instructions say: these show
/// where (the kernel's share, first touches of the memory map, bytes passed to `pwrite`).
struct ResourceUsage {
    var user = Duration.zero
    var system = Duration.zero
    var minorFaults = 0
    /// Faults that read the file (a page not in the page cache).
    var majorFaults = 0
    var bytesWritten = 0
    /// The calling thread's CPU time (the scheduler's count, exact; `user` and `system` are sampled at each tick).
    var threadCPU = Duration.zero

    static func now() -> ResourceUsage {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func duration(_ time: timeval) -> Duration { .seconds(time.tv_sec) + .microseconds(time.tv_usec) }
        var thread = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &thread)
        return ResourceUsage(user: duration(usage.ru_utime), system: duration(usage.ru_stime), minorFaults: usage.ru_minflt,
                             majorFaults: usage.ru_majflt, bytesWritten: InstructionCounts.bytesWritten(), threadCPU: .seconds(thread.tv_sec) + .nanoseconds(thread.tv_nsec))
    }

    static func - (a: ResourceUsage, b: ResourceUsage) -> ResourceUsage {
        ResourceUsage(user: a.user - b.user, system: a.system - b.system, minorFaults: a.minorFaults - b.minorFaults,
                      majorFaults: a.majorFaults - b.majorFaults, bytesWritten: a.bytesWritten - b.bytesWritten, threadCPU: a.threadCPU - b.threadCPU)
    }

    static func + (a: ResourceUsage, b: ResourceUsage) -> ResourceUsage {
        ResourceUsage(user: a.user + b.user, system: a.system + b.system, minorFaults: a.minorFaults + b.minorFaults,
                      majorFaults: a.majorFaults + b.majorFaults, bytesWritten: a.bytesWritten + b.bytesWritten, threadCPU: a.threadCPU + b.threadCPU)
    }
}

/// The resources spent in ``measured(_:)``.
nonisolated(unsafe) var measuredUsage = ResourceUsage()

/// The wall-clock time spent in ``measured(_:)``, printed at the end (for a rough comparison outside callgrind).
nonisolated(unsafe) var measuredTime = Duration.zero

/// Whether the stores carry checksums: the workloads named `...-no-checksums` switch them off (the benchmarks'
/// `checksum-cost-*` lines).
nonisolated(unsafe) var checksums = true

/// Whether the stores open with LMDB's write map (``DatabaseOptions/writeMap``): set by `CANOPY_WRITE_MAP=1`, to see
/// what a workload's commits cost without `pwrite` (the benchmarks open without it).
let writeMap = ProcessInfo.processInfo.environment["CANOPY_WRITE_MAP"] == "1"

/// The options every workload's store opens with: `durability`, and the driver's switches (``checksums``,
/// ``writeMap``), so that a switch reaches every workload (the many-group stores opened without the write map).
func storeOptions(durability: Durability) -> DatabaseOptions {
    var options = DatabaseOptions(durability: durability)
    options.valueChecksums = checksums
    options.writeMap = writeMap
    return options
}

/// A new database in a fresh temporary directory, with the benchmark's options.
func openStore(_ label: String, durability: Durability = .full, cacheLimit: Int = ConnectionOptions().objectCacheLimit,
               populated: Bool, views: [View] = []) throws -> (Database, Connection, TemporaryDirectory) {
    let directory = TemporaryDirectory(label)
    let database = try Database(path: directory.child("db"), options: storeOptions(durability: durability))
    for view in views { try database.register(view) }
    if populated {
        let loader = database.newConnection(options: ConnectionOptions(objectCacheLimit: 0, metadataCacheLimit: 0))
        try loader.readWrite { txn in
            for index in Workload.permutation {
                try txn.set(Workload.records[index], forKey: Workload.keys[index], in: benchRecords)
            }
        }
    }
    return (database, database.newConnection(options: ConnectionOptions(objectCacheLimit: cacheLimit)), directory)
}

/// Point reads with the connection's cache off: `point-read-cache-miss canopy`, 10,000 reads per iteration.
func pointReadCacheMiss(iterations: Int) throws {
    let (database, connection, directory) = try openStore("miss", cacheLimit: 0, populated: true)
    defer { withExtendedLifetime((database, directory)) {} }
    var generator = XorShift()
    try readRows(connection, Workload.readsPerIteration / 10, generator: &generator)  // warm-up, as the benchmark's
    for _ in 0..<iterations {
        try measured { try readRows(connection, Workload.readsPerIteration, generator: &generator) }
    }
}

/// The rows `point-read-cache-hit` reads over and over (StoreBenchmarks' `Workload.hotRows`).
let hotRows = Array(Workload.permutation.prefix(Workload.hotKeyCount))

/// Point reads of a hot set the connection's cache holds: `point-read-cache-hit canopy`, 10,000 reads per iteration.
func pointReadCacheHit(iterations: Int) throws {
    let (database, connection, directory) = try openStore("hit", cacheLimit: 2 * Workload.hotKeyCount, populated: true)
    defer { withExtendedLifetime((database, directory)) {} }
    try connection.read { txn in
        for index in hotRows { _ = try txn.object(forKey: Workload.keys[index], in: benchRecords) }
    }
    guard connection.cachedCounts.objects == Workload.hotKeyCount else { throw DriverError("the hot set is not all cached") }
    var generator = XorShift()
    try readRows(connection, Workload.readsPerIteration / 10, generator: &generator, hotRows: hotRows)  // warm-up
    for _ in 0..<iterations {
        try measured { try readRows(connection, Workload.readsPerIteration, generator: &generator, hotRows: hotRows) }
    }
    guard connection.cachedCounts.objects == Workload.hotKeyCount else { throw DriverError("the cache lost hot rows") }
}

func readRows(_ connection: Connection, _ count: Int, generator: inout XorShift, hotRows: [Int]? = nil) throws {
    let rows = UInt64(Workload.rowCount)
    try connection.read { txn in
        for _ in 0..<count {
            let index = hotRows.map { $0[Int(generator.next() % UInt64($0.count))] } ?? Int(generator.next() % rows)
            guard let object = try txn.object(forKey: Workload.keys[index], in: benchRecords), object.id == index else {
                throw DriverError("row \(index) not found")
            }
        }
    }
}

/// Every row in random order in one synced transaction into a new database: `bulk-insert canopy` (with `views`,
/// `bulk-insert-2-views canopy`).
func bulkInsert(iterations: Int, views: () -> [View]) throws {
    // Warm-up (the benchmark's earlier iterations): the codec's and the runtime's one-time work on a few rows.
    try insertRows(Workload.permutation.prefix(1_000), views: views(), measuring: false)
    for _ in 0..<iterations {
        try insertRows(Workload.permutation[...], views: views(), measuring: true)
    }
}

func insertRows(_ order: ArraySlice<Int>, views: [View], measuring: Bool) throws {
    let (database, connection, directory) = try openStore("bulk", populated: false, views: views)
    let insert = {
        try connection.readWrite { txn in
            for index in order {
                try txn.set(Workload.records[index], forKey: Workload.keys[index], in: benchRecords)
            }
        }
    }
    if measuring { try measured(insert) } else { try insert() }
    withExtendedLifetime((database, connection)) {}
    directory.remove()
}

/// A view registered over the 100,000 rows of a store without views (`Durability.none`, loaded in key order as
/// `population-1m` loads its million): `population-1m view` at a tenth of its size. Each iteration registers a new
/// view (its own name) over the same rows.
func population(iterations: Int) throws {
    let (database, connection, directory) = try openStore("population", durability: .none, cacheLimit: 0, populated: false)
    defer { withExtendedLifetime((database, directory)) {} }
    try connection.readWrite { txn in
        for index in 0..<Workload.rowCount { try txn.set(Workload.records[index], forKey: Workload.keys[index], in: benchRecords) }
    }
    func view(_ name: String) -> View {
        View(name: name, grouping: .byObject(benchRecords) { _, record in "p\(record.priority)" },
             sorting: .byObject(benchRecords) { _, _, record in SortKey(.ascending(record.created)) }, versionTag: "1")
    }
    // As the benchmark: each view is unregistered with its storage afterwards, so the rows carry no attachment.
    try database.register(view("warm-up"))
    try database.unregisterExtension(named: "warm-up", dropStorage: true)
    for iteration in 0..<iterations {
        let next = view("by-priority-\(iteration)")
        try measured { try database.register(next) }
        guard next.lastPopulation?.rowsIndexed == Workload.rowCount else { throw DriverError("population indexed \(next.lastPopulation?.rowsIndexed ?? 0) rows") }
        try database.unregisterExtension(named: next.name, dropStorage: true)
    }
}

/// The denominator of `population-100k`: the same 100,000 rows inserted in key order into a new store without
/// views, in one `Durability.none` transaction, cache off (`population-1m insert` at a tenth of its size).
func populationInsert(iterations: Int) throws {
    for iteration in -1..<iterations {  // -1: warm-up
        let (database, connection, directory) = try openStore("population-insert", durability: .none, cacheLimit: 0, populated: false)
        let insert = {
            try connection.readWrite { txn in
                for index in 0..<Workload.rowCount { try txn.set(Workload.records[index], forKey: Workload.keys[index], in: benchRecords) }
            }
        }
        if iteration >= 0 { try measured(insert) } else { try insert() }
        withExtendedLifetime((database, connection)) {}
        directory.remove()
    }
}

/// Every row decoded through a cursor, cache off, values only: `full-scan canopy`; with `keyed`, the scan that also
/// hands each row's key to the closure (`full-scan-keyed`).
func fullScan(keyed: Bool) -> (Int) throws -> Void {
  { iterations in
    let (database, connection, directory) = try openStore("scan", cacheLimit: 0, populated: true)
    defer { withExtendedLifetime((database, directory)) {} }
    // The count lives in a function whose closures do not escape (as in StoreBenchmarks' `full-scan canopy`): captured
    // by a closure stored in a variable, it would be boxed, and each row would pay the run-time exclusivity check of
    // the benchmark's own `count += 1` (about 75 instructions), which the benchmark does not pay.
    func scan() throws -> Int {
        var count = 0
        try connection.read { txn in
            if keyed {
                try txn.enumerateObjects(in: benchRecords) { key, object in
                    count += object.id >= 0 && !key.isEmpty ? 1 : 0
                    return true
                }
            } else {
                try txn.enumerateObjects(in: benchRecords) { object in
                    count += object.id >= 0 ? 1 : 0
                    return true
                }
            }
        }
        return count
    }
    for iteration in -1..<iterations {  // -1: warm-up
        var count = 0
        if iteration >= 0 { try measured { count = try scan() } } else { count = try scan() }
        guard count == Workload.rowCount else { throw DriverError("scanned \(count) rows") }
    }
  }
}

/// One-row write transactions without fsync: `small-write-txn-none canopy`, 1,000 per iteration; with
/// `durability`, the other `small-write-txn-*` lines (`.metadataOnly`: for `strace -c -f`, which counts the pages
/// written and the syncs per commit that callgrind does not see).
func smallWrites(iterations: Int) throws { try smallWrites(iterations: iterations, durability: .none) }

func smallWrites(iterations: Int, durability: Durability) throws {
    let (database, connection, directory) = try openStore("txn", durability: durability, populated: true)
    defer { withExtendedLifetime((database, directory)) {} }
    let rows = UInt64(Workload.rowCount)
    var generator = XorShift()
    for round in -1..<iterations {  // -1: warm-up
        let writes = {
            for j in 0..<Workload.smallTransactionsPerIteration {
                let index = Int(generator.next() % rows)
                var record = Workload.records[index]
                record.priority = (round + 1) * Workload.smallTransactionsPerIteration + j + 1
                try connection.readWrite { txn in try txn.set(record, forKey: Workload.keys[index], in: benchRecords) }
            }
        }
        if round >= 0 { try measured(writes) } else { try writes() }
    }
    if let keep = ProcessInfo.processInfo.environment["KEEP_DATABASE"] {
        // For `mdb_stat -a KEEP_DATABASE`: which tables' pages a small commit writes (their depths).
        try FileManager.default.copyItem(atPath: directory.child("db"), toPath: keep)
    }
}

/// The free list's records, depth and pages as the newest meta page of `file` records them (LMDB 0.9's `MDB_meta`
/// and `MDB_db` layout, read from the file: this process cannot open a second environment on it).
func freeListShape(_ file: String) -> String {
    guard let handle = FileHandle(forReadingAtPath: file) else { return "?" }
    defer { try? handle.close() }
    var best: (txn: UInt64, text: String) = (0, "?")
    for page in 0..<2 {
        try? handle.seek(toOffset: UInt64(page * 4_096))
        guard let data = try? handle.read(upToCount: 4_096), data.count == 4_096 else { continue }
        func u64(_ at: Int) -> UInt64 { data[at..<(at + 8)].withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) } }
        func u16(_ at: Int) -> UInt16 { data[at..<(at + 2)].withUnsafeBytes { $0.loadUnaligned(as: UInt16.self) } }
        let meta = 16, free = meta + 24, txnid = meta + 24 + 96 + 8
        if u64(txnid) >= best.txn {
            best = (u64(txnid), "\(u64(free + 32)) records, depth \(u16(free + 6)), \(u64(free + 16)) leaves, \(u64(free + 8)) branches, \(u64(free + 24)) overflow pages (transaction \(u64(txnid)))")
        }
    }
    return best.text
}

/// The pages each one-row commit writes (`small-write-pages`): the commits of `small-write-txn-none`, each commit's
/// written bytes counted, printed as runs (pages x commits), to see when and how the count changes (LMDB's free list,
/// the commit log's pruning).
func smallWritePages(iterations: Int) throws {
    let (database, connection, directory) = try openStore("txn-pages", durability: .none, populated: true)
    defer { withExtendedLifetime((database, directory)) {} }
    let rows = UInt64(Workload.rowCount)
    var generator = XorShift()
    var runs: [(pages: Int, count: Int)] = []
    for commit in 0..<(Workload.smallTransactionsPerIteration * max(1, iterations)) {
        let index = Int(generator.next() % rows)
        var record = Workload.records[index]
        record.priority = commit + 1
        let before = bytesWritten()
        try connection.readWrite { txn in try txn.set(record, forKey: Workload.keys[index], in: benchRecords) }
        let pages = (bytesWritten() - before) / 4_096
        if let last = runs.last, last.pages == pages { runs[runs.count - 1].count += 1 } else { runs.append((pages, 1)) }
    }
    print("small-write-pages: pages x commits: " + runs.map { "\($0.pages)x\($0.count)" }.joined(separator: " "))
    print("small-write-pages: LMDB's free list at the end: \(freeListShape(directory.child("db") + "/data.mdb"))")
}

/// A store whose manual view `manual` lists `count` rows (appended in key order, 100k per transaction). With
/// MANUAL_LIST_DATABASE=DIR, the filled database is kept in DIR-<count> and copied from there by later runs: filling a
/// million rows under callgrind takes an hour on a loaded machine, the moves a minute.
///
/// MANUAL_LIST_FILL=benchmark fills the list as the benchmark does (rows written first, keys in key order), otherwise
/// each transaction writes its rows and appends them (keys `m<index>`).
///
/// MANUAL_LIST_STATE says how the moves find the list (the ManualLists article's table): unset, as the process that
/// has just filled it; `synced`, the same after `Database.sync()`; `evicted`, synced, closed, the data file dropped
/// from the page cache and opened again (as the benchmark's `manual-move-*` lines). With `evicted`,
/// MANUAL_LIST_SCAN=list or rows first reads the whole list or every row, as an app might after opening.
func manualListStore(count: Int) throws -> (Database, Connection, TemporaryDirectory) {
    guard ProcessInfo.processInfo.environment["MANUAL_LIST_STATE"] == "evicted" else { return try filledManualListStore(count: count) }
    // Synced, closed, the data file dropped from the page cache, opened again: as an app opening a list it filled
    // some time ago.
    let directory = try { try filledManualListStore(count: count).2 }()
    try evictFromPageCache(directory.child("db") + "/data.mdb")
    pageCacheReport(directory.child("db") + "/data.mdb")
    let database = try Database(path: directory.child("db"), options: storeOptions(durability: .none))
    try database.register(ManualView.make(name: "manual", collections: [benchRecords.name]))
    let connection = database.newConnection()
    if ProcessInfo.processInfo.environment["MANUAL_LIST_MADVISE"] == "random" { adviseRandom("data.mdb") }
    switch ProcessInfo.processInfo.environment["MANUAL_LIST_SCAN"] {
    case "list":
        // As an app that shows the whole list once after opening it: the list's pages read in order.
        let rows = try connection.read { txn in try txn.view("manual").rowIDs(inGroup: "manual").count }
        guard rows == count else { throw DriverError("the list has \(rows) rows") }
    case "rows":
        // As an app that reads every row once after opening (an export, a search index's check): the rows table,
        // written in key order, read in order through the map, so the kernel reads ahead.
        var rows = 0
        try connection.read { txn in
            try txn.enumerateObjects(in: benchRecords) { _ in
                rows += 1
                return true
            }
        }
        guard rows == count else { throw DriverError("the store has \(rows) rows") }
    default:
        break
    }
    return (database, connection, directory)
}

/// Experiment: `madvise(MADV_RANDOM)` on this process's maps of files named `name` (what LMDB's MDB_NORDAHEAD does).
func adviseRandom(_ name: String) {
    guard let maps = try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8) else { return }
    for line in maps.split(separator: "\n") where line.hasSuffix("/" + name) {
        let range = line.split(separator: " ")[0].split(separator: "-").compactMap { UInt(String($0), radix: 16) }
        guard range.count == 2, let start = UnsafeMutableRawPointer(bitPattern: range[0]) else { continue }
        print("madvise(MADV_RANDOM) \(line.split(separator: " ")[0]): \(madvise(start, Int(range[1] - range[0]), MADV_RANDOM))")
    }
}

/// A store whose list was filled by this process (or copied from MANUAL_LIST_DATABASE), synced when
/// MANUAL_LIST_STATE asks for it.
func filledManualListStore(count: Int) throws -> (Database, Connection, TemporaryDirectory) {
    let list = ManualView.make(name: "manual", collections: [benchRecords.name])
    let saved = ProcessInfo.processInfo.environment["MANUAL_LIST_DATABASE"].map { "\($0)-\(count)" }
    if let saved, FileManager.default.fileExists(atPath: saved) {
        let directory = TemporaryDirectory("manual")
        try FileManager.default.copyItem(atPath: saved, toPath: directory.child("db"))
        let database = try Database(path: directory.child("db"), options: storeOptions(durability: .none))
        try database.register(list)
        return (database, database.newConnection(), directory)
    }
    let (database, connection, directory) = try openStore("manual", durability: .none, populated: false, views: [list])
    if ProcessInfo.processInfo.environment["MANUAL_LIST_FILL"] == "benchmark" {
        // As the benchmark's `ManualWorkload.store`: the rows written first (in key order, 100k per transaction), then
        // appended to the list in key order, 100k per transaction.
        for start in stride(from: 0, to: count, by: 100_000) {
            try connection.readWrite { txn in
                for index in start..<min(count, start + 100_000) { try txn.set(Workload.record(index), forKey: Workload.key(index), in: benchRecords) }
            }
        }
        for start in stride(from: 0, to: count, by: 100_000) {
            try connection.readWrite { txn in
                let list = try txn.manualList("manual")
                for index in start..<min(count, start + 100_000) { try list.append(key: Workload.key(index), inCollection: benchRecords.name) }
            }
        }
    } else {
        for start in stride(from: 0, to: count, by: 100_000) {
            try connection.readWrite { txn in
                let list = try txn.manualList("manual")
                for index in start..<min(count, start + 100_000) {
                    try txn.set(Workload.records[index % Workload.rowCount], forKey: "m\(index)", in: benchRecords)
                    try list.append(key: "m\(index)", inCollection: benchRecords.name)
                }
            }
        }
    }
    print("manual list: LMDB's free list after the fill: \(freeListShape(directory.child("db") + "/data.mdb"))")
    if let saved { try FileManager.default.copyItem(atPath: directory.child("db"), toPath: saved) }
    if ["synced", "evicted"].contains(ProcessInfo.processInfo.environment["MANUAL_LIST_STATE"]) { try database.sync() }
    return (database, connection, directory)
}

/// With MANUAL_LIST_FINCORE=1, prints the file's size and how much of it is in the page cache (`fincore`).
func pageCacheReport(_ path: String) {
    guard ProcessInfo.processInfo.environment["MANUAL_LIST_FINCORE"] == "1",
          let fincore = try? Process.run(URL(fileURLWithPath: "/usr/bin/fincore"), arguments: ["--bytes", path]) else { return }
    fincore.waitUntilExit()
}

/// With PERF_CONTROL=FIFO (`perf record -D -1 --control fifo:FIFO`), sends `command` (`enable`, `disable`) to perf:
/// a profile of the moves without the fill before them and the clean-up after.
func controlPerf(_ command: String) {
    guard let fifo = ProcessInfo.processInfo.environment["PERF_CONTROL"], let handle = FileHandle(forWritingAtPath: fifo) else { return }
    handle.write(Data("\(command)\n".utf8))
    try? handle.close()
}

/// Single-move transactions without fsync in a manual list of `count` rows: `manual-move-<label> canopy`, 200 moves
/// per iteration (random source and destination), each its own commit.
func manualMoves(count: Int) -> (Int) throws -> Void {
    { iterations in
        let (database, connection, directory) = try manualListStore(count: count)
        defer { withExtendedLifetime((database, directory)) {} }
        var generator = XorShift()
        controlPerf("enable")
        defer {
            controlPerf("disable")
            pageCacheReport(directory.child("db") + "/data.mdb")
        }
        for round in -1..<iterations {  // -1: warm-up
            let moves = {
                for _ in 0..<200 {
                    let from = Int(generator.next() % UInt64(count))
                    let to = Int(generator.next() % UInt64(count))
                    try connection.readWrite { txn in try txn.manualList("manual").move(from: from, to: to) }
                }
            }
            let before = ResourceUsage.now()
            if round >= 0 { try measured(moves) } else { try moves() }
            if ProcessInfo.processInfo.environment["MANUAL_LIST_SERIES"] == "1" {
                let spent = ResourceUsage.now() - before
                print("round \(round): thread CPU \(spent.threadCPU), bytes written \(spent.bytesWritten), minor faults \(spent.minorFaults)")
            }
        }
    }
}

/// Bytes this process has passed to write calls so far (`wchar` of /proc/self/io): LMDB writes a commit's dirty
/// pages with `pwrite`/`writev` (no write map), so the difference over a commit, in 4 KiB pages, is the pages it wrote.
func bytesWritten() -> Int {
    guard let io = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8),
          let line = io.split(separator: "\n").first(where: { $0.hasPrefix("wchar:") }),
          let value = Int(line.dropFirst("wchar:".count).trimmingCharacters(in: .whitespaces)) else { return 0 }
    return value
}

/// The minor page faults of this process so far (a first touch of a page of the memory map, among others).
func minorFaults() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return usage.ru_minflt
}

/// The pages a single-move commit writes in a manual list of `count` rows (`manual-move-pages-<label>`): the same
/// moves as `manual-move-<label>`, each commit's written bytes counted (not instructions), averaged and printed. With
/// KEEP_DATABASE=PATH, the database is copied there at the end.
func manualMovePages(count: Int) -> (Int) throws -> Void {
    { iterations in
        let (database, connection, directory) = try manualListStore(count: count)
        defer { withExtendedLifetime((database, directory)) {} }
        var generator = XorShift()
        var pages: [Double] = []
        var faults = 0
        let moves = 200 * max(1, iterations)
        for move in 0..<moves {
            let from = Int(generator.next() % UInt64(count))
            let to = Int(generator.next() % UInt64(count))
            let before = bytesWritten()
            let faultsBefore = minorFaults()
            try connection.readWrite { txn in try txn.manualList("manual").move(from: from, to: to) }
            pages.append(Double(bytesWritten() - before) / 4_096)
            if move >= moves / 2 { faults += minorFaults() - faultsBefore }
        }
        print("manual-move-pages: minor page faults per move (second half): \(Double(faults) / Double(moves - moves / 2))")
        print("manual-move-pages: LMDB's free list after the moves: \(freeListShape(directory.child("db") + "/data.mdb"))")
        let steady = pages.dropFirst(pages.count / 2)  // after the free list has settled
        if let keep = ProcessInfo.processInfo.environment["KEEP_DATABASE"] {
            // For `canopy stat KEEP_DATABASE`: the tables' depths and page counts after the moves.
            try FileManager.default.copyItem(atPath: directory.child("db"), toPath: keep)
        }
        print("manual-move-pages: \(count) rows, pages written per move commit: mean \(steady.reduce(0, +) / Double(steady.count)), min \(steady.min() ?? 0), max \(steady.max() ?? 0) (a commit also writes a meta page's header: a fraction of a page)")
    }
}

/// The raw baselines of `bulk-insert` and `full-scan` (StoreBenchmarks' `RawEnvironment`: LMDB's C API, 16-byte keys
/// and 100-byte values), so that the instruction ratio of a line can be read from the same driver.
func rawBulkInsert(iterations: Int) throws {
    func insert(_ order: [Int], measuring: Bool) {
        let directory = TemporaryDirectory("raw-bulk")
        let environment = RawEnvironment(directory: directory.child("env"))
        if measuring { measured { environment.insert(order) } } else { environment.insert(order) }
        withExtendedLifetime(environment) {}
    }
    insert(Array(Workload.permutation.prefix(1_000)), measuring: false)
    for _ in 0..<iterations { insert(Workload.permutation, measuring: true) }
}

func rawFullScan(iterations: Int) throws {
    let directory = TemporaryDirectory("raw-scan")
    let environment = RawEnvironment(directory: directory.child("env"))
    environment.insert(Workload.permutation)
    for iteration in -1..<iterations {  // -1: warm-up
        var count = 0
        if iteration >= 0 { measured { count = environment.scan() } } else { count = environment.scan() }
        guard count == Workload.rowCount else { throw DriverError("scanned \(count) rows") }
    }
}

/// `bulk-insert encode`: every record encoded once by a fresh `BinaryCodec` (the part of the bulk insert's
/// denominator that is not LMDB's), so that the bulk-insert line's instruction ratio can be read as the benchmark's.
func bulkEncode(iterations: Int) throws {
    let codec = BinaryCodec()
    var bytes = 0
    func encode(_ order: ArraySlice<Int>) throws {
        for index in order { bytes &+= try codec.encode(Workload.records[index]).count }
    }
    try encode(Workload.permutation.prefix(1_000))
    for _ in 0..<iterations { try measured { try encode(Workload.permutation[...]) } }
    guard bytes > 0 else { throw DriverError("nothing encoded") }
}

/// The raw baseline of `point-read-cache-miss`: 10,000 `mdb_get`s per iteration in one read transaction.
func rawPointReads(iterations: Int) throws {
    let directory = TemporaryDirectory("raw-read")
    let environment = RawEnvironment(directory: directory.child("env"))
    environment.insert(Workload.permutation)
    var generator = XorShift()
    environment.pointReads(Workload.readsPerIteration / 10, generator: &generator)  // warm-up, as above
    for _ in 0..<iterations {
        measured { environment.pointReads(Workload.readsPerIteration, generator: &generator) }
    }
    withExtendedLifetime(environment) {}
}

/// The raw baseline of `point-read-cache-hit`: 10,000 `mdb_get`s of the hot rows per iteration in one read transaction.
func rawPointReadsHot(iterations: Int) throws {
    let directory = TemporaryDirectory("raw-read-hot")
    let environment = RawEnvironment(directory: directory.child("env"))
    environment.insert(Workload.permutation)
    var generator = XorShift()
    environment.pointReads(Workload.hotKeyCount, generator: &generator, hotRows: hotRows)  // warm-up, as the benchmark's
    for _ in 0..<iterations {
        measured { environment.pointReads(Workload.readsPerIteration, generator: &generator, hotRows: hotRows) }
    }
    withExtendedLifetime(environment) {}
}

/// The raw baseline of `small-write-txn-metadata-only`: one-put commits with `MDB_NOMETASYNC`, 1,000 per iteration.
func rawSmallWritesMetadataOnly(iterations: Int) throws {
    let directory = TemporaryDirectory("raw-txn")
    let environment = RawEnvironment(directory: directory.child("env"), flags: Int32(MDB_NOMETASYNC))
    environment.insert(Workload.permutation)
    var generator = XorShift()
    for round in -1..<iterations {  // -1: warm-up
        let writes = { environment.smallTransactions(Workload.smallTransactionsPerIteration, generator: &generator, round: round + 1) }
        if round >= 0 { measured(writes) } else { writes() }
    }
    withExtendedLifetime(environment) {}
}

struct DriverError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

let workloads: [String: (Int) throws -> Void] = [
    "point-read-cache-miss": pointReadCacheMiss,
    "point-read-cache-hit": pointReadCacheHit,
    "raw-point-read-hot": rawPointReadsHot,
    "bulk-insert": { try bulkInsert(iterations: $0, views: { [] }) },
    "bulk-insert-2-views": { try bulkInsert(iterations: $0, views: { [byPriority(), byState()] }) },
    "bulk-insert-grdb": bulkInsertGRDB,
    "full-scan": fullScan(keyed: false),
    "full-scan-keyed": fullScan(keyed: true),
    "small-write-txn-none": smallWrites,
    "small-write-txn-metadata-only": { try smallWrites(iterations: $0, durability: .metadataOnly) },
    "raw-small-write-txn-metadata-only": rawSmallWritesMetadataOnly,
    "manual-move-10k": manualMoves(count: 10_000),
    "manual-move-100k": manualMoves(count: 100_000),
    "manual-move-1m": manualMoves(count: 1_000_000),
    "manual-move-pages-10k": manualMovePages(count: 10_000),
    "manual-move-pages-1m": manualMovePages(count: 1_000_000),
    "multigroup-insert-3": singleRowInserts("multigroup-insert-3", rows: 10_000, view: ManyGroupWorkload.threeGroups),
    "multigroup-insert-1": singleRowInserts("multigroup-insert-1", rows: 10_000, view: byPriority),
    "insert-multigroup-10k": singleRowInserts("insert-multigroup-10k", rows: 10_000, view: ManyGroupWorkload.threeGroups),
    "insert-multigroup-1m": singleRowInserts("insert-multigroup-1m", rows: 1_000_000, view: ManyGroupWorkload.threeGroups),
    "changeset-multigroup-300": multigroupChangesets(size: 300),
    "changeset-multigroup-10000": multigroupChangesets(size: 10_000),
    "search-index-batched": searchIndexBatched,
    "search-index": searchIndex,
    "search-index-grdb": searchIndexGRDB,
    "search-texts": searchTexts,
    "search-query-100k": { try searchQuery(count: SearchWorkload.textCount, iterations: $0) },
    "search-query-1m": { try searchQuery(count: SearchWorkload.largeTextCount, iterations: $0) },
    "search-query-profile-100k": { _ in try searchQueryProfile(count: SearchWorkload.textCount) },
    "search-query-profile-1m": { _ in try searchQueryProfile(count: SearchWorkload.largeTextCount) },
    "raw-small-write-txn-none": rawSmallWrites,
    "small-write-pages": smallWritePages,
    "update-pages": updatePages,
    "layout-main": commitLayoutWorkload(.main, bigFree: false),
    "layout-named": commitLayoutWorkload(.named, bigFree: false),
    "layout-named-log": commitLayoutWorkload(.namedLog, bigFree: false),
    "layout-same-log": commitLayoutWorkload(.sameLog, bigFree: false),
    "layout-main-log": commitLayoutWorkload(.mainLog, bigFree: false),
    "layout-named-log-bigfree": commitLayoutWorkload(.namedLog, bigFree: true),
    "layout-same-log-bigfree": commitLayoutWorkload(.sameLog, bigFree: true),
    "layout-main-log-bigfree": commitLayoutWorkload(.mainLog, bigFree: true),
    "layout-main-named-log": commitLayoutWorkload(.mainNamedLog, bigFree: false),
    "layout-main-named-log-bigfree": commitLayoutWorkload(.mainNamedLog, bigFree: true),
    "update-2-views": { try updates(iterations: $0, observed: false) },
    "update-2-views-observed": { try updates(iterations: $0, observed: true) },
    "observed-window": observedWindow,
    "raw-bulk-insert": rawBulkInsert,
    "raw-full-scan": rawFullScan,
    "raw-point-read": rawPointReads,
    "bulk-insert-encode": bulkEncode,
    "population-100k": population,
    "population-insert-100k": populationInsert,
]

let arguments = CommandLine.arguments.dropFirst()
let requested = arguments.first ?? ""
checksums = !requested.hasSuffix("-no-checksums")
guard let name = arguments.first, let workload = workloads[checksums ? requested : String(requested.dropLast("-no-checksums".count))],
      let iterations = arguments.count > 1 ? Int(arguments[arguments.startIndex + 1]) : 1 else {
    FileHandle.standardError.write(Data("usage: InstructionCounts WORKLOAD[-no-checksums] [ITERATIONS]; workloads: \(workloads.keys.sorted().joined(separator: ", "))\n".utf8))
    exit(2)
}
do {
    _ = (Workload.keys.count, Workload.records.count, Workload.permutation.count)
    try workload(iterations)
    print("\(name) x\(iterations): measured \(measuredTime)")
    print("\(name) x\(iterations): in the measured part: thread CPU \(measuredUsage.threadCPU), user \(measuredUsage.user), system \(measuredUsage.system), minor faults \(measuredUsage.minorFaults), major faults \(measuredUsage.majorFaults), bytes written \(measuredUsage.bytesWritten)")
} catch {
    FileHandle.standardError.write(Data("InstructionCounts \(name): \(error)\n".utf8))
    exit(1)
}
