import Canopy
import CanopyCore
import CanopyTestSupport
import Testing
@testable import CanopySearch

/// Values from disk at the edge of what they may hold (counts of 2^32 − 1, counters at the end of their range, chunks
/// of the directory that overlap) are damage to report, never a trap and never a wrong answer.
@Suite("Search index: damaged values at the edge of their range")
struct SearchDamageTests {
    static let most = UInt64(UInt32.max)

    static func varints(_ values: [UInt64]) -> [UInt8] {
        var out = ByteWriter()
        for value in values { out.append(varint: value) }
        return out.bytes
    }

    static func withIndex(_ body: (SearchIndex, Connection) throws -> Void) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let index = makeNoteSearch()
        try database.register(index)
        try body(index, database.newConnection())
    }

    @Test("densest rows of 2^32 − 1 words and occurrences compare without overflow (a directory chunk, a block's encoding)")
    func fullRangeDensities() throws {
        let most = Self.most
        // A chunk keyed 9: block 4 (densest row 1 word for 2^32 − 1 occurrences), block 9 (2^32 − 1 words for 1); no
        // score fronts.
        let chunk = Self.varints([2, 2, most, 1, most, 0, 4, 1, most, 1, 1, most, 0, 5, 1, 1, most, most, 1, 0])
        var headers: [SearchBlockHeader] = []
        #expect(try chunk.withUnsafeBytes { try SearchBlockDirectory.decode($0, chunkKey: 9, into: &headers) } == 2)
        #expect(SearchBlockDirectory.encode(headers[...]) == chunk)
        // A block rewritten from stored bodies: the largest a posting may give, (2^31 − 1 words, 2^31 − 1 occurrences),
        // then (2^31 − 1 words, 1).
        let largest = UInt64(Int32.max)
        var run = SearchPostingRun()
        run.append(1) { $0.bytes += Self.varints([largest, 1, 0, largest, 0]) }
        run.append(2) { $0.bytes += Self.varints([largest, 1, 0, 1, 0]) }
        let encoded = try SearchPostingBlock.encode(run, 0..<2, key: 2)
        #expect(encoded.header.densestLength == Int(largest) && encoded.header.densestOccurrences == Int(largest))
        // Past it (a row of 2^32 − 1 words), the body is damage, refused as the queries refuse it.
        var past = SearchPostingRun()
        past.append(1) { $0.bytes += Self.varints([most, 1, 0, most, 0]) }
        #expect(throws: SearchBytes.Malformed.self) { try SearchPostingBlock.encode(past, 0..<1, key: 1) }
    }

    @Test("a one-word search over a stored block of full-range counts: corruptStore (a row's length past 32 bits), no trap")
    func bestRowsOverFullRangeCounts() throws {
        try Self.withIndex { index, connection in
            try connection.readWrite { txn in try txn.set(Note(title: "milk"), forKey: "a", in: notes) }
            // Row 1 as 2^32 − 1 words holding `milk` 2^32 − 1 times, block and directory agreeing.
            let most = Self.most
            let body = Self.varints([most, 1, 0, most, 0])
            // (No score front; row numbers: first 1, width 1, distance 0.)
            let block = Self.varints([1, most, most, most, most, 0, 1, 1, 0, UInt64(body.count)]) + body
            let key = SearchPostingBlock.key(term: Array("milk".utf8), block: SearchPostingBlock.openBlock)
            let header = SearchBlockHeader(
                block: SearchPostingBlock.openBlock, count: 1, maximumOccurrences: Int(most), minimumLength: Int(most), densestLength: Int(most),
                densestOccurrences: Int(most))
            try connection.readWrite { txn in
                let tables = try index.tables()
                try tables.postings.put(block, forKey: key, in: txn)
                try tables.postingsDirectory.put(SearchBlockDirectory.encode([header][...]), forKey: key, in: txn)
            }
            // (A row of 2^32 − 1 words is not one a row record can hold: damage, on every search path alike.)
            let error = #expect(throws: CanopyError.self) { try connection.read { txn in try index.search("milk", in: txn, highlights: false) } }
            #expect(error?.code == .corruptStore, "\(String(describing: error))")
            let count = #expect(throws: CanopyError.self) { try connection.read { txn in try index.count(matching: SearchQuery("milk"), in: txn) } }
            #expect(count?.code == .corruptStore, "\(String(describing: count))")
        }
    }

    @Test("a block whose score front understates a row (its checksum valid, its directory agreeing): corruptStore, not a row skipped")
    func frontUnderstatingARow() throws {
        try Self.withIndex { index, connection in
            try connection.readWrite { txn in try txn.set(Note(title: "milk milk oat"), forKey: "a", in: notes) }
            // Row 1 holds `milk` twice in 3 words; the header's other counts say so, its front says 1 occurrence in 9
            // words at best: a query would skip the block for any threshold above that bound.
            let body: [UInt8] = [3, 1, 0, 2, 2, 0, 1]
            var header = SearchBlockHeader(
                block: SearchPostingBlock.openBlock, count: 1, maximumOccurrences: 2, minimumLength: 3, densestLength: 3, densestOccurrences: 2)
            header.front = SearchScoreFront(of: [.init(occurrences: 1, length: 9)])
            var block = ByteWriter()
            block.bytes = Self.varints([1, 2, 3, 3, 2])
            header.front.encode(into: &block)
            block.bytes += [1, 1, 0, UInt8(body.count)] + body  // (row numbers: first 1, width 1, distance 0)
            let key = SearchPostingBlock.key(term: Array("milk".utf8), block: SearchPostingBlock.openBlock)
            try connection.readWrite { txn in
                let tables = try index.tables()
                try tables.postings.put(block.bytes, forKey: key, in: txn)
                try tables.postingsDirectory.put(SearchBlockDirectory.encode([header][...]), forKey: key, in: txn)
            }
            let error = #expect(throws: CanopyError.self) {
                try connection.read { txn in _ = try index.search("milk", in: txn, highlights: false) }
            }
            #expect(error?.code == .corruptStore)
        }
    }

    @Test("a block holding a row past its key, that row also in the next block (checksums valid, directory agreeing): a one-word search is corruptStore, not the row twice")
    func rowPastItsBlockKey() throws {
        try Self.withIndex { index, connection in
            // Rows 1, 2, 3 in `milk`'s open block.
            try connection.readWrite { txn in
                for key in ["a", "b", "c"] { try txn.set(Note(title: "milk"), forKey: key, in: notes) }
                // Rows without it: the four postings of `milk` stay fewer than the rows (a finite idf).
                for number in 0..<10 { try txn.set(Note(title: "oat"), forKey: "o\(number)", in: notes) }
            }
            let milk = Array("milk".utf8)
            let openKey = SearchPostingBlock.key(term: milk, block: SearchPostingBlock.openBlock)
            try connection.readWrite { txn in
                let tables = try index.tables()
                let stored = try #require(try tables.postings.withValue(forKey: openKey, in: txn) { raw in try raw.map { try SearchPostingBlock.decode($0) } })
                try #require(stored.documents == [1, 2, 3])
                // Block keyed 2 holding rows 1, 2 and 3 (3 is past its key), the open block holding row 3; each header
                // what its rows give, the directory listing both.
                let low = try SearchPostingBlock.encode(stored, 0..<3, key: 2)
                let open = try SearchPostingBlock.encode(stored, 2..<3, key: SearchPostingBlock.openBlock)
                try tables.postings.put(low.value, forKey: SearchPostingBlock.key(term: milk, block: 2), in: txn)
                try tables.postings.put(open.value, forKey: openKey, in: txn)
                try tables.postingsDirectory.put(SearchBlockDirectory.encode([low.header, open.header][...]), forKey: openKey, in: txn)
            }
            let error = #expect(throws: CanopyError.self) {
                let hits = try connection.read { txn in try index.search("milk", in: txn, highlights: false).map(\.id.key) }
                Issue.record("a search answered \(hits)")
            }
            #expect(error?.code == .corruptStore)
        }
    }

    @Test("two directory chunks that both list a block: corruptStore, not the block's rows twice")
    func overlappingChunks() throws {
        try Self.withIndex { index, connection in
            // 200 rows: two blocks of `milk`, one chunk listing both.
            try connection.readWrite { txn in
                for number in 0..<200 { try txn.set(Note(title: "milk"), forKey: "n\(number)", in: notes) }
            }
            let milk = Array("milk".utf8)
            try connection.readWrite { txn in
                let tables = try index.tables()
                let headers = try SearchBlockDirectory.headers(of: milk, in: tables.postingsDirectory, txn)
                try #require(headers.count == 2)
                // A second chunk, before the first, listing the first block again.
                try tables.postingsDirectory.put(
                    SearchBlockDirectory.encode(headers[..<1]), forKey: SearchPostingBlock.key(term: milk, block: headers[0].block), in: txn)
            }
            let error = #expect(throws: CanopyError.self) {
                try connection.read { txn in _ = try index.search("milk", in: txn, limit: 1_000, highlights: false) }
            }
            #expect(error?.code == .corruptStore)
        }
    }

    /// The state record as version 1 with these counters.
    static func state(next: UInt64, rows: UInt64, words: UInt64) -> [UInt8] { [SearchIndexState.version] + varints([next, rows, words]) }

    @Test("counters below the rows they count: removing a row is corruptStore, not a trap")
    func countersBelowRows() throws {
        try Self.withIndex { index, connection in
            try connection.readWrite { txn in try txn.set(Note(title: "oat milk"), forKey: "a", in: notes) }
            try connection.readWrite { txn in try txn.setExtensionState(Self.state(next: 2, rows: 0, words: 0), of: index.name) }
            let error = #expect(throws: CanopyError.self) {
                try connection.readWrite { txn in try txn.remove(key: "a", in: notes) }
            }
            #expect(error?.code == .corruptStore)
        }
    }

    @Test("a state counting fewer rows than a word's postings hold (one word, two words): corruptStore, not a NaN idf that returns no row",
          arguments: ["milk", "oat milk"])
    func stateBelowAWordsRows(query: String) throws {
        try Self.withIndex { index, connection in
            try connection.readWrite { txn in
                for key in ["a", "b", "c"] { try txn.set(Note(title: "oat milk"), forKey: key, in: notes) }
            }
            // 3 rows hold `milk` and `oat`; the state says 1 row.
            try connection.readWrite { txn in try txn.setExtensionState(Self.state(next: 4, rows: 1, words: 6), of: index.name) }
            let error = #expect(throws: CanopyError.self) {
                let hits = try connection.read { txn in try index.search(query, in: txn, highlights: false).map(\.id.key) }
                Issue.record("a search answered \(hits)")
            }
            #expect(error?.code == .corruptStore)
        }
    }

    @Test("counters at the end of their range (the next row number, the word total): a new row is corruptStore, not a trap",
          arguments: [[UInt64.max, 1], [2, UInt64(Int.max)]] as [[UInt64]])
    func countersAtTheirEnd(counters: [UInt64]) throws {
        let (next, words) = (counters[0], counters[1])
        try Self.withIndex { index, connection in
            try connection.readWrite { txn in try txn.set(Note(title: "oat milk"), forKey: "a", in: notes) }
            try connection.readWrite { txn in try txn.setExtensionState(Self.state(next: next, rows: 1, words: words), of: index.name) }
            let error = #expect(throws: CanopyError.self) {
                try connection.readWrite { txn in try txn.set(Note(title: "bread"), forKey: "b", in: notes) }
            }
            #expect(error?.code == .corruptStore)
        }
    }

    @Test("a prefix whose words' counts reach 2^31 in one row of 3 words, merged through the dense array: corruptStore, no trap")
    func denseMergeOfFullRangeCounts() throws {
        try Self.withIndex { index, connection in
            try connection.readWrite { txn in try txn.set(Note(title: "mila milb milc"), forKey: "a", in: notes) }
            // Each word's block: row 1 holding it 2^32 − 1 times (three runs, merged by document number in an array).
            let most = Self.most
            let body = Self.varints([3, 1, 0, most, 0])
            // (No score front; row numbers: first 1, width 1, distance 0.)
            let block = Self.varints([1, most, 3, 3, most, 0, 1, 1, 0, UInt64(body.count)]) + body
            try connection.readWrite { txn in
                for word in ["mila", "milb", "milc"] {
                    try index.tables().postings.put(block, forKey: SearchPostingBlock.key(term: Array(word.utf8), block: SearchPostingBlock.openBlock), in: txn)
                }
            }
            // (Occurrences past the row's length: damage, met as the counts are read, before any merge clamps them.)
            let error = #expect(throws: CanopyError.self) { try connection.read { txn in try index.search("mil*", in: txn, highlights: false) } }
            #expect(error?.code == .corruptStore, "\(String(describing: error))")
        }
    }

    @Test("two words whose directories claim 2^32 − 1 rows each: the intersection reads their blocks, reserving no such memory, and refuses the count")
    func intersectionOfHugeClaimedCounts() throws {
        try Self.withIndex { index, connection in
            try connection.readWrite { txn in try txn.set(Note(title: "oat milk"), forKey: "a", in: notes) }
            // Each word's one chunk, its summary claiming 2^32 − 1 rows (the rest is read only when the chunk is opened).
            let chunk = Self.varints([1, Self.most, 1, 1, 1, 0])
            try connection.readWrite { txn in
                for word in ["oat", "milk"] {
                    try index.tables().postingsDirectory.put(
                        chunk, forKey: SearchPostingBlock.key(term: Array(word.utf8), block: SearchPostingBlock.openBlock), in: txn)
                }
                // A state counting as many rows (fewer is damage refused before any block is read: stateBelowAWordsRows).
                try txn.setExtensionState(Self.state(next: 2, rows: Self.most, words: 2), of: index.name)
            }
            // The rarer word's blocks are read whole: their one row is not the 2^32 − 1 its directory claims (BM25's
            // document frequency), which is damage, found once the blocks are read (without reserving for the claim).
            for query in ["oat milk", "milk oat"] {
                let error = #expect(throws: CanopyError.self) {
                    let hits = try connection.read { txn in try index.search(query, in: txn, highlights: false).map(\.id.key) }
                    Issue.record("a search answered \(hits)")
                }
                #expect(error?.code == .corruptStore && error?.message.contains("holds 1 rows in its blocks, but its directory counts \(Self.most)") == true,
                        "\(String(describing: error))")
                let countError = #expect(throws: CanopyError.self) { try connection.read { txn in try index.count(matching: SearchQuery(query), in: txn) } }
                #expect(countError?.code == .corruptStore)
            }
        }
    }

    @Test("a limit of Int.max (every match) answers, one word or several, without a trap")
    func limitOfIntMax() throws {
        try Self.withIndex { index, connection in
            try connection.readWrite { txn in
                try txn.set(Note(title: "oat milk"), forKey: "a", in: notes)
                try txn.set(Note(title: "milk"), forKey: "b", in: notes)
            }
            let one = try connection.read { txn in try index.search("milk", in: txn, limit: .max, highlights: false).map(\.id.key) }
            let two = try connection.read { txn in try index.search("oat milk", in: txn, limit: .max, highlights: false).map(\.id.key) }
            #expect(one.sorted() == ["a", "b"])
            #expect(two == ["a"])
        }
    }
}
