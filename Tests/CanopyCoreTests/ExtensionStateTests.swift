import CanopyCore
import CanopyTestSupport
import Foundation
import LMDB
import Testing

/// Where an extension's state record lives since `canopy/6`: staged in the write transaction, written in the commit's
/// log entry (the store's state), read by later transactions from that state; no record of `canopy.info` is written
/// for it.
@Suite("Extension state records: staged in the transaction, committed in the log entry")
struct ExtensionStateTests {
    /// LMDB's record of table `name` in the main table (its root page, depth and counts): it changes whenever a commit
    /// writes the table (copy-on-write gives it a new root).
    static func tableRecord(_ database: CanopyCore.Database, _ name: String) throws -> [UInt8]? {
        let main = try database.environment.openDatabase(named: nil)
        return try database.environment.read { txn in try txn.value(forKey: Array(name.utf8), in: main) }
    }

    static func state(_ database: CanopyCore.Database, of name: String) throws -> [UInt8]? {
        try database.newConnection().read { txn in try txn.withExtensionState(of: name) { $0.map { Array($0) } } }
    }

    @Test("A record set in a write is read back in it, committed with the snapshot, and leaves canopy.info as it was")
    func stagedCommittedAndRead() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        do {
            let database = try CanopyCore.Database(path: path, options: .init(durability: .none))
            let connection = database.newConnection()
            try connection.readWrite { txn in
                try txn.setStoredRow(objectBytes: Array("{}".utf8), metadataBytes: nil, forKey: "a", inCollection: "things", codecName: "json")
            }
            let info = try #require(try Self.tableRecord(database, "canopy.info"))
            let snapshot = try database.currentSnapshot()
            try connection.readWrite { txn in
                try txn.setExtensionState([1, 2, 3], of: "probe")
                #expect(try txn.withExtensionState(of: "probe") { $0.map { Array($0) } } == [1, 2, 3])
                try txn.setExtensionState([4, 5], of: "probe")
                #expect(try txn.withExtensionState(of: "probe") { $0.map { Array($0) } } == [4, 5])
            }
            // A record that changed is a write (the snapshot advances); canopy.info was not written.
            #expect(try database.currentSnapshot() == snapshot + 1)
            #expect(try Self.state(database, of: "probe") == [4, 5])
            #expect(try Self.tableRecord(database, "canopy.info") == info)
            // The same bytes again change nothing: no commit.
            try connection.readWrite { txn in try txn.setExtensionState([4, 5], of: "probe") }
            #expect(try database.currentSnapshot() == snapshot + 1)
            // A transaction that throws leaves the record as it was.
            struct Refused: Error {}
            #expect(throws: Refused.self) {
                try connection.readWrite { txn in
                    try txn.setExtensionState([9], of: "probe")
                    throw Refused()
                }
            }
            #expect(try Self.state(database, of: "probe") == [4, 5])
            // A reader pinned before a change keeps reading the record of its snapshot.
            let pinned = database.newConnection()
            try pinned.pin()
            try connection.readWrite { txn in try txn.setExtensionState([7], of: "probe") }
            #expect(try pinned.read { txn in try txn.withExtensionState(of: "probe") { $0.map { Array($0) } } } == [4, 5])
            _ = try pinned.advance()
            #expect(try pinned.read { txn in try txn.withExtensionState(of: "probe") { $0.map { Array($0) } } } == [7])
        }
        // Read afresh from the file (the newest log entry), as another process reads it.
        let reopened = try CanopyCore.Database(path: path, options: .init(readOnly: true))
        #expect(try Self.state(reopened, of: "probe") == [7])
        #expect(try reopened.newConnection().read { txn in try txn.checkStoredRows().problems } == [])
    }

    @Test("Removing a record is a write; a record over the limit is extensionFailed and nothing is staged")
    func removalAndLimit() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try CanopyCore.Database(path: directory.appending("db"), options: .init(durability: .none))
        let connection = database.newConnection()
        try connection.readWrite { txn in try txn.setExtensionState([1], of: "probe") }
        let snapshot = try database.currentSnapshot()
        let error = #expect(throws: CanopyError.self) {
            try connection.readWrite { txn in
                try txn.setExtensionState([UInt8](repeating: 0, count: ReadWriteTransaction.maximumExtensionStateSize + 1), of: "probe")
            }
        }
        #expect(error?.code == .extensionFailed && error?.extensionName == "probe", "\(String(describing: error))")
        #expect(try Self.state(database, of: "probe") == [1])
        try connection.readWrite { txn in
            try txn.setExtensionState([UInt8](repeating: 0, count: ReadWriteTransaction.maximumExtensionStateSize), of: "other")
            try txn.setExtensionState(nil, of: "probe")
            #expect(try txn.withExtensionState(of: "probe") { $0 == nil })
        }
        #expect(try database.currentSnapshot() == snapshot + 1)
        #expect(try Self.state(database, of: "probe") == nil)
        #expect(try Self.state(database, of: "other")?.count == ReadWriteTransaction.maximumExtensionStateSize)
    }
}
