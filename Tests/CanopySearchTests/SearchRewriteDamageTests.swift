import Canopy
import CanopyCore
import CanopyTestSupport
import Testing
@testable import CanopySearch

/// A block read back to be rewritten (a row added to or removed from its list) may hold a body that is not a posting
/// yet passes its checksum: the write refuses it (`corruptStore` naming the word and the block, nothing written)
/// rather than re-encoding it under a fresh checksum with a header built from its bad bytes.
@Suite("Search index: a damaged block is never rewritten")
struct SearchRewriteDamageTests {
    /// A block's bytes in format 6 (``SearchPostingBlock``) built by hand: its rows' bodies as given, its header and
    /// score front from `summaries` (each row's length and occurrences, as a reader of the body would take them), so
    /// that bodies that are not postings can be stored with a header and directory that agree with them.
    static func block(rows: [(document: UInt64, body: [UInt8])], summaries: [(length: Int, occurrences: Int)], key: UInt64)
        -> (value: [UInt8], header: SearchBlockHeader)
    {
        var densest = (length: 0, occurrences: 0)
        for summary in summaries
        where densest.occurrences == 0
            || SearchBlockHeader.isDenser(length: summary.length, occurrences: summary.occurrences, than: densest.length, densest.occurrences) {
            densest = summary
        }
        var header = SearchBlockHeader(
            block: key, count: rows.count, maximumOccurrences: summaries.map(\.occurrences).max() ?? 0,
            minimumLength: summaries.map(\.length).min() ?? 0, densestLength: densest.length, densestOccurrences: densest.occurrences)
        header.front = SearchScoreFront(of: summaries.map { SearchScoreFront.Point(occurrences: $0.occurrences, length: $0.length) })
        var out = ByteWriter()
        for value in [header.count, header.maximumOccurrences, header.minimumLength, header.densestLength, header.densestOccurrences] {
            out.append(varint: UInt64(value))
        }
        header.front.encode(into: &out)
        let first = rows.first?.document ?? 0
        let width = SearchPostingBlock.RowNumbers.width(spanning: (rows.last?.document ?? 0) - first)
        out.append(varint: first)
        out.bytes.append(UInt8(width))
        for row in rows {
            withUnsafeBytes(of: (row.document - first).littleEndian) { out.bytes += $0.prefix(width) }
        }
        for row in rows {
            out.append(varint: UInt64(row.body.count))
            out.bytes += row.body
        }
        return (out.bytes, header)
    }

    /// Every key and value of the index's tables and its state record, to compare before and after a failed write.
    static func snapshot(_ index: SearchIndex, _ connection: Connection) throws -> [String: [[UInt8]]] {
        try connection.read { txn in
            let tables = try index.tables()
            var all: [String: [[UInt8]]] = [:]
            for (name, table) in [("postings", tables.postings), ("directory", tables.postingsDirectory)] {
                try table.forEachBytes(in: txn) { key, value in
                    all[name, default: []] += [Array(key), Array(value)]
                    return true
                }
            }
            try tables.documents.forEachDocument(in: txn) { document, key in
                all["documents", default: []] += [withUnsafeBytes(of: document) { Array($0) }, Array(key)]
                return true
            }
            let state = try index.storedState(in: txn)
            all["state"] = [state.encoded]
            return all
        }
    }

    /// Row 1 (`oat milk`, note a) holds `milk` with a body that passes the block's sizes but is not a posting (see
    /// `arguments`); row 2 (`milk`, note b) is intact.
    static let damagedBodies: [[UInt8]] = [
        [2, 1, 0, 1],  // length 2, field 0 once, then no positions' size: read as (2 words, 1 occurrence) before
        [0xFF],  // a varint cut short: read as (0 words, 0 occurrences) before
        [2, 1, 0, 1, 1, 0, 9],  // one byte after its positions
    ]

