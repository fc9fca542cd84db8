import Canopy
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// Corrupted copies of a ~10 MB database with a view go through `canopy verify`, `info`, `get`, `view`, `stat`, `views`,
/// `export` and the API's open and read (the CrashWriter's `--read-all`, an app's process: no child process contains
/// it, only the LMDB layer's guarded calls), each in a child process so that a signal is counted: every run ends with a
/// typed error, a report, or success — never a signal or a hang.
///
/// Damage: bit flips in leaf (data) and branch pages, zeroed pages, truncation at a random length. 8 copies by default
/// (about 20 seconds); `CANOPY_CORRUPTION_COPIES=1000` for the large run, `CANOPY_CORRUPTION_SEED` to replay one
/// (each copy's seed is printed with its outcome when it ends by a signal or a hang, and the counts at the end),
/// `CANOPY_CORRUPTION_COMMANDS=api,verify` to run some of the commands only.
@Suite("Corrupted copies: a typed error or a report, never a signal", .serialized, .ownThread)
struct CorruptionTests {
    /// What one process run ended with.
    enum Outcome: String, CaseIterable, Comparable {
        /// Exit 0: the command found nothing wrong (the damage was where it did not look, or it was silently missed).
        case silent
        /// A `canopy verify` report of problems, or the report of a crash contained in canopy's child process.
        case report
        /// A non-zero exit with a typed error message.
        case typedError = "typed error"
        /// A non-zero exit without a message.
        case unexplained
        /// Ended by a signal.
        case signal
        /// Killed after the time limit.
        case hang

