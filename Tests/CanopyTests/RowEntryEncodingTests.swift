@testable import Canopy
import Testing

/// A row's view attachment (group id as a varint, then the sort key) is made two ways: into a new array, and — for a
/// row entering a view in a bulk write — in the sort key's own array. Both must give the same bytes, which decode back.
@Suite("A view attachment made in the sort key's array is the one made into a new array")
struct RowEntryEncodingTests {
    @Test("Group ids at every varint length boundary, empty and long sort keys, a sort key with room to spare")
    func bothEncodingsAgree() throws {
        let groupIDs: [UInt32] = [0, 1, 0x7F, 0x80, 0x3FFF, 0x4000, 0x1F_FFFF, 0x20_0000, UInt32.max]
        let sortKeys: [[UInt8]] = [[], [0], [1, 2, 3], Array(repeating: 0xFF, count: 300)]
        for groupID in groupIDs {
            for sortKey in sortKeys {
                let expected = ViewTables.RowEntry.encoded(groupID: groupID, sortKey: sortKey[...])
                var roomy = sortKey
                roomy.reserveCapacity(sortKey.count + 64)
                for made in [ViewTables.RowEntry.encoded(groupID: groupID, taking: sortKey),
                             ViewTables.RowEntry.encoded(groupID: groupID, taking: roomy)] {
                    #expect(made == expected, "group \(groupID), sort key of \(sortKey.count) bytes")
                    let decoded = try made.withUnsafeBytes { try ViewTables.RowEntry(decoding: $0) }
                    #expect(decoded.groupID == groupID && decoded.sortKey == sortKey)
                }
            }
        }
    }
}
