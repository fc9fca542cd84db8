import Benchmark
import Canopy
import CanopySearch
import Foundation

// Full-text search (issue 20 item 2): indexing 100k short texts in one transaction and answering 1,000 queries
// (prefix and two-term, top 20 by rank), through CanopySearch and through GRDB's FTS5 table (SQLite's `unicode61`
// tokenizer with diacritics removed: the same folding), and the same queries over 1M texts against 100k. The query
// workloads index prefixes of 3 letters on both sides (CanopySearch's prefix lists, FTS5's prefix index).

/// A Canopy database with the search index over `count` texts.
final class SearchStore {
    let directory = TemporaryDirectory("search")
    let database: Database
    let index: SearchIndex

    init(count: Int, populated: Bool, prefixLengths: Set<Int> = []) throws {
        index = SearchWorkload.index(prefixLengths: prefixLengths)
        database = try Database(path: directory.child("db"), options: DatabaseOptions(durability: .none))
        try database.register(index)
        if populated { try insert(0..<count) }
    }

    func insert(_ range: Range<Int>) throws { try SearchWorkload.insert(range, into: database) }
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
            fixture.value = try SearchStore(count: count, populated: true, prefixLengths: SearchWorkload.queryPrefixLengths)
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
        fts5.value = try FTS5Store(count: SearchWorkload.textCount, prefixes: SearchWorkload.queryPrefixLengths)
    } teardown: {
        fts5.value = nil
    }
}
