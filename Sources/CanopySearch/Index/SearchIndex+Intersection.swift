import CanopyCore

extension SearchIndex {
    /// The rows matching every term of a query whose terms are all one posting list each (words, prefixes with a
    /// merged list), scored as `matches(of:in:)` scores them: the rarest list is read whole (row numbers, lengths and
    /// counts), then each other list is walked once beside the remaining candidates — a block that holds none of them
    /// is not decoded, and a posting that is not a candidate is skipped without reading its counts. `nil` when a term
    /// is not one list.
    func listIntersection(of query: SearchQuery, in transaction: ReadTransaction) throws -> Matches? {
        guard query.terms.count > 1 else { return nil }
        try transaction.requireCurrentExtension(named: name)
        let tables = try tables()
        var lists: [PostingList] = []
        for term in query.terms {
            guard term.words.count == 1 else { return nil }
            if !term.isPrefix {
                lists.append(PostingList(table: tables.postings, directory: tables.postingsDirectory, summaries: tables.postingsSummaries, word: term.wordBytes[0]))
            } else if let list = prefixList(for: term, in: tables) {
                lists.append(list)
            } else {
                return nil
            }
        }
        if let writer = transaction.writer(of: self) {
            try writer.flushPostings()  // this transaction's postings, before the table is read
        }
        let state = try state(in: transaction)
        let documentCounts = try lists.map { try documentCount(of: $0, in: transaction) }
        let statistics = try bm25Statistics(state, termDocumentCounts: documentCounts)
        var result = Matches(statistics: statistics)
        guard let driver = documentCounts.indices.min(by: { documentCounts[$0] < documentCounts[$1] }) else { return result }
        let fieldCount = fields.count
        // The candidates: the driver's row numbers, read in one walk of its blocks without their bodies (most rows do
        // not survive the other lists); the survivors' lengths and counts are read at the end, in a second walk of
        // the same blocks, up to the last survivor's (reading every body's first bytes in the first walk cost more
        // than the rows themselves, and at a million rows the memory it touched).
        // (The driver's rows and a block's decoded rows in arrays kept from the previous query, emptied.)
        var scratch = SearchIntersectionScratch.take(from: intersectionScratch)
        defer { scratch.giveBack(to: intersectionScratch) }
        var lengths: [Int] = []
        var counts = [[Int]](repeating: [], count: lists.count)
        // The directory's count comes from disk: a hint for the reservation, bounded (a damaged one must not ask for
        // gigabytes).
        scratch.documents.reserveCapacity(min(documentCounts[driver], 1 << 20))
        if scratch.rowsBuffer.count < SearchPostingBlock.maximumDocuments {
            scratch.rowsBuffer = [UInt64](repeating: 0, count: SearchPostingBlock.maximumDocuments)
        }
        do {
            var previousKey: UInt64 = 0
            try lists[driver].table.forEachBytes(in: transaction, prefix: lists[driver].word + [0]) { key, value in
                let blockKey = try SearchPostingBlock.block(ofKey: key)
                guard blockKey > previousKey else { throw SearchBytes.Malformed("a word's blocks are out of order") }
                try SearchPostingBlock.appendRows(of: value, after: previousKey, upTo: blockKey, to: &scratch.documents, rowsBuffer: &scratch.rowsBuffer)
                previousKey = blockKey
                return true
            }
            let documents = scratch.documents
            // The driver is read whole: its rows must be the count its directory (or summary) gave, which is the
            // term's document frequency in the statistics (BM25's idf) and chose it as the driver.
            guard documents.count == documentCounts[driver] else {
                throw corrupt(
                    "the \(query.terms[driver].isPrefix ? "prefix" : "word") '\(String(decoding: lists[driver].word, as: UTF8.self))' holds \(documents.count) rows in its blocks, but its directory counts \(documentCounts[driver])")
            }
            // `nil`: every row of the driver (not listed: the first list narrows `documents` itself).
            var kept: [Int]?
            for term in lists.indices where term != driver && !(kept?.isEmpty ?? documents.isEmpty) {
                try narrow(&kept, documents, &counts, to: term, of: lists[term], fieldCount: fieldCount, rowsBuffer: &scratch.rowsBuffer, in: transaction)
            }
            let survivors = kept ?? Array(documents.indices)
            (lengths, counts[driver]) = try survivorCounts(survivors, of: documents, in: lists[driver], fieldCount: fieldCount, transaction)
            result.documents = survivors.map { documents[$0] }
        } catch let error as SearchBytes.Malformed {
            throw corrupt("a posting block is malformed (\(error))")
        }
        // The same arithmetic as `matches(of:in:)`, so the same scores.
        let weights = fields.map(\.weight)
        let averageLength = SearchRanking.averageLength(statistics)
        let idfs = lists.indices.map { SearchRanking.idf(term: $0, statistics: statistics) }
        result.scores.reserveCapacity(result.documents.count)
        for slot in result.documents.indices {
            let norm = SearchRanking.lengthNorm(length: lengths[slot], averageLength: averageLength)
            var score = 0.0
            for term in lists.indices {
                var frequency = 0.0
                let base = slot * fieldCount
                for field in 0..<fieldCount {
                    let count = counts[term][base + field]
                    if count > 0 { frequency += weights[field] * Double(count) }
                }
                score += SearchRanking.contribution(frequency: frequency, idf: idfs[term], lengthNorm: norm)
            }
            result.scores.append(score)
        }
        return result
    }

