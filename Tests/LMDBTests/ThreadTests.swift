import Foundation
import LMDB
import Synchronization
import Testing

/// Read transactions and threads: the environment is always opened with `MDB_NOTLS`, so a read transaction belongs to
/// no thread and a thread may hold several.
@Suite struct ThreadTests {
    @Test func readTransactionUsedFromAnotherThread() throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            try env.write { txn in
                for i in 0..<50 { try txn.put(value(i, count: 16), forKey: key(i), in: main) }
            }
            let snapshot = try env.beginRead()
            defer { snapshot.abort() }
            // A later commit, invisible to the snapshot wherever it is used.
            try env.write { txn in try txn.put(bytes("later"), forKey: key(1000), in: main) }

            let handover = Handover(value: snapshot)
            let caller = Handover(value: pthread_self())
            let (otherThread, count, found, late) = try onAnotherThread {
                let txn = handover.value
                return (
                    pthread_equal(caller.value, pthread_self()) == 0,
                    try keys(of: main, in: txn).count,
                    try txn.value(forKey: key(7), in: main),
                    try txn.value(forKey: key(1000), in: main)
                )
            }
            #expect(otherThread)
            #expect(count == 50)
            #expect(found == value(7, count: 16))
            #expect(late == nil)
            // Back on the first thread the transaction still works.
            #expect(try snapshot.count(of: main) == 50)
        }
    }

    @Test func readTransactionBegunOnAnotherThreadEndsHere() throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            try env.write { txn in try txn.put(bytes("v"), forKey: bytes("k"), in: main) }
            let handover = try onAnotherThread { Handover(value: try env.beginRead()) }
            let txn = handover.value
            #expect(try txn.value(forKey: bytes("k"), in: main) == bytes("v"))
            #expect(env.activeTransactionCount == 1)
            txn.abort()
            #expect(!txn.isOpen)
            #expect(env.activeTransactionCount == 0)
            // Its reader slot was released: a one-slot environment would fail here otherwise.
            try env.read { _ in }
        }
    }

    @Test func oneThreadHoldsSeveralSnapshots() throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            try env.write { txn in try txn.put(bytes("1"), forKey: bytes("k"), in: main) }
            try env.read { first in
                try env.write { txn in try txn.put(bytes("2"), forKey: bytes("k"), in: main) }
                try env.read { second throws in
                    #expect(try first.value(forKey: bytes("k"), in: main) == bytes("1"))
                    #expect(try second.value(forKey: bytes("k"), in: main) == bytes("2"))
                    #expect(env.info().readersInUse >= 2)
                }
            }
        }
    }

    @Test func concurrentReadersSeeWholeCommits() throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            let keyCount = 20
            try env.write { txn in
                for i in 0..<keyCount { try txn.put(key(0), forKey: key(i), in: main) }
            }
            let problems = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 3) { worker in
                do {
                    if worker == 0 {
                        // Every commit sets all keys to the same new version.
                        for version in 1...100 {
                            try env.write { txn in
                                for i in 0..<keyCount { try txn.put(key(version), forKey: key(i), in: main) }
                            }
                        }
                    } else {
                        for _ in 0..<200 {
                            let versions = try env.read { txn in
                                try (0..<keyCount).map { try txn.value(forKey: key($0), in: main) }
                            }
                            if Set(versions).count != 1 {
                                problems.withLock { $0.append("mixed versions \(versions)") }
                            }
                        }
                    }
                } catch {
                    problems.withLock { $0.append("\(error)") }
                }
            }
            #expect(problems.withLock { $0 } == [])
            #expect(try env.read { try $0.value(forKey: key(0), in: main) } == key(100))
        }
    }

    @Test func setMapSizeNeverRemapsUnderATransactionOfAnotherThread() throws {
        try withEnvironment(.init(mapSize: 4 << 20)) { env, _ in
            let main = try env.openDatabase(named: nil)
            try env.write { txn in
                for i in 0..<100 { try txn.put(value(i, count: 64), forKey: key(i), in: main) }
            }
            let problems = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 3) { worker in
                do {
                    if worker == 0 {
                        // Each resize either happens with no transaction open, or is refused as busy.
                        for round in 0..<1000 {
                            do {
                                try env.setMapSize((round.isMultiple(of: 2) ? 8 : 4) << 20)
                            } catch let error as LMDBError where error.code == .busy {}
                        }
                    } else {
                        for round in 0..<1000 {
                            let i = (round * 7 + worker) % 100
                            let found = try env.read { txn in try txn.value(forKey: key(i), in: main) }
                            // These read the map outside any transaction.
                            if env.statistics().entries != 100 || env.info().lastTransactionID < 1 {
                                problems.withLock { $0.append("wrong figures") }
                            }
                            if found != value(i, count: 64) { problems.withLock { $0.append("wrong value for \(i)") } }
                        }
                    }
                } catch {
                    problems.withLock { $0.append("\(error)") }
                }
            }
            #expect(problems.withLock { $0 } == [])
            #expect([4 << 20, 8 << 20].contains(env.mapSize))
            #expect(env.activeTransactionCount == 0)
        }
    }
}
