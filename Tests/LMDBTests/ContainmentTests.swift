import CanopyTestSupport
import Foundation
import LMDB
import Testing

/// A data file damaged in the ways that make liblmdb crash (a node offset or size that runs off the file, a zeroed
/// leaf page reached from its sibling), read in this process: each crash becomes ``LMDBError/Code/crashContained``,
/// later calls ``LMDBError/Code/environmentDamaged``, and the process carries on.
///
/// Without containment (`CANOPY_LMDB_CONTAINMENT=off`) these tests end the test process by SIGBUS or SIGABRT.
@Suite("Crashes inside liblmdb: contained, typed, the environment closed for the process")
struct ContainmentTests {
    static let pageSize = 4096

    /// LMDB's page header (`mdb.c`, 64-bit): page number (8 bytes), padding (2), flags (2), lower (2), upper (2), then
    /// the node offsets (2 bytes each). A leaf node: data size low and high halves (2 + 2), flags (2), key size (2),
    /// key, data.
    enum PageFlag: UInt16 {
        case branch = 1
        case leaf = 2
    }

    /// Writes `count` entries of `valueSize` bytes (keys 0..<count) into table "t" of a new environment at `path`,
    /// and closes it.
    static func makeEnvironment(at path: String, count: Int, valueSize: Int = 100) throws {
        let environment = try Environment(path: path, options: .init(maxDatabases: 4))
        let table = try environment.openDatabase(named: "t", create: true)
        try environment.write { txn in
            for number in 0..<count { try txn.put(value(number, count: valueSize), forKey: key(number), in: table) }
        }
    }

    /// The numbers of the pages of `data` with `flag` whose first node's key is 4 bytes long (table "t"'s pages; the
    /// main table's keys are table names).
    static func pages(_ flag: PageFlag, in data: [UInt8]) -> [Int] {
        (2..<(data.count / pageSize)).filter { page in
            let base = page * pageSize
            guard UInt16(data[base + 10]) | UInt16(data[base + 11]) << 8 == flag.rawValue else { return false }
            let node = base + Int(data[base + 16]) | Int(data[base + 17]) << 8
            guard flag == .leaf, node + 8 <= data.count else { return flag == .branch }
            return Int(data[node + 6]) | Int(data[node + 7]) << 8 == 4
        }
    }

    static func damage(_ path: String, _ change: (inout [UInt8]) throws -> Void) throws {
        let file = URL(fileURLWithPath: path + "/data.mdb")
        var data = try [UInt8](Data(contentsOf: file))
        try change(&data)
        try Data(data).write(to: file)
    }

    /// Runs `body` on an environment of `count` entries (``makeEnvironment(at:count:valueSize:)``) whose data file
    /// `change` damaged, opened again, with its table "t" and the data file's path.
    static func withDamagedEnvironment(
        count: Int, _ change: (inout [UInt8]) throws -> Void, _ body: (Environment, Database, String) throws -> Void
    ) throws {
        try withTemporaryDirectory(prefix: "LMDBTests") { directory in
            try makeEnvironment(at: directory.path, count: count)
            try damage(directory.path, change)
            let environment = try Environment(path: directory.path, options: .init(maxDatabases: 4))
            try body(environment, try environment.openDatabase(named: "t"), directory.path + "/data.mdb")
        }
    }

    /// Sets every node offset of table "t"'s first leaf page to the page's far end: 64 KiB past a page of a file of a
    /// few pages.
    static func pointNodesPastTheFile(_ data: inout [UInt8]) throws {
        let leaf = try #require(pages(.leaf, in: data).first)
        let lower = Int(data[leaf * pageSize + 12]) | Int(data[leaf * pageSize + 13]) << 8
        for slot in stride(from: 16, to: lower, by: 2) {
            data[leaf * pageSize + slot] = 0xFE
            data[leaf * pageSize + slot + 1] = 0xFF
        }
    }

    /// Where the node of `key` starts in `data` (on table "t"'s first leaf page), or `nil`.
    static func node(of key: [UInt8], in data: [UInt8]) throws -> Int? {
        let base = try #require(pages(.leaf, in: data).first) * pageSize
        let lower = Int(data[base + 12]) | Int(data[base + 13]) << 8
        return stride(from: 16, to: lower, by: 2).lazy
            .map { slot in base + (Int(data[base + slot]) | Int(data[base + slot + 1]) << 8) }
            .first { node in Array(data[node + 8..<node + 12]) == key }
    }

