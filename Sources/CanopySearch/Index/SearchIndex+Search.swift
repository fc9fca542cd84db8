import CanopyCore

extension SearchIndex {
    /// The rows matching `query`, best first (BM25; ties by collection, then key, as views order them), at most
    /// `limit`, with the ranges of the matched words in each field when `highlights` is set.
    ///
    /// - Throws: ``/CanopyCore/CanopyError/Code/invalidArgument`` for a query that does not parse (see
    ///   ``SearchQuery``) or a negative limit; ``/CanopyCore/CanopyError/Code/staleView`` when the index lags the
    ///   store (rows written by a process that did not register it); ``/CanopyCore/CanopyError/Code/corruptStore``.
    public func search(_ query: String, in transaction: ReadTransaction, limit: Int = 20, highlights: Bool = true) throws -> [SearchHit] {
        try search(try SearchQuery(query), in: transaction, limit: limit, highlights: highlights)
    }

    /// The rows matching `query`, best first, at most `limit` (see ``search(_:in:limit:highlights:)-(String,_,_,_)``).
    public func search(_ query: SearchQuery, in transaction: ReadTransaction, limit: Int = 20, highlights: Bool = true) throws -> [SearchHit] {
        guard limit >= 0 else { throw CanopyError(.invalidArgument, "the limit is \(limit); give 0 or more", extensionName: name) }
        let matched = try matches(of: query, in: transaction)
        var scored = zip(matched.documents, matched.scores).map { (document: $0, score: $1) }
        scored.sort { $0.score > $1.score }
        guard limit > 0, !scored.isEmpty else { return [] }
        // Rows that tie with the last one kept are ordered by row key: resolve all of them, then cut.
        let threshold = scored[min(limit, scored.count) - 1].score
        let candidates = scored.prefix { $0.score >= threshold }
        let tables = try tables()
        var resolved: [(key: StoredRowKey, score: Double)] = []
        resolved.reserveCapacity(candidates.count)
        for candidate in candidates {
            guard let rowKey = try tables.documents.value(forKey: candidate.document, in: transaction) else {
                throw corrupt("document \(candidate.document) has postings but no row")
            }
            resolved.append((rowKey, candidate.score))
        }
        resolved.sort { $0.score != $1.score ? $0.score > $1.score : $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) }
        var hits: [SearchHit] = []
        for entry in resolved.prefix(limit) {
            guard let id = try transaction.rowID(for: entry.key) else { throw corrupt("a document names an unknown collection") }
            let highlighted = highlights ? try self.highlights(of: query, forRow: entry.key, in: transaction) : []
            hits.append(SearchHit(id: id, score: entry.score, fields: highlighted))
        }
        return hits
    }

    /// The number of rows matching `query`.
    /// - Throws: as ``search(_:in:limit:highlights:)-(SearchQuery,_,_,_)``.
    public func count(matching query: SearchQuery, in transaction: ReadTransaction) throws -> Int {
        try matches(of: query, in: transaction).documents.count
    }

    /// The fields of row `id` with the ranges of the words `query` matches in them (empty when the row is not
    /// indexed).
    public func highlights(of query: SearchQuery, for id: RowID, in transaction: ReadTransaction) throws -> [SearchHit.Field] {
        try transaction.requireCurrentExtension(named: name)
        guard let rowKey = try transaction.storedRowKey(for: id) else { return [] }
        return try highlights(of: query, forRow: rowKey, in: transaction)
    }

    func highlights(of query: SearchQuery, forRow rowKey: StoredRowKey, in transaction: ReadTransaction) throws -> [SearchHit.Field] {
        guard let stored = try transaction.storedRow(for: rowKey),
              let texts = try texts(of: SearchRow(id: stored.id, source: .stored(stored, transaction))) else { return [] }
        return zip(fields, texts).compactMap { field, text in
            guard let text else { return nil }
            return SearchHit.Field(name: field.name, text: text, ranges: SearchMatcher.highlightedRanges(of: query, in: SearchTokenizer.tokens(of: text)))
        }
    }

    /// The statistics `query` is ranked with now (see ``SearchStatistics``).
    public func statistics(of query: SearchQuery, in transaction: ReadTransaction) throws -> SearchStatistics {
        try matches(of: query, in: transaction).statistics
    }

    /// The rows matching every term of a query, by document number, with their scores.
    struct Matches {
        var documents: [UInt64] = []
        var scores: [Double] = []
        var statistics: SearchStatistics
    }

    /// The rows one term matches, by document number (ascending), with each row's length and the term's occurrences
    /// per field (`counts[slot * fieldCount + field]`): flat arrays, no allocation per row.
    struct TermHits {
        var documents: [UInt64] = []
        var lengths: [Int] = []
        var counts: [Int] = []

        var count: Int { documents.count }

        /// The slot of `document`, by binary search.
        func slot(of document: UInt64) -> Int? {
            var low = 0
            var high = documents.count
            while low < high {
                let middle = (low + high) / 2
                if documents[middle] < document { low = middle + 1 } else { high = middle }
            }
            return low < documents.count && documents[low] == document ? low : nil
        }
    }

    /// The rows matching every term of `query` (by document number), their BM25 scores and the statistics they were
    /// ranked with.
    func matches(of query: SearchQuery, in transaction: ReadTransaction) throws -> Matches {
        try transaction.requireCurrentExtension(named: name)
        let tables = try tables()
        if let writer = transaction.writer(of: self) {
            try writer.flushPostings()  // this transaction's postings, before the table is read
        }
        let state = try state(in: transaction)
        let hits = try query.terms.map { try occurrences(of: $0, in: tables, transaction) }
        let statistics = SearchStatistics(documentCount: state.documentCount, totalLength: state.totalLength, termDocumentCounts: hits.map(\.count))
        var result = Matches(statistics: statistics)
        guard let driver = hits.indices.min(by: { hits[$0].count < hits[$1].count }) else { return result }
        let fieldCount = fields.count
        let weights = fields.map(\.weight)
        var slots = [Int](repeating: 0, count: hits.count)
        candidates: for (driverSlot, document) in hits[driver].documents.enumerated() {
            for term in hits.indices {
                if term == driver { slots[term] = driverSlot; continue }
                guard let slot = hits[term].slot(of: document) else { continue candidates }
                slots[term] = slot
            }
            let norm = SearchRanking.lengthNorm(length: hits[driver].lengths[driverSlot], statistics: statistics)
            var score = 0.0
            for term in hits.indices {
                var frequency = 0.0
                let base = slots[term] * fieldCount
                for field in 0..<fieldCount {
                    let count = hits[term].counts[base + field]
                    if count > 0 { frequency += weights[field] * Double(count) }
                }
                score += SearchRanking.contribution(frequency: frequency, term: term, lengthNorm: norm, statistics: statistics)
            }
            result.documents.append(document)
            result.scores.append(score)
        }
        return result
    }

    /// The rows where `term` occurs, with its occurrences per field and the row's length.
    private func occurrences(of term: SearchQuery.Term, in tables: SearchIndexTables, _ transaction: ReadTransaction) throws -> TermHits {
        let words = term.wordBytes
        let fieldCount = fields.count
        if words.count == 1 {
            var hits = TermHits()
            // One word: its postings come in document order. A prefix: several words' postings, merged by document.
            var slots: [UInt64: Int]? = term.isPrefix ? [:] : nil
            try walkCounts(words[0], prefix: term.isPrefix, tables, transaction) { document, length, field, count in
                let slot: Int
                if let existing = slots?[document] ?? (slots == nil && hits.documents.last == document ? hits.count - 1 : nil) {
                    slot = existing
                } else {
                    slot = hits.count
                    hits.documents.append(document)
                    hits.lengths.append(length)
                    hits.counts.append(contentsOf: repeatElement(0, count: fieldCount))
                    slots?[document] = slot
                }
                if field < fieldCount { hits.counts[slot * fieldCount + field] += count }
            }
            if term.isPrefix { hits = sorted(hits, fieldCount: fieldCount) }
            return hits
        }
        // A phrase: the positions of each word, per row and field; then the starts where all follow in order.
        var perWord: [[UInt64: (length: Int, positions: [Set<Int>])]] = []
        for (offset, word) in words.enumerated() {
            let isPrefix = term.isPrefix && offset == words.count - 1
            var found: [UInt64: (length: Int, positions: [Set<Int>])] = [:]
            let restrict = perWord.first
            try walk(word, prefix: isPrefix, tables, transaction, positions: true) { document, posting in
                if let restrict, restrict[document] == nil { return }
                var entry = found[document] ?? (posting.length, [Set<Int>](repeating: [], count: fieldCount))
                for (index, count) in posting.counts.enumerated() where count.field < fieldCount && index < posting.positions.count {
                    entry.positions[count.field].formUnion(posting.positions[index])
                }
                found[document] = entry
            }
            perWord.append(found)
        }
        var result = TermHits()
        guard let first = perWord.first else { return result }
        for document in first.keys.sorted() {
            guard let entry = first[document] else { continue }
            var counts = [Int](repeating: 0, count: fieldCount)
            for field in 0..<fieldCount {
                for start in entry.positions[field] {
                    var all = true
                    for offset in 1..<perWord.count {
                        guard let other = perWord[offset][document], other.positions[field].contains(start + offset) else { all = false; break }
                    }
                    if all { counts[field] += 1 }
                }
            }
            if counts.contains(where: { $0 > 0 }) {
                result.documents.append(document)
                result.lengths.append(entry.length)
                result.counts.append(contentsOf: counts)
            }
        }
        return result
    }

    /// `hits` ordered by document number.
    private func sorted(_ hits: TermHits, fieldCount: Int) -> TermHits {
        let order = hits.documents.indices.sorted { hits.documents[$0] < hits.documents[$1] }
        var result = TermHits()
        result.documents.reserveCapacity(hits.count)
        result.lengths.reserveCapacity(hits.count)
        result.counts.reserveCapacity(hits.counts.count)
        for slot in order {
            result.documents.append(hits.documents[slot])
            result.lengths.append(hits.lengths[slot])
            result.counts.append(contentsOf: hits.counts[(slot * fieldCount)..<((slot + 1) * fieldCount)])
        }
        return result
    }

    /// Visits the (field, count) pairs of the postings of `word` (or of every word starting with it), without
    /// decoding positions.
    private func walkCounts(
        _ word: [UInt8], prefix: Bool, _ tables: SearchIndexTables, _ transaction: ReadTransaction,
        _ visit: (_ document: UInt64, _ length: Int, _ field: Int, _ count: Int) -> Void
    ) throws {
        let keyPrefix = prefix ? word : word + [0]
        var failure: Error?
        try tables.postings.forEachBytes(in: transaction, prefix: keyPrefix) { key, value in
            do {
                let document = try SearchPosting.document(ofKey: key)
                var reader = SearchBytes.Reader(value)
                let length = try reader.int()
                let entries = try reader.int()
                for _ in 0..<entries {
                    let field = try reader.int()
                    visit(document, length, field, try reader.int())
                }
                return true
            } catch {
                failure = error
                return false
            }
        }
        if let failure { throw corrupt("a posting is malformed (\(failure))") }
    }

    /// Visits the postings of `word` (or of every word starting with it).
    private func walk(
        _ word: [UInt8], prefix: Bool, _ tables: SearchIndexTables, _ transaction: ReadTransaction, positions: Bool,
        _ visit: (UInt64, (length: Int, counts: [(field: Int, count: Int)], positions: [[Int]])) throws -> Void
    ) throws {
        let keyPrefix = prefix ? word : word + [0]
        var failure: Error?
        try tables.postings.forEachBytes(in: transaction, prefix: keyPrefix) { key, value in
            do {
                let document = try SearchPosting.document(ofKey: key)
                try visit(document, try SearchPosting.decode(value, positions: positions))
                return true
            } catch {
                failure = error
                return false
            }
        }
        if let failure { throw failure is CanopyError ? failure : corrupt("a posting is malformed (\(failure))") }
    }
}

