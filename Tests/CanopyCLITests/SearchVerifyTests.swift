import Canopy
import CanopyCLI
import CanopySearch
import CanopyTestSupport
import Foundation
import LMDB
import Testing

/// `canopy verify` checks search indexes from their stored tables, without the app's text closure: files written by
/// the app's code, closed, then damaged as a disk or a foreign tool would (records deleted or rewritten with valid
/// checksums, so only the index's own structure can tell).
@Suite("canopy verify on search indexes: lost blocks, directory entries and counts are reported, never a signal", .ownThread)
struct SearchVerifyTests {
    static let index = "memo-search"
    static let words = ["milk", "bread", "oat", "butter", "honey", "tea", "milkshake", "mild"]

    static func memoSearch() -> SearchIndex {
        SearchIndex.byObject(name: index, memos, fields: [ObjectSearchField("text", \.text)], prefixLengths: [3])
    }

    /// 300 memos (`milk` in every one: three blocks), indexed by the app's code; then closed.
    static func makeDatabase(at path: String) throws {
        let database = try Database(path: path, options: .init(durability: .none))
        try database.register(memoSearch())
        try database.newConnection().readWrite { txn in
            for number in 0..<300 {
                let text = "milk " + (0..<3).map { words[(number * 7 + $0 * 3) % words.count] }.joined(separator: " ") + " n\(number)"
                try txn.set(Memo(text: text, tags: []), forKey: "m\(number)", in: memos)
            }
        }
        // A row removed and one rewritten, as an app does: their postings go.
        try database.newConnection().readWrite { txn in
            try txn.remove(key: "m5", in: memos)
            try txn.set(Memo(text: "tea only", tags: []), forKey: "m6", in: memos)
        }
    }

    /// Changes the closed database at `path` through LMDB alone (values written with valid checksums).
    static func damage(_ path: String, _ body: (WriteTransaction, (String) throws -> LMDB.Database) throws -> Void) throws {
        let environment = try Environment(path: path, options: EnvironmentOptions(maxDatabases: 64))
        try environment.write { txn in try body(txn) { try txn.openDatabase(named: $0, checksummed: true) } }
    }

    /// The keys of `table` of the index.
    static func keys(_ txn: WriteTransaction, _ table: LMDB.Database) throws -> [[UInt8]] {
        var keys: [[UInt8]] = []
        try txn.forEach(in: table) { key, _ in
            keys.append(Array(key))
            return true
        }
        return keys
    }

    static func key(_ word: String, _ block: UInt64) -> [UInt8] {
        var key = Array(word.utf8) + [0]
        withUnsafeBytes(of: block.bigEndian) { key.append(contentsOf: $0) }
        return key
    }

    /// Opens the database as the app does, registers the index (rebuilding it when it was dropped) and counts the
    /// rows `query` finds; then closes the database.
    static func registerAndSearch(_ path: String, _ query: String) throws -> Int {
        let database = try Database(path: path, options: .init(durability: .none))
        let search = memoSearch()
        try database.register(search)
        return try database.newConnection().read { txn in try search.search(query, in: txn, limit: 1_000, highlights: false).count }
    }

    /// Writes a row as a process that does not register the index: the index lags the store (stale).
    static func writeWithoutIndex(_ path: String) throws {
        let database = try Database(path: path, options: .init(durability: .none))
        try database.newConnection().readWrite { txn in try txn.set(Memo(text: "unindexed", tags: []), forKey: "x", in: memos) }
    }

    func withDatabase(_ body: (String) async throws -> Void) async throws {
        let directory = try TemporaryDirectory(prefix: "canopy-cli-search")
        defer { directory.remove() }
        let path = directory.appending("db")
        try Self.makeDatabase(at: path)
        try await body(path)
    }

    @Test("an intact index (rows removed and rewritten) verifies clean, text and JSON")
    func intact() async throws {
        try await withDatabase { path in
            let verify = await canopy("verify", path)
            #expect(verify.status == 0, "\(verify.output) \(verify.errors)")
            #expect(verify.output.contains("1 search index [memo-search (299 rows)]"), "\(verify.output)")
            let json = try await canopy("verify", path, "--json").json()
            #expect(json["ok"] == .bool(true))
            let search = json["searchIndexes"]?.elements.first
            #expect(search?["name"] == .string(Self.index))
            #expect(search?["rows"]?.intValue == 299)
            #expect(search?["checked"] == .bool(true))
            #expect(search?["problems"]?.elements.isEmpty == true)
        }
    }

