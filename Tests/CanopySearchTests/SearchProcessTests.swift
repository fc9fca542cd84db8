import Canopy
import CanopySearch
import CanopySearchTestFixtures
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// Search with other processes: a writer killed at random moments with the index registered (the index agrees with
/// the rows after every kill), and a query set by another process (this process's next write places rows for it).
@Suite("Search index and results with other processes", .ownThread)
struct SearchProcessTests {
    /// The index finds exactly the stored entries of each part, each entry by its number, and by the prefix lists.
    static func expectAgreement(_ index: SearchIndex, _ txn: ReadTransaction, context: String) throws {
        var parts: [String: [String]] = [:]
        var numbers: [String: [String]] = [:]
        for key in try txn.keys(inCollection: crashWriterEntries.name) {
            guard let entry = try txn.object(forKey: key, in: crashWriterEntries) else { continue }
            parts[entry.part, default: []].append(key)
            numbers["n\(entry.number)", default: []].append(key)
        }
        for part in ["a", "b"] {
            let found = try index.search(part, in: txn, limit: 100_000, highlights: false).map(\.id.key).sorted()
            #expect(found == (parts[part] ?? []).sorted(), "part \(part); \(context)")
        }
        for (number, keys) in numbers.sorted(by: { $0.key < $1.key }).suffix(5) {
            #expect(try index.search(number, in: txn, highlights: false).map(\.id.key).sorted() == keys.sorted(), "\(number); \(context)")
        }
        // Prefixes of 2 letters read their lists: `n1*` finds every number starting with 1.
        for digit in 1...3 {
            let prefix = "n\(digit)"
            let expected = numbers.filter { $0.key.hasPrefix(prefix) }.flatMap(\.value).sorted()
            #expect(try index.search(prefix + "*", in: txn, limit: 100_000, highlights: false).map(\.id.key).sorted() == expected, "\(prefix)*; \(context)")
        }
    }

    @Test("A writer with the index registered, killed at random moments: the index agrees with the rows after every kill",
          .timeLimit(.minutes(10)))
    func killedWriter() throws {
        let writer = try #require(builtExecutable(named: "CrashWriter"), "the CrashWriter executable was not built")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        var random = SeededRandom(seed: 0x5EA7C4)
        for round in 0..<8 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: writer)
            process.arguments = [path, "full", "--with-search", "--churn"]
            process.standardOutput = Pipe()
            try process.run()
            usleep(UInt32(Int.random(in: 30_000..<250_000, using: &random)))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let database = try Database(path: path, options: .init(durability: .full))
            let index = crashWriterSearch()
            let outcome = try database.register(index)
            // The index commits with the rows: current, unless the writer was killed before it first registered it.
            #expect(outcome == .current || outcome == .rebuilt(.firstRegistration), "round \(round) (seed 0x5EA7C4): \(outcome)")
            try database.newConnection().read { txn in try Self.expectAgreement(index, txn, context: "round \(round), seed 0x5EA7C4") }
        }
    }

    @Test("A query set by another process is the one this process's next write places rows for", .timeLimit(.minutes(5)))
    func queryFromAnotherProcess() throws {
        let writer = try #require(builtExecutable(named: "CrashWriter"), "the CrashWriter executable was not built")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let database = try Database(path: path, options: .init(durability: .none))
        let index = crashWriterSearch()
        let results = crashWriterResults(index)
        try database.register(index)
        try database.register(results.view)
        try database.newConnection().readWrite { txn in
            for number in 1...3 {
                for part in ["a", "b"] { try txn.set(CrashWriterEntry(number: number, part: part), forKey: "\(number)-\(part)", in: crashWriterEntries) }
            }
            try results.setQuery("a", in: txn)
        }
        let child = try ChildProcess(writer, [path, "none", "--search-query", "b"])
        #expect(child.nextLine(seconds: 120) == "query set")
        #expect(child.waitForExit(seconds: 120) == 0)
        try database.newConnection().readWrite { txn in
            try txn.set(CrashWriterEntry(number: 4, part: "b"), forKey: "4-b", in: crashWriterEntries)
            try txn.set(CrashWriterEntry(number: 4, part: "a"), forKey: "4-a", in: crashWriterEntries)
        }
        let (query, rows) = try database.newConnection().read { txn in
            (try results.query(in: txn)?.text, try txn.view("entry-results").rowIDs(inGroup: "results").map(\.key).sorted())
        }
        #expect(query == "b")
        #expect(rows == ["1-b", "2-b", "3-b", "4-b"])
    }
}
