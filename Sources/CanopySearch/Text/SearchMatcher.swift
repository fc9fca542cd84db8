/// Matches a query against the words of one row, without the index: how the live results view decides whether a
/// written row is a result, and how hits find the ranges to highlight. The index answers the same question from its
/// postings; the two agree by construction (same tokenizer, same rules) and by test.
enum SearchMatcher {
    /// Whether `word` (folded bytes) matches `queryWord`: equal, or starting with it for a prefix.
    @inline(__always)
    static func word(_ word: [UInt8], matches queryWord: [UInt8], prefix: Bool) -> Bool {
        prefix ? word.starts(with: queryWord) : word == queryWord
    }

    /// The positions in `words` where `term` starts (its words in a row; the last one a prefix when the term is).
    static func starts(of term: [[UInt8]], isPrefix: Bool, in words: [[UInt8]]) -> [Int] {
        guard !term.isEmpty, words.count >= term.count else { return [] }
        var found: [Int] = []
        outer: for start in 0...(words.count - term.count) {
            for (offset, queryWord) in term.enumerated() {
                let isLast = offset == term.count - 1
                guard word(words[start + offset], matches: queryWord, prefix: isPrefix && isLast) else { continue outer }
            }
            found.append(start)
        }
        return found
    }

    /// For each term of `query`, its number of occurrences in each field (`fields[f]` = the words of field `f`), or
    /// `nil` when some term does not occur at all (the row is not a match).
    static func occurrences(of query: SearchQuery, in fields: [[[UInt8]]]) -> [[Int]]? {
        var result: [[Int]] = []
        result.reserveCapacity(query.terms.count)
        for term in query.terms {
            let words = term.wordBytes
            let counts = fields.map { starts(of: words, isPrefix: term.isPrefix, in: $0).count }
            guard counts.contains(where: { $0 > 0 }) else { return nil }
            result.append(counts)
        }
        return result
    }

    /// The ranges of the words of `tokens` that a term of `query` covers (each occurrence of a phrase covers all its
    /// words), in text order.
    static func highlightedRanges(of query: SearchQuery, in tokens: [SearchToken]) -> [Range<String.Index>] {
        let words = tokens.map { Array($0.term.utf8) }
        var covered = [Bool](repeating: false, count: tokens.count)
        for term in query.terms {
            let termWords = term.wordBytes
            for start in starts(of: termWords, isPrefix: term.isPrefix, in: words) {
                for offset in 0..<termWords.count { covered[start + offset] = true }
            }
        }
        return tokens.indices.filter { covered[$0] }.map { tokens[$0].range }
    }
}
