import Benchmark
import Canopy
import CanopySearch
import Foundation

// Full-text search (issue 20 item 2): indexing 100k short texts in one transaction and answering 1,000 queries
// (prefix and two-term, top 20 by rank), through CanopySearch and through GRDB's FTS5 table (SQLite's `unicode61`
// tokenizer with diacritics removed: the same folding), and the same queries over 1M texts against 100k.

struct SearchText: Codable, Sendable {
    var body: String
}

let searchTexts = TypedCollection<SearchText, NoMetadata>("texts")

enum SearchWorkload {
    static let textCount = 100_000
    static let largeTextCount = 1_000_000
    static let queryCount = 1_000

    /// 5,000 made-up words of two or three syllables.
    static let vocabulary: [String] = {
        let syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "te", "vo", "bri", "dra", "fen", "gol", "har", "jun", "pel", "quor", "stel", "tin", "ub", "zor"]
        var words: [String] = []
        var state: UInt64 = 1
        while words.count < 5_000 {
            state = mix(state)
            let parts = 2 + Int(state % 2)
            var word = ""
            for part in 0..<parts { word += syllables[Int((state >> (8 * UInt64(part + 1))) % UInt64(syllables.count))] }
            words.append(word)
        }
        return words
    }()

    /// A word drawn with a skew toward the first words (as word frequencies in real text are).
    static func word(_ seed: UInt64) -> String {
        let r = Double(mix(seed) % 1_000_000) / 1_000_000
        return vocabulary[min(vocabulary.count - 1, Int(r * r * Double(vocabulary.count)))]
    }

    /// Text `index`: 5 to 12 words.
    static func text(_ index: Int) -> String {
        let seed = mix(UInt64(index) &+ 0x5EA2C4)
        return (0..<(5 + Int(seed % 8))).map { word(seed &+ UInt64($0) &* 7919) }.joined(separator: " ")
    }

    static func key(_ index: Int) -> String { "t\(index)" }

    /// The queries: half a three-letter prefix of a word, half two words.
    static let queries: [String] = (0..<queryCount).map { index in
        let seed = mix(UInt64(index) &+ 0xC0FFEE)
        if index % 2 == 0 { return String(word(seed).prefix(3)) + "*" }
        return "\(word(seed)) \(word(seed &+ 1))"
    }

    static func index() -> SearchIndex {
        SearchIndex.byObject(name: "text-search", searchTexts, fields: [ObjectSearchField("body", \.body)])
    }
}

/// A Canopy database with the search index over `count` texts.
final class SearchStore {
    let directory = TemporaryDirectory("search")
    let database: Database
    let index = SearchWorkload.index()

    init(count: Int, populated: Bool) throws {
        database = try Database(path: directory.child("db"), options: DatabaseOptions(durability: .none))
        try database.register(index)
        if populated { try insert(0..<count) }
    }

    func insert(_ range: Range<Int>) throws {
        for start in stride(from: range.lowerBound, to: range.upperBound, by: 100_000) {
            try database.newConnection().readWrite { txn in
                for index in start..<min(range.upperBound, start + 100_000) {
                    try txn.set(SearchText(body: SearchWorkload.text(index)), forKey: SearchWorkload.key(index), in: searchTexts)
                }
            }
        }
    }
}

func searchBenchmarks() {
    let indexing = Benchmark.Configuration(metrics: [.wallClock], warmupIterations: 0, maxDuration: .seconds(60), maxIterations: 3)
    Benchmark("search-index canopy", configuration: indexing) { benchmark in
        let store = try SearchStore(count: SearchWorkload.textCount, populated: false)
        try measureLong(benchmark, "search-index canopy") { try store.insert(0..<SearchWorkload.textCount) }
    }
    Benchmark("search-index grdb", configuration: indexing) { benchmark in
        let store = try FTS5Store(count: 0)
        try measureLong(benchmark, "search-index grdb") { try store.insert(0..<SearchWorkload.textCount) }
    }

    let querying = Benchmark.Configuration(metrics: [.wallClock], warmupIterations: 1, maxDuration: .seconds(20), maxIterations: 20)
    for (label, count) in [("100k", SearchWorkload.textCount), ("1m", SearchWorkload.largeTextCount)] {
        let fixture = Fixture<SearchStore>()
        Benchmark("search-query-\(label) canopy", configuration: querying) { benchmark in
            guard let store = fixture.value else { return }
            // Timed also by `measureLong`: 1,000 queries over 1M texts take longer than the JMH export carries.
            try measureLong(benchmark, "search-query-\(label) canopy") {
                try store.database.newConnection().read { txn in
                    for query in SearchWorkload.queries {
                        blackHole(try store.index.search(query, in: txn, limit: 20, highlights: false))
                    }
                }
            }
        } setup: {
            fixture.value = try SearchStore(count: count, populated: true)
        } teardown: {
            fixture.value = nil
        }
    }
    let fts5 = Fixture<FTS5Store>()
    Benchmark("search-query-100k grdb", configuration: querying) { benchmark in
        guard let store = fts5.value else { return }
        try measureLong(benchmark, "search-query-100k grdb") {
            for query in SearchWorkload.queries { blackHole(try store.search(query)) }
        }
    } setup: {
        fts5.value = try FTS5Store(count: SearchWorkload.textCount)
    } teardown: {
        fts5.value = nil
    }
}