        static func < (a: Outcome, b: Outcome) -> Bool { allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)! }
    }

    /// The kinds of damage.
    enum Damage: String, CaseIterable {
        case leafFlips = "leaf-page flips"
        case branchFlips = "branch-page flips"
        case zeroedPage = "zeroed page"
        case truncation
    }

    static let pageSize = 4096
    static let rowCount = 13_000

    /// Builds the pristine database: `rowCount` entries with a payload each (~10 MB) and the CrashWriter's view.
    static func makePristine(at path: String) throws {
        let database = try Database(path: path, options: .init(durability: .none))
        try database.register(crashWriterView())
        var random = SeededRandom(seed: 0xC0FFEE)
        let letters = Array("abcdefghijklmnopqrstuvwxyz")
        for batch in stride(from: 0, to: rowCount, by: 2_000) {
            try database.newConnection().readWrite { txn in
                for number in batch..<(batch + 2_000) {
                    let payload = String((0..<(250 + Int(random.next() % 200))).map { _ in letters[Int(random.next() % 26)] })
                    try txn.set(CrashWriterEntry(number: number, part: number % 3 == 0 ? "a" : "b", payload: payload),
                                forKey: "\(number)-\(number % 3 == 0 ? "a" : "b")", in: crashWriterEntries)
                }
            }
        }
    }

    /// The page numbers of `data` whose LMDB page header has `flag` (1 branch, 2 leaf).
    static func pages(of data: [UInt8], flag: UInt16) -> [Int] {
        (2..<(data.count / pageSize)).filter { page in
            let offset = page * pageSize + 10
            let flags = UInt16(data[offset]) | UInt16(data[offset + 1]) << 8
            return flags & flag != 0 && flags & 0x04 == 0 && data[page * pageSize..<page * pageSize + 8].contains { $0 != 0 }
        }
    }

    /// Damages `data` as `damage` says; returns a description.
    static func damage(_ data: inout [UInt8], _ damage: Damage, random: inout SeededRandom) -> String {
        let pageCount = data.count / pageSize
        switch damage {
        case .leafFlips, .branchFlips:
            let candidates = pages(of: data, flag: damage == .leafFlips ? 2 : 1)
            guard let page = candidates.isEmpty ? nil : candidates[Int(random.next() % UInt64(candidates.count))] else { return "no such page" }
            let flips = 1 + Int(random.next() % 4)
            var offsets: [Int] = []
            for _ in 0..<flips {
                let offset = page * pageSize + Int(random.next() % UInt64(pageSize))
                data[offset] ^= UInt8(1) << UInt8(random.next() % 8)
                offsets.append(offset)
            }
            return "\(flips) flip(s) in page \(page) at \(offsets)"
        case .zeroedPage:
            let page = Int(random.next() % UInt64(pageCount))
            for offset in page * pageSize..<(page + 1) * pageSize { data[offset] = 0 }
            return "page \(page) zeroed"
        case .truncation:
            let length = Int(random.next() % UInt64(data.count))
            data.removeSubrange(length...)
            return "truncated to \(length) bytes"
        }
    }

    static func outcome(of run: ChildRun) -> Outcome {
        if run.timedOut { return .hang }
        if run.signalled { return .signal }
        if run.status == 0 { return .silent }
        // A verify report, or the report of a crash contained in canopy's child process ("`canopy X` crashed (SIG…)").
        if run.output.contains("FAILED") || run.errors.contains("` crashed (") { return .report }
        if run.errors.contains("error") || run.output.hasPrefix("error ") { return .typedError }
        return .unexplained
    }

    @Test("corrupted copies through canopy verify, info, get, view, stat, views, export and the API: no signal, no hang")
    func corruptedCopies() throws {
        let environment = ProcessInfo.processInfo.environment
        // CANOPY_CORRUPTION_TOOLS=DIR: run the canopy and CrashWriter executables in DIR (copies of another build).
        let tools = environment["CANOPY_CORRUPTION_TOOLS"]
        guard let canopyPath = tools.map({ $0 + "/canopy" }) ?? canopyExecutable,
              let readerPath = tools.map({ $0 + "/CrashWriter" }) ?? builtExecutable(named: "CrashWriter") else {
            Issue.record("the canopy and CrashWriter executables were not built next to the tests")
            return
        }
        let copies = environment["CANOPY_CORRUPTION_COPIES"].flatMap(Int.init) ?? 8
        let baseSeed = environment["CANOPY_CORRUPTION_SEED"].flatMap { UInt64($0) } ?? 0x15C0_22
        let directory = try TemporaryDirectory(prefix: "canopy-corruption")
        defer { directory.remove() }
        let pristine = directory.appending("pristine")
        try Self.makePristine(at: pristine)
        let original = try [UInt8](Data(contentsOf: URL(fileURLWithPath: pristine + "/data.mdb")))
        print("corruption: pristine data.mdb \(original.count) bytes, \(copies) copies, base seed \(baseSeed)")

        let commands: [(name: String, executable: String, arguments: (String, inout SeededRandom) -> [String])] = [
            ("verify", canopyPath, { path, _ in ["verify", path] }),
            ("info", canopyPath, { path, _ in ["info", path] }),
            ("get", canopyPath, { path, random in
                let number = Int(random.next() % UInt64(Self.rowCount))
                return ["get", path, "entries", "\(number)-\(number % 3 == 0 ? "a" : "b")"]
            }),
            ("view", canopyPath, { path, random in
                ["view", path, "entries-by-part", "--group", random.next() % 2 == 0 ? "a" : "b", "--offset", "\(random.next() % 8_000)", "--limit", "50"]
            }),
            ("stat", canopyPath, { path, _ in ["stat", path] }),
            ("views", canopyPath, { path, _ in ["views", path] }),
            ("export", canopyPath, { path, _ in ["export", path] }),
            ("api", readerPath, { path, _ in [path, "none", "--read-all"] }),
        ]
        let only = environment["CANOPY_CORRUPTION_COMMANDS"].map { Set($0.split(separator: ",").map(String.init)) }
        let chosen = commands.filter { only?.contains($0.name) ?? true }
        var counts: [String: [Outcome: Int]] = [:]
        var failures: [String] = []
        for copy in 0..<copies {
            let seed = baseSeed &+ UInt64(copy)
            var random = SeededRandom(seed: seed)
            let kind = Damage.allCases[Int(random.next() % UInt64(Damage.allCases.count))]
            var data = original
            let what = Self.damage(&data, kind, random: &random)
            let path = directory.appending("copy")
            try? FileManager.default.removeItem(atPath: path)
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            try Data(data).write(to: URL(fileURLWithPath: path + "/data.mdb"))
            for command in chosen {
                let run = try ChildRun(command.executable, command.arguments(path, &random), seconds: 60)
                let outcome = Self.outcome(of: run)
                counts[command.name, default: [:]][outcome, default: 0] += 1
                if outcome == .signal || outcome == .hang || outcome == .unexplained {
                    let line = "seed \(seed) (\(kind.rawValue): \(what)): \(command.name) \(outcome.rawValue) (status \(run.status)); stderr: \(run.errors.split(separator: "\n").first { $0.contains("error") || $0.contains("Fatal") || $0.contains("Assertion") || $0.contains("crashed") } ?? "")"
                    print("corruption: \(line)")
                    failures.append(line)
                }
            }
        }
        var total: [Outcome: Int] = [:]
        for name in chosen.map(\.name) {
            let line = Outcome.allCases.map { "\($0.rawValue) \(counts[name]?[$0] ?? 0)" }.joined(separator: ", ")
            print("corruption: \(name): \(line) (base seed \(baseSeed), \(copies) copies)")
            for (outcome, count) in counts[name] ?? [:] { total[outcome, default: 0] += count }
        }
        print("corruption: all: " + Outcome.allCases.map { "\($0.rawValue) \(total[$0] ?? 0)" }.joined(separator: ", "))
        #expect(failures.isEmpty, "\(failures.count) runs ended by a signal, a hang or without a message:\n\(failures.prefix(20).joined(separator: "\n"))")
    }
}
