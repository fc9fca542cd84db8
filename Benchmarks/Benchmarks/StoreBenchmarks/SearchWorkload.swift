import Canopy
import CanopySearch

// The search workloads' texts, queries and index, shared by StoreBenchmarks (SearchBenchmarks.swift) and
// InstructionCounts (its Search.swift links this file).

/// A text of the search workloads. Its decoding is the synthesized one, declared as such
/// (`BinaryCodecSynthesizedDecoding`) as every other record type of the benchmarks is: the store decodes each written
/// row back for the index's text closure.
struct SearchText: Codable, Sendable, BinaryCodecSynthesizedDecoding {
    var body: String
}

/// The collection of the search workloads.
let searchTexts = TypedCollection<SearchText, NoMetadata>("texts")

/// The search workloads' sizes, texts (made-up words, skewed toward the frequent ones), queries and index.
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

    /// The query workloads' index keeps merged lists for prefixes of 3 letters (the queries' prefixes), as the FTS5
    /// table they are compared with keeps its prefix index (`prefix='3'`); the indexing workloads index without.
    static let queryPrefixLengths: Set<Int> = [3]

    static func index(prefixLengths: Set<Int> = []) -> SearchIndex {
        SearchIndex.byObject(name: "text-search", searchTexts, fields: [ObjectSearchField("body", \.body)], prefixLengths: prefixLengths)
    }

    /// Writes texts `range` into `database`, 100,000 per transaction.
    static func insert(_ range: Range<Int>, into database: Database) throws {
        for start in stride(from: range.lowerBound, to: range.upperBound, by: 100_000) {
            try database.newConnection().readWrite { txn in
                for index in start..<min(range.upperBound, start + 100_000) {
                    try txn.set(SearchText(body: text(index)), forKey: key(index), in: searchTexts)
                }
            }
        }
    }
}
