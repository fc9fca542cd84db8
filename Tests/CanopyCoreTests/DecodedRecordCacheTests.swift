@testable import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Testing

private struct Item: Codable, Sendable { var title: String }
private let items = TypedCollection<Item, NoMetadata>("items")

/// The store's state record and attachment slots are decoded once per distinct bytes (``DecodedRecordCache``): a
/// reuse must never hand out a value the stored bytes no longer hold.
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

    /// A state record rewritten behind this process's back (as another process or a tool does: not through this
    /// process's commit) is read as stored: extensions' snapshots and the store's snapshot follow the new bytes.
    @Test func aStateRecordWrittenElsewhereIsReadAsStored() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn in try txn.set(Item(title: "a"), forKey: "a", in: items) }
            let before = try connection.read { txn in try txn.extensionSnapshots() }
            #expect(before.store == 1 && before.extensions.isEmpty)
            var edited = StoreState()
            edited.snapshot = 1
            edited.extensionSnapshots = ["some-view": 1]
            try connection.readWrite { txn in
                try txn.writeStorage.put(edited.encoded, forKey: StoreInfoKey.state, in: txn.tables.info)
            }
            let after = try connection.read { txn in try txn.extensionSnapshots() }
            #expect(after.store == 1 && after.extensions == ["some-view": 1])
            try connection.readWrite { txn in try txn.set(Item(title: "b"), forKey: "b", in: items) }
            #expect(try connection.read { txn in try txn.extensionSnapshots() }.store == 2)
        }
    }
}
