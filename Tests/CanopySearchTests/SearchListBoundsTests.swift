import Canopy
import CanopyCore
import CanopyTestSupport
import Testing
@testable import CanopySearch

/// A word's list whose blocks overlap (a row at or below the key of the block before it), postings that count no
/// occurrence or more occurrences than their row has words: the writer refuses to rewrite such a block and a search
/// refuses to count from it (`corruptStore`, nothing written), rather than counting a row twice or scoring with
/// numbers one search path clamps and another does not.
@Suite("Search index: a list's blocks and counts are checked where they are read")
struct SearchListBoundsTests {
    /// A posting body: `length` words, `count` occurrences in field 0 (positions 0, 1, ...).
    static func body(length: Int, count: Int) -> [UInt8] {
        var out = ByteWriter()
        out.append(varint: UInt64(length))
        out.append(varint: 1)
        out.append(varint: 0)
        out.append(varint: UInt64(count))
        var positions = ByteWriter()
        for position in 0..<count { positions.append(varint: position == 0 ? 0 : 1) }
        out.append(varint: UInt64(positions.bytes.count))
        return out.bytes + positions.bytes
    }

    /// Replaces `word`'s list with `blocks` (rows with bodies, and each block's key), its directory agreeing.
    static func store(_ blocks: [(rows: [(document: UInt64, body: [UInt8], length: Int, occurrences: Int)], key: UInt64)],
                      word: String, _ index: SearchIndex, _ connection: Connection) throws {
        try connection.readWrite { txn in
            let tables = try index.tables()
            let term = Array(word.utf8)
            var stale: [[UInt8]] = []
            for table in [tables.postings, tables.postingsDirectory] {
                try table.forEachBytes(in: txn, prefix: term + [0]) { key, _ in
                    stale.append(Array(key))
                    return true
                }
                for key in stale { _ = try table.remove(key, in: txn) }
                stale = []
            }
            var headers: [SearchBlockHeader] = []
            for block in blocks {
                let built = SearchRewriteDamageTests.block(
                    rows: block.rows.map { ($0.document, $0.body) }, summaries: block.rows.map { ($0.length, $0.occurrences) }, key: block.key)
                try tables.postings.put(built.value, forKey: SearchPostingBlock.key(term: term, block: block.key), in: txn)
                headers.append(built.header)
            }
            try tables.postingsDirectory.put(SearchBlockDirectory.encode(headers[...]), forKey: SearchPostingBlock.key(term: term, block: blocks.last?.key ?? 0), in: txn)
        }
    }

    /// Notes a, b, c (rows 1, 2, 3) hold `milk` once in one-word titles.
    static func openMilk(_ directory: TemporaryDirectory) throws -> (SearchIndex, Connection) {
        let (_, index, connection) = try openNoteIndex(in: directory, titles: ["a": "milk", "b": "milk", "c": "milk"])
        return (index, connection)
    }