    @Test("node offsets past the end of the file: SIGBUS inside LMDB becomes crashContained; every later call, writes too, environmentDamaged")
    func faultPastTheFile() throws {
        try Self.withDamagedEnvironment(count: 20, Self.pointNodesPastTheFile) { environment, table, file in
            let before = try Data(contentsOf: URL(fileURLWithPath: file))
            #expect(!environment.isDamaged)
            let crash = expectError(.crashContained) { try environment.read { txn in _ = try txn.value(forKey: key(0), in: table) } }
            #expect(crash?.hint?.contains("SIGBUS") == true, "\(String(describing: crash))")
            #expect(crash?.hint?.contains("past its end") == true, "\(String(describing: crash))")
            #expect(crash?.hint?.contains("Restore the database from a backup") == true)
            #expect(crash?.database == "t")
            #expect(environment.isDamaged)
            #expect(environment.activeTransactionCount == 0)
            // Nothing runs LMDB on it again: reads, writes, a new table.
            let later = expectError(.environmentDamaged) { try environment.read { txn in _ = try txn.value(forKey: key(5), in: table) } }
            #expect(later?.hint?.contains("SIGBUS") == true, "\(String(describing: later))")
            expectError(.environmentDamaged) { try environment.write { txn in try txn.put(bytes("x"), forKey: key(99), in: table) } }
            expectError(.environmentDamaged) { _ = try environment.openDatabase(named: "u", create: true) }
            expectError(.environmentDamaged) { try environment.setMapSize(128 << 20) }
            #expect(environment.writeLockHolder() == nil)
            #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == before)
        }
    }

    @Test("a crash inside a write transaction is contained and ends it: the write lock is released, nothing is written")
    func faultInWrite() throws {
        try Self.withDamagedEnvironment(count: 20, Self.pointNodesPastTheFile) { environment, table, file in
            let before = try Data(contentsOf: URL(fileURLWithPath: file))
            expectError(.crashContained) { try environment.write { txn in try txn.put(bytes("new"), forKey: key(7), in: table) } }
            #expect(environment.activeTransactionCount == 0)
            #expect(environment.writeLockHolder() == nil)
            expectError(.environmentDamaged) { try environment.write { txn in try txn.put(bytes("new"), forKey: key(7), in: table) } }
            #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == before)
        }
    }

    @Test("a zeroed leaf page reached from its sibling: LMDB's failed assertion (abort) becomes crashContained naming it")
    func failedAssertion() throws {
        try Self.withDamagedEnvironment(count: 400, { data in
            let leaves = Self.pages(.leaf, in: data)
            try #require(leaves.count >= 3, "\(leaves)")
            let page = leaves.sorted()[1]
            for offset in page * Self.pageSize..<(page + 1) * Self.pageSize { data[offset] = 0 }
        }) { environment, table, _ throws in
            var read = 0
            let crash = expectError(.crashContained) {
                try environment.read { txn in try txn.forEach(in: table) { _, _ in read += 1; return true } }
            }
            #expect(crash?.hint?.contains("Assertion") == true, "\(String(describing: crash))")
            #expect(read > 0 && read < 400)
            expectError(.environmentDamaged) { try environment.read { txn in _ = try txn.count(of: table) } }
        }
    }

