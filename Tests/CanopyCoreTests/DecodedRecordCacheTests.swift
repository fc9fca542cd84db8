@testable import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Testing

private struct Item: Codable, Sendable { var title: String }
private let items = TypedCollection<Item, NoMetadata>("items")

/// The attachment slots are decoded once per distinct bytes (``DecodedRecordCache``): a reuse must never hand out a
/// value the stored bytes no longer hold.
@Suite("Decoded store records, remembered by their bytes")
struct DecodedRecordCacheTests {
    @Test func equalBytesReuseTheValueAndOtherBytesDecodeAgain() throws {
        let cache = DecodedRecordCache<[UInt8]>()
        var decodes = 0
        func read(_ bytes: [UInt8]) -> [UInt8] {
            bytes.withUnsafeBytes { buffer in
                cache.value(of: buffer) { decodes += 1; return Array($0) }
            }
        }
        #expect(read([1, 2, 3]) == [1, 2, 3])
        #expect(read([1, 2, 3]) == [1, 2, 3])
        #expect(decodes == 1)
        #expect(read([1, 2, 4]) == [1, 2, 4], "same length, other bytes")
        #expect(read([1, 2]) == [1, 2], "a prefix")
        #expect(read([]) == [])
        #expect(read([]) == [])
        #expect(read([1, 2, 3]) == [1, 2, 3])
        #expect(decodes == 5)
    }

    /// Attachment slots rewritten behind this process's back (as another process or a tool does: not through this
    /// process's writes, and without a new snapshot) are read as stored, also when the new bytes have the old length.
    @Test func attachmentSlotsWrittenElsewhereAreReadAsStored() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn in try txn.set(Item(title: "a"), forKey: "a", in: items) }
            func write(next: UInt32, slot: UInt32) throws {
                var slots = AttachmentSlots()
                slots.next = next
                slots.slots = ["some-extension": slot]
                try connection.readWrite { txn in
                    try txn.writeStorage.put(slots.encoded, forKey: StoreInfoKey.attachmentSlots, in: txn.tables.info)
                }
            }
            func slot() throws -> UInt32? { try connection.read { txn in try txn.attachmentSlot(for: "some-extension")?.number } }
            #expect(try slot() == nil)
            try write(next: 5, slot: 3)
            #expect(try slot() == 3)
            #expect(try slot() == 3)
            try write(next: 6, slot: 4)
            #expect(try slot() == 4, "same length, other bytes")
            #expect(try database.currentSnapshot() == 1, "the rewrites made no commit of the store")
        }
    }
}
