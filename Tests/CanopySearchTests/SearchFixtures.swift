import Canopy
import CanopySearch
import CanopyTestSupport
import Foundation

struct Note: Codable, Sendable, Equatable {
    var title: String
    var body: String?
    var folder: String = "inbox"
}

let notes = TypedCollection<Note, NoMetadata>("notes")

/// The index the tests use: title (weight 2) and body.
func makeNoteSearch(versionTag: String = "1", titleWeight: Double = 2, prefixLengths: Set<Int> = []) -> SearchIndex {
    SearchIndex.byObject(name: "note-search", versionTag: versionTag, notes, fields: [
        ObjectSearchField("title", weight: titleWeight, \.title),
        ObjectSearchField("body", \.body),
    ], prefixLengths: prefixLengths)
}

/// A database in `directory` with the notes index registered and `titles` (key, title) written in one transaction.
func openNoteIndex(in directory: TemporaryDirectory, titles: KeyValuePairs<String, String>) throws -> (database: Database, index: SearchIndex, connection: Connection) {
    let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
    let index = makeNoteSearch()
    try database.register(index)
    let connection = database.newConnection()
    try connection.readWrite { txn in
        for (key, title) in titles { try txn.set(Note(title: title), forKey: key, in: notes) }
    }
    return (database, index, connection)
}

/// A database in `directory` with the notes index and a ranked results view "note-results" registered, three notes
/// ("a": milk / oat milk, "b": bread / milk bread, "c": bread) and the query "milk" set.
func openRankedNotes(in directory: TemporaryDirectory) throws -> (database: Database, index: SearchIndex, ranked: SearchResultsView) {
    let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
    let index = makeNoteSearch()
    let ranked = SearchResultsView.ranked(name: "note-results", index: index)
    try database.register(index)
    try database.register(ranked.view)
    try database.newConnection().readWrite { txn in
        try txn.set(Note(title: "milk", body: "oat milk"), forKey: "a", in: notes)
        try txn.set(Note(title: "bread", body: "milk bread"), forKey: "b", in: notes)
        try txn.set(Note(title: "bread", body: nil), forKey: "c", in: notes)
        try ranked.setQuery("milk", in: txn)
    }
    return (database, index, ranked)
}

/// Words the random texts are made of: ASCII, accented (written composed and decomposed, in several cases), CJK,
/// emoji with and without modifiers, words that are prefixes of others.
let vocabulary = [
    "milk", "milkshake", "mil", "bread", "Bread", "BREAD", "butter", "buy", "oat", "oats", "crème", "Crème", "cre\u{300}me", "creme",
    "brûlée", "Straße", "strasse", "naïve", "naive", "Ølberg", "olberg", "東京", "都", "京都", "ラーメン", "らーめん", "한국어",
    "👍", "👍🏽", "🍎", "🇫🇷", "e-mail", "don't", "x2", "2024", "ﬁne", "Ａｂｃ", "abc", "σοφία", "ΣΟΦΊΑ",
] + (0..<40).map { "filler\($0)" }  // rarer words: terms whose idf is not clamped, so ranks differ

func randomText(_ random: inout SeededRandom, words: Int) -> String {
    let separators = [" ", " ", " ", ", ", ". ", "! ", " — ", "\n", "  "]
    var text = ""
    for index in 0..<words {
        if index > 0 { text += separators[Int(random.next() % UInt64(separators.count))] }
        text += vocabulary[Int(random.next() % UInt64(vocabulary.count))]
    }
    return text
}

func randomNote(_ random: inout SeededRandom) -> Note {
    Note(title: randomText(&random, words: 1 + Int(random.next() % 3)),
         body: random.next() % 4 == 0 ? nil : randomText(&random, words: Int(random.next() % 8)),
         folder: ["inbox", "work", "home"][Int(random.next() % 3)])
}

