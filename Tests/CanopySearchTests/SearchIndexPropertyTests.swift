import Canopy
import CanopySearch
import CanopyTestSupport
import Foundation
import Testing

/// The search index against a brute-force matcher over random texts (accents composed and decomposed, case, CJK,
/// emoji with modifiers, flags, punctuation): after random commits of inserts, updates, removals and removals of
/// everything, every random query (words, prefixes, two terms, phrases, phrases ending with a prefix) returns the
/// same rows in the same order with the same scores; and so does the index rebuilt from the rows.
@Suite("Search index: agrees with a brute-force matcher")
struct SearchIndexPropertyTests {
    static func check(_ index: SearchIndex, _ database: Database, _ rows: [String: Note], _ random: inout SeededRandom, queries: Int, context: String) throws {
        try database.newConnection().read { txn in
            for _ in 0..<queries {
                let text = randomQuery(&random)
                let query = try SearchQuery(text)
                let expected = BruteForce.search(query, rows)
                let hits = try index.search(query, in: txn, limit: 1_000, highlights: false)
                let actual = hits.map { BruteForce.Hit(key: $0.id.key, score: $0.score) }
                #expect(sameHits(actual, expected), "query \(text) (\(query.terms)): index \(actual)\nbrute force \(expected)\n\(context)")
                #expect(try index.count(matching: query, in: txn) == expected.count, "count of \(text); \(context)")
                let limited = try index.search(query, in: txn, limit: 3, highlights: false).map(\.id.key)
                #expect(limited == Array(expected.prefix(3).map(\.key)), "top 3 of \(text); \(context)")
            }
            // The stored index checks clean against the rows (what `canopy verify` runs).
            let verified = try txn.checkSearchIndex(named: index.name)
            #expect(verified.problems.isEmpty && verified.notChecked == nil && verified.rows == rows.count, "\(verified); \(context)")
        }
    }

    @Test("Random commits and queries, index and rebuilt index equal brute force", arguments: [1 as UInt64, 2, 3, 4, 5, 6])
    func randomCommits(seed: UInt64) throws {
        try Self.randomCommits(seed: seed, prefixLengths: [])
    }

    /// The same with merged prefix lists: a prefix of 1, 2 or 3 scalars reads its list (kept by every insert, update
    /// and removal, and rebuilt), longer ones merge their words.
    @Test("Random commits and queries with prefix lists, index and rebuilt index equal brute force", arguments: [11 as UInt64, 12, 13, 14])
    func randomCommitsWithPrefixLists(seed: UInt64) throws {
        try Self.randomCommits(seed: seed, prefixLengths: [1, 2, 3])
    }

    static func randomCommits(seed: UInt64, prefixLengths: Set<Int>) throws {
        var random = SeededRandom(seed: seed)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        var rows: [String: Note] = [:]
        do {
            let database = try Database(path: path, options: .init(durability: .none))
            let index = makeNoteSearch(prefixLengths: prefixLengths)
            try database.register(index)
            for commit in 0..<40 {
                try database.newConnection().readWrite { txn in
                    for _ in 0..<(1 + Int(random.next() % 6)) {
                        let key = "n\(random.next() % 40)"
                        switch random.next() % 10 {
                        case 0..<6:
                            let note = randomNote(&random)
                            try txn.set(note, forKey: key, in: notes)
                            rows[key] = note
                        case 6..<9:
                            try txn.remove(key: key, in: notes)
                            rows[key] = nil
                        default:
                            if random.next() % 4 == 0 {
                                _ = try txn.removeAll(inCollection: notes.name)
                                rows = [:]
                            } else {
                                _ = try txn.touchObject(forKey: key, inCollection: notes.name)
                            }
                        }
                    }
                }
                try Self.check(index, database, rows, &random, queries: 8, context: "seed \(seed), after commit \(commit)")
            }
        }
        // Rebuilt from the rows (a new version tag): the same answers.
        let database = try Database(path: path, options: .init(durability: .none))
        let rebuilt = makeNoteSearch(versionTag: "2", prefixLengths: prefixLengths)
        let outcome = try database.register(rebuilt)
        #expect(outcome == .rebuilt(.versionTagChanged(from: "1", to: "2")))
        try Self.check(rebuilt, database, rows, &random, queries: 60, context: "seed \(seed), rebuilt")
    }

    @Test("Highlights: the ranges of the matched words, phrases whole, in the original text")
    func highlights() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let index = makeNoteSearch()
        try database.register(index)
        try database.newConnection().readWrite { txn in
            try txn.set(Note(title: "Buy MILK and Crème brûlée", body: "oat milk, milkshake; not milk-free? 東京都 👍🏽!"), forKey: "a", in: notes)
            try txn.set(Note(title: "nothing here", body: nil), forKey: "b", in: notes)
        }
        try database.newConnection().read { txn in
            let hits = try index.search("milk* creme", in: txn)
            #expect(hits.map(\.id.key) == ["a"])
            let fields = try #require(hits.first?.fields)
            #expect(fields.map { $0.highlighted(open: "[", close: "]") } == [
                "Buy [MILK] and [Crème] brûlée", "oat [milk], [milkshake]; not [milk]-free? 東京都 👍🏽!",
            ])
            let phrase = try index.search("\"oat milk\" 京都 👍", in: txn)
            #expect(phrase.first?.fields.map { $0.highlighted(open: "[", close: "]") } == [
                "Buy MILK and Crème brûlée", "[oat] [milk], milkshake; not milk-free? 東[京][都] [👍🏽]!",
            ])
            #expect(try index.search("\"milk oat\"", in: txn).isEmpty, "a phrase keeps its order")
            #expect(try index.search("\"brûlée oat\"", in: txn).isEmpty, "a phrase does not cross fields")
        }
    }

    @Test("Tokenizer: words, folding, CJK, emoji")
    func tokenizer() {
        func terms(_ text: String) -> [String] { SearchTokenizer.tokens(of: text).map(\.term) }
        #expect(terms("Crème BRÛLÉE, naïve Straße") == ["creme", "brulee", "naive", "strasse"])
        #expect(terms("cre\u{300}me") == terms("crème"), "decomposed and composed accents fold alike")
        #expect(terms("don't e-mail x2 2024") == ["don", "t", "e", "mail", "x2", "2024"])
        #expect(terms("東京都へ行く") == ["東", "京", "都", "へ", "行", "く"])
        #expect(terms("한국어 텍스트") == ["한국어", "텍스트"])
        #expect(terms("ok👍🏽👍 🇫🇷🇩🇪 👨‍👩‍👧!") == ["ok", "👍", "👍", "🇫🇷", "🇩🇪", "👨‍👩‍👧"])
        #expect(terms("ﬁne Ａｂｃ Ølberg ΣΟΦΊΑ") == ["fine", "abc", "olberg", "σοφια"])
        #expect(terms("... — !!! ") == [])
        #expect(SearchTokenizer.tokens(of: String(repeating: "é", count: 500)).first?.term.utf8.count ?? 0 <= SearchTokenizer.maximumTermBytes)
    }
}