    @Test("a deleted block: its rows' words are named missing, the directory lists a block that is not stored; exit 1")
    func deletedBlock() async throws {
        try await withDatabase { path in
            try Self.damage(path) { txn, open in
                let postings = try open("ext.\(Self.index).postings")
                let milk = try Self.keys(txn, postings).filter { $0.starts(with: Array("milk".utf8) + [0]) }
                try #require(milk.count >= 2, "milk has \(milk.count) blocks")
                #expect(try txn.delete(milk[0], in: postings))
            }
            let verify = await canopy("verify", path)
            #expect(verify.status == 1, "\(verify.output)")
            #expect(verify.output.contains("the postings of word 'milk' lack 117 of its rows (memos/m0, memos/m1"), "\(verify.output)")
            #expect(verify.output.contains("the directory of word 'milk' lists block"), "\(verify.output)")
            #expect(verify.output.contains("which is not stored"), "\(verify.output)")
            #expect(verify.output.contains("repair: drop the search index with `canopy drop-view"), "\(verify.output)")
            #expect(verify.output.contains("FAILED"))
        }
    }

    @Test("a dropped directory entry: the block is named missing from its directory; exit 1")
    func droppedDirectoryEntry() async throws {
        try await withDatabase { path in
            try Self.damage(path) { txn, open in
                let directory = try open("ext.\(Self.index).postings-directory")
                #expect(try txn.delete(Self.key("bread", UInt64.max), in: directory))
            }
            let verify = await canopy("verify", path, "--json")
            #expect(verify.status == 1, "\(verify.output)")
            let json = try verify.json()
            let problems = json["searchIndexes"]?.elements.first?["problems"]?.elements.compactMap(\.stringValue) ?? []
            #expect(problems.contains { $0.contains("block open of word 'bread' is missing from its directory") }, "\(problems)")
        }
    }

    @Test("a changed count (the state's rows, BM25's document count): named with both counts; exit 1")
    func changedCount() async throws {
        try await withDatabase { path in
            // Changed by a process that does not register the index (its state record is part of the store's state,
            // the commit log's newest entry).
            do {
                let database = try Canopy.Database(path: path)
                try await database.newConnection().readWrite { txn throws in
                    var state = try #require(try txn.withExtensionState(of: Self.index) { $0.map { Array($0) } })
                    // version 1, varint(next number), varint(rows: 299 = 0xAB 0x02), varint(total length)
                    let rows = try #require(state.indices.first { $0 > 1 && state[$0] == 0xAB && state[$0 + 1] == 0x02 })
                    state[rows] = 0xAC
                    try txn.setExtensionState(state, of: Self.index)
                }
            }
            let verify = await canopy("verify", path)
            #expect(verify.status == 1, "\(verify.output)")
            #expect(verify.output.contains("its state counts 300 rows (the row count BM25 ranks with), but 299 rows carry its record"), "\(verify.output)")
        }
    }

    @Test("a block's header rewritten (its rows' count): named; the directory disagrees with it too; exit 1")
    func changedBlockHeader() async throws {
        try await withDatabase { path in
            try Self.damage(path) { txn, open in
                let postings = try open("ext.\(Self.index).postings")
                let key = Self.key("honey", UInt64.max)
                var block = try #require(try txn.value(forKey: key, in: postings))
                block[0] += 1  // varint(rows), below 128
                try txn.put(block, forKey: key, in: postings)
            }
            let verify = await canopy("verify", path)
            #expect(verify.status == 1, "\(verify.output)")
            #expect(verify.output.contains("block open of word 'honey'"), "\(verify.output)")
        }
    }

    /// A block's bytes damaged past what its header says (checksums valid, the directory agreeing with the header):
    /// cut short, a byte after the last entry, the last body's size past the end (rows out of order and the other
    /// damage: SearchBlockBoundsTests, in process). The bounds are checked before bytes are read: a report, never a
    /// signal.
    @Test("a block cut short, grown, or with a body size past its end: named; exit 1, never a signal", arguments: ["cut", "grown", "size"])
    func damagedBlockBytes(damage: String) async throws {
        try await withDatabase { path in
            try Self.damage(path) { txn, open in
                let postings = try open("ext.\(Self.index).postings")
                let key = Self.key("honey", UInt64.max)
                var block = try #require(try txn.value(forKey: key, in: postings))
                switch damage {
                case "cut": block.removeLast(3)
                case "grown": block.append(0)
                default:
                    // The last entry: one size byte (below 128) and a body of that many bytes; the size made 127.
                    let size = try #require((1..<64).first { Int(block[block.count - 1 - $0]) == $0 })
                    block[block.count - 1 - size] = 0x7F
                }
                try txn.put(block, forKey: key, in: postings)
            }
            let verify = await canopy("verify", path)
            #expect(verify.status == 1, "\(verify.output) \(verify.errors)")
            #expect(verify.output.contains("block open of word 'honey'"), "\(verify.output)")
        }
    }

