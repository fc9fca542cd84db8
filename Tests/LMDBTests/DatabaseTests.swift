import LMDB
import Testing

/// Named databases, their flags, emptying and dropping.
@Suite struct DatabaseTests {
    @Test func namedDatabasesAreSeparate() throws {
        try withEnvironment { env, _ in
            let a = try env.openDatabase(named: "a", create: true)
            let b = try env.openDatabase(named: "b", create: true)
            #expect(a != b)
            #expect(a.name == "a" && b.name == "b")
            #expect(try env.openDatabase(named: nil).name == nil)
            try env.write { txn in
                try txn.put(bytes("in a"), forKey: bytes("k"), in: a)
                try txn.put(bytes("in b"), forKey: bytes("k"), in: b)
            }
            try env.read { txn throws in
                #expect(try txn.value(forKey: bytes("k"), in: a) == bytes("in a"))
                #expect(try txn.value(forKey: bytes("k"), in: b) == bytes("in b"))
            }
        }
    }

    @Test func emptyKeepsTheHandleUsable() throws {
        try withEnvironment { env, _ in
            let table = try env.openDatabase(named: "table", create: true)
            try env.write { txn in
                for i in 0..<500 { try txn.put(value(i, count: 20), forKey: key(i), in: table) }
            }
            try env.write { txn in try txn.empty(table) }
            try env.read { txn throws in
                #expect(try txn.count(of: table) == 0)
                #expect(try txn.value(forKey: key(1), in: table) == nil)
            }
            try env.write { txn in try txn.put(bytes("v"), forKey: bytes("k"), in: table) }
            #expect(try env.read { try $0.count(of: table) } == 1)
            #expect(try env.openDatabase(named: "table") == table)
        }
    }

    @Test func dropDeletesTheDatabase() throws {
        try withEnvironment { env, _ in
            let table = try env.openDatabase(named: "table", create: true)
            try env.write { txn in try txn.put(bytes("v"), forKey: bytes("k"), in: table) }
            try env.write { txn in try txn.drop(table) }
            expectError(.notFound) { _ = try env.openDatabase(named: "table") }
            #expect(env.statistics().entries == 0)
            let again = try env.openDatabase(named: "table", create: true)
            #expect(try env.read { try $0.count(of: again) } == 0)
        }
    }

    @Test func droppingInAnAbortedTransactionKeepsTheDatabase() throws {
        struct Rollback: Error {}
        try withEnvironment { env, _ in
            let table = try env.openDatabase(named: "table", create: true)
            try env.write { txn in try txn.put(bytes("v"), forKey: bytes("k"), in: table) }
            #expect(throws: Rollback.self) {
                try env.write { txn in
                    try txn.drop(table)
                    throw Rollback()
                }
            }
            // LMDB closed the handle when dropping; the database survived the abort and opens again.
            expectError(.invalidArgument) { _ = try env.read { try $0.value(forKey: bytes("k"), in: table) } }
            let reopened = try env.openDatabase(named: "table")
            #expect(try env.read { try $0.value(forKey: bytes("k"), in: reopened) } == bytes("v"))
        }
    }

    @Test func droppingFreesASlotForAnotherDatabase() throws {
        try withEnvironment(.init(maxDatabases: 1)) { env, _ in
            let first = try env.openDatabase(named: "first", create: true)
            expectError(.databasesFull) { _ = try env.openDatabase(named: "second", create: true) }
            try env.write { txn in try txn.drop(first) }
            let second = try env.openDatabase(named: "second", create: true)
            try env.write { txn in try txn.put(bytes("v"), forKey: bytes("k"), in: second) }
            #expect(try env.read { try $0.count(of: second) } == 1)
        }
    }

    @Test func duplicateSortKeepsSeveralSortedValues() throws {
        try withEnvironment { env, _ in
            let tags = try env.openDatabase(named: "tags", flags: .duplicateSort, create: true)
            try env.write { txn in
                for tag in ["swift", "c", "lmdb"] { try txn.put(bytes(tag), forKey: bytes("post"), in: tags) }
                try txn.put(bytes("x"), forKey: bytes("other"), in: tags)
                expectError(.keyExists) {
                    try txn.put(bytes("c"), forKey: bytes("post"), in: tags, flags: .noDuplicateData)
                }
            }
            try env.read { txn in
                #expect(try txn.count(of: tags) == 4)
                var values: [[UInt8]] = []
                try txn.forEach(in: tags, prefix: bytes("post")) { _, value in
                    values.append(Array(value))
                    return true
                }
                #expect(values == [bytes("c"), bytes("lmdb"), bytes("swift")])
            }
            try env.write { txn throws in
                #expect(try txn.delete(bytes("post"), value: bytes("lmdb"), in: tags))
                #expect(try !txn.delete(bytes("post"), value: bytes("lmdb"), in: tags))
            }
            #expect(try env.read { try $0.count(of: tags) } == 3)
            try env.write { txn throws in #expect(try txn.delete(bytes("post"), in: tags)) }
            #expect(try env.read { try keys(of: tags, in: $0) } == [bytes("other")])
        }
    }

    @Test func reverseKeyComparesFromTheLastByte() throws {
        try withEnvironment { env, _ in
            let table = try env.openDatabase(named: "reversed", flags: .reverseKey, create: true)
            try env.write { txn in
                for word in ["ab", "ba", "ca", "cb"] { try txn.put(bytes("v"), forKey: bytes(word), in: table) }
            }
            #expect(try env.read { try keys(of: table, in: $0) } == ["ba", "ca", "ab", "cb"].map(bytes))
        }
    }

    @Test func namedDatabaseRecordIsNotPlainData() throws {
        try withEnvironment { env, _ in
            _ = try env.openDatabase(named: "plain", create: true)
            let main = try env.openDatabase(named: nil)
            expectError(.incompatible) {
                try env.write { txn in try txn.put(bytes("v"), forKey: bytes("plain"), in: main) }
            }
        }
    }
}
