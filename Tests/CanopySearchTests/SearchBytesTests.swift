import Canopy
import CanopyCore
import CanopyTestSupport
import Testing
@testable import CanopySearch

/// The index's stored values come from disk: damaged bytes throw, never trap (a varint past what an Int holds, a count
/// larger than the value, a value cut short).
@Suite("Search index: damaged stored values")
struct SearchBytesTests {
    /// A varint of 2^63 (ten bytes): `Int(_:)` on it would trap.
    static let huge: [UInt8] = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]

    @Test("a posting or row record holding an out-of-range count throws Malformed")
    func outOfRangeCounts() throws {
        let postings: [[UInt8]] = [Self.huge + [0], [3] + Self.huge, [3, 1] + Self.huge + [1], [3, 1, 0, 1] + Self.huge, [3, 1, 0]]
        for bytes in postings {
            #expect(throws: SearchBytes.Malformed.self) {
                _ = try bytes.withUnsafeBytes { try SearchPosting.decode($0, positions: true) }
            }
        }
        // Blocks: a count past an Int, a first row numbered 0, a row number that does not ascend (distance 0 twice),
        // an entry cut short, fewer entries than counted, bytes after the last entry, a body size past the block, a
        // width of row numbers other than 1, 2, 4 or 8, row numbers past the block, a damaged score front.
        // (Header: one row, most occurrences 1, shortest row 3, densest row 3 words for 1 occurrence, a score front of
        // one point, 1 occurrence in 3 words; row numbers: first 1, width 1, distance 0; then a body of 6 bytes.)
        let entry: [UInt8] = [6, 3, 1, 0, 1, 1, 0]
        let front: [UInt8] = [1, 1, 3]
        let valid: [UInt8] = [1, 1, 3, 3, 1] + front + [1, 1, 0] + entry
        #expect(try valid.withUnsafeBytes { try SearchPostingBlock.decode($0) }.documents == [1])
        let twoRows: [UInt8] = [2, 1, 3, 3, 1] + front + [1, 1, 0, 1]
        #expect(try (twoRows + entry + entry).withUnsafeBytes { try SearchPostingBlock.decode($0) }.documents == [1, 2])
        let blocks: [[UInt8]] = [
            Self.huge + [1, 3, 3, 1], [1, 1, 3, 3, 1] + front + [0, 1, 0] + entry, [2, 1, 3, 3, 1] + front + [1, 1, 0, 0] + entry + entry,
            Array(valid.dropLast()), twoRows + entry, valid + [7], [1, 1, 3, 3, 1] + front + [1, 1, 0, 9, 3, 1, 0, 1, 1, 0],
            [1, 1, 3, 3, 1] + front + [1, 3, 0, 0, 0] + entry, [1, 1, 3, 3, 1] + front + [1, 8, 0, 0],
            // A front of 9 points, a front out of order.
            [1, 1, 3, 3, 1, 9] + Array(repeating: 1, count: 18) + [1, 1, 0] + entry, [1, 1, 3, 3, 1, 2, 1, 3, 1, 4, 1, 1, 0] + entry,
        ]
        for bytes in blocks {
            #expect(throws: SearchBytes.Malformed.self, "\(bytes)") { _ = try bytes.withUnsafeBytes { try SearchPostingBlock.decode($0) } }
        }
        // Directory chunks (keyed by their last block, 9 here): two blocks 4 and 9 of 3 and 2 rows. Damaged: a total
        // that is not the rows' sum, keys that do not ascend, a last key other than the chunk's, no block, a cut, a
        // chunk bound other than its blocks'.
        // (Start: 2 blocks, 5 rows, at most 1 occurrence, densest row 2 words for 1, score front one point: 1 occurrence
        // in 2 words. Each block: key delta, rows, most occurrences, shortest row, densest row, front.)
        let chunk: [UInt8] = [2, 5, 1, 2, 1, 1, 1, 2, 4, 3, 1, 2, 2, 1, 1, 1, 2, 5, 2, 1, 3, 3, 1, 1, 1, 3]
        var headers: [SearchBlockHeader] = []
        #expect(try chunk.withUnsafeBytes { try SearchBlockDirectory.decode($0, chunkKey: 9, into: &headers) } == 5)
        #expect(headers.map(\.block) == [4, 9] && headers.map(\.count) == [3, 2])
        #expect(SearchBlockDirectory.encode(headers[...]) == chunk)
        // A query opens chunks best bound first, not in key order: a chunk of lower keys decodes after a higher one.
        let later = SearchBlockDirectory.encode([SearchBlockHeader(block: 30, count: 1, maximumOccurrences: 2, minimumLength: 1, densestLength: 1, densestOccurrences: 2)])
        var opened: [SearchBlockHeader] = []
        try later.withUnsafeBytes { _ = try SearchBlockDirectory.decode($0, chunkKey: 30, into: &opened) }
        try chunk.withUnsafeBytes { _ = try SearchBlockDirectory.decode($0, chunkKey: 9, into: &opened) }
        #expect(opened.map(\.block) == [30, 4, 9])
        let chunks: [(bytes: [UInt8], key: UInt64)] = [
            ([2, 6] + chunk.dropFirst(2), 9), ([2, 5, 1, 2, 1, 1, 1, 2, 4, 3, 1, 2, 2, 1, 1, 1, 2, 0, 2, 1, 3, 3, 1, 1, 1, 3], 4), (chunk, 10),
            ([0, 0, 0, 0, 0, 0], 0), (Array(chunk.dropLast()), 9), ([2, 5, 1, 3, 1] + chunk.dropFirst(5), 9),
            // A chunk front other than its blocks' (1 occurrence in 3 words), a block front out of order.
            ([2, 5, 1, 2, 1, 1, 1, 3] + chunk.dropFirst(8), 9), (Array(chunk.prefix(14)) + [2, 1, 2, 1, 3] + chunk.dropFirst(17), 9),
        ]
        for (bytes, key) in chunks {
            var read: [SearchBlockHeader] = []
            #expect(throws: SearchBytes.Malformed.self, "\(bytes)") { _ = try bytes.withUnsafeBytes { try SearchBlockDirectory.decode($0, chunkKey: key, into: &read) } }
        }
        let rows: [[UInt8]] = [[1] + Self.huge + [0], [1, 2] + Self.huge, [1, 2, 1] + Self.huge, [1, 2, 1, 5, 0x61]]
        for bytes in rows {
            #expect(throws: SearchBytes.Malformed.self) { _ = try SearchRowRecord.decode(bytes) }
        }
        let state: [UInt8] = [SearchIndexState.version, 1] + Self.huge + [0]
        #expect(throws: SearchBytes.Malformed.self) { _ = try state.withUnsafeBytes { try SearchIndexState(decoding: $0) } }
    }

    @Test("values written by the index read back")
    func roundTrip() throws {
        let posting = SearchPosting(length: 7, fields: [(field: 0, positions: [1, 4]), (field: 2, positions: [0])])
        let decoded = try posting.encoded.withUnsafeBytes { try SearchPosting.decode($0, positions: true) }
        #expect(decoded.length == 7)
        #expect(decoded.counts.map(\.field) == [0, 2] && decoded.counts.map(\.count) == [2, 1])
        #expect(decoded.positions == [[1, 4], [0]])
        // A block of rows in order: read back entry by entry, cut into blocks of bounded size.
        var run = SearchPostingRun()
        for document in [3 as UInt64, 9, 700] { run.append(document) { $0.bytes.append(contentsOf: posting.encoded) } }
        let block = try SearchPostingBlock.encode(run, 0..<3)
        let read = try block.withUnsafeBytes { try SearchPostingBlock.decode($0) }
        #expect(read.documents == [3, 9, 700] && (0..<3).allSatisfy { read.body($0) == run.body($0) })
        #expect(try block.withUnsafeBytes { try SearchPostingBlock.Reader($0) }.maximumOccurrences == 3)
        var long = SearchPostingRun()
        for document in 1...1_000 as ClosedRange<UInt64> { long.append(document) { $0.bytes.append(contentsOf: posting.encoded) } }
        let chunks = SearchPostingBlock.chunks(of: long)
        #expect(chunks.allSatisfy { $0.count <= SearchPostingBlock.maximumDocuments } && chunks.map(\.count).reduce(0, +) == 1_000)
        let row = SearchRowRecord(document: 9, length: 3, terms: [Array("milk".utf8), Array("oat".utf8)])
        #expect(try SearchRowRecord.decode(row.encoded) == row)
    }

    @Test("a block of no rows is refused when encoded (an empty run, or an empty range of a run), never an empty value")
    func emptyBlockRefused() throws {
        let posting = SearchPosting(length: 7, fields: [(field: 0, positions: [1, 4])])
        var run = SearchPostingRun()
        for document in [3 as UInt64, 9] { run.append(document) { $0.bytes.append(contentsOf: posting.encoded) } }
        // (Before: the empty run's value was [] — no header at all — and an empty range of a run a 0-row block.)
        for (what, source, range) in [("an empty run", SearchPostingRun(), 0..<0), ("an empty range", run, 1..<1)] {
            #expect(throws: SearchBytes.Malformed.self, "\(what)") {
                let encoded = try SearchPostingBlock.encode(source, range, key: 5)
                Issue.record("\(what) encoded to \(encoded.value.count) bytes, \(encoded.header.count) rows")
            }
        }
    }
}

