import CanopyCore

extension SearchIndex {
    /// Where a one-list term's postings are: the blocks keyed `word 0 K` of `table`, their headers in `directory`,
    /// the summary of its chunks (a list of several) in `summaries`.
    struct PostingList {
        var table: ExtensionTable<BytesCoding, BytesCoding>
        var directory: ExtensionTable<BytesCoding, BytesCoding>
        var summaries: ExtensionTable<BytesCoding, BytesCoding>
        var word: [UInt8]
    }

    /// The best `limit` rows of `query` read from block headers (``bestRows(of:limit:in:)``) when its one term is one
    /// posting list — a word, or a prefix of one of ``prefixLengths`` — or `nil` for any other query (it is ranked
    /// from all its matches).
    func bestRowsFromBlocks(of query: SearchQuery, limit: Int, in transaction: ReadTransaction) throws -> [(key: StoredRowKey, score: Double)]? {
        guard query.terms.count == 1, let term = query.terms.first, term.words.count == 1 else { return nil }
        try transaction.requireCurrentExtension(named: name)
        let tables = try tables()
        let list: PostingList
        if !term.isPrefix {
            list = PostingList(table: tables.postings, directory: tables.postingsDirectory, summaries: tables.postingsSummaries, word: term.wordBytes[0])
        } else if let prefixList = prefixList(for: term, in: tables) {
            list = prefixList
        } else {
            return nil
        }
        if let writer = transaction.writer(of: self) {
            try writer.flushPostings()  // this transaction's postings, before the table is read
        }
        return try bestRows(of: list, limit: limit, in: transaction)
    }

    /// The merged list of `term` when it is one word's prefix of one of ``prefixLengths``, else `nil`.
    func prefixList(for term: SearchQuery.Term, in tables: SearchIndexTables) -> PostingList? {
        guard term.isPrefix, term.words.count == 1, let prefixes = tables.prefixes, let directory = tables.prefixesDirectory,
              let summaries = tables.prefixesSummaries, let word = term.words.first, prefixLengths.contains(word.unicodeScalars.count) else { return nil }
        return PostingList(table: prefixes, directory: directory, summaries: summaries, word: Array(word.utf8))
    }

