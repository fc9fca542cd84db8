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
/// nothing (the header's other counts bound the block then). Held inline (no allocation per header read: a query
/// decodes up to 64 headers per directory chunk it opens).
struct SearchScoreFront: Hashable {
    /// One point: a row of `length` words holding the term `occurrences` times (or, merged, better than such rows).
    struct Point: Hashable {
        var occurrences: Int
        var length: Int
    }

    /// At most this many points are stored (short texts have fewer: a length per point).
    static let maximumPoints = 8

    /// The points, each `occurrences << 32 | length` (both at most 2^32 − 1, as every stored count).
    private var storage: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
    /// The number of points.
    private(set) var count = 0

    /// An empty front.
    init() {}

    /// The front of `rows` (any order; each a row's counts, or another front's points), cut to ``maximumPoints``.
    init(of rows: [Point]) {
        var front: [Point] = []
        front.reserveCapacity(2 * Self.maximumPoints)
        for row in rows { Self.insert(row, into: &front) }
        self.init(cutting: front)
    }

    /// The front of the fronts of `headers` (a chunk's, over its blocks'); empty when one of them is (nothing bounds
    /// that block).
    init(merging headers: ArraySlice<SearchBlockHeader>) {
        var front: [Point] = []
        front.reserveCapacity(2 * Self.maximumPoints)
        for header in headers {
            guard header.front.count > 0 else {
                self.init()
                return
            }
            for index in 0..<header.front.count { Self.insert(header.front.point(index), into: &front) }
        }
        self.init(cutting: front)
    }

    /// Adds `point` to `front` (by length ascending, occurrences strictly ascending) unless a point there beats it,
    /// removing the points it beats. (Most rows of a block are beaten: they cost a few comparisons.)
    @inline(__always)
    static func insert(_ point: Point, into front: inout [Point]) {
        var at = 0
        while at < front.count, front[at].length < point.length { at += 1 }
        // A shorter point with as many occurrences, or one of the same length with as many, beats it.
        if at > 0, front[at - 1].occurrences >= point.occurrences { return }
        if at < front.count, front[at].length == point.length, front[at].occurrences >= point.occurrences { return }
        // It beats the points from `at` on with no more occurrences (they are at least as long).
        var end = at
        while end < front.count, front[end].occurrences <= point.occurrences { end += 1 }
        if end == at {
            front.insert(point, at: at)
        } else {
            front[at] = point
            if end > at + 1 { front.removeSubrange((at + 1)..<end) }
        }
    }

    /// `points` (a front built by ``insert(_:into:)``), merged down to ``maximumPoints``: the two neighbours closest in length become one that
    /// beats both.
    init(cutting points: [Point]) {
        var front = points
        while front.count > Self.maximumPoints {
            var closest = 0
            for index in 1..<(front.count - 1) where front[index + 1].length - front[index].length < front[closest + 1].length - front[closest].length {
                closest = index
            }
            front[closest] = Point(occurrences: front[closest + 1].occurrences, length: front[closest].length)
            front.remove(at: closest + 1)
        }
        for point in front { append(point) }
    }

