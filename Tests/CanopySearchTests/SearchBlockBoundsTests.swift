import Canopy
import CanopyCore
import CanopyTestSupport
import Testing
@testable import CanopySearch

/// A posting block's bytes and a run's body offsets are checked before anything is read or written through them: a
/// damaged block (stored with a valid checksum) or run is `corruptStore` / ``SearchBytes/Malformed``, never a trap, a
/// read outside the value or a write outside the room reserved for it.
@Suite("Search index: posting blocks' bounds")
struct SearchBlockBoundsTests {
    /// The usual body (a word once in a row of one word, field 0, position 0).
    static let body: [UInt8] = [1, 1, 0, 1, 1, 0]

    /// A run of `documents` whose bodies (`bodies` usual ones, one after the other) start at `starts`.
    static func run(documents: [UInt64], starts: [Int], bodies: Int = 2) -> SearchPostingRun {
        var run = SearchPostingRun()
        run.documents = documents
        run.starts = starts
        run.writer.bytes = Array(repeating: body, count: bodies).flatMap { $0 }
        return run
    }

    /// Body offsets that descend, overlap into the next body, pass the end or are negative, and entries past the run:
    /// before the check, slicing the bodies by them trapped (or, unchecked in a release build, read outside them).
    @Test("a run's body starts out of bounds, or a range past the run: Malformed when measured, no trap", arguments: [
        ([6, 0], 0..<2),  // descending: the first body would end before it starts
        ([0, 20], 0..<2),  // past the end of the bodies
        ([0, 13], 0..<2),  // one past the end
        ([-1, 6], 0..<2),  // negative
        ([0, 6], 0..<3),  // an entry past the run
        ([0, 6], -1..<2),  // an entry before it
    ] as [([Int], Range<Int>)])
    func startsOutOfBounds(starts: [Int], range: Range<Int>) throws {
        let run = Self.run(documents: [1, 2], starts: starts)
        #expect(throws: SearchBytes.Malformed.self) { try SearchPostingBlock.encode(run, range, key: 2) }
    }

    /// Before the check, rows out of order were written with their distance from the first wrapped: a block whose rows
    /// a reader then refuses (or, within a byte's width, reads as other rows).
    @Test("a run whose rows do not ascend is Malformed, not written with wrapped row numbers", arguments: [[2, 1], [1, 1], [3, 260]] as [[UInt64]])
    func rowsNotAscending(documents: [UInt64]) throws {
        let run = Self.run(documents: documents, starts: [0, 6])
        if documents[0] < documents[1] {
            #expect(try SearchPostingBlock.encode(run, 0..<2, key: 300).header.count == 2)
        } else {
            #expect(throws: SearchBytes.Malformed.self) { try SearchPostingBlock.encode(run, 0..<2, key: 300) }
        }
    }

    @Test("a block's write checks its room before writing a byte: too small or too large is Malformed, nothing written")
    func writeChecksItsRoomFirst() throws {
        let run = Self.run(documents: [1, 2], starts: [0, 6])
        let expected = try SearchPostingBlock.encode(run, 0..<2, key: 2).value
        try run.withBuffers { documents, starts, bodies in
            let encoding = try SearchPostingBlock.Encoding(documents: documents, starts: starts, bodies: bodies, 0..<2, key: 2)
            var room = [UInt8](repeating: 0xAA, count: encoding.size + 8)
            for count in [0, encoding.size - 1, encoding.size + 1] {
                room.withUnsafeMutableBytes { buffer in
                    _ = #expect(throws: SearchBytes.Malformed.self) { try encoding.write(to: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])) }
                }
                #expect(room.allSatisfy { $0 == 0xAA }, "nothing written into room of \(count) bytes")
            }
            try room.withUnsafeMutableBytes { try encoding.write(to: UnsafeMutableRawBufferPointer(rebasing: $0[0..<encoding.size])) }
            #expect(Array(room[..<encoding.size]) == expected)
            #expect(room[encoding.size...].allSatisfy { $0 == 0xAA })
        }
    }

    /// Rows "a" to "f" hold `milk` (one block), "b" twice; "e" and "f" `mild`.
    static let titles: KeyValuePairs<String, String> = [
        "a": "milk oat", "b": "milk milk bread", "c": "milk", "d": "oat milk tea", "e": "mild milk", "f": "milk mild oat",
    ]

    struct Rollback: Error {}

