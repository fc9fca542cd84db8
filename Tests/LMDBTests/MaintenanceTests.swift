import CanopyTestSupport
import Foundation
import LMDB
import Testing

/// Map size, statistics, environment figures, hot copies and the reader check.
@Suite struct MaintenanceTests {
    @Test(arguments: [1 << 20, 10 << 20, 64 << 20])
    func mapSizeIsTheRequestedSize(size: Int) throws {
        try withEnvironment(.init(mapSize: size)) { env, _ in
            #expect(env.mapSize == size)
            #expect(env.info().mapSize == size)
        }
    }

    @Test func setMapSizeWhileATransactionIsOpenIsBusy() throws {
        try withEnvironment(.init(mapSize: 1 << 20)) { env, _ in
            try env.read { _ in
                #expect(env.activeTransactionCount == 1)
                let error = expectError(.busy) { try env.setMapSize(2 << 20) }
                #expect(error?.operation == "mdb_env_set_mapsize")
                #expect(error?.path == env.path)
            }
            let main = try env.openDatabase(named: nil)
            try env.write { _ in _ = expectError(.busy) { try env.setMapSize(2 << 20) } }
            #expect(env.mapSize == 1 << 20)

            #expect(env.activeTransactionCount == 0)
            try env.setMapSize(4 << 20)
            #expect(env.mapSize == 4 << 20)
            #expect(env.info().mapSize == 4 << 20)
            try env.write { txn in try txn.put(value(1, count: 2 << 20), forKey: bytes("big"), in: main) }
            #expect(try env.read { try $0.value(forKey: bytes("big"), in: main) } == value(1, count: 2 << 20))
        }
    }

