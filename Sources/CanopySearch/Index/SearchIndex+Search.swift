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
        let rows: [(key: StoredRowKey, score: Double)]
        if let best = try bestRowsFromBlocks(of: query, limit: limit, in: transaction) {
            rows = best
        } else {
            let matched = try matches(of: query, in: transaction)
            guard limit > 0, !matched.documents.isEmpty else { return [] }
            // The limit-th best score, without sorting every match; rows that tie with it are ordered by row key:
            // all of them are resolved, then cut.
            var best = BestScores(limit: limit)
            for score in matched.scores { best.add(score) }
            let threshold = best.threshold
            let candidates = zip(matched.documents, matched.scores).filter { $0.1 >= threshold }.map { (document: $0.0, score: $0.1) }
            rows = try ranked(candidates, threshold: threshold, limit: limit, in: transaction)
        }
        var hits: [SearchHit] = []
        for entry in rows {
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
              let texts = try texts(of: SearchRow(stored)) else { return [] }
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
        if let intersection = try listIntersection(of: query, in: transaction) { return intersection }
        try transaction.requireCurrentExtension(named: name)
        let tables = try tables()
        if let writer = transaction.writer(of: self) {
            try writer.flushPostings()  // this transaction's postings, before the table is read
        }
        let state = try state(in: transaction)
        let hits = try query.terms.map { try occurrences(of: $0, documentBound: state.nextDocument, in: tables, transaction) }
        let statistics = try bm25Statistics(state, termDocumentCounts: hits.map(\.count))
        var result = Matches(statistics: statistics)
        guard let driver = hits.indices.min(by: { hits[$0].count < hits[$1].count }) else { return result }
        let fieldCount = fields.count
        let weights = fields.map(\.weight)
        let averageLength = SearchRanking.averageLength(statistics)
        let idfs = hits.indices.map { SearchRanking.idf(term: $0, statistics: statistics) }
        var slots = [Int](repeating: 0, count: hits.count)
        candidates: for (driverSlot, document) in hits[driver].documents.enumerated() {
            for term in hits.indices {
                if term == driver { slots[term] = driverSlot; continue }
                guard let slot = hits[term].slot(of: document) else { continue candidates }
                slots[term] = slot
            }
            let norm = SearchRanking.lengthNorm(length: hits[driver].lengths[driverSlot], averageLength: averageLength)
            var score = 0.0
            for term in hits.indices {
                var frequency = 0.0
                let base = slots[term] * fieldCount
                for field in 0..<fieldCount {
                    let count = hits[term].counts[base + field]
                    if count > 0 { frequency += weights[field] * Double(count) }
                }
                score += SearchRanking.contribution(frequency: frequency, idf: idfs[term], lengthNorm: norm)
            }
            result.documents.append(document)
            result.scores.append(score)
        }
        return result
    }

    /// The rows where `term` occurs, with its occurrences per field and the row's length.
    /// (`documentBound`: the index's next document number, above every row's.)
    private func occurrences(of term: SearchQuery.Term, documentBound: UInt64, in tables: SearchIndexTables, _ transaction: ReadTransaction) throws -> TermHits {
        let words = term.wordBytes
        let fieldCount = fields.count
        if words.count == 1 {
            // One word: its blocks come in document order. A prefix: its merged list when the index keeps one, else
            // each word's run, then the runs merged by document.
            var runs: [TermHits] = []
            var hits = TermHits()
            var runWord: [UInt8] = []
            // The run's last row: a word's blocks come in key order, so its rows ascend across them too (a row in two
            // blocks of a damaged list would be counted twice).
            var previousRow: UInt64 = 0
            let list = prefixList(for: term, in: tables)
            let splitsRuns = term.isPrefix && list?.table == nil
            let keyPrefix = splitsRuns ? words[0] : words[0] + [0]
            do {
                try (list?.table ?? tables.postings).forEachBytes(in: transaction, prefix: keyPrefix) { key, value in
                    let word = UnsafeRawBufferPointer(rebasing: key[0..<max(key.count - 9, 0)])
                    if splitsRuns, !runWord.elementsEqual(word) {
                        if hits.count > 0 { runs.append(hits) }
                        hits = TermHits()
                        runWord = Array(word)
                        previousRow = 0
                    }
                    let blockKey = try SearchPostingBlock.block(ofKey: key)
                    var block = try SearchPostingBlock.Reader(value)
                    while let document = try block.next() {
                        try Self.checkRow(document, after: previousRow, upTo: blockKey)
                        previousRow = document
                        let base = hits.counts.count
                        hits.documents.append(document)
                        for _ in 0..<fieldCount { hits.counts.append(0) }
                        var rowLength = 0
                        try block.readCounts { length, field, count in
                            rowLength = length
                            if field < fieldCount { hits.counts[base + field] += count }
                        }
                        hits.lengths.append(rowLength)
                    }
                    return true
                }
            } catch let error as SearchBytes.Malformed {
                throw corrupt("a posting block is malformed (\(error))")
            }
            if hits.count > 0 { runs.append(hits) }
            let total = runs.reduce(0) { $0 + $1.count }
            if runs.count > 2, UInt64(total) * 4 >= documentBound, documentBound <= Self.denseMergeBound {
                return try denseMerged(runs, fieldCount: fieldCount, documentBound: documentBound)
            }
            // Merged two by two: each row is copied about log(words) times.
            while runs.count > 1 {
                var next: [TermHits] = []
                next.reserveCapacity((runs.count + 1) / 2)
                for pair in stride(from: 0, to: runs.count, by: 2) {
                    next.append(pair + 1 < runs.count ? try merged(runs[pair], runs[pair + 1], fieldCount: fieldCount) : runs[pair])
                }
                runs = next
            }
            return runs.first ?? TermHits()
        }
        // A phrase: the positions of each word, per row and field; then the starts where all follow in order.
        var perWord: [[UInt64: (length: Int, positions: [Set<Int>])]] = []
        for (offset, word) in words.enumerated() {
            let isPrefix = term.isPrefix && offset == words.count - 1
            var found: [UInt64: (length: Int, positions: [Set<Int>])] = [:]
            let restrict = perWord.first
            try walk(word, prefix: isPrefix, tables, transaction) { document, posting in
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

    /// Throws when `document`, read from the block keyed `blockKey`, is not above `previous` (the word's row before it,
    /// in this block or the one before) or is past the block's key: a damaged list, whose row would be counted twice
    /// or under the wrong block.
    @inline(__always)
    static func checkRow(_ document: UInt64, after previous: UInt64, upTo blockKey: UInt64) throws {
        guard document > previous, document <= blockKey else {
            throw SearchBytes.Malformed("row \(document) follows row \(previous) of its word in the block keyed \(blockKey)")
        }
    }

    /// Throws unless `a` and `b`, two runs' length of one row, agree, and `occurrences` (the row's occurrences the
    /// runs add up to) fit in it: a row has one length, and each occurrence is one of its words.
    @inline(__always)
    private func checkMerged(document: UInt64, length a: Int, _ b: Int, occurrences: Int) throws {
        guard a == b, occurrences <= a else {
            throw corrupt("row \(document)'s postings give it \(a) and \(b) words, and \(occurrences) occurrences of a prefix")
        }
    }

    /// The largest index whose prefix matches are merged through an array indexed by document number.
    static let denseMergeBound: UInt64 = 1 << 26

    /// The rows of `runs` (each by document number) by document number, a row in several with the sum of its
    /// occurrences, through an array indexed by document number: for a prefix whose words cover a good part of the
    /// index, one pass over the rows and one over the numbers instead of log(words) merges.
    private func denseMerged(_ runs: [TermHits], fieldCount: Int, documentBound: UInt64) throws -> TermHits {
        let bound = Int(documentBound)
        // Per document number: its length (-1: not matched) and its occurrences per field.
        var lengths = [Int32](repeating: -1, count: bound)
        var counts = [Int32](repeating: 0, count: bound * fieldCount)
        var matched = 0
        for run in runs {
            for entry in 0..<run.count {
                let document = run.documents[entry]
                guard document < documentBound else { throw corrupt("a posting names document \(document), past the index's next number \(documentBound)") }
                let slot = Int(document)
                // Lengths and counts were checked as read (a length fits an Int32, counts add up to at most it), and
                // the sums are checked against the length here as the pairwise merge checks them: no clamp, the
                // numbers every path scores with.
                let length = run.lengths[entry]
                if lengths[slot] < 0 {
                    lengths[slot] = Int32(length)
                    matched += 1
                }
                var occurrences = 0
                for field in 0..<fieldCount { occurrences += Int(counts[slot * fieldCount + field]) + run.counts[entry * fieldCount + field] }
                try checkMerged(document: document, length: Int(lengths[slot]), length, occurrences: occurrences)
                // (Each sum is at most the occurrences, at most the length, which fits an Int32.)
                for field in 0..<fieldCount {
                    let at = slot * fieldCount + field
                    counts[at] = Int32(Int(counts[at]) + run.counts[entry * fieldCount + field])
                }
            }
        }
        var result = TermHits()
        result.documents.reserveCapacity(matched)
        result.lengths.reserveCapacity(matched)
        result.counts.reserveCapacity(matched * fieldCount)
        for slot in 0..<bound where lengths[slot] >= 0 {
            result.documents.append(UInt64(slot))
            result.lengths.append(Int(lengths[slot]))
            for field in 0..<fieldCount { result.counts.append(Int(counts[slot * fieldCount + field])) }
        }
        return result
    }

    /// The rows of `a` and `b` (each by document number), by document number; a row in both has the sum of their
    /// occurrences.
    private func merged(_ a: TermHits, _ b: TermHits, fieldCount: Int) throws -> TermHits {
        var result = TermHits()
        result.documents.reserveCapacity(a.count + b.count)
        result.lengths.reserveCapacity(a.count + b.count)
        result.counts.reserveCapacity(a.counts.count + b.counts.count)
        var i = 0
        var j = 0
        while i < a.count || j < b.count {
            if j == b.count || (i < a.count && a.documents[i] < b.documents[j]) {
                result.documents.append(a.documents[i])
                result.lengths.append(a.lengths[i])
                result.counts.append(contentsOf: a.counts[(i * fieldCount)..<((i + 1) * fieldCount)])
                i += 1
            } else if i == a.count || b.documents[j] < a.documents[i] {
                result.documents.append(b.documents[j])
                result.lengths.append(b.lengths[j])
                result.counts.append(contentsOf: b.counts[(j * fieldCount)..<((j + 1) * fieldCount)])
                j += 1
            } else {
                result.documents.append(a.documents[i])
                result.lengths.append(a.lengths[i])
                var occurrences = 0
                for field in 0..<fieldCount {
                    let count = a.counts[i * fieldCount + field] + b.counts[j * fieldCount + field]
                    result.counts.append(count)
                    occurrences += count
                }
                try checkMerged(document: a.documents[i], length: a.lengths[i], b.lengths[j], occurrences: occurrences)
                i += 1
                j += 1
            }
        }
        return result
    }

    /// Visits the postings of `word` (or of every word starting with it), with their positions.
    private func walk(
        _ word: [UInt8], prefix: Bool, _ tables: SearchIndexTables, _ transaction: ReadTransaction,
        _ visit: (UInt64, SearchPosting.Decoded) throws -> Void
    ) throws {
        let keyPrefix = prefix ? word : word + [0]
        do {
            var runWord: [UInt8] = []
            var previousRow: UInt64 = 0
            try tables.postings.forEachBytes(in: transaction, prefix: keyPrefix) { key, value in
                // Rows ascend across a word's blocks (each word of a prefix its own run).
                let word = UnsafeRawBufferPointer(rebasing: key[0..<max(key.count - 9, 0)])
                if !runWord.elementsEqual(word) {
                    runWord = Array(word)
                    previousRow = 0
                }
                let blockKey = try SearchPostingBlock.block(ofKey: key)
                var block = try SearchPostingBlock.Reader(value)
                while let document = try block.next() {
                    try Self.checkRow(document, after: previousRow, upTo: blockKey)
                    previousRow = document
                    try visit(document, try block.readPosting())
                }
                return true
            }
        } catch let error as SearchBytes.Malformed {
            throw corrupt("a posting block is malformed (\(error))")
        }
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
