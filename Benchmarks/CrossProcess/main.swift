import Canopy
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

// Cross-process observation benchmark: a writer process commits rows one at a time; this process observes a view of
// the same database through a ViewObserver and records, per commit, the time from the start of the writer's commit
// call to the changeset that contains it. Also measures the CPU an idle observer uses, and the cost the commit wake-up adds
// to a commit. Prints, last, one line per measure:
//     <name> ratio=<value> target=<target>
//
// Run: make bench-xproc   (or: cd Benchmarks && swift run -c release CrossProcessBench)
// `CrossProcessBench populate PATH N` instead creates a database of N rows with two views (for timing `canopy verify`).
// Options (environment): XPROC_COMMITS (default 400), XPROC_INTERVAL_MS (default 5), XPROC_IDLE_SECONDS (default 3),
// XPROC_OVERHEAD_COMMITS (default 2000).

struct Entry: Codable, Sendable, BinaryCodecSynthesizedDecoding {
    var number: Int
    var part: String
}

let entries = TypedCollection<Entry, NoMetadata>("entries")

func makeView() -> View {
    View(name: "by-part",
         grouping: .byObject(entries) { _, entry in entry.part },
         sorting: .byObject(entries) { _, _, entry in SortKey(.ascending(entry.number)) },
         versionTag: "1")
}

/// CLOCK_MONOTONIC in nanoseconds: one clock for every process of the machine.
func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

func environment(_ name: String, _ fallback: Int) -> Int {
    ProcessInfo.processInfo.environment[name].flatMap(Int.init) ?? fallback
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

/// The writer process: commits `count` rows, one per transaction, `interval` apart; prints "<key> <start-of-commit ns>".
func runWriter(path: String, count: Int, intervalMilliseconds: Int) throws {
    let database = try Database(path: path, options: .init(durability: .none))
    try database.register(makeView())
    let connection = database.newConnection()
    var lines = ""
    for i in 0..<count {
        usleep(useconds_t(intervalMilliseconds * 1000))
        // Timed from the start of the commit call: the latency includes the commit itself (an upper bound).
        let start = monotonicNanoseconds()
        try connection.readWrite { txn in try txn.set(Entry(number: 1_000_000 + i, part: i % 2 == 0 ? "a" : "b"), forKey: "w\(i)", in: entries) }
        lines += "w\(i) \(start)\n"
    }
    FileHandle.standardOutput.write(Data(lines.utf8))
}

/// Latency: a writer process commits, this process observes.
func measureLatency(path: String) async throws -> (p50: Double, p99: Double, count: Int) {
    let commits = environment("XPROC_COMMITS", 400)
    let database = try Database(path: path, options: .init(durability: .none))
    try database.register(makeView())
    try await database.newConnection().readWrite { txn in
        for i in 0..<1000 { try txn.set(Entry(number: i, part: i % 2 == 0 ? "a" : "b"), forKey: "e\(i)", in: entries) }
    }
    let observer = try ViewObserver(database: database, mappings: ViewMappings(groups: ["a", "b"], view: "by-part"),
                                    connectionOptions: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
    let seen = SeenTimes()
    let observing = Task {
        for try await changeset in observer.changes() {
            let now = monotonicNanoseconds()
            for change in changeset.rowChanges where change.kind == .insert { seen.record(change.id.key, now) }
            if seen.count >= commits { return }
        }
    }
    let writer = Process()
    writer.executableURL = URL(fileURLWithPath: "/proc/self/exe")
    writer.arguments = ["writer", path, String(commits), String(environment("XPROC_INTERVAL_MS", 5))]
    let pipe = Pipe()
    writer.standardOutput = pipe
    try writer.run()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    writer.waitUntilExit()
    guard writer.terminationStatus == 0 else { throw BenchmarkError("the writer process failed") }
    _ = try await observing.value
    var latencies: [Double] = []
    for line in String(decoding: output, as: UTF8.self).split(separator: "\n") {
        let parts = line.split(separator: " ")
        guard parts.count == 2, let committed = UInt64(parts[1]), let observed = seen.time(of: String(parts[0])) else { continue }
        latencies.append(Double(Int64(bitPattern: observed &- committed)) / 1e6)
    }
    latencies.sort()
    return (percentile(latencies, 0.5), percentile(latencies, 0.99), latencies.count)
}

/// Idle CPU: an observer waiting for commits that don't come.
func measureIdleCPU(path: String) async throws -> Double {
    let database = try Database(path: path, options: .init(durability: .none))
    let observer = try ViewObserver(database: database, mappings: ViewMappings(groups: ["a", "b"], view: "by-part"))
    let observing = Task { for try await _ in observer.changes() {} }
    try await Task.sleep(for: .milliseconds(300))
    let seconds = Double(environment("XPROC_IDLE_SECONDS", 3))
    let cpuBefore = cpuSeconds()
    let wallBefore = monotonicNanoseconds()
    try await Task.sleep(for: .seconds(seconds))
    let cpu = cpuSeconds() - cpuBefore
    let wall = Double(monotonicNanoseconds() - wallBefore) / 1e9
    observing.cancel()
    return cpu / wall * 100
}

/// Commit cost with the wake-up signal / without, on one database (reopened with the signal on or off for each run),
/// with another process watching for commits in both cases.
func measureCommitOverhead(directory: String) throws -> Double {
    let commits = environment("XPROC_OVERHEAD_COMMITS", 2000)
    let path = directory + "/overhead"
    do {
        let database = try Database(path: path, options: .init(durability: .none))
        try database.newConnection().readWrite { txn in
            for i in 0..<10_000 { try txn.set(Entry(number: i, part: "p"), forKey: "e\(i)", in: entries) }
        }
    }
    let watcher = Process()
    watcher.executableURL = URL(fileURLWithPath: "/proc/self/exe")
    watcher.arguments = ["watcher", path]
    try watcher.run()
    defer { kill(watcher.processIdentifier, SIGKILL); watcher.waitUntilExit() }
    usleep(200_000)  // let it open the database and start watching
    func run(signal: Bool, round: Int) throws -> Double {
        if signal { unsetenv("CANOPY_COMMIT_SIGNAL") } else { setenv("CANOPY_COMMIT_SIGNAL", "off", 1) }
        defer { unsetenv("CANOPY_COMMIT_SIGNAL") }
        let database = try Database(path: path, options: .init(durability: .none))
        let connection = database.newConnection()
        let start = monotonicNanoseconds()
        for i in 0..<commits {
            try connection.readWrite { txn in try txn.set(Entry(number: i, part: "q"), forKey: "k\(i % 500)", in: entries) }
        }
        return Double(monotonicNanoseconds() - start) / Double(commits)
    }
    // Rounds alternate which goes first; the ratio is the median of the rounds' ratios.
    var withTimes: [Double] = []
    var withoutTimes: [Double] = []
    var ratios: [Double] = []
    for round in 0..<15 {
        let (a, b): (Double, Double)
        if round % 2 == 0 {
            a = try run(signal: true, round: round)
            b = try run(signal: false, round: round)
        } else {
            b = try run(signal: false, round: round)
            a = try run(signal: true, round: round)
        }
        withTimes.append(a)
        withoutTimes.append(b)
        ratios.append(a / b)
    }
    withTimes.sort()
    withoutTimes.sort()
    ratios.sort()
    print(String(format: "commit (MDB_NOSYNC, 1 row, another process watching): %.1f µs with the wake-up signal, %.1f µs without (medians of 15 rounds x %d)",
                 percentile(withTimes, 0.5) / 1000, percentile(withoutTimes, 0.5) / 1000, commits))
    return percentile(ratios, 0.5)
}

final class SeenTimes: Sendable {
    private let times = Mutex<[String: UInt64]>([:])
    func record(_ key: String, _ time: UInt64) { times.withLock { if $0[key] == nil { $0[key] = time } } }
    func time(of key: String) -> UInt64? { times.withLock { $0[key] } }
    var count: Int { times.withLock { $0.count } }
}

struct BenchmarkError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}


let arguments = CommandLine.arguments
if arguments.count >= 5, arguments[1] == "writer" {
    do {
        try runWriter(path: arguments[2], count: Int(arguments[3]) ?? 100, intervalMilliseconds: Int(arguments[4]) ?? 5)
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("writer failed: \(error)\n".utf8))
        exit(1)
    }
}

