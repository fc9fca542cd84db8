@testable import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import LMDB
import Testing

/// An extension that only opens tables (its writer ignores every change): the tests put through them.
private final class TableOwner: StoreExtension, @unchecked Sendable {
    // @unchecked: set once in prepare, read by the test after registration.
    let name = "owner"; let kind = "table-owner"; let versionTag = "1"; let options = "{}"
    var table: ExtensionTable<StringUTF8Coding, BytesCoding>?
    func prepare(in transaction: ReadWriteTransaction, context: ExtensionRegistrationContext) throws {
        let table = try transaction.openTable("numbers", of: name, keys: StringUTF8Coding.self, values: BytesCoding.self)
        try table.put([1], forKey: "m", in: transaction)
        self.table = table
    }
    func beginWrite(_ transaction: ReadWriteTransaction) throws -> IgnoringWriter { IgnoringWriter() }
    func dropStorage(in transaction: ReadWriteTransaction) throws {}
}

private final class IgnoringWriter: ExtensionTransaction {
    func handle(_ change: RowChange) throws -> AttachmentEdit { .keep }
    func prepareCommit(_ commit: ExtensionCommit) throws -> ExtensionPayload? { nil }
}

/// Every LMDB failure a user can meet reaches them as a ``CanopyError`` whose message says what to do, not only what
/// LMDB's text says happened. The conditions a test can make are made for real; the others go through the one
/// translation (`CanopyError.wrap`) with the code LMDB would return.
@Suite("LMDB failures say what to do")
struct StorageFailureAdviceTests {
    @Test("An appending put of a key that does not sort last (MDB_KEYEXIST) says to put without appending")
    func keyExists() throws {
        try withDatabase { database, _ in
            let owner = TableOwner()
            try database.register(owner)
            let error = #expect(throws: CanopyError.self) {
                try database.newConnection().readWrite { txn in try owner.table?.put([2], forKey: "a", in: txn, appending: true) }
            }
            #expect(error?.lmdbError?.code == .keyExists)
            #expect(error?.message.contains("Put the value without `appending`") == true, "\(String(describing: error))")
        }
    }

    @Test("A key over 511 bytes, or an empty one, in an extension table (MDB_BAD_VALSIZE) says how long keys may be",
          arguments: [0, 512, 2_000])
    func keyTooLong(length: Int) throws {
        try withDatabase { database, _ in
            let owner = TableOwner()
            try database.register(owner)
            let error = #expect(throws: CanopyError.self) {
                try database.newConnection().readWrite { txn in
                    try owner.table?.put([2], forKey: String(repeating: "k", count: length), in: txn)
                }
            }
            #expect(error?.code == .storage)
            #expect(error?.lmdbError?.code == .badValueSize)
            #expect(error?.message.contains("1 to 511 bytes") == true, "\(String(describing: error))")
            #expect(error?.message.contains("Use a shorter, non-empty key") == true)
        }
    }

    @Test("More read transactions than maxReaders (MDB_READERS_FULL) says to end long reads or raise maxReaders")
    func readersFull() throws {
        try withDatabase(options: DatabaseOptions(durability: .none, maxReaders: 4)) { database, _ in
            // Pinned connections each hold a read transaction, so a reader slot, until the error comes.
            var pinned: [Connection] = []
            var failure: CanopyError?
            while failure == nil, pinned.count < 64 {
                let connection = database.newConnection()
                do {
                    try connection.pin()
                    pinned.append(connection)
                } catch let error as CanopyError {
                    failure = error
                }
            }
            let error = try #require(failure)
            #expect(pinned.count >= 3, "the slots are taken by the pinned connections")
            #expect(error.lmdbError?.code == .readersFull, "\(error)")
            #expect(error.message.contains("End long-lived reads"), "\(error)")
            #expect(error.message.contains("maxReaders"), "\(error)")
            // Ending the reads is enough: a read works again.
            for connection in pinned { connection.unpin() }
            #expect(try database.newConnection().read { txn in try txn.count(inCollection: "none") } == 0)
        }
    }

    @Test("More tables than maxTables (MDB_DBS_FULL) says to open with a larger maxTables")
    func tablesFull() throws {
        try withDatabase(options: DatabaseOptions(durability: .none, maxTables: 12)) { database, _ in
            final class ManyTables: StoreExtension, @unchecked Sendable {
                let name = "many"; let kind = "many-tables"; let versionTag = "1"; let options = "{}"
                func prepare(in transaction: ReadWriteTransaction, context: ExtensionRegistrationContext) throws {
                    for index in 0..<32 {
                        _ = try transaction.openTable("t\(index)", of: name, keys: StringUTF8Coding.self, values: BytesCoding.self)
                    }
                }
                func beginWrite(_ transaction: ReadWriteTransaction) throws -> IgnoringWriter { IgnoringWriter() }
                func dropStorage(in transaction: ReadWriteTransaction) throws {}
            }
            let error = #expect(throws: CanopyError.self) { try database.register(ManyTables()) }
            let lmdb = try #require(error?.lmdbError ?? ((error?.underlying as? CanopyError)?.lmdbError), "\(String(describing: error))")
            #expect(lmdb.code == .databasesFull)
            #expect(error?.message.contains("Open the database with a larger DatabaseOptions.maxTables") == true, "\(String(describing: error))")
        }
    }

    @Test("A full map at the maximum size (MDB_MAP_FULL) says to raise maximumMapSize or remove data")
    func mapFull() throws {
        try withDatabase(options: DatabaseOptions(durability: .none, initialMapSize: 1 << 20, maximumMapSize: 2 << 20)) { database, _ in
            let notes = TypedCollection<[UInt8], [UInt8]>("notes")
            let error = #expect(throws: CanopyError.self) {
                for index in 0..<1_000 {
                    try database.newConnection().readWrite { txn in try txn.set([UInt8](repeating: 7, count: 8_000), forKey: "n\(index)", in: notes) }
                }
            }
            #expect(error?.code == .databaseFull)
            #expect(error?.message.contains("Raise maximumMapSize") == true, "\(String(describing: error))")
        }
    }

    /// The codes no test can make cheaply (a 512 MiB transaction, a fatal LMDB error, a file system that turns
    /// read-only), with the advice each must carry.
    @Test("Every other LMDB code a user can meet says what to do", arguments: [
        (LMDBError.Code.transactionFull, "Split the work into several smaller transactions"),
        (.mapResized, "Retry"),
        (.panic, "open the database again"),
        (.badReaderSlot, "only inside its read { }"),
        (.badDatabase, "`canopy verify`"),
        (.incompatible, "`canopy verify`"),
        (.threadLocalStorageFull, "Close databases"),
        (.outOfMemory, "lower DatabaseOptions.maximumMapSize"),
        (.busy, "Retry"),
        (.noSuchFile, "open it again"),
        (.notFound, "`canopy verify`"),
        (.cursorFull, "restore a backup"),
        (.pageFull, "restore a backup"),
        (.invalid, "restore a backup"),
        (.versionMismatch, "restore a backup"),
        (.corrupted, "Restore the database from a backup"),
        (.pageNotFound, "Restore the database from a backup"),
        (.noSpace, "free space and retry"),
        (.quotaExceeded, "free space and retry"),
        (.permissionDenied, "check their owner and permissions"),
        (.readOnlyFileSystem, "DatabaseOptions.readOnly"),
        (.ioError, "check the disk"),
        (.invalidArgument, "`canopy verify`"),
    ])
    func everyCodeSaysWhatToDo(code: LMDBError.Code, advice: String) throws {
        let lmdb = LMDBError(code: code, operation: "mdb_put", path: "/tmp/db", database: "canopy.objects")
        let error = try #require(CanopyError.wrap(lmdb, path: "/tmp/db") as? CanopyError)
        #expect(error.message.contains(advice), "\(error)")
        #expect(error.message != lmdb.description)
        #expect(error.lmdbError?.code == code)
    }
}