    /// The best `limit` rows of a query whose single term is one posting list (a word), by score and then row key,
    /// without scoring every row: each block's header bounds its rows' scores (the most occurrences of the term in
    /// one row, the shortest row), blocks are read best bound first, and reading stops when no unread block can reach
    /// the `limit`-th score found. Rows tying with that score are all read, then ordered by key, so the result is
    /// exactly what scoring every row gives (`matches(of:in:)`).
    ///
    /// `nil` when the fields' weights are not all positive and finite (the bound needs a positive largest weight).
    func bestRows(of list: PostingList, limit: Int, in transaction: ReadTransaction) throws -> [(key: StoredRowKey, score: Double)]? {
        let weights = fields.map(\.weight)
        guard let largestWeight = weights.max(), weights.allSatisfy({ $0 > 0 && $0.isFinite }) else { return nil }
        let state = try state(in: transaction)
        // The list's chunks: their rows (the term's document frequency) and bounds, from the list's summary (or its
        // one chunk); a chunk is read and its blocks decoded only when its bound reaches the scores kept.
        let chunks: [(summary: SearchBlockDirectory.ChunkSummary, value: [UInt8]?)]
        do {
            chunks = try SearchListSummary.chunks(of: list.word, directory: list.directory, summaries: list.summaries, transaction, keepingValues: true)
        } catch let error as SearchBytes.Malformed {
            throw corrupt("a block directory is malformed (\(error))")
        }
        let statistics = try bm25Statistics(state, termDocumentCounts: [chunks.reduce(0) { $0 + $1.summary.rows }])
        guard limit > 0, !chunks.isEmpty else { return [] }
        let averageLength = SearchRanking.averageLength(statistics)
        let idf = SearchRanking.idf(term: 0, statistics: statistics)
        // Best bound first, from a heap of chunks and of the blocks of the chunks opened: item `i >= 0` is block
        // `headers[i]`, item `-1 - c` chunk `c`.
        var order = BoundQueue()
        for (index, chunk) in chunks.enumerated() {
            order.push(Self.bound(of: chunk.summary.bound, largestWeight: largestWeight, idf: idf, averageLength: averageLength), item: -1 - index)
        }
        var headers: [SearchBlockHeader] = []
        headers.reserveCapacity(chunks.reduce(0) { $0 + $1.summary.blocks })
        // The key of the block before each of `headers` (its rows come after it): blocks are read best bound first,
        // not in key order.
        var previousKeys: [UInt64] = []
        previousKeys.reserveCapacity(headers.capacity)
        var best = BestScores(limit: limit)
        var candidates: [(document: UInt64, score: Double)] = []
        let fieldCount = fields.count
        var counts = [Int](repeating: 0, count: fieldCount)
        while let (bound, item) = order.pop() {
            if best.isFull, bound < best.threshold { break }
            if item < 0 {
                let chunk = chunks[-1 - item]
                // Chunks are opened best bound first, not in key order: each is checked against the one before it.
                let previousKey = -1 - item > 0 ? chunks[-2 - item].summary.key : 0
                let first = headers.count
                do {
                    if let value = chunk.value {
                        try value.withUnsafeBytes { raw in
                            _ = try SearchBlockDirectory.decode(raw, chunkKey: chunk.summary.key, after: previousKey, into: &headers)
                        }
                    } else {
                        // Through the list's summary: the chunk must be the one it summarizes (its bound chose it).
                        try list.directory.withValue(forKey: SearchPostingBlock.key(term: list.word, block: chunk.summary.key), in: transaction) { raw in
                            guard let raw else { throw SearchBytes.Malformed("directory chunk \(chunk.summary.key) of the list's summary is missing") }
                            guard try SearchBlockDirectory.summary(raw, chunkKey: chunk.summary.key) == chunk.summary else {
                                throw SearchBytes.Malformed("directory chunk \(chunk.summary.key) differs from the list's summary of it")
                            }
                            _ = try SearchBlockDirectory.decode(raw, chunkKey: chunk.summary.key, after: previousKey, into: &headers)
                        }
                    }
                } catch let error as SearchBytes.Malformed {
                    throw corrupt("a block directory is malformed (\(error))")
                }
                for block in first..<headers.count {
                    previousKeys.append(block == first ? previousKey : headers[block - 1].block)
                    // A block below the scores kept now stays below them (they only rise): it would never be read. (Its
                    // counts' bound, the cheaper, first: the block's bound is the lower of the two.)
                    let countsBound = Self.countsBound(of: headers[block], largestWeight: largestWeight, idf: idf, averageLength: averageLength)
                    if best.isFull, countsBound < best.threshold { continue }
                    let blockBound = min(
                        countsBound, headers[block].front.bound(largestWeight: largestWeight, idf: idf, averageLength: averageLength))
                    if best.isFull, blockBound < best.threshold { continue }
                    order.push(blockBound, item: block)
                }
                continue
            }
            let header = headers[item]
            try withBlock(header.block, of: list, in: transaction) { raw in
                let layout = try SearchPostingBlock.Layout(raw)
                var frontReader = SearchBytes.Reader(raw)
                try frontReader.skip(layout.frontStart)
                // The directory's bound holds only if the block is the one it describes.
                guard layout.count == header.count, layout.maximumOccurrences == header.maximumOccurrences,
                      layout.minimumLength == header.minimumLength, layout.densestLength == header.densestLength,
                      layout.densestOccurrences == header.densestOccurrences, try SearchScoreFront.decode(&frontReader) == header.front else {
                    throw SearchBytes.Malformed("block \(header.block)'s header differs from the directory's")
                }
                // Each row's counts, read in place: most bodies are one field of one-byte values (the row's length, one
                // field, its number, its count), read inline; any other through the checked reader. What the block's
                // Reader checks is checked here: rows ascending from the first, bodies within the block, nothing after
                // the last.
                let rows = layout.rows
                // Its rows lie in its range (after the block before it, up to its key): a row outside it may be in
                // another block too, and would be ranked twice.
                try rows.check(previousKey: previousKeys[item], blockKey: header.block)
                var entries = SearchBytes.Reader(raw)
                try entries.skip(layout.entriesStart)
                var previous: UInt64 = 0
                for index in 0..<layout.count {
                    let document = rows.row(index)
                    guard index == 0 ? document == rows.first && document > 0 : document > previous else {
                        throw SearchBytes.Malformed("the rows of a block are out of order")
                    }
                    previous = document
                    let size = try entries.int()
                    let bodyStart = entries.offset
                    try entries.skip(size)
                    let body = UnsafeRawBufferPointer(rebasing: raw[bodyStart..<entries.offset])
                    for field in 0..<fieldCount { counts[field] = 0 }
                    var rowLength = 0
                    var occurrences = 0
                    if body.count >= 4, body[0] < 0x80, body[1] == 1, body[2] < 0x80, body[3] < 0x80, body[3] > 0, body[3] <= body[0] {
                        rowLength = Int(body[0])
                        occurrences = Int(body[3])
                        let field = Int(body[2])
                        if field < fieldCount { counts[field] = occurrences }
                    } else {
                        try SearchPostingBlock.readCounts(in: raw, body: bodyStart..<entries.offset) { length, field, count in
                            rowLength = length
                            occurrences += count
                            if field < fieldCount { counts[field] += count }
                        }
                    }
                    // The bound holds only if the header does: a header that understates its rows is damage.
                    guard occurrences <= header.maximumOccurrences, rowLength >= header.minimumLength,
                          !SearchBlockHeader.isDenser(length: rowLength, occurrences: occurrences, than: header.densestLength, header.densestOccurrences),
                          header.front.bounds(occurrences: occurrences, length: rowLength)
                    else {
                        throw SearchBytes.Malformed("a block's header understates its rows (most occurrences \(header.maximumOccurrences), densest row \(header.densestLength) words for \(header.densestOccurrences))")
                    }
                    // The same arithmetic as `matches(of:in:)`, so the same score.
                    var frequency = 0.0
                    for field in 0..<fieldCount where counts[field] > 0 { frequency += weights[field] * Double(counts[field]) }
                    var score = 0.0
                    score += SearchRanking.contribution(
                        frequency: frequency, idf: idf, lengthNorm: SearchRanking.lengthNorm(length: rowLength, averageLength: averageLength))
                    if best.admits(score) {
                        best.add(score)
                        candidates.append((document, score))
                    }
                }
                guard entries.isAtEnd else { throw SearchBytes.Malformed("bytes after a block's last entry") }
            }
        }
        return try ranked(candidates, threshold: best.threshold, limit: limit, in: transaction)
    }

