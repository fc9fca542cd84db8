import Foundation

/// Where a manual list renumbers rows when a row must go between two neighbours whose order keys leave no gap: the
/// list-labelling scheme of order-maintenance structures (Bender, Cole, Demaine, Farach-Colton and Zito, "Two
/// simplified algorithms for maintaining order in a list", 2002).
///
/// Order keys are 64-bit. Around the neighbour before the place (the anchor), the aligned key ranges of 2, 4, 8, …
/// 2^63 keys are tried in turn; the first one whose rows, the new one included, are few enough for its size —
/// at most (2 / ``density``)^i rows in a range of 2^i keys — is renumbered evenly, and nothing else. Small ranges may
/// be full and large ones must be sparse, so a renumbering leaves every smaller range inside it well below its own
/// limit: renumbering again there takes many more insertions, and a row costs O(log n) renumbered rows amortized
/// (a handful in practice: rows appended at the end are 2^32 apart). The whole key space is the last resort, where
/// any list whose rows fit with distinct keys is renumbered evenly.
enum OrderRelabeling {
    /// T in the paper (1 < T < 2): how much sparser each doubling of a range must be.
    static let density = 1.5

    /// A half-open range of order keys, `lowerBound..<upperBound`; the last one is `0..<UInt64.max`.
    struct KeyRange: Equatable {
        let lowerBound: UInt64
        let upperBound: UInt64
        /// The exponent of its size (64 for the whole key space).
        let level: Int
    }

    /// The aligned ranges that hold `anchor`, smallest first, then the whole key space.
    static func ranges(around anchor: UInt64) -> [KeyRange] {
        var ranges = (1...63).map { level -> KeyRange in
            let size = UInt64(1) << UInt64(level)
            let lower = anchor & ~(size - 1)
            return KeyRange(lowerBound: lower, upperBound: lower + size, level: level)
        }
        ranges.append(KeyRange(lowerBound: 0, upperBound: .max, level: 64))
        return ranges
    }

    /// Whether `count` rows may be numbered in `range`: below the range's density limit, or, for the whole key space,
    /// whenever they fit with distinct keys strictly inside it.
    static func fits(_ count: Int, in range: KeyRange) -> Bool {
        guard count > 0 else { return true }
        let span = range.upperBound - range.lowerBound
        guard UInt64(count) < span else { return false }
        if range.level == 64 { return true }
        return Double(count) <= pow(2 / density, Double(range.level))
    }

    /// `count` evenly spaced keys strictly inside `range`, ascending (each at least 1: 0 is before every row).
    static func keys(count: Int, in range: KeyRange) -> [UInt64] {
        let spacing = (range.upperBound - range.lowerBound) / UInt64(count + 1)
        return (1...max(1, count)).prefix(count).map { range.lowerBound + UInt64($0) * spacing }
    }
}