/// Random queries over the vocabulary: single words, prefixes, two terms, phrases, phrases ending with a prefix.
func randomQuery(_ random: inout SeededRandom) -> String {
    func word() -> String { vocabulary[Int(random.next() % UInt64(vocabulary.count))] }
    func prefix() -> String {
        let whole = word()
        let length = 1 + Int(random.next() % UInt64(max(whole.count, 1)))
        let cut = String(whole.prefix(length))
        return cut.unicodeScalars.last.map { CharacterSet.alphanumerics.contains($0) } == true ? cut + "*" : word()
    }
    switch random.next() % 6 {
    case 0: return word()
    case 1: return prefix()
    case 2: return "\(word()) \(word())"
    case 3: return "\(prefix()) \(word())"
    case 4: return "\"\(word()) \(word())\""
    default: return "\"\(word()) \(prefix())\""
    }
}

/// A brute-force search over the notes, written independently of the index: tokenizes each row's fields, finds the
/// query's terms by scanning the words, counts the statistics over all rows and ranks with BM25 as documented.
enum BruteForce {
    struct Hit: Equatable, CustomStringConvertible {
        var key: String
        var score: Double
        var description: String { "\(key) (\(score))" }
    }

    static func words(_ text: String?) -> [String] { text.map { SearchTokenizer.tokens(of: $0).map(\.term) } ?? [] }

    /// Occurrences of `term` in `words`.
    static func count(_ term: SearchQuery.Term, in words: [String]) -> Int {
        let n = term.words.count
        guard words.count >= n else { return 0 }
        var found = 0
        for start in 0...(words.count - n) {
            var all = true
            for (offset, queryWord) in term.words.enumerated() {
                let word = words[start + offset]
                let isLast = offset == n - 1
                let ok = term.isPrefix && isLast ? word.utf8.starts(with: queryWord.utf8) : word == queryWord
                if !ok { all = false; break }
            }
            if all { found += 1 }
        }
        return found
    }

    /// The statistics of `query` over `rows` (as the index counts them).
    static func statistics(_ query: SearchQuery, _ rows: [String: Note]) -> SearchStatistics {
        let fields = rows.values.map { [words($0.title), words($0.body)] }
        return SearchStatistics(
            documentCount: rows.count, totalLength: fields.reduce(0) { $0 + $1[0].count + $1[1].count },
            termDocumentCounts: query.terms.map { term in fields.filter { count(term, in: $0[0]) + count(term, in: $0[1]) > 0 }.count })
    }

    static func score(_ query: SearchQuery, _ note: Note, _ statistics: SearchStatistics, weights: [Double] = [2, 1]) -> Double? {
        let fields = [words(note.title), words(note.body)]
        let length = Double(fields[0].count + fields[1].count)
        let n = Double(max(statistics.documentCount, 1))
        let averageLength = statistics.totalLength > 0 ? Double(statistics.totalLength) / n : 1
        var score = 0.0
        for (index, term) in query.terms.enumerated() {
            let counts = fields.map { count(term, in: $0) }
            guard counts.contains(where: { $0 > 0 }) else { return nil }
            var frequency = 0.0
            for (field, count) in counts.enumerated() where count > 0 { frequency += weights[field] * Double(count) }
            let matching = Double(statistics.termDocumentCounts[index])
            let idf = max(log((n - matching + 0.5) / (matching + 0.5)), 1e-6)
            score += idf * frequency * (1.2 + 1) / (frequency + 1.2 * (1 - 0.75 + 0.75 * length / averageLength))
        }
        return score
    }

    /// The matches, best first, ties by key (the rows are in one collection, so by key bytes).
    static func search(_ query: SearchQuery, _ rows: [String: Note], statistics: SearchStatistics? = nil) -> [Hit] {
        let statistics = statistics ?? Self.statistics(query, rows)
        return rows.compactMap { key, note in score(query, note, statistics).map { Hit(key: key, score: $0) } }
            .sorted { $0.score != $1.score ? $0.score > $1.score : $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
    }
}

/// Whether two lists of hits agree: same keys in the same order, scores equal to rounding.
func sameHits(_ lhs: [BruteForce.Hit], _ rhs: [BruteForce.Hit]) -> Bool {
    guard lhs.count == rhs.count else { return false }
    return zip(lhs, rhs).allSatisfy { $0.key == $1.key && abs($0.score - $1.score) <= 1e-9 * max(1, abs($0.score)) }
}
