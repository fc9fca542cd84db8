import CanopyTestSupport
@testable import CanopySearch
import Testing

/// The score front of a block (``SearchScoreFront``): it bounds every row it was made from, and for one field its
/// bound is the best row's score (not merely above it), whatever the index's statistics; cut to its most points it
/// still bounds every row.
@Suite("Search index: a block's score front")
struct SearchScoreFrontTests {
    @Test("random rows: the front bounds each row; its bound is the best row's score (one field), cut fronts included", arguments: [1 as UInt64, 2, 3, 4, 5])
    func frontBoundsRows(seed: UInt64) throws {
        var generator = SeededRandom(seed: seed)
        for round in 0..<200 {
            let count = Int.random(in: 1...128, using: &generator)
            // Short rows (a few points), or long ones (fronts longer than the points kept).
            let longest = round % 2 == 0 ? 12 : 400
            let rows = (0..<count).map { _ in
                let length = Int.random(in: 1...longest, using: &generator)
                return SearchScoreFront.Point(occurrences: Int.random(in: 1...max(1, min(length, 8)), using: &generator), length: length)
            }
            let front = SearchScoreFront(of: rows)
            let context = "seed \(seed), round \(round), rows \(rows.map { ($0.occurrences, $0.length) })"
            // A block of those rows' postings has that front (its encoder keeps each length's most occurrences).
            var run = SearchPostingRun()
            for (index, row) in rows.enumerated() {
                run.append(UInt64(index + 1)) { out in
                    let occurrences = (0..<row.occurrences).map { SearchPosting.Occurrence(field: 0, position: $0) }
                    SearchPosting.encode(length: row.length, occurrences: occurrences[...], into: &out)
                }
            }
            #expect(try SearchPostingBlock.encode(run, 0..<run.count, key: SearchPostingBlock.openBlock).header.front == front, "\(context)")
            #expect(!front.points.isEmpty && front.points.count <= SearchScoreFront.maximumPoints, "\(context)")
            #expect(zip(front.points, front.points.dropFirst()).allSatisfy { $0.occurrences < $1.occurrences && $0.length < $1.length }, "\(context)")
            #expect(rows.allSatisfy { front.bounds(occurrences: $0.occurrences, length: $0.length) }, "\(context)")
            let weight = [1.0, 2.5][round % 2]
            let idf = Double.random(in: 0.01...12, using: &generator)
            let averageLength = Double.random(in: 1...Double(longest), using: &generator)
            let scores = rows.map {
                SearchRanking.contribution(
                    frequency: weight * Double($0.occurrences), idf: idf, lengthNorm: SearchRanking.lengthNorm(length: $0.length, averageLength: averageLength))
            }
            let best = scores.max() ?? 0
            let bound = front.bound(largestWeight: weight, idf: idf, averageLength: averageLength)
            #expect(bound >= best, "\(context)")
            if front.points.count < SearchScoreFront.maximumPoints || longest == 12 {
                // Not cut: the bound is the best score (the margin aside).
                #expect(bound <= best * (1 + 1e-8), "\(context): bound \(bound), best \(best)")
            }
            // Merged (a chunk's front over its blocks'): bounds every row of every part.
            let halves = [Array(rows.prefix(count / 2)), Array(rows.dropFirst(count / 2))].filter { !$0.isEmpty }.map {
                SearchBlockHeader(block: 1, count: $0.count, maximumOccurrences: 0, minimumLength: 0, densestLength: 0, densestOccurrences: 0, front: SearchScoreFront(of: $0))
            }
            // Whether one front bounds another: as a check of every point against every point gives it.
            for (a, b) in [(halves[0].front, halves.last?.front ?? front), (halves.last?.front ?? front, halves[0].front), (front, halves[0].front)] {
                let everyPoint = b.points.allSatisfy { point in a.points.contains { $0.occurrences >= point.occurrences && $0.length <= point.length } }
                #expect(a.bounds(b) == everyPoint, "\(context): \(a.points) bounds \(b.points)")
            }
            let merged = SearchScoreFront(merging: halves[...])
            #expect(halves.allSatisfy { merged.bounds($0.front) }, "\(context)")
            #expect(rows.allSatisfy { merged.bounds(occurrences: $0.occurrences, length: $0.length) }, "\(context)")
        }
    }

    @Test("a front merged with an empty one (a block that has none) is empty: it bounds nothing, so the other bound decides")
    func emptyFrontBoundsNothing() {
        let header = SearchBlockHeader(block: 1, count: 1, maximumOccurrences: 2, minimumLength: 5, densestLength: 5, densestOccurrences: 2)
        var some = header
        some.front = SearchScoreFront(of: [.init(occurrences: 2, length: 5)])
        let merged = SearchScoreFront(merging: [some, header][...])
        #expect(merged.points.isEmpty)
        #expect(merged.bounds(occurrences: 3, length: 5), "an empty front bounds every row (the counts bound decides)")
        #expect(!some.front.bounds(header.front), "a front does not bound a block without one")
        #expect(merged.bound(largestWeight: 1, idf: 1, averageLength: 5) == .infinity)
    }
}
