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