    /// The lengths and counts (`fieldCount` a row) of the driver's rows at `survivors` (ascending positions in
    /// `documents`, its rows as its first walk read them), from a second walk of its blocks that stops after the last
    /// survivor's block.
    private func survivorCounts(
        _ survivors: [Int], of documents: [UInt64], in list: PostingList, fieldCount: Int, _ transaction: ReadTransaction
    ) throws -> (lengths: [Int], counts: [Int]) {
        var lengths = [Int](repeating: 0, count: survivors.count)
        var counts = [Int](repeating: 0, count: survivors.count * fieldCount)
        guard !survivors.isEmpty else { return (lengths, counts) }
        var next = 0  // the first survivor not read
        var base = 0  // the position of the block's first row in `documents`
        try documents.withUnsafeBufferPointer { rows in
            try survivors.withUnsafeBufferPointer { slots in
                try list.table.forEachBytes(in: transaction, prefix: list.word + [0]) { _, value in
                    base += try SearchPostingBlock.readCounts(in: value, base: base, rows: rows, slots: slots, next: &next) { place, length, field, count in
                        lengths[place] = length
                        if field < fieldCount { counts[place * fieldCount + field] += count }
                    }
                    return next < slots.count
                }
            }
        }
        // (Every survivor is one of the rows the first walk read: a second walk that ends before reaching it is a list
        // that changed under the same transaction.)
        guard next == survivors.count else { throw SearchBytes.Malformed("a list read again ends before its rows do") }
        return (lengths, counts)
    }

    /// Keeps the candidates (`survivors`: ascending slots of `documents`, `nil` for all of them) that `list` (term
    /// `term`) also holds, with their counts in it; the counts of earlier terms follow their rows. `rowsBuffer`: scratch
    /// room for a block's decoded rows.
    private func narrow(
        _ survivors: inout [Int]?, _ documents: [UInt64], _ counts: inout [[Int]], to term: Int, of list: PostingList,
        fieldCount: Int, rowsBuffer: inout [UInt64], in transaction: ReadTransaction
    ) throws {
        var kept: [Int] = []  // positions in `survivors` found in the list, ascending
        var termCounts: [Int] = []
        let candidates = survivors.map { $0.map { documents[$0] } } ?? documents
        var next = 0  // the first survivor not yet passed
        var previousKey: UInt64 = 0
        try list.table.forEachBytes(in: transaction, prefix: list.word + [0]) { key, value in
            let blockKey = try SearchPostingBlock.block(ofKey: key)
            guard blockKey > previousKey || previousKey == 0 else { throw SearchBytes.Malformed("a word's blocks are out of order") }
            defer { previousKey = blockKey }
            // The block holds rows after the previous key, up to its own: skip it when no survivor is in between.
            while next < candidates.count, candidates[next] <= previousKey { next += 1 }
            guard next < candidates.count else { return false }
            guard candidates[next] <= blockKey else { return true }
            try candidates.withUnsafeBufferPointer { candidates in
                try SearchPostingBlock.matchRows(of: value, after: previousKey, upTo: blockKey, candidates: candidates, next: &next, rowsBuffer: &rowsBuffer) { slot, body in
                    kept.append(slot)
                    let base = termCounts.count
                    for _ in 0..<fieldCount { termCounts.append(0) }
                    try SearchPostingBlock.readCounts(in: value, body: body) { _, field, count in
                        if field < fieldCount { termCounts[base + field] += count }
                    }
                }
            }
            return true
        }
        survivors = survivors.map { previous in kept.map { previous[$0] } } ?? kept
        for other in counts.indices where !counts[other].isEmpty {
            let previous = counts[other]
            counts[other] = []
            counts[other].reserveCapacity(kept.count * fieldCount)
            for position in kept { counts[other].append(contentsOf: previous[(position * fieldCount)..<((position + 1) * fieldCount)]) }
        }
        counts[term] = termCounts
    }
}
