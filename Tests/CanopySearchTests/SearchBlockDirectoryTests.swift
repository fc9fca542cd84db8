import Canopy
import CanopyTestSupport
import Foundation
import Testing
@testable import CanopySearch

/// The directory of a posting table holds each list's block headers in chunks of 64: over lists of more than 64
/// blocks (several chunks), after commits that insert, update and remove rows (blocks split, emptied and removed),
/// it is exactly the headers read from the blocks, and the best rows it selects are the brute force's.
@Suite("Search index: the block directory")
struct SearchBlockDirectoryTests {
    /// Per list, the headers from the blocks and from the directory; and the directory's lists.
    static func checkDirectory(_ index: SearchIndex, _ database: Database, context: String) throws {
        try database.newConnection().read { txn in
            let tables = try index.tables()
            var pairs = [(tables.postings, tables.postingsDirectory, tables.postingsSummaries)]
            if let prefixes = tables.prefixes, let directory = tables.prefixesDirectory, let summaries = tables.prefixesSummaries {
                pairs.append((prefixes, directory, summaries))
            }
            var longest = 0
            for (table, directory, summaries) in pairs {
                var fromBlocks: [[UInt8]: [SearchBlockHeader]] = [:]
                try table.forEachBytes(in: txn) { key, value in
                    let term = Array(key[0..<(key.count - 9)])
                    let reader = try SearchPostingBlock.Reader(value)
                    fromBlocks[term, default: []].append(SearchBlockHeader(
                        block: try SearchPostingBlock.block(ofKey: key), count: reader.count, maximumOccurrences: reader.maximumOccurrences,
                        minimumLength: reader.minimumLength, densestLength: reader.densestLength, densestOccurrences: reader.densestOccurrences,
                        front: reader.front))
                    return true
                }
                var directoryTerms = Set<[UInt8]>()
                try directory.forEachBytes(in: txn) { key, _ in
                    directoryTerms.insert(Array(key[0..<(key.count - 9)]))
                    return true
                }
                #expect(directoryTerms == Set(fromBlocks.keys), "the directory's lists are the blocks' lists; \(context)")
                for (term, headers) in fromBlocks {
                    let listed = try SearchBlockDirectory.headers(of: term, in: directory, txn)
                    #expect(listed == headers, "\(String(decoding: term, as: UTF8.self)): \(listed.count) headers listed for \(headers.count) blocks; \(context)")
                    longest = max(longest, headers.count)
                    // A list of several chunks has its chunks' summary (format 7), one of a single chunk none.
                    var chunks: [SearchBlockDirectory.ChunkSummary] = []
                    try directory.forEachBytes(in: txn, prefix: term + [0]) { key, value in
                        chunks.append(try SearchBlockDirectory.summary(value, chunkKey: try SearchPostingBlock.block(ofKey: key)))
                        return true
                    }
                    let summary = try summaries.withValue(forKey: term, in: txn) { raw in try raw.map(SearchListSummary.decode) }
                    #expect(summary == (chunks.count >= 2 ? chunks : nil), "\(String(decoding: term, as: UTF8.self)): \(chunks.count) chunks, summary \(summary?.count ?? 0); \(context)")
                }
                var summaryTerms = Set<[UInt8]>()
                try summaries.forEachBytes(in: txn) { key, _ in
                    summaryTerms.insert(Array(key))
                    return true
                }
                #expect(summaryTerms.isSubset(of: Set(fromBlocks.keys)), "no summary of a list that is gone; \(context)")
            }
            #expect(longest > SearchBlockDirectory.maximumBlocks, "a list spans several chunks (\(longest) blocks); \(context)")
        }
    }

    @Test("Lists of several chunks, rows inserted, updated and removed: the directory is the blocks' headers; best rows equal brute force")
    func severalChunks() throws {
        var random = SeededRandom(seed: 31)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let index = makeNoteSearch(prefixLengths: [1, 2])
        try database.register(index)
        var rows: [String: Note] = [:]
        // 12,000 rows: the most frequent word is in about nine in ten, about 85 blocks.
        try database.newConnection().readWrite { txn in
            for number in 0..<12_000 {
                let note = SearchBestRowsTests.note(&random)
                try txn.set(note, forKey: "n\(number)", in: notes)
                rows["n\(number)"] = note
            }
        }
        try Self.checkDirectory(index, database, context: "seed 31, inserted")
        // Rows rewritten and removed at random, then a run of 4,000 rows removed (their blocks emptied).
        try database.newConnection().readWrite { txn in
            for _ in 0..<3_000 {
                let key = "n\(random.next() % 12_000)"
                if random.next() % 3 == 0 {
                    try txn.remove(key: key, in: notes)
                    rows[key] = nil
                } else {
                    let note = SearchBestRowsTests.note(&random)
                    try txn.set(note, forKey: key, in: notes)
                    rows[key] = note
                }
            }
        }
        try Self.checkDirectory(index, database, context: "seed 31, updated")
        try database.newConnection().readWrite { txn in
            for number in 2_000..<6_000 {
                try txn.remove(key: "n\(number)", in: notes)
                rows["n\(number)"] = nil
            }
        }
        try Self.checkDirectory(index, database, context: "seed 31, a run removed")
        try SearchBestRowsTests.check(index, database, rows, context: "seed 31, after the commits (\(rows.count) rows)")
    }
}
