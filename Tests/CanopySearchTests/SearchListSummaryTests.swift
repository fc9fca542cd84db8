import Canopy
import CanopyCore
import CanopyTestSupport
import Testing
@testable import CanopySearch

/// A list of several directory chunks keeps one summary of them (format 7, ``SearchListSummary``), which a query
/// reads instead of every chunk: a lost or disagreeing summary is `corruptStore` for the queries and writes that meet
/// it and a problem `verify` names, never a list read short or a summary rewritten over chunks it does not describe.
@Suite("Search index: the summary of a long list")
struct SearchListSummaryTests {
    static let milk = Array("milk".utf8)

    /// The summary value of `milk` (71 blocks, five chunks, in ``SearchVerifyTests/withLongLists(_:)``).
    static func milkSummary(_ index: SearchIndex, _ database: Database) throws -> [SearchBlockDirectory.ChunkSummary]? {
        try database.newConnection().read { txn in
            try index.tables().postingsSummaries.withValue(forKey: milk, in: txn) { raw in try raw.map(SearchListSummary.decode) }
        }
    }

    @Test("a summary value round-trips; one of fewer than two chunks, keys out of order or bytes after it are malformed")
    func encoding() throws {
        func chunk(_ key: UInt64, rows: Int) -> SearchBlockDirectory.ChunkSummary {
            SearchBlockDirectory.chunkSummary(of: [SearchBlockHeader(
                block: key, count: rows, maximumOccurrences: 2, minimumLength: 1, densestLength: 3, densestOccurrences: 2)][...])
        }
        let chunks = [chunk(900, rows: 5), chunk(SearchPostingBlock.openBlock, rows: 7)]
        let bytes = SearchListSummary.encode(chunks)
        #expect(try bytes.withUnsafeBytes { try SearchListSummary.decode($0) } == chunks)
        for bad in [SearchListSummary.encode([chunks[0]]), SearchListSummary.encode([chunks[1], chunks[0]]), bytes + [0], Array(bytes.dropLast())] {
            #expect(throws: SearchBytes.Malformed.self, "\(bad)") { _ = try bad.withUnsafeBytes { try SearchListSummary.decode($0) } }
        }
    }

    @Test("the summary is its chunks' after writes that add, rewrite and remove rows; a list cut to one chunk loses it")
    func keptWithItsChunks() throws {
        try SearchVerifyTests.withLongLists { index, database in
            let chunks = try database.newConnection().read { txn in
                let tables = try index.tables()
                return try SearchListSummary.chunks(
                    of: Self.milk, directory: tables.postingsDirectory, summaries: tables.postingsSummaries, txn, keepingValues: false)
            }
            #expect(chunks.count >= 2)
            #expect(try Self.milkSummary(index, database) == chunks.map(\.summary))
            // Most of `milk`'s rows removed: one chunk left, no summary.
            try database.newConnection().readWrite { txn in
                for number in 0..<8_500 { try txn.remove(key: "n\(number)", in: notes) }
            }
            #expect(try Self.milkSummary(index, database) == nil)
            let check = try SearchVerifyTests.check(database, index)
            #expect(check.problems == [], "\(check.problems)")
        }
    }

    @Test("a lost summary: a search and a write of the word are corruptStore (nothing written), verify names it")
    func lostSummary() throws {
        try SearchVerifyTests.withLongLists { index, database in
            let connection = database.newConnection()
            let before = try connection.read { txn in try index.search("milk", in: txn, limit: 5).map(\.id) }
            try connection.readWrite { txn in _ = try index.tables().postingsSummaries.remove(Self.milk, in: txn) }
            for query in ["milk", "milk oat"] {
                #expect { _ = try connection.read { txn in try index.search(query, in: txn, limit: 5) } } throws: { error in
                    (error as? CanopyError)?.code == .corruptStore && "\(error)".contains("no summary")
                }
            }
            #expect { try connection.readWrite { txn in try txn.set(Note(title: "milk", body: nil), forKey: "new", in: notes) } } throws: { error in
                (error as? CanopyError)?.code == .corruptStore
            }
            #expect(try connection.read { txn in try txn.object(forKey: "new", in: notes) } == nil, "the write wrote nothing")
            let problems = try SearchVerifyTests.check(database, index).problems
            #expect(problems.contains { $0.contains("word 'milk' has") && $0.contains("no summary") }, "\(problems)")
            // The repair: dropped and rebuilt, the same answers.
            try database.unregisterExtension(named: index.name, dropStorage: true)
            try database.register(index)
            #expect(try connection.read { txn in try index.search("milk", in: txn, limit: 5).map(\.id) } == before)
        }
    }

    @Test("a summary that disagrees with a chunk: a search that opens the chunk and a write of the word are corruptStore, verify names it")
    func disagreeingSummary() throws {
        try SearchVerifyTests.withLongLists { index, database in
            let connection = database.newConnection()
            guard var chunks = try Self.milkSummary(index, database) else {
                Issue.record("milk has no summary")
                return
            }
            // Its last chunk's bound raised: the chunk a search opens first (best bound first) and the one a new row's
            // write reads. (A write checks the summary's entries of the chunks it reads, as it checks the blocks it
            // reads: `verify` checks them all.)
            chunks[chunks.count - 1].bound.maximumOccurrences += 1
            try connection.readWrite { txn in try index.tables().postingsSummaries.put(SearchListSummary.encode(chunks), forKey: Self.milk, in: txn) }
            #expect { _ = try connection.read { txn in try index.search("milk", in: txn, limit: 9_000) } } throws: { error in
                (error as? CanopyError)?.code == .corruptStore && "\(error)".contains("differs from the list's summary")
            }
            #expect { try connection.readWrite { txn in try txn.set(Note(title: "milk", body: nil), forKey: "new", in: notes) } } throws: { error in
                (error as? CanopyError)?.code == .corruptStore
            }
            #expect(try connection.read { txn in try txn.object(forKey: "new", in: notes) } == nil, "the write wrote nothing")
            let problems = try SearchVerifyTests.check(database, index).problems
            #expect(problems.contains { $0.contains("the summary of word 'milk'") }, "\(problems)")
        }
    }
}
