import Canopy
import CanopyCore
import CanopyTestSupport
import Testing
@testable import CanopySearch

/// An intersection compares the other lists' row numbers with its candidates block by block
/// (``SearchPostingBlock/matchRows(of:after:upTo:candidates:next:rowsBuffer:_:)``): a block whose rows do not ascend
/// (its checksum valid, its directory agreeing) could hide a candidate behind a larger row, so it is damage to report
/// wherever the row out of order sits, never a row left out of the answer.
@Suite("Search index: an intersection over a block whose rows do not ascend")
struct SearchIntersectionDamageTests {
    /// Rows 1 to 6: `milk` in rows 1 to 5, `oat` in row 3 and (`oatLast`) row 6. `milk`'s one block is rewritten with
    /// its rows in the order 1, 2, 4, 3, 5 (each with its own body), so `oat milk` walks `milk`'s rows from 1 to 4 for
    /// its candidate 3 and finds 4 first; its other candidate, 6, is past the block's last row.
    @Test("oat milk over a milk block ordered 1, 2, 4, 3, 5: corruptStore, not an answer without row 3",
          arguments: [(true, "oat milk"), (true, "milk oat"), (false, "oat milk"), (false, "milk oat")])
    func rowsOutOfOrder(oatLast: Bool, query: String) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (_, index, connection) = try openNoteIndex(
            in: directory,
            titles: ["a": "milk", "b": "milk", "c": "oat milk", "d": "milk", "e": "milk", "f": oatLast ? "oat" : "tea"])
        #expect(try connection.read { txn in try index.search(query, in: txn, highlights: false).map(\.id.key) } == ["c"])
        let key = SearchPostingBlock.key(term: Array("milk".utf8), block: SearchPostingBlock.openBlock)
        try connection.readWrite { txn in
            let tables = try index.tables()
            let stored = try #require(try tables.postings.withValue(forKey: key, in: txn) { raw in
                try raw.map { try SearchPostingBlock.decode($0) }
            })
            #expect(stored.documents == [1, 2, 3, 4, 5])
            let order = [0, 1, 3, 2, 4]
            let rows = order.map { (document: stored.documents[$0], body: Array(stored.body($0))) }
            let summaries = try order.map { try SearchPosting.summary(of: stored.body($0)) }
            let block = SearchRewriteDamageTests.block(rows: rows, summaries: summaries, key: SearchPostingBlock.openBlock)
            try tables.postings.put(block.value, forKey: key, in: txn)
            try tables.postingsDirectory.put(SearchBlockDirectory.encode([block.header][...]), forKey: key, in: txn)
        }
        // The one-word reader refuses the block; the intersection must too.
        let alone = #expect(throws: CanopyError.self) { try connection.read { txn in try index.search("milk", in: txn, highlights: false) } }
        #expect(alone?.code == .corruptStore)
        let error = #expect(throws: CanopyError.self) {
            let hits = try connection.read { txn in try index.search(query, in: txn, highlights: false) }
            Issue.record("the search answered \(hits.map { "\($0.id.key) \($0.score)" })")
        }
        #expect(error?.code == .corruptStore, "\(String(describing: error))")
        let countError = #expect(throws: CanopyError.self) { try connection.read { txn in try index.count(matching: SearchQuery(query), in: txn) } }
        #expect(countError?.code == .corruptStore)
    }

    /// `oat` in rows 1 and 2, `milk` in rows 1 to 5. `oat`'s directory is rewritten (by a tool, its checksum valid)
    /// saying its one block holds 1 row: the directory's count is BM25's document frequency for `oat`, and `oat` the
    /// rarer list, which an intersection reads whole, so the disagreement is found there.
    @Test("an intersection whose whole-read list holds more rows than its directory counts: corruptStore, not scores from the wrong count",
          arguments: ["oat milk", "milk oat"])
    func driverCountDisagrees(query: String) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (_, index, connection) = try openNoteIndex(
            in: directory, titles: ["a": "oat milk", "b": "oat milk", "c": "milk", "d": "milk", "e": "milk"])
        #expect(try connection.read { txn in try index.search(query, in: txn, highlights: false).map(\.id.key) } == ["a", "b"])
        let oat = Array("oat".utf8)
        try connection.readWrite { txn in
            let tables = try index.tables()
            var headers = try SearchBlockDirectory.headers(of: oat, in: tables.postingsDirectory, txn)
            #expect(headers.count == 1 && headers.first?.count == 2)
            headers[0].count = 1
            try tables.postingsDirectory.put(
                SearchBlockDirectory.encode(headers[...]), forKey: SearchPostingBlock.key(term: oat, block: headers[0].block), in: txn)
        }
        // (Before the check: both rows, ranked with a document frequency of 1 for `oat`, and no error.)
        let error = #expect(throws: CanopyError.self) {
            let hits = try connection.read { txn in try index.search(query, in: txn, highlights: false) }
            Issue.record("the search answered \(hits.map { "\($0.id.key) \($0.score)" })")
        }
        #expect(error?.code == .corruptStore, "\(String(describing: error))")
        #expect(error?.message.contains("word 'oat' holds 2 rows") == true, "\(String(describing: error))")
        #expect(error?.extensionName == index.name)
    }
}