    @Test func mapFullKeepsEarlierCommitsAndGrowingTheMapRecovers() throws {
        try withEnvironment(.init(mapSize: 256 << 10)) { env, _ in
            let table = try env.openDatabase(named: "table", create: true)
            try env.write { txn in
                for i in 0..<10 { try txn.put(value(i, count: 100), forKey: key(i), in: table) }
            }
            // Far more than 256 KiB in one transaction.
            func fill(_ txn: WriteTransaction) throws {
                for i in 1000..<1500 { try txn.put(value(i, count: 1000), forKey: key(i), in: table) }
            }
            let error = expectError(.mapFull) { try env.write(fill) }
            #expect(error?.hint == "Raise the environment's map size.")
            #expect(error?.description.contains(env.path) == true)
            #expect(env.activeTransactionCount == 0)

            // Still readable, with exactly the data of the earlier commit.
            try env.read { txn throws in
                #expect(try txn.count(of: table) == 10)
                for i in 0..<10 { #expect(try txn.value(forKey: key(i), in: table) == value(i, count: 100)) }
                #expect(try txn.value(forKey: key(1000), in: table) == nil)
            }
            // Still writable in small steps.
            try env.write { txn in try txn.put(bytes("small"), forKey: bytes("after"), in: table) }

            try env.setMapSize(4 << 20)
            try env.write(fill)
            #expect(try env.read { try $0.count(of: table) } == 511)
        }
    }

    @Test func statisticsCountEntriesAndPages() throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            let empty = env.statistics()
            #expect(empty.entries == 0)
            #expect(empty.depth == 0)
            #expect(empty.pageSize >= 512 && empty.pageSize & (empty.pageSize - 1) == 0)

            try env.write { txn in
                for i in 0..<1000 { try txn.put(value(i, count: 100), forKey: key(i), in: main) }
                try txn.put(value(0, count: 3 * empty.pageSize), forKey: bytes("large"), in: main)
            }
            let stats = try env.read { try $0.statistics(of: main) }
            #expect(stats == env.statistics())
            #expect(stats.entries == 1001)
            #expect(try env.read { try $0.count(of: main) } == 1001)
            #expect(stats.depth >= 2)
            #expect(stats.branchPages >= 1)
            // 1000 entries of about 110 bytes need at least 1000 * 110 / pageSize leaf pages.
            #expect(stats.leafPages >= 1000 * 110 / stats.pageSize)
            #expect(stats.overflowPages >= 3)
            #expect(stats.totalBytes == stats.pageSize * (stats.branchPages + stats.leafPages + stats.overflowPages))
        }
    }

    @Test func namedDatabasesAreEntriesOfTheMainDatabase() throws {
        try withEnvironment { env, _ in
            let a = try env.openDatabase(named: "a", create: true)
            _ = try env.openDatabase(named: "b", create: true)
            try env.write { txn in
                for i in 0..<5 { try txn.put(bytes("v"), forKey: key(i), in: a) }
            }
            #expect(env.statistics().entries == 2)
            #expect(try env.read { try $0.statistics(of: a) }.entries == 5)
        }
    }

    @Test func infoTracksTransactionsReadersAndPages() throws {
        try withEnvironment(.init(maxReaders: 7)) { env, _ in
            let main = try env.openDatabase(named: nil)
            let before = env.info()
            #expect(before.maxReaders == 7)
            #expect(before.mapSize == env.mapSize)

            try env.write { txn in
                #expect(txn.id == before.lastTransactionID + 1)
                for i in 0..<200 { try txn.put(value(i, count: 200), forKey: key(i), in: main) }
            }
            let after = env.info()
            #expect(after.lastTransactionID == before.lastTransactionID + 1)
            #expect(after.lastPage > before.lastPage)

            // An aborted write transaction commits nothing.
            struct Rollback: Error {}
            #expect(throws: Rollback.self) {
                try env.write { txn in
                    try txn.put(bytes("v"), forKey: bytes("k"), in: main)
                    throw Rollback()
                }
            }
            #expect(env.info().lastTransactionID == after.lastTransactionID)

            let readersDuring = try env.read { txn in
                #expect(txn.id == after.lastTransactionID)
                return env.info().readersInUse
            }
            #expect(readersDuring >= 1)
            // A high-water mark: an ended reader leaves its slot for reuse rather than lowering the count.
            #expect(env.info().readersInUse == readersDuring)
        }
    }

    @Test(arguments: [false, true])
    func copyOpensWithTheSameData(compact: Bool) throws {
        try withTemporaryDirectory(prefix: "LMDBTests") { directory in
            var expectedMain: [[UInt8]: [UInt8]] = [:]
            var expectedTable: [[UInt8]: [UInt8]] = [:]
            let destination = try directory.makeSubdirectory("copy")
            do {
                let env = try Environment(path: try directory.makeSubdirectory("source"))
                let main = try env.openDatabase(named: nil)
                let table = try env.openDatabase(named: "table", create: true)
                try env.write { txn in
                    for i in 0..<300 {
                        try txn.put(value(i, count: 300), forKey: key(i), in: main)
                        try txn.put(value(-i, count: 10), forKey: key(i), in: table)
                    }
                }
                try env.write { txn in
                    for i in stride(from: 0, to: 300, by: 3) { try txn.delete(key(i), in: main) }
                }
                (expectedMain, expectedTable) = try env.read { txn in
                    (try entries(of: main, in: txn), try entries(of: table, in: txn))
                }
                expectedMain.removeValue(forKey: bytes("table"))
                // A hot copy: a reader is open while copying.
                try env.read { _ in try env.copy(to: destination, compact: compact) }
            }
            let copy = try Environment(path: destination)
            let main = try copy.openDatabase(named: nil)
            let table = try copy.openDatabase(named: "table")
            try copy.read { txn in
                // The main database also holds the named database's record, whose page numbers compaction changes.
                var copiedMain = try entries(of: main, in: txn)
                #expect(copiedMain.removeValue(forKey: bytes("table")) != nil)
                #expect(copiedMain == expectedMain)
                #expect(try entries(of: table, in: txn) == expectedTable)
            }
            #expect(expectedMain.count == 200 && expectedTable.count == 300)
        }
    }

    @Test func compactCopyLeavesFreePagesOut() throws {
        try withEnvironment { env, directory in
            let main = try env.openDatabase(named: nil)
            try env.write { txn in
                for i in 0..<2000 { try txn.put(value(i, count: 500), forKey: key(i), in: main) }
            }
            try env.write { txn in
                for i in 0..<1900 { try txn.delete(key(i), in: main) }
            }
            let plain = try directory.makeSubdirectory("plain")
            let compact = try directory.makeSubdirectory("compact")
            try env.copy(to: plain)
            try env.copy(to: compact, compact: true)
            func size(_ path: String) throws -> Int {
                try FileManager.default.attributesOfItem(atPath: path + "/data.mdb")[.size] as? Int ?? 0
            }
            #expect(try size(compact) * 2 < size(plain))
        }
    }

    @Test func copyToAMissingDirectoryFails() throws {
        try withEnvironment { env, directory in
            let destination = directory.appending("missing")
            let error = expectError(.noSuchFile) { try env.copy(to: destination) }
            #expect(error?.operation == "mdb_env_copy2")
        }
    }

    @Test func readerCheckClearsNothingWhenEveryReaderIsAlive() throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            try env.write { txn in try txn.put(bytes("v"), forKey: bytes("k"), in: main) }
            #expect(try env.readerCheck() == 0)
            let reader = try env.beginRead()
            defer { reader.abort() }
            #expect(try env.readerCheck() == 0)
            // The live reader keeps its slot and its snapshot.
            try env.write { txn in try txn.put(bytes("w"), forKey: bytes("k"), in: main) }
            #expect(try reader.value(forKey: bytes("k"), in: main) == bytes("v"))
        }
    }

    /// `sync()` flushes what `noSync` commits left in memory: the row is there when the file is opened again; and it
    /// reports errors instead of ignoring them (LMDB refuses to sync a read-only environment).
    @Test func syncFlushesAndReportsErrors() throws {
        try withTemporaryDirectory(prefix: "LMDBTests") { directory in
            do {
                let env = try Environment(path: directory.path, options: .init(flags: .noSync))
                let main = try env.openDatabase(named: nil)
                try env.write { txn in try txn.put(bytes("v"), forKey: bytes("k"), in: main) }
                try env.sync()
                try env.sync(force: false)
            }
            let reopened = try Environment(path: directory.path, options: .init(flags: .readOnly))
            #expect(try reopened.read { txn in try txn.value(forKey: bytes("k"), in: txn.openDatabase(named: nil)) } == bytes("v"))
            let error = #expect(throws: LMDBError.self) { try reopened.sync() }
            #expect(error?.operation == "mdb_env_sync")
        }
    }
}