/// The counter of row numbers is written with the `documents` table; a damaged one (behind the table) must not make a
/// new row take an indexed row's number (its postings would then be the other row's).
@Suite("Search index: a damaged row counter")
struct SearchCounterTests {
    @Test("a counter behind the documents table: the next insert is corruptStore, nothing overwritten")
    func counterBehind() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let index = makeNoteSearch()
        try database.register(index)
        let connection = database.newConnection()
        try connection.readWrite { txn in
            try txn.set(Note(title: "oat milk"), forKey: "a", in: notes)
            try txn.set(Note(title: "bread"), forKey: "b", in: notes)
        }
        // The state record as a version 1 record whose next number is 1 (rows 1 and 2 are taken).
        var damaged = ByteWriter()
        damaged.bytes.append(1)
        damaged.append(varint: 1)
        damaged.append(varint: 2)
        damaged.append(varint: 3)
        try connection.readWrite { txn in try txn.setExtensionState(damaged.bytes, of: index.name) }
        let error = #expect(throws: CanopyError.self) {
            try connection.readWrite { txn in try txn.set(Note(title: "butter"), forKey: "c", in: notes) }
        }
        #expect(error?.code == .corruptStore)
        let hits = try connection.read { txn in try index.search("milk", in: txn).map(\.id.key) }
        #expect(hits == ["a"])
    }
}