    @Test("a row added to or removed from a list whose stored block holds a malformed body: corruptStore naming the word and the block, nothing written",
          arguments: damagedBodies.indices, ["insert", "remove"])
    func malformedBodyOnRewrite(damaged: Int, write: String) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (_, index, connection) = try openNoteIndex(in: directory, titles: ["a": "oat milk", "b": "milk"])
        // The damaged block is written in-process, through the table: its checksum is valid, its directory agrees.
        let block = Self.block(
            rows: [(1, Self.damagedBodies[damaged]), (2, [1, 1, 0, 1, 1, 0])], summaries: [(2, 1), (1, 1)], key: SearchPostingBlock.openBlock)
        let milk = SearchPostingBlock.key(term: Array("milk".utf8), block: SearchPostingBlock.openBlock)
        try connection.readWrite { txn in
            let tables = try index.tables()
            try tables.postings.put(block.value, forKey: milk, in: txn)
            try tables.postingsDirectory.put(SearchBlockDirectory.encode([block.header][...]), forKey: milk, in: txn)
        }
        let before = try Self.snapshot(index, connection)
        let error = #expect(throws: CanopyError.self) {
            try connection.readWrite { txn in
                // Either rewrites the open block of `milk`: row 3 is appended to it, or row 2 is taken out of it.
                if write == "insert" { try txn.set(Note(title: "milk"), forKey: "c", in: notes) } else { try txn.remove(key: "b", in: notes) }
            }
            Issue.record("the write succeeded over a malformed body")
        }
        #expect(error?.code == .corruptStore, "\(String(describing: error))")
        #expect(error?.message.contains("block open of word 'milk'") == true, "\(String(describing: error?.message))")
        #expect(error?.message.contains("row 1's posting") == true, "\(String(describing: error?.message))")
        #expect(error?.extensionName == index.name)
        // Nothing written: the rows and every table of the index as before.
        let rows = try connection.read { txn in try ["a", "b", "c"].map { try txn.object(forKey: $0, in: notes)?.title } }
        #expect(rows == ["oat milk", "milk", nil])
        #expect(try Self.snapshot(index, connection) == before)
    }

    @Test("a row added to a word whose directory chunk is malformed: corruptStore naming the word, not an untyped error")
    func malformedDirectoryOnWrite() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (_, index, connection) = try openNoteIndex(in: directory, titles: ["a": "milk"])
        let milk = SearchPostingBlock.key(term: Array("milk".utf8), block: SearchPostingBlock.openBlock)
        try connection.readWrite { txn in
            // A chunk of 0 blocks (valid checksum): no chunk holds none.
            try index.tables().postingsDirectory.put([0], forKey: milk, in: txn)
        }
        let before = try Self.snapshot(index, connection)
        let error = #expect(throws: CanopyError.self) {
            try connection.readWrite { txn in try txn.set(Note(title: "milk"), forKey: "b", in: notes) }
        }
        #expect(error?.code == .corruptStore, "\(String(describing: error))")
        #expect(error?.message.contains("the block directory of word 'milk'") == true, "\(String(describing: error?.message))")
        #expect(try connection.read { txn in try txn.object(forKey: "b", in: notes) } == nil)
        #expect(try Self.snapshot(index, connection) == before)
    }
}

extension SearchRewriteDamageTests {
    @Test("a row rewritten in a block that holds a row past its key: corruptStore naming the block, not the block written back as it was")
    func rowPastTheBlockKey() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (_, index, connection) = try openNoteIndex(in: directory, titles: ["a": "milk", "b": "milk"])
        // `milk`'s rows 1 and 2 in one block keyed 1 (valid bodies and checksum, its directory agreeing): row 2 lies
        // past the key, where no write would look for it.
        let body: [UInt8] = [1, 1, 0, 1, 1, 0]
        let block = Self.block(rows: [(1, body), (2, body)], summaries: [(1, 1), (1, 1)], key: 1)
        let term = Array("milk".utf8)
        try connection.readWrite { txn in
            let tables = try index.tables()
            let open = SearchPostingBlock.key(term: term, block: SearchPostingBlock.openBlock)
            try tables.postings.remove(open, in: txn)
            try tables.postingsDirectory.remove(open, in: txn)
            let key = SearchPostingBlock.key(term: term, block: 1)
            try tables.postings.put(block.value, forKey: key, in: txn)
            try tables.postingsDirectory.put(SearchBlockDirectory.encode([block.header][...]), forKey: key, in: txn)
        }
        let before = try Self.snapshot(index, connection)
        let error = #expect(throws: CanopyError.self) {
            // Row 1's text changes: its block, keyed 1, is read back and rewritten.
            try connection.readWrite { txn in try txn.set(Note(title: "milk milk"), forKey: "a", in: notes) }
        }
        #expect(error?.code == .corruptStore, "\(String(describing: error))")
        #expect(error?.message.contains("block 1 of word 'milk'") == true, "\(String(describing: error?.message))")
        #expect(try connection.read { txn in try txn.object(forKey: "a", in: notes)?.title } == "milk")
        #expect(try Self.snapshot(index, connection) == before)
    }
}