    private mutating func append(_ point: Point) {
        let packed = UInt64(UInt32(clamping: point.occurrences)) << 32 | UInt64(UInt32(clamping: point.length))
        let index = count
        withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: packed, toByteOffset: index * 8, as: UInt64.self) }
        count += 1
    }

    /// Point `index` (`0..<count`).
    @inline(__always)
    func point(_ index: Int) -> Point {
        let packed = withUnsafeBytes(of: storage) { $0.load(fromByteOffset: index * 8, as: UInt64.self) }
        return Point(occurrences: Int(packed >> 32), length: Int(packed & 0xFFFF_FFFF))
    }

    /// The points, by length.
    var points: [Point] { (0..<count).map(point) }

    static func == (left: SearchScoreFront, right: SearchScoreFront) -> Bool {
        left.count == right.count && (0..<left.count).allSatisfy { left.point($0) == right.point($0) }
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        for index in 0..<count { hasher.combine(point(index)) }
    }

    /// Whether a row of `length` words holding the term `occurrences` times is under the front (a point has at least
    /// its occurrences in at most its words). Always for an empty front.
    @inline(__always)
    func bounds(occurrences: Int, length: Int) -> Bool {
        guard count > 0 else { return true }
        for index in 0..<count {
            let point = point(index)
            if point.occurrences >= occurrences && point.length <= length { return true }
        }
        return false
    }

    /// Whether every row under `other` is under this front (each of its points is); an empty `other` (it bounds
    /// nothing) only under an empty front.
    func bounds(_ other: SearchScoreFront) -> Bool {
        guard count > 0 else { return true }
        guard other.count > 0 else { return false }
        for index in 0..<other.count {
            let point = other.point(index)
            if !bounds(occurrences: point.occurrences, length: point.length) { return false }
        }
        return true
    }

    /// An upper bound of the one-term score of any row under the front (``SearchRanking``): the best of its points',
    /// each point's frequency taken at the largest field weight; `infinity` for an empty front.
    func bound(largestWeight: Double, idf: Double, averageLength: Double) -> Double {
        guard count > 0 else { return .infinity }
        var best = 0.0
        for index in 0..<count {
            let point = point(index)
            let frequency = largestWeight * Double(point.occurrences)
            let norm = SearchRanking.lengthNorm(length: point.length, averageLength: averageLength)
            best = max(best, SearchRanking.contribution(frequency: frequency, idf: idf, lengthNorm: norm))
        }
        // The margin covers rounding.
        return best * (1 + 1e-9)
    }

    /// Appends the stored form.
    func encode(into out: inout ByteWriter) {
        SearchBytes.append(varint: UInt64(count), to: &out)
        for index in 0..<count {
            let point = point(index)
            SearchBytes.append(varint: UInt64(point.occurrences), to: &out)
            SearchBytes.append(varint: UInt64(point.length), to: &out)
        }
    }

    /// Writes the stored form at `out` (room for ``encodedSize`` bytes); returns its size.
    func write(to out: UnsafeMutablePointer<UInt8>) -> Int {
        var offset = VarInt.write(UInt64(count), to: out)
        for index in 0..<count {
            let point = point(index)
            offset += VarInt.write(UInt64(point.occurrences), to: out + offset)
            offset += VarInt.write(UInt64(point.length), to: out + offset)
        }
        return offset
    }

    /// The stored form's size.
    var encodedSize: Int {
        var size = VarInt.size(of: UInt64(count))
        for index in 0..<count {
            let point = point(index)
            size += VarInt.size(of: UInt64(point.occurrences)) + VarInt.size(of: UInt64(point.length))
        }
        return size
    }

    /// Reads a stored front.
    /// - Throws: ``SearchBytes/Malformed`` for more than ``maximumPoints`` points, or points out of order (a front
    ///   is by length and occurrences strictly ascending).
    static func decode(_ reader: inout SearchBytes.Reader) throws -> SearchScoreFront {
        let points = try reader.int()
        guard points <= maximumPoints else { throw SearchBytes.Malformed("a score front of \(points) points") }
        var front = SearchScoreFront()
        var previous = Point(occurrences: -1, length: -1)
        for _ in 0..<points {
            let point = Point(occurrences: try reader.int(), length: try reader.int())
            guard point.occurrences > previous.occurrences, point.length > previous.length else {
                throw SearchBytes.Malformed("a score front out of order")
            }
            front.append(point)
            previous = point
        }
        return front
    }

    /// Passes over a stored front.
    static func skip(_ reader: inout SearchBytes.Reader) throws {
        let points = try reader.int()
        guard points <= maximumPoints else { throw SearchBytes.Malformed("a score front of \(points) points") }
        for _ in 0..<(2 * points) { _ = try reader.int() }
    }
}
