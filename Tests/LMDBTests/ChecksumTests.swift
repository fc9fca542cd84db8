import LMDB
import Testing

@Suite("Checksummed handles: every put seals, every read checks")
struct ChecksummedDatabaseTests {
    @Test("put, insert, putReserving and cursor puts seal; get and cursors check and hide the trailer; a changed byte throws checksumMismatch naming the key")
    func roundTripAndMismatch() throws {
        try withEnvironment(.init(maxDatabases: 4)) { environment, _ in
            let raw = try environment.openDatabase(named: "t", create: true)
            let table = raw.withChecksums
            try environment.write { txn in
                try txn.put(bytes("one"), forKey: key(1), in: table)
                #expect(try key(2).withUnsafeBytes { k in try bytes("two").withUnsafeBytes { try txn.insert($0, forKey: k, in: table) { _ in 0 } } } == nil)
                #expect(try key(2).withUnsafeBytes { k in try bytes("2").withUnsafeBytes { try txn.insert($0, forKey: k, in: table) { Array($0) } } } == bytes("two"))
                try key(3).withUnsafeBytes { k in try txn.putReserving(5, forKey: k, in: table) { $0.copyBytes(from: bytes("three")) } }
                try txn.withCursor(in: table) { cursor in
                    _ = try cursor.seek(exactly: key(3))
                    try bytes("THREE").withUnsafeBytes { v in try key(3).withUnsafeBytes { try cursor.put(v, forKey: $0, flags: .current) } }
                }
                try txn.put(value(4, count: 5_000), forKey: key(4), in: table)  // an overflow page
            }
            try environment.read { txn in
                #expect(try txn.value(forKey: key(1), in: table) == bytes("one"))
                #expect(try txn.value(forKey: key(3), in: table) == bytes("THREE"))
                #expect(try txn.value(forKey: key(4), in: table) == value(4, count: 5_000))
                #expect(try txn.value(forKey: key(1), in: raw)?.count == 3 + ValueChecksum.size)
                var seen: [[UInt8]] = []
                try txn.forEach(in: table) { _, value in seen.append(Array(value)); return true }
                #expect(seen == [bytes("one"), bytes("two"), bytes("THREE"), value(4, count: 5_000)])
            }
            // A byte changed behind the handle's back (through the raw handle, trailer untouched).
            try environment.write { txn in
                var stored = try #require(try txn.value(forKey: key(2), in: raw))
                stored[1] ^= 0x04
                try txn.put(stored, forKey: key(2), in: raw)
            }
            try environment.read { txn throws in
                let get = #expect(throws: LMDBError.self) { _ = try txn.value(forKey: key(2), in: table) }
                #expect(get?.code == .checksumMismatch)
                #expect(get?.key == key(2))
                #expect(get?.database == "t")
                let scan = #expect(throws: LMDBError.self) { try txn.forEach(in: table) { _, _ in true } }
                #expect(scan?.code == .checksumMismatch)
                #expect(try txn.value(forKey: key(1), in: table) == bytes("one"))
            }
        }
    }

    @Test("A value moved under another key fails too: the checksum covers the key")
    func keyIsCovered() throws {
        try withEnvironment(.init(maxDatabases: 4)) { environment, _ in
            let raw = try environment.openDatabase(named: "t", create: true)
            try environment.write { txn in
                try txn.put(bytes("value"), forKey: key(1), in: raw.withChecksums)
                let stored = try #require(try txn.value(forKey: key(1), in: raw))
                try txn.put(stored, forKey: key(2), in: raw)
            }
            let error = try environment.read { txn in
                #expect(throws: LMDBError.self) { _ = try txn.value(forKey: key(2), in: raw.withChecksums) }
            }
            #expect(error?.code == .checksumMismatch)
        }
    }

    @Test("A duplicateSort database cannot be checksummed")
    func duplicateSortRefused() throws {
        try withEnvironment(.init(maxDatabases: 4)) { environment, _ in
            let error = #expect(throws: LMDBError.self) {
                try environment.write { txn in _ = try txn.openDatabase(named: "d", flags: [.create, .duplicateSort], checksummed: true) }
            }
            #expect(error?.code == .invalidArgument)
        }
    }
}
