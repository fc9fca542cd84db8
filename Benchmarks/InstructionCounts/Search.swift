import Canopy
import CanopySearch
import Foundation

// StoreBenchmarks' search workloads (SearchBenchmarks.swift), on the same texts, queries and index (SearchWorkload.swift).

/// `search-index canopy`: 100k texts in one transaction into a new database with the index registered. With
/// `CANOPY_KEEP_DATABASE` set, the last iteration's database is kept and its path printed (for `canopy stat`).
func searchIndex(iterations: Int) throws {
    func run(_ count: Int, measuring: Bool, keep: Bool) throws {
        let directory = TemporaryDirectory("search-index")
        let database = try Database(path: directory.child("db"), options: storeOptions(durability: .none))
        // SEARCH_PREFIX_LENGTHS=3 (comma-separated): with the query workloads' prefix lists (what they cost to keep).
        let lengths = ProcessInfo.processInfo.environment["SEARCH_PREFIX_LENGTHS"].map { Set($0.split(separator: ",").compactMap { Int($0) }) } ?? []
        try database.register(SearchWorkload.index(prefixLengths: lengths))
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

/// `search-index-batched`: the texts of `search-index` written into a registered index 1,000 per transaction, so
/// that every transaction after the first rewrites the blocks its words already have (the writer's read, merge and
/// range checks of a stored block), as an app that writes as it goes does.
func searchIndexBatched(iterations: Int) throws {
    for _ in 0..<iterations {
        let directory = TemporaryDirectory("search-index-batched")
        let database = try Database(path: directory.child("db"), options: storeOptions(durability: .none))
        try database.register(SearchWorkload.index())
        try SearchWorkload.insert(0..<1_000, into: database)
        try measured {
            for start in stride(from: 1_000, to: 21_000, by: 1_000) { try SearchWorkload.insert(start..<(start + 1_000), into: database) }
        }
    }
}

/// The query workloads' database: `count` texts with their index (the query workloads' prefix lists), kept in the
/// temporary directory between runs (named by the index's storage format, prefix lengths and checksums), so that
/// callgrind does not run the population: run a query workload once without it first. The texts it holds are counted,
/// not assumed from the directory: a run stopped while populating left only the first of them, which the next run
/// completes (before, it queried those few texts and printed the counts of a smaller index without a word).
func searchQueryStore(count: Int) throws -> (Database, SearchIndex) {
    let index = SearchWorkload.index(prefixLengths: SearchWorkload.queryPrefixLengths)
    let prefixes = index.prefixLengths.map(String.init).joined(separator: ",")
    let path = FileManager.default.temporaryDirectory.path
        + "/canopy-instruction-counts-search-\(count)-format\(index.options.format)-prefixes\(prefixes)\(checksums ? "" : "-no-checksums")"
    let database = try Database(path: path, options: storeOptions(durability: .none))
    try database.register(index)
    // Texts are written in key order, 100,000 per transaction: what a stopped run committed is the first `stored`.
    let stored = try database.newConnection().read { txn in try txn.count(inCollection: searchTexts.name) }
    guard stored <= count else { throw DriverError("\(path) holds \(stored) texts, not \(count): remove it") }
    if stored < count { try SearchWorkload.insert(stored..<count, into: database) }
    return (database, index)
}

/// `search-query-100k canopy` / `search-query-1m canopy`: the 1,000 queries, top 20 without highlights, over an index
/// of `count` texts (``searchQueryStore(count:)``).
func searchQuery(count: Int, iterations: Int) throws {
    let (database, index) = try searchQueryStore(count: count)
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

/// `search-index grdb`: the same 100k texts in one transaction into a new FTS5 table through GRDB (StoreBenchmarks'
/// FTS5Store), the other side of `search-index-grdb-fts5-vs-canopy`.
func searchIndexGRDB(iterations: Int) throws {
    try FTS5Store(count: 0).insert(0..<1_000)  // warm-up
    for _ in 0..<iterations {
        let store = try FTS5Store(count: 0)
        try measured { try store.insert(0..<SearchWorkload.textCount) }
    }
}

/// The texts of `search-index` alone (made, not stored): what both sides of the comparison spend generating them.
func searchTexts(iterations: Int) throws {
    var bytes = 0
    for _ in 0..<iterations {
        measured {
            for index in 0..<SearchWorkload.textCount { bytes += SearchWorkload.text(index).utf8.count + SearchWorkload.key(index).utf8.count }
        }
    }
    print("text bytes: \(bytes)")
}

/// `search-query-profile-100k` / `-1m` (not a measured workload): per query of the benchmark, its kind, how many rows
/// each term matches, how many the query matches, and its 20th score — what decides a query's cost.
func searchQueryProfile(count: Int) throws {
    let (database, index) = try searchQueryStore(count: count)
    let first = ProcessInfo.processInfo.environment["SEARCH_QUERY_COUNT"].flatMap { Int($0) } ?? SearchWorkload.queryCount
    try database.newConnection().read { txn in
        for text in SearchWorkload.queries.prefix(first) {
            let query = try SearchQuery(text)
            let statistics = try index.statistics(of: query, in: txn)
            let hits = try index.search(query, in: txn, limit: 20, highlights: false)
            let matched = try index.count(matching: query, in: txn)
            let tied = hits.last.map { last in hits.filter { $0.score == last.score }.count } ?? 0
            print("\(text.hasSuffix("*") ? "prefix" : "terms")\t\(text)\t\(statistics.termDocumentCounts.map(String.init).joined(separator: ","))\t\(matched)\t\(hits.first?.score ?? 0)\t\(hits.last?.score ?? 0)\t\(tied)")
        }
    }
}
