import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import LMDB
import Testing

/// `appending` (`MDB_APPEND`) with a key that does not sort after every key of the table: a typed error, the value
/// not filled, nothing written or overwritten (an equal key is not replaced).
@Suite("Extension tables: appending out of order")
struct ExtensionTableAppendTests {
    @Test func appendingAKeyNotLastIsRefusedAndWritesNothing() throws {
        final class Raw: StoreExtension, @unchecked Sendable {
            // @unchecked: set once in prepare, read by the test after registration.
            let name = "raw"; let kind = "raw"; let versionTag = "1"; let options = "{}"
            var table: ExtensionTable<StringUTF8Coding, BytesCoding>?
            func prepare(in transaction: ReadWriteTransaction, context: ExtensionRegistrationContext) throws {
                let table = try transaction.openTable("numbers", of: name, keys: StringUTF8Coding.self, values: BytesCoding.self)
                try table.put([1], forKey: "m", in: transaction)
                self.table = table
            }
            func beginWrite(_ transaction: ReadWriteTransaction) throws -> AppendSilent { AppendSilent() }
            func dropStorage(in transaction: ReadWriteTransaction) throws {}
        }
        try withDatabase { database, _ in
            let raw = Raw()
            try database.register(raw)
            let connection = database.newConnection()
            var filled = false
            let lower = #expect(throws: CanopyError.self) {
                try connection.readWrite { txn in
                    try raw.table?.put(reserving: 1, forKey: "a", in: txn, appending: true) { filled = true; $0[0] = 9 }
                }
            }
            #expect(lower?.code == .storage)
            #expect(filled == false)
            let equal = #expect(throws: CanopyError.self) {
                try connection.readWrite { txn in try raw.table?.put([7], forKey: "m", in: txn, appending: true) }
            }
            #expect(equal?.code == .storage)
            try connection.readWrite { txn in try raw.table?.put([8], forKey: "z", in: txn, appending: true) }
            let values = try connection.read { txn in
                try ["m", "a", "z"].map { try raw.table?.value(forKey: $0, in: txn) }
            }
            #expect(values == [[1], nil, [8]])
        }
    }
}

private final class AppendSilent: ExtensionTransaction {
    func handle(_ change: RowChange) throws -> AttachmentEdit { .keep }
    func prepareCommit(_ commit: ExtensionCommit) throws -> ExtensionPayload? { nil }
}
