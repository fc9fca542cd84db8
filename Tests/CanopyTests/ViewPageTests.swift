@testable import Canopy
@testable import CanopyCore
import CanopyTestSupport
import Testing

/// The page's in-place splicing (insert, remove, split) and its one-pass decoding against a plain sorted list of
/// entries, and the stored format kept byte for byte (pages and sort keys written by earlier builds read the same).
@Suite("View pages: splicing and decoding agree with a sorted list; the stored bytes are unchanged")
struct ViewPageTests {
    /// Random order bytes: a sort key (`sortKeyLength` bytes, some with multi-byte varint lengths) then a row key.
    static func drawEntry(_ random: inout SeededRandom, longKeys: Bool = false) -> (order: [UInt8], sortKeyLength: Int) {
        let longest = longKeys && Int.random(in: 0..<4, using: &random) == 0 ? 5_000 : (Bool.random(using: &random) ? 12 : 200)
        let sortKeyLength = Int.random(in: 0...longest, using: &random)
        let rowKeyLength = Int.random(in: 5...20, using: &random)
        let order = (0..<(sortKeyLength + rowKeyLength)).map { _ in UInt8.random(in: 0...3, using: &random) }
        return (order, sortKeyLength)
    }

    static func expectSame(_ page: ViewPage, _ reference: [(order: [UInt8], sortKeyLength: Int)], seed: UInt64, step: Int) throws {
        #expect(page.count == reference.count, "seed \(seed), step \(step)")
        for (i, entry) in reference.enumerated() where i < page.count {
            #expect(page.orderBytes(at: i) == entry.order, "seed \(seed), step \(step), entry \(i)")
            #expect(Array(page.rowKey(at: i)) == Array(entry.order[entry.sortKeyLength...]), "seed \(seed), step \(step), entry \(i)")
        }
        // What is written is what reads back.
        let decoded = try page.encoded.withUnsafeBytes { try ViewPage(decoding: $0) }
        #expect(decoded.count == page.count && decoded.groupID == page.groupID, "seed \(seed), step \(step)")
        for i in 0..<min(decoded.count, reference.count) {
            #expect(decoded.orderBytes(at: i) == reference[i].order, "seed \(seed), step \(step), decoded entry \(i)")
        }
        var reserved = [UInt8](repeating: 0xAA, count: page.byteSize)
        reserved.withUnsafeMutableBytes { page.write(into: $0) }
        #expect(reserved == page.encoded, "seed \(seed), step \(step)")
    }

    @Test("Inserts, removals and splits at random places match a sorted list; pages split by entries and by bytes (seeds printed)",
          arguments: [1, 2, 3, 4, 5, 6] as [UInt64])
    func splicing(seed: UInt64) throws {
        // Seeds 5 and 6: a quarter of the sort keys up to 5,000 bytes (pages cut by bytes, an entry alone on a page).
        let longKeys = seed > 4
        var random = SeededRandom(seed: seed)
        var page = ViewPage(groupID: UInt32(seed))
        var reference: [(order: [UInt8], sortKeyLength: Int)] = []
        for step in 0..<400 {
            if reference.isEmpty || Int.random(in: 0..<3, using: &random) > 0 {
                let entry = Self.drawEntry(&random, longKeys: longKeys)
                guard !reference.contains(where: { $0.order == entry.order }) else { continue }
                let at = page.insert(order: entry.order, sortKeyLength: entry.sortKeyLength)
                let expected = reference.firstIndex { !$0.order.lexicographicallyPrecedes(entry.order) } ?? reference.count
                #expect(at == expected, "seed \(seed), step \(step)")
                reference.insert(entry, at: expected)
            } else {
                let i = Int.random(in: 0..<reference.count, using: &random)
                #expect(page.index(of: reference[i].order) == i, "seed \(seed), step \(step)")
                page.remove(at: i)
                reference.remove(at: i)
            }
            if page.isOverfull {
                let uppers = page.splitToFit()
                #expect(!uppers.isEmpty && !page.isOverfull && !uppers.contains { $0.isOverfull }, "seed \(seed), step \(step)")
                var start = page.count
                for upper in uppers {
                    try Self.expectSame(upper, Array(reference[start..<min(reference.count, start + upper.count)]), seed: seed, step: step)
                    start += upper.count
                }
                #expect(start == reference.count, "seed \(seed), step \(step)")
                reference.removeSubrange(page.count...)
            }
            try Self.expectSame(page, reference, seed: seed, step: step)
        }
    }

    @Test("Malformed pages throw: short header, a count past the bytes, a sort key longer than its entry, trailing bytes, a length past the end")
    func malformed() throws {
        var page = ViewPage(groupID: 7)
        page.insert(order: [1, 2, 3, 9, 9], sortKeyLength: 3)
        page.insert(order: [4, 5, 9, 9], sortKeyLength: 2)
        let good = page.encoded
        #expect(throws: Never.self) { try good.withUnsafeBytes { _ = try ViewPage(decoding: $0) } }
        var cases: [[UInt8]] = [Array(good[..<5])]  // header cut
        var countTooLarge = good
        countTooLarge[5] = 3
        cases.append(countTooLarge)
        var longSortKey = good
        longSortKey[6] = 6  // the first entry's sort key length, past its 5 order bytes
        cases.append(longSortKey)
        cases.append(good + [0])  // bytes after the last entry
        var lengthPastEnd = good
        lengthPastEnd[7] = 0x7F  // the first entry's length
        cases.append(lengthPastEnd)
        var unendedVarint = good
        unendedVarint[7] = 0x80  // a length whose varint never ends within the page
        cases.append(Array(unendedVarint[..<8]))
        for (number, bytes) in cases.enumerated() {
            #expect(throws: (any Error).self, "case \(number)") { try bytes.withUnsafeBytes { _ = try ViewPage(decoding: $0) } }
        }
    }

    @Test("The stored page format is byte for byte the one earlier builds wrote and read")
    func storedBytes() {
        var page = ViewPage(groupID: 0x0102_0304)
        page.insert(order: [0x20, 0x30, 0, 0, 0, 1, 0x61], sortKeyLength: 2)
        page.insert(order: [0x10] + [UInt8](repeating: 0x41, count: 130), sortKeyLength: 129)
        page.remove(at: page.insert(order: [0x15, 0, 0, 0, 1], sortKeyLength: 0))
        // group id, count, then per entry varint(sort key length) varint(length) order bytes, in order.
        let expected: [UInt8] = [1, 2, 3, 4, 0, 2]
            + [0x81, 0x01, 0x83, 0x01, 0x10] + [UInt8](repeating: 0x41, count: 130)
            + [2, 7, 0x20, 0x30, 0, 0, 0, 1, 0x61]
        #expect(page.encoded == expected)
    }

    @Test("Sort keys encode byte for byte as before (stored keys of existing views keep their order)")
    func sortKeyBytes() {
        let key = SortKey(.ascending("a\u{0}b"), .descending(Int64(1)), .ascending(true))
        #expect(key.bytes == [0x30, 0x61, 0x00, 0xFF, 0x62, 0x00, 0x01]
            + [0xDF, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE]
            + [0x10, 0x01])
        #expect(SortKey(.descending("ab")).bytes == [0x30, 0x61, 0x62, 0x00, 0x01].map { ~$0 })
        #expect(SortKey(.ascending("ab")).bytes == SortKey("ab").bytes)
        #expect(SortKey([]).bytes == [])
    }
}
