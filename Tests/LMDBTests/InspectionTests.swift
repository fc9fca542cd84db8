import Foundation
import LMDB
import Testing

@Suite("Inspection: reader table, named databases, free pages")
struct InspectionTests {
    @Test("databaseNames lists the named databases in key order")
    func databaseNames() throws {
        try withEnvironment(EnvironmentOptions(maxDatabases: 8)) { environment, _ in
            for name in ["zeta", "alpha", "mid"] { _ = try environment.openDatabase(named: name, create: true) }
            #expect(try environment.read { try $0.databaseNames() } == ["alpha", "mid", "zeta"])
        }
    }

    @Test("an open read transaction has a reader slot of this process; an ended one leaves none reading")
    func readers() throws {
        try withEnvironment { environment, _ in
            try environment.read { txn in
                let slots = try environment.readers()
                let mine = slots.filter { $0.processID == getpid() }
                #expect(mine.count == 1)
                #expect(mine.first?.transactionID == txn.id)
                #expect(mine.first?.processIsAlive == true)
            }
            #expect(try environment.readers().filter { $0.processID == getpid() && $0.transactionID != nil }.isEmpty)
        }
    }

    @Test("deleting entries puts pages on the free list")
    func freePages() throws {
        try withEnvironment(EnvironmentOptions(maxDatabases: 2)) { environment, _ in
            let table = try environment.openDatabase(named: "t", create: true)
            try environment.write { txn in
                for i in 0..<2000 { try txn.put(value(i, count: 200), forKey: key(i), in: table) }
            }
            let before = try environment.read { try $0.freePages() }
            try environment.write { txn in
                for i in 0..<2000 { _ = try txn.delete(key(i), in: table) }
            }
            try environment.write { txn in try txn.put(bytes("x"), forKey: key(0), in: table) }
            let after = try environment.read { try $0.freePages() }
            #expect(after.pages > before.pages)
            #expect(after.pages >= 50)  // 2000 × ~210 bytes is about 100 leaf pages, all freed
            #expect(try environment.read { try $0.freeListStatistics().entries } == after.records)
        }
    }
}
