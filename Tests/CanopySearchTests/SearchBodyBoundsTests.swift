import Canopy
import CanopyCore
import CanopyTestSupport
import Testing
@testable import CanopySearch

/// A posting body is read within the size its block gives it: counts that run past that end are damage, even when the
/// block's bytes pass their checksum (the record is built and written in-process here, so its checksum is valid).
@Suite("Search index: a posting's counts are read within its body")
struct SearchBodyBoundsTests {
    /// A block of `milk` holding rows 1 and 2: row 1's body says one field but ends after the count of fields, so its
    /// field and count would be read from row 2's delta and size (1 and 6: six occurrences in the body field). Built
    /// by hand (the index's encoder refuses such a body), its header from row 1 as 2 words and no occurrence.
    static func overrunningBlock() -> (value: [UInt8], header: SearchBlockHeader) {
        SearchRewriteDamageTests.block(
            rows: [(1, [2, 1]), (2, [2, 1, 0, 1, 1, 1])], summaries: [(2, 0), (2, 1)], key: SearchPostingBlock.openBlock)
    }

    @Test("counts that run past their body: corruptStore from both sides of a two-word search, not a score from the next row's bytes",
          arguments: ["oat milk", "milk oat"])
    func countsPastTheBody(query: String) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (_, index, connection) = try openNoteIndex(in: directory, titles: ["a": "oat milk", "b": "oat milk", "c": "oat"])
        let milk = Array("milk".utf8)
        let block = Self.overrunningBlock()
        // The block stands for both rows, as the intact one did; its directory agrees with it.
        #expect(block.header.count == 2)
        try connection.readWrite { txn in
            let tables = try index.tables()
            let key = SearchPostingBlock.key(term: milk, block: SearchPostingBlock.openBlock)
            try tables.postings.put(block.value, forKey: key, in: txn)
            try tables.postingsDirectory.put(SearchBlockDirectory.encode([block.header][...]), forKey: key, in: txn)
        }
        let error = #expect(throws: CanopyError.self) {
            let hits = try connection.read { txn in try index.search(query, in: txn, highlights: false) }
            Issue.record("the search answered \(hits.map { "\($0.id.key) \($0.score)" })")
        }
        #expect(error?.code == .corruptStore, "\(String(describing: error))")
    }

    /// An intersection reads its rarest list's rows first, then the survivors' counts from a second walk of its blocks
    /// (``SearchPostingBlock/readCounts(in:base:rows:slots:next:_:)``): the counts must be those of the row read in the
    /// first walk at that position, never another row's.
    @Test("a survivor's counts come from the row the first walk read at its position; a block holding another row there is Malformed")
    func survivorCountsFromTheSameRow() throws {
        // Rows 4 and 9: row 4 once in 3 words, row 9 twice in 5.
        let block = SearchRewriteDamageTests.block(
            rows: [(4, [3, 1, 0, 1, 1, 0]), (9, [5, 1, 0, 2, 2, 0, 1])], summaries: [(3, 1), (5, 2)], key: SearchPostingBlock.openBlock).value
        func counts(rows: [UInt64], base: Int, slots: [Int]) throws -> (read: [(Int, Int, Int)], blockRows: Int, next: Int) {
            var read: [(Int, Int, Int)] = []
            var next = 0
            let blockRows = try block.withUnsafeBytes { raw in
                try rows.withUnsafeBufferPointer { rows in
                    try slots.withUnsafeBufferPointer { slots in
                        try SearchPostingBlock.readCounts(in: raw, base: base, rows: rows, slots: slots, next: &next) { place, length, _, count in
                            read.append((place, length, count))
                        }
                    }
                }
            }
            return (read, blockRows, next)
        }
        // The block's rows at positions 5 and 6 of the list (after 5 rows of earlier blocks); survivors at 6, then 8.
        let list: [UInt64] = [1, 2, 3, 3, 3, 4, 9, 12, 13]
        let both = try counts(rows: list, base: 5, slots: [5, 6])
        #expect(both.read.map(\.0) == [0, 1] && both.read.map(\.1) == [3, 5] && both.read.map(\.2) == [1, 2] && both.blockRows == 2 && both.next == 2)
        let second = try counts(rows: list, base: 5, slots: [6, 8])
        #expect(second.read.map(\.1) == [5] && second.next == 1, "a survivor past the block is the next block's")
        // The list says position 6 is row 10: the block's row there is 9.
        #expect(throws: SearchBytes.Malformed.self) { _ = try counts(rows: [1, 2, 3, 3, 3, 4, 10], base: 5, slots: [6]) }
        // A base past the survivor (the block placed after it).
        #expect(throws: SearchBytes.Malformed.self) { _ = try counts(rows: list, base: 6, slots: [5]) }
    }

    @Test("a body read by its bounds: the counts of a well-formed body, and an overrun when the bounds cut it")
    func boundedRead() throws {
        let body: [UInt8] = [7, 2, 0, 1, 1, 3, 2, 5, 1, 4]  // 7 words; field 0 once, field 1 three times
        var seen: [(Int, Int, Int)] = []
        try body.withUnsafeBytes { raw in
            try SearchPostingBlock.readCounts(in: raw, body: 0..<body.count) { seen.append(($0, $1, $2)) }
        }
        #expect(seen.map(\.0) == [7, 7] && seen.map(\.1) == [0, 1] && seen.map(\.2) == [1, 3])
        for end in 0..<6 {
            #expect(throws: SearchBytes.Malformed.self, "a body cut at \(end)") {
                try body.withUnsafeBytes { raw in try SearchPostingBlock.readCounts(in: raw, body: 0..<end) { _, _, _ in } }
            }
        }
        #expect(throws: SearchBytes.Malformed.self) {
            try body.withUnsafeBytes { raw in try SearchPostingBlock.readCounts(in: raw, body: 4..<(body.count + 1)) { _, _, _ in } }
        }
    }
}
