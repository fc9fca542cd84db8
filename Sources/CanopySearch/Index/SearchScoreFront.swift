import CanopyCore

/// What bounds the one-term scores of a block's rows exactly: the rows of the block that no other row beats on both
/// counts (more occurrences of the term in no more words), a Pareto front of (occurrences, length) pairs.
///
/// A one-term score `idf · f · (k1 + 1) / (f + k1 · (1 − b + b · d / avgdl))` grows with the weighted frequency `f`
/// and falls with the row's length `d`, so the best row of a block is on its front whatever `idf` and `avgdl` are
/// when a query runs: for an index of one field (or fields of one weight) the front's best score is the block's best
/// score, not merely a bound of it. (The block's most occurrences and densest row, which format 5 bounded scores
/// with, may be two different rows: most blocks of a common word passed that bound.)
///
/// Stored (format 6) as `varint(p)` then p × (`varint(occurrences)`, `varint(length)`), by length ascending and so by
/// occurrences ascending, p ≤ ``maximumPoints``: a longer front is cut by merging neighbours into a point that beats
/// both (the more occurrences, the shorter length), so the stored front still bounds every row. An empty front bounds
/// nothing (the header's other counts bound the block then).
struct SearchScoreFront: Hashable {
    /// One point: a row of `length` words holding the term `occurrences` times (or, merged, better than such rows).
    struct Point: Hashable {
        var occurrences: Int
        var length: Int
    }

    /// At most this many points are stored (short texts have fewer: a length per point).
    static let maximumPoints = 8

    /// By length ascending, occurrences strictly ascending.
    private(set) var points: [Point]

    /// The front of `points` (any order; each a row's counts, or another front's points), cut to ``maximumPoints``.
    init(of points: [Point]) {
        // By length, then the most occurrences first: a point is on the front when it holds more occurrences than
        // every shorter one.
        let sorted = points.sorted { $0.length != $1.length ? $0.length < $1.length : $0.occurrences > $1.occurrences }
        var front: [Point] = []
        for point in sorted where point.occurrences > (front.last?.occurrences ?? -1) { front.append(point) }
        while front.count > Self.maximumPoints {
            // Merge the two neighbours closest in length into one that beats both.
            var closest = 0
            for index in 1..<(front.count - 1) where front[index + 1].length - front[index].length < front[closest + 1].length - front[closest].length {
                closest = index
            }
            front[closest] = Point(occurrences: front[closest + 1].occurrences, length: front[closest].length)
            front.remove(at: closest + 1)
        }
        self.points = front
    }

    /// A front read back (``decode(_:)``), already in order.
    private init(stored points: [Point]) {
        self.points = points
    }

    /// The front of the fronts `fronts` (a chunk's, over its blocks'); empty when one of them is (nothing bounds that
    /// block).
    init(merging fronts: [SearchScoreFront]) {
        guard !fronts.contains(where: \.points.isEmpty) else {
            self.init(stored: [])
            return
        }
        self.init(of: fronts.flatMap(\.points))
    }

    /// Whether a row of `length` words holding the term `occurrences` times is under the front (a point has at least
    /// its occurrences in at most its words). Always for an empty front.
    func bounds(occurrences: Int, length: Int) -> Bool {
        points.isEmpty || points.contains { $0.occurrences >= occurrences && $0.length <= length }
    }

    /// An upper bound of the one-term score of any row under the front (``SearchRanking``): the best of its points',
    /// each point's frequency taken at the largest field weight; `infinity` for an empty front.
    func bound(largestWeight: Double, idf: Double, averageLength: Double) -> Double {
        guard !points.isEmpty else { return .infinity }
        var best = 0.0
        for point in points {
            let frequency = largestWeight * Double(point.occurrences)
            let norm = SearchRanking.lengthNorm(length: point.length, averageLength: averageLength)
            best = max(best, SearchRanking.contribution(frequency: frequency, idf: idf, lengthNorm: norm))
        }
        // The margin covers rounding.
        return best * (1 + 1e-9)
    }

    /// Appends the stored form.
    func encode(into out: inout ByteWriter) {
        SearchBytes.append(varint: UInt64(points.count), to: &out)
        for point in points {
            SearchBytes.append(varint: UInt64(point.occurrences), to: &out)
            SearchBytes.append(varint: UInt64(point.length), to: &out)
        }
    }

    /// The stored form's size.
    var encodedSize: Int {
        points.reduce(VarInt.size(of: UInt64(points.count))) { $0 + VarInt.size(of: UInt64($1.occurrences)) + VarInt.size(of: UInt64($1.length)) }
    }

    /// Reads a stored front.
    /// - Throws: ``SearchBytes/Malformed`` for more than ``maximumPoints`` points, or points out of order (a front
    ///   is by length and occurrences strictly ascending).
    static func decode(_ reader: inout SearchBytes.Reader) throws -> SearchScoreFront {
        let count = try reader.int()
        guard count <= maximumPoints else { throw SearchBytes.Malformed("a score front of \(count) points") }
        var points: [Point] = []
        points.reserveCapacity(count)
        for _ in 0..<count {
            let point = Point(occurrences: try reader.int(), length: try reader.int())
            if let last = points.last, point.occurrences <= last.occurrences || point.length <= last.length {
                throw SearchBytes.Malformed("a score front out of order")
            }
            points.append(point)
        }
        return SearchScoreFront(stored: points)
    }

    /// Passes over a stored front.
    static func skip(_ reader: inout SearchBytes.Reader) throws {
        let count = try reader.int()
        guard count <= maximumPoints else { throw SearchBytes.Malformed("a score front of \(count) points") }
        for _ in 0..<(2 * count) { _ = try reader.int() }
    }
}
