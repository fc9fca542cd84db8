@testable import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Testing

private struct Item: Codable, Sendable { var title: String }
private let items = TypedCollection<Item, NoMetadata>("items")

@Suite("The store's state record, damaged")
struct StoreStateDamageTests {
    /// A state record too short to hold the snapshot (written with a valid checksum, as a buggy tool or another build
    /// would) was read as snapshot 0: every new read and observer went back to the empty store. It is a typed error.
    @Test("a state record shorter than a snapshot is corruptStore for readers, never snapshot 0")
    func shortStateRecordIsCorruptStore() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn in try txn.set(Item(title: "a"), forKey: "a", in: items) }
            #expect(try database.currentSnapshot() == 1)
            // Three bytes where the state's entry is expected (canopy/5: the newest commit-log entry is the state),
            // through the store's own (checksummed) handle, in a transaction that writes nothing else (so its commit
            // does not write another entry).
            try connection.readWrite { txn in
                try txn.writeStorage.put([0, 0, 1], forKey: SnapshotKey.bytes(1), in: txn.tables.commits)
            }
            let error = #expect(throws: CanopyError.self) { _ = try database.currentSnapshot() }
            #expect(error?.code == .corruptStore)
            #expect(error?.message.contains("state record") == true)
            let read = #expect(throws: CanopyError.self) { try database.newConnection().read { txn in _ = try txn.object(forKey: "a", in: items) } }
            #expect(read?.code == .corruptStore)
        }
    }
}
