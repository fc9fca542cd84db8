@testable import Canopy
import CanopyTestSupport
import Testing

/// The batch behind population and a writer's pending inserts sorts by shortcuts — groups spread by counting, a group
/// already in order left alone, a radix sort over the varying bytes of an eight-byte prefix, ties settled by the
/// bytes — and the page filler cuts pages by size. Both are held to the plain definitions: a comparison sort of
/// (group id, order bytes), and pages of at most 64 entries and 2,016 bytes, each as full as the next entry allows.
@Suite("View entry batches: sorted as a plain sort would, pages filled full")
struct ViewEntryBatchTests {
    /// Order bytes that share prefixes often (so that ties past eight bytes happen), of varied lengths (some shorter
    /// than eight bytes, some equal but for a trailing zero).
    private static func drawOrder(_ random: inout SeededRandom, shape: Int) -> [UInt8] {
        switch shape {
        case 0:
            // A shared head, then few distinct bytes: many equal prefixes.
            return [7, 7, 7, 7, 7] + (0..<Int.random(in: 0...12, using: &random)).map { _ in UInt8.random(in: 0...3, using: &random) }
        case 1:
            return (0..<Int.random(in: 0...10, using: &random)).map { _ in UInt8.random(in: 0...1, using: &random) }
        default:
            return (0..<Int.random(in: 1...40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
        }
    }

    @Test("Sorting gives (group id, order bytes) byte order, whatever the group ids, sizes and input order (seeded)",
          arguments: [1, 2, 3, 5, 8, 13, 21, 34] as [UInt64])
    func sortsAsAComparisonSort(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        for round in 0..<12 {
            let count = [0, 1, 2, 63, 64, 65, 500, 3_000][Int.random(in: 0..<8, using: &random)]
            // Dense ids (as a directory assigns them), few groups, or sparse ids (the comparison-sort path).
            let groupIDs: [UInt32] = switch round % 3 {
            case 0: Array(0..<5)
            case 1: [42]
            default: (0..<4).map { _ in UInt32.random(in: 0...UInt32.max, using: &random) }
            }
            let shape = Int.random(in: 0..<3, using: &random)
            var drawn: [(group: UInt32, order: [UInt8], sortKeyLength: Int)] = (0..<count).map { _ in
                let order = Self.drawOrder(&random, shape: shape)
                return (groupIDs[Int.random(in: 0..<groupIDs.count, using: &random)], order, Int.random(in: 0...order.count, using: &random))
            }
            // Some rounds come in order within each group (the shortcut that leaves a group as it is).
            if round % 4 == 1 { drawn.sort { $0.order.lexicographicallyPrecedes($1.order) } }
            var batch = ViewEntryBatch()
            for entry in drawn { batch.add(groupID: entry.group, order: entry.order, sortKeyLength: entry.sortKeyLength) }
            batch.sort()
            let expected = drawn.sorted { a, b in
                a.group != b.group ? a.group < b.group : a.order.lexicographicallyPrecedes(b.order)
            }
            let sorted = batch.entries.map { (group: $0.groupID, order: Array(batch.order(of: $0)), sortKeyLength: Int($0.sortKeyLength)) }
            #expect(sorted.map(\.group) == expected.map(\.group), "seed \(seed), round \(round): groups")
            #expect(sorted.map(\.order) == expected.map(\.order), "seed \(seed), round \(round): order bytes")
            // Each entry keeps its own sort-key length (equal orders may differ in it; compare as multisets).
            let lengths = { (list: [(group: UInt32, order: [UInt8], sortKeyLength: Int)]) in
                list.map { "\($0.group) \($0.order) \($0.sortKeyLength)" }.sorted()
            }
            #expect(lengths(sorted) == lengths(expected), "seed \(seed), round \(round): sort-key lengths")
        }
    }

    @Test("The page filler cuts pages at a group change, 64 entries or 2,016 bytes, each page as full as the next entry allows (seeded)",
          arguments: [4, 9, 16] as [UInt64])
    func fillsPagesFull(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        var entries: [(group: UInt32, order: [UInt8])] = []
        for group in UInt32(0)..<3 {
            for _ in 0..<Int.random(in: 0...400, using: &random) {
                entries.append((group, (0..<Int.random(in: 1...(Bool.random(using: &random) ? 20 : 300), using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }))
            }
        }
        var filler = ViewPageFiller()
        var pages: [ViewPage] = []
        for entry in entries {
            if let page = filler.append(groupID: entry.group, order: entry.order[...], sortKeyLength: 0) { pages.append(page) }
        }
        if let page = filler.finish() { pages.append(page) }
        #expect(pages.reduce(0) { $0 + $1.count } == entries.count, "seed \(seed): every entry on a page")
        var next = 0
        for (number, page) in pages.enumerated() {
            #expect(page.count > 0 && page.count <= ViewPage.maxEntries && page.byteSize <= ViewPage.maxBytes, "seed \(seed): page \(number)")
            for i in 0..<page.count {
                #expect(page.groupID == entries[next].group && page.orderBytes(at: i) == entries[next].order, "seed \(seed): page \(number), entry \(i)")
                next += 1
            }
            // A page ends only where the next entry is of another group or would not fit.
            if next < entries.count {
                let following = entries[next]
                let fits = page.count < ViewPage.maxEntries && page.byteSize + ViewPage.entrySize(orderLength: following.order.count) <= ViewPage.maxBytes
                #expect(following.group != page.groupID || !fits, "seed \(seed): page \(number) ended early")
            }
        }
    }
}
