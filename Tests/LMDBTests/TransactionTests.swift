import LMDB
import Testing

@Suite struct TransactionTests {
    private struct Rollback: Error {}

    @Test(arguments: [0, 1, 100, 2000, 5000, 100_000])
    func putGetDeleteRoundTrip(size: Int) throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            let stored = value(size, count: size)
            try env.write { txn in
                try txn.put(stored, forKey: bytes("key"), in: main)
                // A write transaction reads its own writes.
                #expect(try txn.value(forKey: bytes("key"), in: main) == stored)
            }
            try env.read { txn throws in
                #expect(try txn.value(forKey: bytes("key"), in: main) == stored)
                #expect(try txn.contains(bytes("key"), in: main))
                #expect(try txn.withValue(forKey: bytes("key"), in: main) { $0?.count } == size)
            }
            try env.write { txn throws in
                #expect(try txn.delete(bytes("key"), in: main))
                #expect(try !txn.delete(bytes("key"), in: main))
            }
            try env.read { txn throws in
                #expect(try txn.value(forKey: bytes("key"), in: main) == nil)
                #expect(try !txn.contains(bytes("key"), in: main))
                #expect(try txn.withValue(forKey: bytes("key"), in: main) { $0 == nil })
            }
        }
    }

    @Test func putOverwritesUnlessNoOverwrite() throws {
        try withEnvironment { env, _ in
            let table = try env.openDatabase(named: "table", create: true)
            try env.write { txn in
                try txn.put(bytes("one"), forKey: bytes("k"), in: table)
                try txn.put(bytes("two"), forKey: bytes("k"), in: table)
                #expect(try txn.value(forKey: bytes("k"), in: table) == bytes("two"))
                let error = expectError(.keyExists) {
                    try txn.put(bytes("three"), forKey: bytes("k"), in: table, flags: .noOverwrite)
                }
                #expect(error?.database == "table")
                #expect(try txn.value(forKey: bytes("k"), in: table) == bytes("two"))
                try txn.put(bytes("new"), forKey: bytes("other"), in: table, flags: .noOverwrite)
            }
            #expect(try env.read { try $0.count(of: table) } == 2)
        }
    }

    @Test func appendRequiresSortedKeys() throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            try env.write { txn in
                for i in 0..<100 { try txn.put(value(i, count: 8), forKey: key(i), in: main, flags: .append) }
                expectError(.keyExists) { try txn.put(bytes("v"), forKey: key(50), in: main, flags: .append) }
            }
            #expect(try env.read { try keys(of: main, in: $0) } == (0..<100).map(key))
        }
    }

    @Test func insertOrExistingInsertsOnlyNewKeys() throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            try env.write { txn in
                let first: [UInt8]? = try bytes("k").withUnsafeBytes { k in
                    try bytes("first").withUnsafeBytes { v in
                        try txn.insert(v, forKey: k, in: main) { Array($0) }
                    }
                }
                #expect(first == nil)
                let second: [UInt8]? = try bytes("k").withUnsafeBytes { k in
                    try bytes("second").withUnsafeBytes { v in
                        try txn.insert(v, forKey: k, in: main) { Array($0) }
                    }
                }
                #expect(second == bytes("first"))
            }
            #expect(try env.read { try $0.value(forKey: bytes("k"), in: main) } == bytes("first"))
        }
    }

    @Test func insertOrExistingRethrowsFromTheClosureAndReportsLMDBErrors() throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            try env.write { txn in try txn.put(bytes("v"), forKey: bytes("k"), in: main) }
            #expect(throws: Rollback.self) {
                try env.write { txn in
                    try bytes("k").withUnsafeBytes { k in
                        try bytes("w").withUnsafeBytes { v in
                            _ = try txn.insert(v, forKey: k, in: main) { _ in throw Rollback() }
                        }
                    }
                }
            }
            expectError(.badValueSize) {
                try env.write { txn in
                    try bytes("w").withUnsafeBytes { v in
                        _ = try txn.insert(v, forKey: UnsafeRawBufferPointer(start: nil, count: 0), in: main) { _ in 0 }
                    }
                }
            }
        }
    }

    @Test(arguments: [0, 1, 64, 10_000])
    func putReservingStoresWhatFillWrites(count: Int) throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            let expected = value(count, count: count)
            try env.write { txn in
                try bytes("k").withUnsafeBytes { k in
                    try txn.putReserving(count, forKey: k, in: main) { buffer in
                        #expect(buffer.count == count)
                        buffer.copyBytes(from: expected)
                    }
                }
            }
            #expect(try env.read { try $0.value(forKey: bytes("k"), in: main) } == expected)
        }
    }

    @Test func putReservingWithNoOverwriteOnAnExistingKeyFails() throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            try env.write { txn in try txn.put(bytes("old"), forKey: bytes("k"), in: main) }
            expectError(.keyExists) {
                try env.write { txn in
                    try bytes("k").withUnsafeBytes { k in
                        try txn.putReserving(3, forKey: k, in: main, flags: .noOverwrite) { _ in
                            Issue.record("fill must not run when the put fails")
                        }
                    }
                }
            }
            #expect(try env.read { try $0.value(forKey: bytes("k"), in: main) } == bytes("old"))
        }
    }

    @Test func keySizeLimits() throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            let longest = [UInt8](repeating: 0xAB, count: env.maxKeySize)
            try env.write { txn in try txn.put(bytes("v"), forKey: longest, in: main) }
            #expect(try env.read { try $0.value(forKey: longest, in: main) } == bytes("v"))

            let tooLong = [UInt8](repeating: 0xAB, count: env.maxKeySize + 1)
            let error = expectError(.badValueSize) {
                try env.write { txn in try txn.put(bytes("v"), forKey: tooLong, in: main) }
            }
            #expect(error?.operation == "mdb_put")
            #expect(error?.hint?.contains("511") == true)
            expectError(.badValueSize) { try env.write { txn in try txn.put(bytes("v"), forKey: [], in: main) } }
            expectError(.badValueSize) { _ = try env.read { try $0.value(forKey: [], in: main) } }
            // Lookups check only for the empty key: a longer one is simply absent.
            #expect(try env.read { try $0.value(forKey: tooLong, in: main) } == nil)
            #expect(try env.read { try $0.count(of: main) } == 1)
        }
    }

    @Test func writeCommitsOnReturnAndIsVisibleToLaterReads() throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            let result = try env.write { txn in
                try txn.put(bytes("v"), forKey: bytes("k"), in: main)
                return 42
            }
            #expect(result == 42)
            #expect(try env.read { try $0.value(forKey: bytes("k"), in: main) } == bytes("v"))
            #expect(env.activeTransactionCount == 0)
        }
    }

    @Test func throwingAbortsAndLeavesNothing() throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            let table = try env.openDatabase(named: "table", create: true)
            try env.write { txn in try txn.put(bytes("before"), forKey: bytes("k"), in: main) }
            #expect(throws: Rollback.self) {
                try env.write { txn in
                    try txn.put(bytes("after"), forKey: bytes("k"), in: main)
                    try txn.put(bytes("v"), forKey: bytes("new"), in: table)
                    try txn.empty(main)
                    throw Rollback()
                }
            }
            try env.read { txn throws in
                #expect(try txn.value(forKey: bytes("k"), in: main) == bytes("before"))
                #expect(try txn.count(of: table) == 0)
            }
            #expect(env.activeTransactionCount == 0)
        }
    }

    @Test func databaseCreatedInAnAbortedTransactionDoesNotExist() throws {
        try withEnvironment { env, _ in
            do {
                try env.write { txn in
                    let table = try txn.openDatabase(named: "ghost", flags: .create)
                    try txn.put(bytes("v"), forKey: bytes("k"), in: table)
                    throw Rollback()
                }
                Issue.record("The transaction should have thrown")
            } catch is Rollback {}
            let error = expectError(.notFound) { _ = try env.openDatabase(named: "ghost") }
            #expect(error?.database == "ghost")
        }
    }

    @Test func nestedCommitBecomesPartOfTheParent() throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            try env.write { txn in
                try txn.put(bytes("parent"), forKey: bytes("a"), in: main)
                let result = try txn.nested { child in
                    #expect(try child.value(forKey: bytes("a"), in: main) == bytes("parent"))
                    try child.put(bytes("child"), forKey: bytes("b"), in: main)
                    return "done"
                }
                #expect(result == "done")
                #expect(try txn.value(forKey: bytes("b"), in: main) == bytes("child"))
            }
            try env.read { txn throws in
                #expect(try txn.value(forKey: bytes("a"), in: main) == bytes("parent"))
                #expect(try txn.value(forKey: bytes("b"), in: main) == bytes("child"))
            }
        }
    }

    @Test func nestedAbortKeepsTheParentUsable() throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            try env.write { txn in
                try txn.put(bytes("parent"), forKey: bytes("a"), in: main)
                #expect(throws: Rollback.self) {
                    try txn.nested { child in
                        try child.put(bytes("child"), forKey: bytes("b"), in: main)
                        try child.put(bytes("changed"), forKey: bytes("a"), in: main)
                        throw Rollback()
                    }
                }
                #expect(txn.isOpen)
                #expect(try txn.value(forKey: bytes("a"), in: main) == bytes("parent"))
                #expect(try txn.value(forKey: bytes("b"), in: main) == nil)
                try txn.put(bytes("later"), forKey: bytes("c"), in: main)
            }
            #expect(try env.read { try keys(of: main, in: $0) } == [bytes("a"), bytes("c")])
        }
    }

    @Test func nestedTwoLevels() throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            try env.write { txn in
                try txn.nested { child in
                    try child.put(bytes("1"), forKey: bytes("child"), in: main)
                    #expect(throws: Rollback.self) {
                        try child.nested { grandchild in
                            try grandchild.put(bytes("2"), forKey: bytes("grandchild"), in: main)
                            throw Rollback()
                        }
                    }
                    try child.nested { grandchild in
                        try grandchild.put(bytes("3"), forKey: bytes("kept"), in: main)
                    }
                }
            }
            #expect(try env.read { try keys(of: main, in: $0) } == [bytes("child"), bytes("kept")])
            #expect(env.activeTransactionCount == 0)
        }
    }

    @Test func abortingTheParentDiscardsCommittedChildren() throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            #expect(throws: Rollback.self) {
                try env.write { txn in
                    try txn.nested { child in try child.put(bytes("v"), forKey: bytes("k"), in: main) }
                    throw Rollback()
                }
            }
            #expect(try env.read { try $0.count(of: main) } == 0)
        }
    }

    @Test func parentIsBlockedWhileAChildIsOpen() throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            try env.write { txn in
                try txn.nested { _ in
                    _ = expectError(.badTransaction) { try txn.put(bytes("v"), forKey: bytes("k"), in: main) }
                }
                try txn.put(bytes("v"), forKey: bytes("k"), in: main)
            }
            #expect(try env.read { try $0.count(of: main) } == 1)
        }
    }

    @Test func readSnapshotDoesNotSeeLaterCommits() throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            try env.write { txn in try txn.put(bytes("old"), forKey: bytes("k"), in: main) }
            let snapshot = try env.beginRead()
            defer { snapshot.abort() }
            try env.write { txn in
                try txn.put(bytes("new"), forKey: bytes("k"), in: main)
                try txn.put(bytes("v"), forKey: bytes("added"), in: main)
            }
            #expect(try snapshot.value(forKey: bytes("k"), in: main) == bytes("old"))
            #expect(try snapshot.value(forKey: bytes("added"), in: main) == nil)
            #expect(try snapshot.count(of: main) == 1)
            try env.read { txn throws in
                #expect(try txn.value(forKey: bytes("k"), in: main) == bytes("new"))
                #expect(txn.id == snapshot.id + 1)
            }
        }
    }

    @Test func transactionUsedAfterItsClosureFails() throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            let escapedRead = try env.read { $0 }
            let escapedWrite = try env.write { $0 }
            #expect(!escapedRead.isOpen && !escapedWrite.isOpen)
            #expect(escapedRead.id == 0)
            expectError(.badTransaction) { _ = try escapedRead.value(forKey: bytes("k"), in: main) }
            expectError(.badTransaction) { try escapedWrite.put(bytes("v"), forKey: bytes("k"), in: main) }
            expectError(.badTransaction) { _ = try escapedRead.withCursor(in: main) { _ in } }
            #expect(env.activeTransactionCount == 0)
        }
    }

    @Test func activeTransactionCountFollowsOpenTransactions() throws {
        try withEnvironment { env, _ in
            #expect(env.activeTransactionCount == 0)
            try env.read { _ in
                #expect(env.activeTransactionCount == 1)
                try env.read { _ in #expect(env.activeTransactionCount == 2) }
                try env.write { txn in
                    #expect(env.activeTransactionCount == 2)
                    // Children are not counted: they end with their parent.
                    try txn.nested { _ in #expect(env.activeTransactionCount == 2) }
                }
            }
            #expect(env.activeTransactionCount == 0)
        }
    }

    @Test func writeMapDoesNotSupportNestedTransactions() throws {
        try withEnvironment(.init(flags: .writeMap)) { env, _ in
            let main = try env.openDatabase(named: nil)
            try env.write { txn in
                expectError(.badTransaction) { try txn.nested { _ in } }
                try txn.put(bytes("v"), forKey: bytes("k"), in: main)
            }
            #expect(try env.read { try $0.count(of: main) } == 1)
        }
    }
}