// `CrossProcessBench watcher PATH`: watches the database for commits until killed (the commit-overhead measure's
// observer process).
if arguments.count >= 3, arguments[1] == "watcher" {
    do {
        let database = try Database(path: arguments[2], options: .init(durability: .none, readOnly: true))
        let wakeups = Atomic<Int>(0)
        let watch = database.watchCommits { wakeups.add(1, ordering: .relaxed) }
        withExtendedLifetime(watch) {
            while true { sleep(60) }
        }
    } catch {
        FileHandle.standardError.write(Data("watcher failed: \(error)\n".utf8))
        exit(1)
    }
}

// `CrossProcessBench populate PATH N`: a database of N rows with two views (a view and a filtered view), for timing
// `canopy verify` on a large database.
if arguments.count >= 4, arguments[1] == "populate" {
    do {
        let database = try Database(path: arguments[2], options: .init(durability: .none))
        let count = Int(arguments[3]) ?? 1_000_000
        let connection = database.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
        let start = monotonicNanoseconds()
        var written = 0
        while written < count {
            let end = min(count, written + 100_000)
            try connection.readWrite { txn in
                for i in written..<end {
                    try txn.set(Entry(number: (i &* 7919) % count, part: "part-\(i % 100)"), forKey: String(format: "key-%09d", i), in: entries)
                }
            }
            written = end
        }
        try database.register(makeView())
        try database.register(FilteredView.make(name: "even", parentView: "by-part") { _, row in try row.object(as: Entry.self).number % 2 == 0 })
        print(String(format: "populated %d rows and 2 views in %.1f s at %@", count, Double(monotonicNanoseconds() - start) / 1e9, arguments[2]))
        exit(0)
    } catch {
        print("populate failed: \(error)")
        exit(1)
    }
}

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-xproc-\(UUID().uuidString)").path
try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: directory) }
do {
    let path = directory + "/db"
    let latency = try await measureLatency(path: path)
    print(String(format: "commit -> changeset across processes: p50 %.3f ms, p99 %.3f ms over %d commits", latency.p50, latency.p99, latency.count))
    let idle = try await measureIdleCPU(path: path)
    print(String(format: "idle observer: %.3f %% of a core", idle))
    let overhead = try measureCommitOverhead(directory: directory)
    print(String(format: "xproc-latency-p50-ms ratio=%.3f target=2", latency.p50))
    print(String(format: "xproc-latency-p99-ms ratio=%.3f target=20", latency.p99))
    print(String(format: "xproc-idle-cpu-percent ratio=%.3f target=1", idle))
    print(String(format: "xproc-commit-overhead ratio=%.3f target=1.1", overhead))
} catch {
    print("cross-process benchmark failed: \(error)")
    exit(1)
}
