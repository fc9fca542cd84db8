import Canopy
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Synchronization
import Testing

/// Kills a writer process with SIGKILL at random moments and checks that every acknowledged commit survives and no
/// transaction is half-applied. 20 kills by default; `CANOPY_CRASH_KILLS=N` for more.
@Suite("Crash safety", .ownThread)
struct CrashTests {
    struct Entry: Codable, Sendable {
        var number: Int
        var part: String
    }

    static var writerPath: String? { builtExecutable(named: "CrashWriter") }

    /// Runs the writer with `arguments`, lets it commit for a random while, kills it without warning, and returns the
    /// last commit it acknowledged (`nil` when it acknowledged none).
    ///
    /// The random while (20–250 ms) counts from the start in half the rounds (a kill may land while the writer opens
    /// the database and registers its extensions) and from its first acknowledged commit in the others: on a loaded
    /// machine, or under a sanitizer, starting up alone can take longer than the whole window, and a test whose every
    /// kill came before the first commit would check nothing (it failed so under AddressSanitizer: "the writer never
    /// committed").
    static func runAndKill(_ writer: String, _ arguments: [String], random: inout SeededRandom) throws -> Int? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: writer)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        let delay = UInt32(Int.random(in: 20_000..<250_000, using: &random))
        let fromFirstCommit = Bool.random(using: &random)
        let output = ChildOutput(pipe.fileHandleForReading)
        try process.run()
        if fromFirstCommit {
            // A hang guard, not a timing: a writer that never commits is reported by the caller's expectations.
            _ = output.firstAcknowledgement.wait(timeout: .now() + 120)
        }
        usleep(delay)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let text = output.untilEnd()
        return text.split(separator: "\n").compactMap { line in line.hasPrefix("acked ") ? Int(line.dropFirst(6)) : nil }.max()
    }

    /// A child's standard output read on a thread of its own as it comes, so that a test can wait for its first
    /// "acked" line while it runs.
    final class ChildOutput: @unchecked Sendable {
        /// Signalled once, when the output first holds an "acked" line.
        let firstAcknowledgement = DispatchSemaphore(value: 0)
        private let text = Mutex("")
        private let done = DispatchSemaphore(value: 0)

        init(_ handle: FileHandle) {
            let thread = Thread { [self] in
                var signalled = false
                while true {
                    let data = handle.availableData
                    if data.isEmpty { break }
                    let hasAcknowledgement = text.withLock { text in
                        text += String(decoding: data, as: UTF8.self)
                        return text.contains("acked ")
                    }
                    if hasAcknowledgement && !signalled {
                        signalled = true
                        firstAcknowledgement.signal()
                    }
                }
                done.signal()
            }
            thread.start()
        }

        /// Everything the child wrote, once its output ended.
        func untilEnd() -> String {
            done.wait()
            return text.withLock { $0 }
        }
    }

    @Test(.timeLimit(.minutes(10)))
    func killedWriterLosesNoAcknowledgedCommit() throws {
        let writer = try #require(Self.writerPath, "the CrashWriter executable was not built")
        let kills = Int(ProcessInfo.processInfo.environment["CANOPY_CRASH_KILLS"] ?? "") ?? 20
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        var random = SeededRandom(seed: 0xC0FFEE)
        let entries = TypedCollection<Entry, NoMetadata>("entries")
        let counter = TypedCollection<Int, NoMetadata>("counter")
        var lastChecked = 0
        for round in 0..<kills {
            let acknowledged = try Self.runAndKill(writer, [path, "full"], random: &random) ?? lastChecked

            let database = try Database(path: path, options: .init(durability: .full))
            try database.newConnection().read { txn throws in
                let last = try txn.object(forKey: "n", in: counter) ?? 0
                #expect(last >= acknowledged, "round \(round) seed 0xC0FFEE: acknowledged \(acknowledged), found \(last)")
                #expect(last >= lastChecked, "round \(round): counter went back from \(lastChecked) to \(last)")
                // Every committed transaction is whole, and nothing beyond the last one is there.
                for number in max(1, lastChecked - 1)...max(1, last) where last > 0 {
                    #expect(try txn.object(forKey: "\(number)-a", in: entries)?.number == number, "round \(round) number \(number)")
                    #expect(try txn.object(forKey: "\(number)-b", in: entries)?.number == number, "round \(round) number \(number)")
                }
                #expect(try !txn.exists(key: "\(last + 1)-a", in: entries), "round \(round): half-applied transaction \(last + 1)")
                #expect(try txn.count(inCollection: "entries") == 2 * last, "round \(round)")
                #expect(txn.snapshot == UInt64(last), "round \(round): snapshot \(txn.snapshot) for \(last) commits")
                lastChecked = last
            }
        }
        #expect(lastChecked > 0, "the writer never committed")
    }

    /// The writer keeps a view up to date; after every kill the view still agrees with the rows — without a rebuild.
    /// 10 kills by default; `CANOPY_CRASH_KILLS=N` for more.
    @Test(.timeLimit(.minutes(10)))
    func killedWriterWithAViewLeavesTheViewRight() throws {
        let writer = try #require(Self.writerPath, "the CrashWriter executable was not built")
        let kills = Int(ProcessInfo.processInfo.environment["CANOPY_CRASH_KILLS"] ?? "").map { max(1, $0 / 2) } ?? 10
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        var random = SeededRandom(seed: 0xBEEF)
        let counter = TypedCollection<Int, NoMetadata>("counter")
        var lastChecked = 0
        for round in 0..<kills {
            let acknowledged = try Self.runAndKill(writer, [path, "none", "--with-view"], random: &random) ?? lastChecked

            let database = try Database(path: path, options: .init(durability: .none))
            let view = crashWriterView()
            try database.register(view)
            #expect(view.lastPopulation == nil || lastChecked == 0,
                    "round \(round) seed 0xBEEF: the view was rebuilt (\(String(describing: view.lastPopulation))): the kill left it behind the rows")
            try database.newConnection().read { txn throws in
                let last = try txn.object(forKey: "n", in: counter) ?? 0
                #expect(last >= acknowledged, "round \(round): acknowledged \(acknowledged), found \(last)")
                let reader = try txn.view("entries-by-part")
                #expect(try reader.checkInvariants() == [], "round \(round) seed 0xBEEF")
                #expect(try reader.count() == 2 * last, "round \(round)")
                #expect(try reader.count(inGroup: "a") == last && reader.count(inGroup: "b") == last, "round \(round)")
                if last > 0 {
                    #expect(try reader.first(inGroup: "a") == RowID(collection: "entries", key: "\(last)-a"), "round \(round)")
                }
                lastChecked = last
            }
        }
        #expect(lastChecked > 0, "the writer never committed")
    }

    /// The same with a many-group view (each entry in 2 or 3 groups, all its entries in its one record): after every
    /// kill the view agrees with the rows, without a rebuild. 5 kills by default; `CANOPY_CRASH_KILLS=N` for more.
    @Test(.timeLimit(.minutes(10)))
    func killedWriterWithAManyGroupViewLeavesTheViewRight() throws {
        let writer = try #require(Self.writerPath, "the CrashWriter executable was not built")
        let kills = Int(ProcessInfo.processInfo.environment["CANOPY_CRASH_KILLS"] ?? "").map { max(1, $0 / 4) } ?? 5
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        var random = SeededRandom(seed: 0x7A65)
        let counter = TypedCollection<Int, NoMetadata>("counter")
        var lastChecked = 0
        for round in 0..<kills {
            let acknowledged = try Self.runAndKill(writer, [path, "none", "--with-many-group-view", "--churn"], random: &random) ?? lastChecked
            let database = try Database(path: path, options: .init(durability: .none))
            let view = crashWriterManyGroupView()
            try database.register(view)
            #expect(view.lastPopulation == nil || lastChecked == 0,
                    "round \(round) seed 0x7A65: the view was rebuilt (\(String(describing: view.lastPopulation))): the kill left it behind the rows")
            try database.newConnection().read { txn throws in
                let last = try txn.object(forKey: "n", in: counter) ?? 0
                #expect(last >= acknowledged, "round \(round): acknowledged \(acknowledged), found \(last)")
                let reader = try txn.view("entries-by-tags")
                #expect(try reader.checkInvariants() == [], "round \(round) seed 0x7A65")
                #expect(try reader.count(inGroup: "all") == txn.count(inCollection: crashWriterEntries.name), "round \(round)")
                lastChecked = last
            }
        }
        #expect(lastChecked > 0, "the writer never committed")
    }

    /// The writer keeps a manual list (inserts at positions, moves, renumbering); after every kill the list is the
    /// one its acknowledged commits made, and its pages agree with its order — without a rebuild.
    /// 10 kills by default; `CANOPY_CRASH_KILLS=N` for more.
    @Test(.timeLimit(.minutes(10)))
    func killedWriterWithAManualListLeavesTheListRight() throws {
        let writer = try #require(Self.writerPath, "the CrashWriter executable was not built")
        let kills = Int(ProcessInfo.processInfo.environment["CANOPY_CRASH_KILLS"] ?? "").map { max(1, $0 / 2) } ?? 10
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        var random = SeededRandom(seed: 0xF0C05)
        let counter = TypedCollection<Int, NoMetadata>("counter")
        var lastChecked = 0
        for round in 0..<kills {
            let acknowledged = try Self.runAndKill(writer, [path, "none", "--with-manual-list"], random: &random) ?? lastChecked

            let database = try Database(path: path, options: .init(durability: .none))
            let list = crashWriterFocusList()
            try database.register(list)
            #expect(list.lastPopulation == nil || lastChecked == 0,
                    "round \(round) seed 0xF0C05: the list was rebuilt (\(String(describing: list.lastPopulation)))")
            try database.newConnection().read { txn throws in
                let last = try txn.object(forKey: "n", in: counter) ?? 0
                #expect(last >= acknowledged, "round \(round): acknowledged \(acknowledged), found \(last)")
                let reader = try txn.view("focus")
                #expect(try reader.checkInvariants() == [], "round \(round) seed 0xF0C05")
                #expect(try reader.rowIDs(inGroup: "focus").map(\.key) == crashWriterFocusModel(commits: last),
                        "round \(round) seed 0xF0C05: the list after \(last) commits")
                lastChecked = last
            }
        }
        #expect(lastChecked > 0, "the writer never committed")
    }
}
