import Canopy
import CanopySearch
import Foundation

// StoreBenchmarks' search workloads (SearchBenchmarks.swift): the same texts, queries and index.

struct SearchText: Codable, Sendable {
    var body: String
}

let searchTexts = TypedCollection<SearchText, NoMetadata>("texts")

enum SearchWorkload {
    static let textCount = 100_000
    static let largeTextCount = 1_000_000
    static let queryCount = 1_000

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

    static func word(_ seed: UInt64) -> String {
        let r = Double(mix(seed) % 1_000_000) / 1_000_000
        return vocabulary[min(vocabulary.count - 1, Int(r * r * Double(vocabulary.count)))]
    }

    static func text(_ index: Int) -> String {
        let seed = mix(UInt64(index) &+ 0x5EA2C4)
        return (0..<(5 + Int(seed % 8))).map { word(seed &+ UInt64($0) &* 7919) }.joined(separator: " ")
    }

    static func key(_ index: Int) -> String { "t\(index)" }

    static let queries: [String] = (0..<queryCount).map { index in
        let seed = mix(UInt64(index) &+ 0xC0FFEE)
        if index % 2 == 0 { return String(word(seed).prefix(3)) + "*" }
        return "\(word(seed)) \(word(seed &+ 1))"
    }

    static func index() -> SearchIndex {
        SearchIndex.byObject(name: "text-search", searchTexts, fields: [ObjectSearchField("body", \.body)])
    }

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

/// `search-index canopy`: 100k texts in one transaction into a new database with the index registered. With
/// `CANOPY_KEEP_DATABASE` set, the last iteration's database is kept and its path printed (for `canopy stat`).
func searchIndex(iterations: Int) throws {
    func run(_ count: Int, measuring: Bool, keep: Bool) throws {
        let directory = TemporaryDirectory("search-index")
        let database = try Database(path: directory.child("db"), options: DatabaseOptions(durability: .none))
        try database.register(SearchWorkload.index())
        let insert = { try SearchWorkload.insert(0..<count, into: database) }
        if measuring { try measured(insert) } else { try insert() }
        if keep {
            print("kept \(directory.child("db"))")
            _ = Unmanaged.passRetained(directory)  // not removed at exit
        }
    }
    try run(1_000, measuring: false, keep: false)  // warm-up
    let keep = ProcessInfo.processInfo.environment["CANOPY_KEEP_DATABASE"] != nil
    for iteration in 0..<iterations {
        try run(SearchWorkload.textCount, measuring: true, keep: keep && iteration == iterations - 1)
    }
}

/// `search-query-100k canopy` / `search-query-1m canopy`: the 1,000 queries, top 20 without highlights, over an index
/// of `count` texts. The populated database is kept in the temporary directory between runs (named by the index's
/// storage format), so that callgrind does not run the population: run the workload once without it first.
func searchQuery(count: Int, iterations: Int) throws {
    let path = FileManager.default.temporaryDirectory.path + "/canopy-instruction-counts-search-\(count)-format\(SearchWorkload.index().options.format)"
    let exists = FileManager.default.fileExists(atPath: path)
    let database = try Database(path: path, options: DatabaseOptions(durability: .none))
    let index = SearchWorkload.index()
    try database.register(index)
    if !exists { try SearchWorkload.insert(0..<count, into: database) }
    let connection = database.newConnection()
    // SEARCH_QUERIES=prefix or =terms: only the prefix queries, or only the two-word ones (to attribute the cost).
    let kind = ProcessInfo.processInfo.environment["SEARCH_QUERIES"]
    // SEARCH_QUERY_COUNT=n: only the first n queries (callgrind over 1M texts is slow).
    let first = ProcessInfo.processInfo.environment["SEARCH_QUERY_COUNT"].flatMap { Int($0) } ?? SearchWorkload.queryCount
    let queries = SearchWorkload.queries.prefix(first).filter { kind == nil || ($0.hasSuffix("*") == (kind == "prefix")) }
    var hits = 0
    for iteration in -1..<iterations {  // -1: warm-up
        let run = {
            try connection.read { txn in
                for query in queries { hits += try index.search(query, in: txn, limit: 20, highlights: false).count }
            }
        }
        if iteration >= 0 { try measured(run) } else { try run() }
    }
    print("hits: \(hits)")
}