    /// An upper bound of the score of any row of the block of `header`, for a one-term query.
    ///
    /// A row's contribution is `idf · f · (k1 + 1) / (f + k1 · (1 − b + b · d / avgdl))`
    /// `= idf · (k1 + 1) / (1 + k1 · (1 − b) / f + k1 · b / avgdl · d / f)`: it grows as `1 / f` and `d / f` fall. Its
    /// weighted frequency `f` is at most the largest weight times its occurrences `o`, so `1 / f ≥ 1 / (w · o_max)`
    /// and `d / f ≥ (d / o) / w ≥ (densest d / o) / w` (the header's most occurrences and densest row): a bound tighter
    /// than the most occurrences with the shortest row, which may be two different rows. The margin covers rounding.
    static func bound(of header: SearchBlockHeader, largestWeight: Double, idf: Double, averageLength: Double) -> Double {
        // The front's bound (exact for one field) where the block has one; the two bounds hold together: the lower.
        let frontBound = header.front.bound(largestWeight: largestWeight, idf: idf, averageLength: averageLength)
        return min(frontBound, countsBound(of: header, largestWeight: largestWeight, idf: idf, averageLength: averageLength))
    }

    /// The bound of format 5, from the most occurrences and the densest row alone (see ``bound(of:largestWeight:idf:averageLength:)``).
    static func countsBound(of header: SearchBlockHeader, largestWeight: Double, idf: Double, averageLength: Double) -> Double {
        guard header.maximumOccurrences > 0, header.densestOccurrences > 0 else { return .infinity }
        let k1 = SearchRanking.k1
        let b = SearchRanking.b
        let inverseFrequency = 1 / (largestWeight * Double(header.maximumOccurrences))
        let lengthPerFrequency = Double(header.densestLength) / Double(header.densestOccurrences) / largestWeight
        return idf * (k1 + 1) / (1 + k1 * (1 - b) * inverseFrequency + k1 * b / averageLength * lengthPerFrequency) * (1 + 1e-9)
    }

