import Canopy
@testable import CanopySearch
import CanopyTestSupport
import Testing

/// Queries of several words over lists of many blocks: the intersection reads its rarest list's rows, lengths and
/// counts in one walk and compares the other lists' row numbers block by block (``SearchPostingBlock``), so its
/// answers must equal the brute-force matcher's where lists span many blocks, rows have gaps (removed rows) and a
/// word's counts are in one field or two.
@Suite("Search index: intersections over lists of many blocks")
struct SearchIntersectionTests {
    @Test("two- and three-word queries over 1,500 rows (lists of several blocks, gaps, counts in one field or two) equal the brute-force matcher", arguments: [1 as UInt64, 2])
    func intersectionsMatchBruteForce(seed: UInt64) throws {
        // A small vocabulary, skewed: the first words are in most rows (lists of many blocks), the last in few.
        try Self.compareWithBruteForce(
            seed: seed, vocabulary: ["oat", "milk", "bread", "tea", "honey", "crème", "plum", "rye", "fig", "kale", "yam", "zest"],
            prefixLengths: [], prefixes: 0)
    }

    /// Prefixes of 2 letters of words that share them: merged lists (``SearchIndex/prefixLengths``) whose rows hold
    /// several words, their counts summed per field, intersected with words and with each other.
    @Test("queries of prefixes with merged lists and words over 1,500 rows equal the brute-force matcher", arguments: [3 as UInt64, 4])
    func prefixIntersectionsMatchBruteForce(seed: UInt64) throws {
        try Self.compareWithBruteForce(
            seed: seed, vocabulary: ["oat", "oats", "milk", "mild", "tea", "teal", "oath", "mile", "team", "bread", "brie", "tease"],
            prefixLengths: [2], prefixes: 2)
    }

    /// Writes 1,500 rows of `vocabulary`'s words (then removes and rewrites 300), and compares 60 queries of two or
    /// three terms — up to `prefixes` of them a word's first two letters and `*` — with the brute-force matcher.
    static func compareWithBruteForce(seed: UInt64, vocabulary: [String], prefixLengths: Set<Int>, prefixes: Int) throws {
        var random = SeededRandom(seed: seed)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let index = makeNoteSearch(prefixLengths: prefixLengths)
        try database.register(index)
        func word() -> String {
            let r = Double(random.next() % 1_000) / 1_000
            return vocabulary[min(vocabulary.count - 1, Int(r * r * Double(vocabulary.count)))]
        }
        func text(_ words: Int) -> String { (0..<words).map { _ in word() }.joined(separator: " ") }
        var rows: [String: Note] = [:]
        try database.newConnection().readWrite { txn in
            for number in 0..<1_500 {
                let note = Note(title: text(1 + Int(random.next() % 3)), body: random.next() % 5 == 0 ? nil : text(2 + Int(random.next() % 9)))
                try txn.set(note, forKey: "n\(number)", in: notes)
                rows["n\(number)"] = note
            }
        }
        // Gaps: rows removed and rewritten across the lists' blocks.
        try database.newConnection().readWrite { txn in
            for _ in 0..<300 {
                let key = "n\(random.next() % 1_500)"
                if random.next() % 2 == 0 {
                    try txn.remove(key: key, in: notes)
                    rows[key] = nil
                } else {
                    let note = Note(title: text(2), body: text(6))
                    try txn.set(note, forKey: key, in: notes)
                    rows[key] = note
                }
            }
        }
        let connection = database.newConnection()
        var multiBlock = 0
        for round in 0..<60 {
            var words = (0..<(2 + round % 2)).map { _ in word() }
            for term in words.indices.prefix(prefixes) where random.next() % 2 == 0 { words[term] = String(words[term].prefix(2)) + "*" }
            let query = try SearchQuery(words.joined(separator: " "))
            let expected = BruteForce.search(query, rows)
            let context = "seed \(seed), round \(round), query \(query)"
            try connection.read { txn in
                let all = try index.search(query, in: txn, limit: .max, highlights: false).map { BruteForce.Hit(key: $0.id.key, score: $0.score) }
                let agrees = sameHits(all, expected)  // (a Bool: a failure prints the first hits only)
                #expect(agrees, "\(context): \(all.prefix(5)) against \(expected.prefix(5))")
                let best = try index.search(query, in: txn, limit: 20, highlights: false).map { BruteForce.Hit(key: $0.id.key, score: $0.score) }
                let bestAgrees = sameHits(best, Array(expected.prefix(20)))
                #expect(bestAgrees, "\(context), top 20: \(best.prefix(5)) against \(expected.prefix(5))")
                #expect(try index.count(matching: query, in: txn) == expected.count, "\(context)")
                if try index.statistics(of: query, in: txn).termDocumentCounts.min() ?? 0 > SearchPostingBlock.maximumDocuments { multiBlock += 1 }
            }
        }
        #expect(multiBlock >= 10, "seed \(seed): queries whose every list spans several blocks (\(multiBlock) of 60)")
    }
}
