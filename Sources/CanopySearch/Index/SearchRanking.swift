import Foundation

/// The statistics BM25 ranks with: how many rows the index holds, how many words they have in all, and for each
/// term of the query how many rows it matches.
public struct SearchStatistics: Codable, Hashable, Sendable {
    /// Rows in the index (those skipped because they do not decode are not counted).
    public var documentCount: Int
    /// Words in all indexed rows, all fields together.
    public var totalLength: Int
    /// For each term of the query, the number of rows it matches on its own.
    public var termDocumentCounts: [Int]

    /// Creates statistics.
    public init(documentCount: Int, totalLength: Int, termDocumentCounts: [Int]) {
        self.documentCount = documentCount
        self.totalLength = totalLength
        self.termDocumentCounts = termDocumentCounts
    }
}

/// Okapi BM25, as SQLite FTS5's `bm25()` computes it (but positive: higher is better).
///
/// For each term t of the query (a phrase or a prefix counts as one term): `idf(t) = ln((N - n + 0.5) / (n + 0.5))`,
/// at least 1e-6, where N is the number of indexed rows and n the number of rows t matches; `f` = the sum over the
/// fields of the field's weight times t's occurrences in it; the row's length `d` = its words in all fields, `avgdl`
/// the mean over the index. `score = Σ idf(t) · f · (k1 + 1) / (f + k1 · (1 − b + b · d / avgdl))`, k1 = 1.2,
/// b = 0.75.
enum SearchRanking {
    static let k1 = 1.2
    static let b = 0.75

    /// The score of a row whose terms occur `occurrences[term][field]` times, of `length` words, under `statistics`.
    static func score(occurrences: [[Int]], length: Int, weights: [Double], statistics: SearchStatistics) -> Double {
        let norm = lengthNorm(length: length, statistics: statistics)
        var score = 0.0
        for (term, counts) in occurrences.enumerated() {
            var frequency = 0.0
            for (field, count) in counts.enumerated() where count > 0 {
                frequency += (field < weights.count ? weights[field] : 1) * Double(count)
            }
            score += contribution(frequency: frequency, term: term, lengthNorm: norm, statistics: statistics)
        }
        return score
    }

    /// `k1 · (1 − b + b · d / avgdl)` for a row of `length` words.
    @inline(__always)
    static func lengthNorm(length: Int, statistics: SearchStatistics) -> Double {
        lengthNorm(length: length, averageLength: averageLength(statistics))
    }

    /// `avgdl`: the mean row length (1 for an empty index).
    @inline(__always)
    static func averageLength(_ statistics: SearchStatistics) -> Double {
        let documentCount = Double(max(statistics.documentCount, 1))
        return statistics.totalLength > 0 ? Double(statistics.totalLength) / documentCount : 1
    }

    @inline(__always)
    static func lengthNorm(length: Int, averageLength: Double) -> Double {
        k1 * (1 - b + b * Double(length) / averageLength)
    }

    /// `idf` of term number `term`.
    @inline(__always)
    static func idf(term: Int, statistics: SearchStatistics) -> Double {
        let documentCount = Double(max(statistics.documentCount, 1))
        let matching = Double(term < statistics.termDocumentCounts.count ? statistics.termDocumentCounts[term] : 0)
        return max(log((documentCount - matching + 0.5) / (matching + 0.5)), 1e-6)
    }

    /// What term number `term`, of weighted frequency `frequency` in the row, adds to its score.
    @inline(__always)
    static func contribution(frequency: Double, term: Int, lengthNorm: Double, statistics: SearchStatistics) -> Double {
        guard frequency > 0 else { return 0 }
        return contribution(frequency: frequency, idf: idf(term: term, statistics: statistics), lengthNorm: lengthNorm)
    }

    /// The same, with the term's `idf` computed once for all rows (the same arithmetic, so the same score).
    @inline(__always)
    static func contribution(frequency: Double, idf: Double, lengthNorm: Double) -> Double {
        guard frequency > 0 else { return 0 }
        return idf * frequency * (k1 + 1) / (frequency + lengthNorm)
    }
}