    /// The rows of `list` (its term's document frequency), from its chunks' totals (its summary, or its one chunk).
    func documentCount(of list: PostingList, in transaction: ReadTransaction) throws -> Int {
        do {
            return try SearchListSummary.chunks(of: list.word, directory: list.directory, summaries: list.summaries, transaction, keepingValues: false)
                .reduce(0) { $0 + $1.summary.rows }
        } catch let error as SearchBytes.Malformed {
            throw corrupt("a block directory is malformed (\(error))")
        }
    }

    /// Calls `body` with the stored bytes of `list`'s block `block`.
    private func withBlock(_ block: UInt64, of list: PostingList, in transaction: ReadTransaction, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        do {
            try list.table.withValue(forKey: SearchPostingBlock.key(term: list.word, block: block), in: transaction) { raw in
                guard let raw else { throw SearchBytes.Malformed("block \(block) was read a moment ago and is gone") }
                try body(raw)
            }
        } catch let error as SearchBytes.Malformed {
            throw corrupt("a posting block is malformed (\(error))")
        }
    }

    /// The rows of `candidates` whose score is at least `threshold`, resolved to their keys, best first (ties by
    /// key), at most `limit`.
    func ranked(_ candidates: [(document: UInt64, score: Double)], threshold: Double, limit: Int, in transaction: ReadTransaction) throws -> [(key: StoredRowKey, score: Double)] {
        let tables = try tables()
        var resolved: [(key: StoredRowKey, score: Double)] = []
        for candidate in candidates where candidate.score >= threshold {
            guard let rowKey = try tables.documents.rowKey(of: candidate.document, in: transaction) else {
                throw corrupt("document \(candidate.document) has postings but no row")
            }
            resolved.append((rowKey, candidate.score))
        }
        resolved.sort { $0.score != $1.score ? $0.score > $1.score : $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) }
        return Array(resolved.prefix(limit))
    }
}

/// The best `limit` scores seen so far, in descending order: the `limit`-th is the score a row must reach (or tie)
/// to be among the best.
struct BestScores {
    let limit: Int
    private(set) var scores: [Double] = []

    init(limit: Int) {
        self.limit = limit
        // The caller's limit may be anything up to Int.max ("all of them"): a reservation bounded, not `limit + 1`.
        scores.reserveCapacity(min(limit, 1 << 12) + 1)
    }

    var isFull: Bool { scores.count >= limit }

    /// The `limit`-th best score (the lowest kept; `-infinity` while fewer were seen).
    var threshold: Double { isFull ? scores[scores.count - 1] : -.infinity }

    /// Whether a row of `score` may be among the best (it ties or beats the threshold).
    func admits(_ score: Double) -> Bool { score >= threshold }

    mutating func add(_ score: Double) {
        guard !isFull || score > scores[scores.count - 1] else { return }
        let at = scores.firstIndex { $0 < score } ?? scores.count
        scores.insert(score, at: at)
        if scores.count > limit { scores.removeLast() }
    }
}

/// Items by descending bound: a binary max-heap, filled and popped one at a time.
struct BoundQueue {
    private var bounds: [Double] = []
    private var items: [Int] = []

    mutating func push(_ bound: Double, item: Int) {
        bounds.append(bound)
        items.append(item)
        var child = bounds.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard bounds[child] > bounds[parent] else { break }
            bounds.swapAt(child, parent)
            items.swapAt(child, parent)
            child = parent
        }
    }

    /// The item with the highest bound left, with its bound, or `nil` when none is.
    mutating func pop() -> (bound: Double, item: Int)? {
        guard let bound = bounds.first, let item = items.first else { return nil }
        let lastBound = bounds.removeLast()
        let lastItem = items.removeLast()
        if !bounds.isEmpty {
            bounds[0] = lastBound
            items[0] = lastItem
            var parent = 0
            while true {
                var largest = parent
                let left = 2 * parent + 1
                let right = left + 1
                if left < bounds.count, bounds[left] > bounds[largest] { largest = left }
                if right < bounds.count, bounds[right] > bounds[largest] { largest = right }
                if largest == parent { break }
                bounds.swapAt(parent, largest)
                items.swapAt(parent, largest)
                parent = largest
            }
        }
        return (bound, item)
    }
}
