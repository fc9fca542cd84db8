import Canopy
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
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
    static func runAndKill(_ writer: String, _ arguments: [String], random: inout SeededRandom) throws -> Int? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: writer)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        usleep(UInt32(Int.random(in: 20_000..<250_000, using: &random)))
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return output.split(separator: "\n").compactMap { line in line.hasPrefix("acked ") ? Int(line.dropFirst(6)) : nil }.max()
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
