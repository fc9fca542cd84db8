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

    @Test("A cursor's reserving put replaces the value at the cursor in place (same size, longer, shorter, an overflow value), sealed in a checksummed database and as is in a raw one; the cursor stays on the entry", arguments: [true, false])
    func cursorPutReserving(checksummed: Bool) throws {
        try withEnvironment(.init(maxDatabases: 4)) { environment, _ in
            let raw = try environment.openDatabase(named: "t", create: true)
            let table = checksummed ? raw.withChecksums : raw
            let replacements: [(key: Int, value: [UInt8])] = [
                (1, bytes("ONE")), (2, bytes("a longer value than before")), (3, bytes("3")), (4, value(4, count: 6_000)), (5, bytes("short")),
            ]
            try environment.write { txn throws in
                for index in 1...3 { try txn.put(bytes("v\(index)x"), forKey: key(index), in: table) }
                try txn.put(bytes("four"), forKey: key(4), in: table)
                try txn.put(value(5, count: 5_000), forKey: key(5), in: table)  // an overflow page, replaced by a short value
                try txn.withCursor(in: table) { cursor throws in
                    for (index, replacement) in replacements {
                        _ = try cursor.seek(exactly: key(index))
                        try key(index).withUnsafeBytes { k throws in
                            try cursor.putReserving(replacement.count, forKey: k, flags: .current) { $0.copyBytes(from: replacement) }
                        }
                        #expect(try cursor.current().map { Array($0.key) } == key(index))
                    }
                }
            }
            try environment.read { txn throws in
                for (index, replacement) in replacements {
                    #expect(try txn.value(forKey: key(index), in: table) == replacement)
                    #expect(try txn.value(forKey: key(index), in: raw)?.count == replacement.count + (checksummed ? ValueChecksum.size : 0))
                }
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