    /// What every reader and writer of `milk`'s block does with it: each answers, or throws `corruptStore`. Returns
    /// the others ("operation: error").
    static func exercise(_ index: SearchIndex, _ connection: Connection) -> [String] {
        var wrong: [String] = []
        func run(_ name: String, _ body: () throws -> Void) {
            do {
                try body()
            } catch is Rollback {
            } catch let error as CanopyError where error.code == .corruptStore {
            } catch {
                wrong.append("\(name): \(error)")
            }
        }
        for query in ["milk", "milk oat", "\"oat milk\"", "mil*", "milk bread", "\"milk mil*\""] {
            run("search \(query)") { _ = try connection.read { txn in try index.search(query, in: txn, limit: 3, highlights: false) } }
            run("search all \(query)") { _ = try connection.read { txn in try index.search(query, in: txn, limit: 100, highlights: false) } }
            run("count \(query)") { _ = try connection.read { txn in try index.count(matching: SearchQuery(query), in: txn) } }
        }
        run("check") { _ = try connection.read { txn in try txn.checkSearchIndex(named: index.name) } }
        // Writes that rewrite the block (a row added, changed, removed), rolled back when they succeed.
        run("insert") { try connection.readWrite { txn in try txn.set(Note(title: "milk"), forKey: "g", in: notes); throw Rollback() } }
        run("update") { try connection.readWrite { txn in try txn.set(Note(title: "milk milk"), forKey: "c", in: notes); throw Rollback() } }
        run("remove") { try connection.readWrite { txn in try txn.remove(key: "d", in: notes); throw Rollback() } }
        return wrong
    }

    /// Each damaged version of `milk`'s block is stored through the table (a valid checksum; the directory as it
    /// was), then read by every query path, the check (`canopy verify`'s) and the writes that rewrite it.
    @Test("a stored block damaged every way: every query, the check and each rewrite answer or throw corruptStore, never trap")
    func damagedStoredBlock() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (_, index, connection) = try openNoteIndex(in: directory, titles: Self.titles)
        let key = SearchPostingBlock.key(term: Array("milk".utf8), block: SearchPostingBlock.openBlock)
        let original = try #require(try connection.read { txn in try index.tables().postings.value(forKey: key, in: txn) })
        let layout = try original.withUnsafeBytes { try SearchPostingBlock.Layout($0) }
        try #require(layout.count == 6 && layout.rows.width == 1)
        let rowsStart = layout.entriesStart - layout.count
        #expect(Self.exercise(index, connection) == [], "the intact block")

        var damaged: [(String, [UInt8])] = []
        for offset in original.indices {
            for mask: UInt8 in [0xFF, 0x01, 0x80] {
                var value = original
                value[offset] ^= mask
                damaged.append(("byte \(offset) ^ \(mask)", value))
            }
        }
        for length in 0..<original.count { damaged.append(("cut to \(length) bytes", Array(original.prefix(length)))) }
        damaged.append(("a byte after the last entry", original + [0]))
        func patched(_ name: String, _ change: (inout [UInt8]) -> Void) {
            var value = original
            change(&value)
            damaged.append((name, value))
        }
        patched("the first body's size past the end") { $0[layout.entriesStart] = 0x7F }
        patched("the first body's size 2^32 - 1") { $0.replaceSubrange(layout.entriesStart...layout.entriesStart, with: [0xFF, 0xFF, 0xFF, 0xFF, 0x0F]) }
        patched("the last body's size past the end") { $0[$0.count - Self.body.count - 1] = 0x7F }
        patched("row numbers descending") { $0[rowsStart + 2] = 0; $0[rowsStart + 3] = 1 }
        patched("row numbers equal") { $0[rowsStart + 2] = $0[rowsStart + 1] }
        patched("the first distance not 0") { $0[rowsStart] = 1 }
        patched("row numbers 8 bytes wide") { $0[rowsStart - 1] = 8 }
        patched("row numbers 3 bytes wide") { $0[rowsStart - 1] = 3 }
        patched("a count past the block") { $0[0] = 0x7F }
        patched("a count of 0") { $0[0] = 0 }

        var wrong: [String] = []
        for (name, value) in damaged {
            try connection.readWrite { txn in try index.tables().postings.put(value, forKey: key, in: txn) }
            wrong += Self.exercise(index, connection).map { "\(name): \($0)" }
        }
        #expect(wrong == [], "\(wrong.count) wrong answers of \(damaged.count) damaged blocks")
        try connection.readWrite { txn in try index.tables().postings.put(original, forKey: key, in: txn) }
        #expect(try connection.read { txn in try index.search("milk", in: txn, limit: 100, highlights: false).count } == 6)
    }
}