    @Test("Two blocks of a word both hold row 2: a count or a search is corruptStore (not 4 rows), a write into the second block is corruptStore and writes nothing")
    func overlappingBlocks() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // Rows 1...4 hold milk; the damaged list names 4 postings (as many as the index's rows), one of them twice.
        let (_, index, connection) = try openNoteIndex(in: directory, titles: ["a": "milk", "b": "milk", "c": "milk", "d": "milk"])
        let one = Self.body(length: 1, count: 1)
        // Block keyed 2 holds rows 1 and 2; the open block holds rows 2 (again: at the key before it) and 3.
        try Self.store([([(1, one, 1, 1), (2, one, 1, 1)], 2), ([(2, one, 1, 1), (3, one, 1, 1)], SearchPostingBlock.openBlock)],
                       word: "milk", index, connection)
        let count = #expect(throws: CanopyError.self) {
            try connection.read { txn in try index.count(matching: SearchQuery("milk"), in: txn) }
        }
        #expect(count?.code == .corruptStore, "\(String(describing: count))")
        let search = #expect(throws: CanopyError.self) { try connection.read { txn in try index.search("milk", in: txn, highlights: false) } }
        #expect(search?.code == .corruptStore, "\(String(describing: search))")
        let before = try SearchRewriteDamageTests.snapshot(index, connection)
        // Row 5 goes to the open block: the writer reads it back to merge.
        let write = #expect(throws: CanopyError.self) {
            try connection.readWrite { txn in try txn.set(Note(title: "milk"), forKey: "e", in: notes) }
        }
        #expect(write?.code == .corruptStore, "\(String(describing: write))")
        #expect(write?.message.contains("word 'milk'") == true, "\(String(describing: write?.message))")
        #expect(try SearchRewriteDamageTests.snapshot(index, connection) == before)
        #expect(try connection.read { txn in try txn.object(forKey: "e", in: notes) } == nil)
    }

    @Test("A well-formed posting with no occurrence (a field counted 0 times, or no field): a write that rewrites its block is corruptStore, nothing written",
          arguments: [[1, 1, 0, 0, 0], [1, 0, 0]] as [[UInt8]])
    func noOccurrence(body: [UInt8]) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (index, connection) = try Self.openMilk(directory)
        let one = Self.body(length: 1, count: 1)
        try Self.store([([(1, body, 1, 0), (2, one, 1, 1), (3, one, 1, 1)], SearchPostingBlock.openBlock)], word: "milk", index, connection)
        let before = try SearchRewriteDamageTests.snapshot(index, connection)
        let write = #expect(throws: CanopyError.self) {
            try connection.readWrite { txn in try txn.set(Note(title: "milk"), forKey: "d", in: notes) }
        }
        #expect(write?.code == .corruptStore, "\(String(describing: write))")
        #expect(try SearchRewriteDamageTests.snapshot(index, connection) == before)
        let search = #expect(throws: CanopyError.self) { try connection.read { txn in try index.search("milk", in: txn, highlights: false) } }
        #expect(search?.code == .corruptStore, "\(String(describing: search))")
    }

    @Test("Counts past the row's length, or a length past 2^31 − 1: every search path is corruptStore (the dense prefix merge clamped them to 32 bits, the others did not)",
          arguments: ["count past length", "huge length", "prefix sum past length"])
    func countsPastTheLength(damage: String) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // Rows 1...3 hold milk, mild and mint (a prefix query 'mi*' merges three runs over 3 rows: the dense merge).
        let (_, index, connection) = try openNoteIndex(in: directory, titles: ["a": "milk mild mint", "b": "milk mild mint", "c": "milk mild mint"])
        let three = Self.body(length: 3, count: 1)
        var milk: [(document: UInt64, body: [UInt8], length: Int, occurrences: Int)] = [(1, three, 3, 1), (2, three, 3, 1), (3, three, 3, 1)]
        switch damage {
        case "count past length": milk[1] = (2, Self.body(length: 3, count: 5), 3, 5)
        case "huge length": milk[1] = (2, Self.body(length: 3_000_000_000, count: 1), 3_000_000_000, 1)
        default: milk[1] = (2, Self.body(length: 3, count: 3), 3, 3)  // with mild and mint once each: 5 occurrences of 'mi*' in 3 words
        }
        try Self.store([(milk, SearchPostingBlock.openBlock)], word: "milk", index, connection)
        let queries = damage == "prefix sum past length" ? ["mi*"] : ["milk", "mi*", "milk mint"]
        for query in queries {
            let error = #expect(throws: CanopyError.self, "\(damage): \(query)") {
                try connection.read { txn in try index.search(query, in: txn, highlights: false) }
            }
            #expect(error?.code == .corruptStore, "\(damage): \(query): \(String(describing: error))")
        }
    }

    /// Row 2's `milk` posting damaged as `damage` says (rows 1 to 3 hold "milk mild mint").
    static func openDamagedMilk(_ directory: TemporaryDirectory, damage: String) throws -> (SearchIndex, Connection) {
        let (_, index, connection) = try openNoteIndex(in: directory, titles: ["a": "milk mild mint", "b": "milk mild mint", "c": "milk mild mint"])
        let three = Self.body(length: 3, count: 1)
        var milk: [(document: UInt64, body: [UInt8], length: Int, occurrences: Int)] = [(1, three, 3, 1), (2, three, 3, 1), (3, three, 3, 1)]
        switch damage {
        case "huge length": milk[1] = (2, Self.body(length: 3_000_000_000, count: 1), 3_000_000_000, 1)
        // Twice in 3 words, each posting alone possible; with mild and mint once each, 4 occurrences in 3 words.
        case "words past length": milk[1] = (2, Self.body(length: 3, count: 2), 3, 2)
        default: milk[1] = (2, Self.body(length: 3, count: 5), 3, 5)
        }
        try Self.store([(milk, SearchPostingBlock.openBlock)], word: "milk", index, connection)
        return (index, connection)
    }

    @Test("Counts past the row's length, or a length past 2^31 − 1: a phrase query is corruptStore as the word's own query is (its reader read positions without the counts' checks)",
          arguments: ["count past length", "huge length"])
    func phrasePastTheLength(damage: String) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (index, connection) = try Self.openDamagedMilk(directory, damage: damage)
        for query in ["\"milk mild\"", "\"mild mint\" milk"] {
            let error = #expect(throws: CanopyError.self, "\(damage): \(query)") {
                let hits = try connection.read { txn in try index.search(query, in: txn, highlights: false) }
                Issue.record("\(query) answered \(hits.map(\.id.key))")
            }
            #expect(error?.code == .corruptStore, "\(damage): \(query): \(String(describing: error))")
        }
    }

    @Test("Counts past the row's length: a write that rewrites the block is corruptStore and writes nothing, and verify reports the block (the summary they build headers with did not check them)")
    func writeAndVerifyPastTheLength() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (index, connection) = try Self.openDamagedMilk(directory, damage: "count past length")
        let check = try connection.read { txn in try txn.checkSearchIndex(named: index.name) }
        #expect(check.problems.contains { $0.contains("'milk'") && $0.contains("malformed") }, "\(check.problems)")
        let before = try SearchRewriteDamageTests.snapshot(index, connection)
        let write = #expect(throws: CanopyError.self) {
            try connection.readWrite { txn in try txn.set(Note(title: "milk"), forKey: "d", in: notes) }
        }
        #expect(write?.code == .corruptStore, "\(String(describing: write))")
        #expect(write?.message.contains("word 'milk'") == true, "\(String(describing: write?.message))")
        #expect(try SearchRewriteDamageTests.snapshot(index, connection) == before)
        #expect(try connection.read { txn in try txn.object(forKey: "d", in: notes) } == nil)
    }

    @Test("A row's words counting more occurrences than its length (each posting alone possible): a prefix query over them is corruptStore, and verify reports the row")
    func wordsPastTheLength() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (index, connection) = try Self.openDamagedMilk(directory, damage: "words past length")
        let error = #expect(throws: CanopyError.self) { try connection.read { txn in try index.search("mi*", in: txn, highlights: false) } }
        #expect(error?.code == .corruptStore, "\(String(describing: error))")
        let check = try connection.read { txn in try txn.checkSearchIndex(named: index.name) }
        #expect(check.problems.contains { $0.contains("notes/b") && $0.contains("4 occurrences") }, "\(check.problems)")
    }
}
