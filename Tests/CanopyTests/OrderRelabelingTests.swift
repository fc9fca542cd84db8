@testable import Canopy
import CanopyTestSupport
import Testing

/// The renumbering scheme of manual lists on its own, over a sorted array of order keys (what the list's pages hold):
/// every insertion keeps the keys strictly increasing, and the rows renumbered stay few however the insertions fall.
@Suite("Order relabelling")
struct OrderRelabelingTests {
    /// A list of order keys, with insertions placed as `ManualListEditor` places them.
    struct Keys {
        var keys: [UInt64] = []
        var renumbered = 0

        mutating func insert(at position: Int) {
            let before = position > 0 ? keys[position - 1] : nil
            let after = position < keys.count ? keys[position] : nil
            if let key = ManualListEditor.orderKey(between: before, and: after) {
                keys.insert(key, at: position)
                return
            }
            for range in OrderRelabeling.ranges(around: before ?? 0) {
                let lower = Self.rank(of: range.lowerBound, in: keys)
                let upper = range.upperBound == .max ? keys.count : Self.rank(of: range.upperBound, in: keys)
                guard OrderRelabeling.fits(upper - lower + 1, in: range) else { continue }
                let fresh = OrderRelabeling.keys(count: upper - lower + 1, in: range)
                renumbered += upper - lower
                keys.replaceSubrange(lower..<upper, with: fresh[..<(position - lower)] + fresh[(position - lower + 1)...])
                keys.insert(fresh[position - lower], at: position)
                return
            }
            Issue.record("no range fits \(keys.count + 1) keys")
        }

        /// The number of keys below `key` (what the view's `lowerBound` answers).
        static func rank(of key: UInt64, in keys: [UInt64]) -> Int {
            var low = 0
            var high = keys.count
            while low < high {
                let middle = (low + high) / 2
                if keys[middle] < key { low = middle + 1 } else { high = middle }
            }
            return low
        }
    }

    @Test("Insertions at the front, at one place, at the back and at random: keys stay increasing, renumbering stays small",
          arguments: ["front", "second", "middle", "back", "random"])
    func patterns(pattern: String) {
        var random = SeededRandom(seed: 42)
        var list = Keys()
        let count = 20_000
        for _ in 0..<count {
            let position: Int
            switch pattern {
            case "front": position = 0
            case "second": position = min(1, list.keys.count)
            case "middle": position = list.keys.count / 2
            case "back": position = list.keys.count
            default: position = Int(random.next() % UInt64(list.keys.count + 1))
            }
            list.insert(at: position)
        }
        #expect(list.keys.count == count)
        #expect(zip(list.keys, list.keys.dropFirst()).allSatisfy { $0 < $1 }, "\(pattern): keys out of order")
        #expect(list.keys.first.map { $0 > 0 } ?? true && list.keys.last.map { $0 < .max } ?? true)
        // Amortized O(log n): a few dozen rows per insertion at worst (the whole list each time would be 10^8).
        #expect(list.renumbered <= 40 * count, "\(pattern): \(list.renumbered) rows renumbered for \(count) insertions")
    }

    @Test("The last resort spaces any list that fits in 64-bit keys")
    func lastResort() {
        let whole = OrderRelabeling.ranges(around: 12_345).last
        #expect(whole == OrderRelabeling.KeyRange(lowerBound: 0, upperBound: .max, level: 64))
        if let whole {
            #expect(OrderRelabeling.fits(1_000_000_000, in: whole))
            let keys = OrderRelabeling.keys(count: 3, in: whole)
            #expect(keys.count == 3 && keys[0] > 0 && keys[2] < .max && keys[0] < keys[1] && keys[1] < keys[2])
        }
    }
}