    @Test("a read-ahead bounded by a prefix reads nothing past the first key outside it: a damaged leaf further on is not reached, the environment stays usable")
    func readAheadStopsAtThePrefixEnd() throws {
        var firstOfDamaged = 0
        try Self.withDamagedEnvironment(count: 400, { data in
            let leaves = Self.pages(.leaf, in: data)
            try #require(leaves.count >= 3, "\(leaves)")
            let page = leaves.sorted()[1]
            // The key of the zeroed leaf's first node (4 bytes, big-endian): the scan below ends two keys before it.
            let base = page * Self.pageSize
            let node = base + (Int(data[base + 16]) | Int(data[base + 17]) << 8)
            firstOfDamaged = data[node + 8..<node + 12].reduce(0) { $0 << 8 | Int($1) }
            for offset in base..<base + Self.pageSize { data[offset] = 0 }
        }) { environment, table, _ throws in
            try #require(firstOfDamaged >= 2, "\(firstOfDamaged)")
            // A scan of the one key two before the damaged leaf: a step-by-step scan reads it and the key after it
            // (outside the prefix), then stops. The read-ahead asks for 4 entries, which would run into the damaged
            // leaf (an assertion in LMDB, contained, the environment damaged for the process) without the bound.
            let prefix = key(firstOfDamaged - 2)
            var visited: [[UInt8]] = []
            try environment.read { txn in
                try txn.withCursor(in: table) { cursor in
                    try prefix.withUnsafeBytes { prefix in
                        var entry = try cursor.seek(atOrAfter: prefix)
                        var batch = Cursor.ReadAhead(capacity: 64)
                        var index = 0
                        while let found = entry, ReadTransaction.key(found.key, startsWith: prefix) {
                            visited.append(Array(found.key))
                            index += 1
                            if index >= batch.count {
                                index = 0
                                _ = try cursor.readAhead(into: &batch, prefix: prefix)
                            }
                            entry = batch.entry(at: index)
                        }
                        #expect(batch.count == 1 && batch.entry(at: 0).map { Array($0.key) } == key(firstOfDamaged - 1))
                        #expect(try cursor.readAhead(into: &batch, prefix: prefix) == false)
                    }
                }
            }
            #expect(visited == [prefix])
            #expect(!environment.isDamaged)
            #expect(try environment.read { txn in try txn.value(forKey: key(0), in: table) } == value(0, count: 100))
        }
    }

    @Test("a node whose value size runs past the file: valueOutsideFile before anything reads it; the environment stays usable")
    func valuePastTheFile() throws {
        try Self.withDamagedEnvironment(count: 20, { data in
            // Key 3's node: its data size (the first 4 bytes) becomes 4 GiB - 1.
            let node = try #require(try Self.node(of: key(3), in: data))
            for offset in node..<node + 4 { data[offset] = 0xFF }
        }) { environment, table, _ throws in
            for checksummed in [false, true] {
                let handle = checksummed ? table.withChecksums : table
                let get = expectError(.valueOutsideFile) { try environment.read { txn in _ = try txn.value(forKey: key(3), in: handle) } }
                #expect(get?.key == key(3))
                #expect(get?.hint?.contains("4294967295 bytes") == true, "\(String(describing: get))")
            }
            // A walk stops at it (with checksums the walk would stop at the first value, written without a trailer).
            var walked: [[UInt8]] = []
            let walk = expectError(.valueOutsideFile) {
                try environment.read { txn in try txn.forEach(in: table) { key, _ in walked.append(Array(key)); return true } }
            }
            #expect(walk?.key == key(3))
            #expect(walked == (0..<3).map { key($0) })
            #expect(!environment.isDamaged)
            #expect(try environment.read { txn in try txn.value(forKey: key(4), in: table) } == value(4, count: 100))
        }
    }

    @Test("a node flagged as duplicate data in a table without duplicates: LMDB's null pointer (SIGSEGV near 0) becomes crashContained")
    func nullPointerFromDamagedFlags() throws {
        try Self.withDamagedEnvironment(count: 20, { data in
            data[try #require(try Self.node(of: key(3), in: data)) + 4] = 0x04  // F_DUPDATA
        }) { environment, table, _ throws in
            #expect(try environment.read { txn in try txn.value(forKey: key(2), in: table) } == value(2, count: 100))
            let crash = expectError(.crashContained) { try environment.read { txn in _ = try txn.value(forKey: key(3), in: table) } }
            #expect(crash?.damage?.contains("SIGSEGV at address") == true, "\(String(describing: crash))")
            #expect(crash?.damage?.contains("in mdb_get of database 't'") == true, "\(String(describing: crash))")
            let later = expectError(.environmentDamaged) { try environment.read { txn in _ = try txn.value(forKey: key(2), in: table) } }
            #expect(later?.damage == crash?.damage)
        }
    }

    @Test("crashes are contained in this process (the handlers are installed unless CANOPY_LMDB_CONTAINMENT=off)")
    func enabled() {
        #expect(Environment.containsCrashes == (ProcessInfo.processInfo.environment["CANOPY_LMDB_CONTAINMENT"] != "off"))
    }
}