    @Test("a stale index (rows written without it) is not checked: a warning, exit 0")
    func stale() async throws {
        try await withDatabase { path in
            try Self.writeWithoutIndex(path)
            let verify = await canopy("verify", path)
            #expect(verify.status == 0, "\(verify.output)")
            #expect(verify.output.contains("warning: search index 'memo-search' was not checked: it is stale"), "\(verify.output)")
            // Its counts were not read: the summary says so, never "0 rows".
            #expect(verify.output.contains("1 search index [memo-search (not checked)]"), "\(verify.output)")
            let search = try await canopy("verify", path, "--json").json()["searchIndexes"]?.elements.first
            #expect(search?["checked"] == .bool(false))
            #expect(search?["rows"] == .null)
            #expect(search?["words"] == .null)
        }
    }

    @Test("an index recorded in another format is not checked (the app rebuilds it): a warning, exit 0")
    func otherFormat() async throws {
        // This build's format; the index is recorded one format earlier.
        let current = Self.memoSearch().options.format
        try await withDatabase { path in
            try Self.damage(path) { txn, open in
                let extensions = try open("canopy.extensions")
                let key = Array(Self.index.utf8)
                let record = String(decoding: try #require(try txn.value(forKey: key, in: extensions)), as: UTF8.self)
                #expect(record.contains(#"\"format\":\#(current)"#), "\(record)")
                try txn.put(
                    Array(record.replacingOccurrences(of: #"\"format\":\#(current)"#, with: #"\"format\":\#(current - 1)"#).utf8), forKey: key, in: extensions)
            }
            let verify = await canopy("verify", path)
            #expect(verify.status == 0, "\(verify.output)")
            #expect(verify.output.contains("warning: search index 'memo-search' was not checked: it is stored in format \(current - 1)"), "\(verify.output)")
            #expect(verify.output.contains("1 search index [memo-search (not checked)]"), "\(verify.output)")
            #expect(!verify.output.contains("(0 rows)"), "\(verify.output)")
            let search = try await canopy("verify", path, "--json").json()["searchIndexes"]?.elements.first
            #expect(search?["checked"] == .bool(false))
            #expect(search?["rows"] == .null)
        }
    }

    @Test("the canopy executable on a damaged index: a report and exit status 1, never a signal", .timeLimit(.minutes(2)))
    func executable() async throws {
        guard let executable = canopyExecutable else {
            Issue.record("the canopy executable was not built next to the tests")
            return
        }
        try await withDatabase { path in
            try Self.damage(path) { txn, open in
                let postings = try open("ext.\(Self.index).prefixes")
                let keys = try Self.keys(txn, postings)
                try #require(!keys.isEmpty)
                #expect(try txn.delete(keys[0], in: postings))
            }
            let run = try ChildRun(executable, ["verify", path], seconds: 60)
            #expect(!run.signalled && !run.timedOut && run.status == 1, "\(run.status) \(run.signalled) \(run.errors)")
            #expect(run.output.contains("problem: search index 'memo-search'"), "\(run.output)")
            #expect(run.output.contains("the prefix list of 'bre' lacks"), "\(run.output)")
        }
    }

    @Test("the repair: drop-view, then the app's registration rebuilds it, and verify is clean")
    func repair() async throws {
        try await withDatabase { path in
            try Self.damage(path) { txn, open in
                let directory = try open("ext.\(Self.index).postings-directory")
                #expect(try txn.delete(Self.key("bread", UInt64.max), in: directory))
            }
            #expect(await canopy("verify", path).status == 1)
            let drop = await canopy("drop-view", path, Self.index, "--yes")
            #expect(drop.status == 0, "\(drop.errors)")
            #expect(try Self.registerAndSearch(path, "bread") > 100)
            let verify = await canopy("verify", path)
            #expect(verify.status == 0, "\(verify.output)")
        }
    }
}
