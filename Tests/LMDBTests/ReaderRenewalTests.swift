import CanopyTestSupport
@testable import LMDB
import Testing

/// `ReadTransaction.renew()`: a long-lived reader (a pinned connection, an observer) moves to the latest snapshot
/// keeping its reader slot, and loses nothing a new transaction would have kept.
@Suite struct ReaderRenewalTests {
    @Test func renewedReaderSeesLaterCommitsAndKeepsOneSlot() throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            let reader = try env.withAccess { try env.beginRead() }
            defer { env.withAccess { reader.abort() } }
            for round in 0..<50 {
                try env.write { txn in try txn.put(value(round, count: 16), forKey: key(round), in: main) }
                try env.withAccess {
                    #expect(try reader.value(forKey: key(round), in: main) == nil, "the reader still sees its snapshot")
                    try reader.renew()
                    #expect(try reader.value(forKey: key(round), in: main) == value(round, count: 16))
                    #expect(try reader.count(of: main) == round + 1)
                }
            }
            let slots = try env.readers().filter { $0.transactionID != nil }
            #expect(slots.count == 1, "one reader slot for the renewed transaction: \(slots)")
            #expect(env.activeTransactionCount == 1)
        }
    }

    /// LMDB closes the database handles a read transaction opened when it is reset; renewing such a transaction must
    /// end it the way that keeps them (as ending it always did), or every later use of the handle fails.
    @Test func aHandleOpenedByTheRenewedReaderStaysUsable() throws {
        try withTemporaryDirectory(prefix: "LMDBTests") { directory in
            do {
                let writer = try Environment(path: directory.path, options: .init(maxDatabases: 4))
                let table = try writer.openDatabase(named: "table", create: true)
                try writer.write { txn in try txn.put(bytes("one"), forKey: bytes("k"), in: table) }
            }
            // A new environment, in which only the reader opens the table.
            let env = try Environment(path: directory.path, options: .init(maxDatabases: 4))
            let reader = try env.withAccess { try env.beginRead() }
            defer { env.withAccess { reader.abort() } }
            let table = try env.withAccess { try reader.openDatabase(named: "table") }
            try env.withAccess {
                try reader.renew()
                #expect(try reader.value(forKey: bytes("k"), in: table) == bytes("one"))
            }
            try env.write { txn in try txn.put(bytes("two"), forKey: bytes("k"), in: table) }
            try env.withAccess {
                try reader.renew()
                #expect(try reader.value(forKey: bytes("k"), in: table) == bytes("two"))
            }
            #expect(try env.read { txn in try txn.value(forKey: bytes("k"), in: table) } == bytes("two"))
        }
    }

    @Test func anEndedReaderBeginsAnewAndWritesCannotBeRenewed() throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            let reader = try env.withAccess { try env.beginRead() }
            env.withAccess { reader.abort() }
            try env.write { txn in try txn.put(bytes("v"), forKey: bytes("k"), in: main) }
            try env.withAccess {
                try reader.renew()
                #expect(try reader.value(forKey: bytes("k"), in: main) == bytes("v"))
                reader.abort()
            }
            #expect(env.activeTransactionCount == 0)
            try env.write { txn in
                let error = #expect(throws: LMDBError.self) { try txn.renew() }
                #expect(error?.code == .badTransaction)
            }
        }
    }
}