/// A row that matches a query: its address, its BM25 score and, when asked for, its fields with the ranges of the
/// matched words.
///
/// The score is Okapi BM25 as SQLite FTS5's `bm25()` computes it, but positive (higher is better): for each term t
/// of the query (a phrase or a prefix counts as one term), `idf(t) = ln((N − n + 0.5) / (n + 0.5))`, at least 1e-6
/// (N indexed rows, n rows t matches); `f` = the sum over the fields of the field's weight times t's occurrences in
/// it; `score = Σ idf(t) · f · (k1 + 1) / (f + k1 · (1 − b + b · d / avgdl))`, where d is the row's words in all
/// fields, avgdl their mean over the index, k1 = 1.2 and b = 0.75.
public struct SearchHit: Sendable {
    /// A field of the hit: its text and the ranges in it of the words the query matched.
    public struct Field: Sendable, Hashable {
        /// The field's name.
        public var name: String
        /// The field's text, as the row holds it.
        public var text: String
        /// The ranges of the matched words in ``text``, in order.
        public var ranges: [Range<String.Index>]

        /// ``text`` with each matched word between `open` and `close` (terminal escapes, HTML tags, brackets).
        public func highlighted(open: String, close: String) -> String {
            var out = ""
            var cursor = text.startIndex
            for range in ranges where range.lowerBound >= cursor {
                out += text[cursor..<range.lowerBound]
                out += open
                out += text[range]
                out += close
                cursor = range.upperBound
            }
            out += text[cursor...]
            return out
        }
    }

    /// The row.
    public var id: RowID
    /// Its BM25 score (higher is better).
    public var score: Double
    /// Its fields that have text, with highlights (empty when the search was made without highlights).
    public var fields: [Field]
}
