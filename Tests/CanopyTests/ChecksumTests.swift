import Canopy
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import LMDB
import Testing

/// Changes one byte of the stored value of `key` in `table` as a damaged disk would: in place, checksum untouched.
func flipStoredByte(path: String, table: String, key: (UnsafeRawBufferPointer) -> Bool, at offset: (Int) -> Int = { $0 / 2 }) throws {
    let environment = try Environment(path: path, options: EnvironmentOptions(maxDatabases: 64))
    let database = try environment.openDatabase(named: table)  // without checksums: the bytes as stored
    try environment.write { txn in
        var found: ([UInt8], [UInt8])?
        try txn.forEach(in: database) { storedKey, value in
            guard key(storedKey) else { return true }
            found = (Array(storedKey), Array(value))
            return false
        }
        guard let (storedKey, stored) = found else { throw CanopyError(.invalidArgument, "no such key in \(table)") }
        var value = stored
        value[offset(value.count)] ^= 0x20
        try txn.put(value, forKey: storedKey, in: database)
    }
}

@Suite("Checksums: a changed byte is corruptStore naming what, never a wrong value")
struct ChecksumTests {
    @Test("CRC32C: the standard check value, and the instruction agrees with the table on random buffers")
    func crc32c() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([]) == 0)
        var random = SeededRandom(seed: 15)
        for _ in 0..<2_000 {
            let count = Int.random(in: 0...300, using: &random)
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            let start = count == 0 ? 0 : Int.random(in: 0..<count, using: &random)  // unaligned starts
            bytes[start...].withUnsafeBytes { slice in
                let split = slice.count / 3
                let whole = CRC32C.checksum(slice)
                #expect(whole == CRC32C.portableChecksum(slice), "seed 15, \(count) bytes from \(start)")
                // In pieces, continuing: the same.
                let pieces = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: slice[split...]),
                                             continuing: CRC32C.checksum(UnsafeRawBufferPointer(rebasing: slice[..<split])))
                #expect(pieces == whole)
            }
        }
    }

    @Test("CRC32C: long buffers (checksummed as three interleaved runs of words, combined) agree with the table")
    func crc32cLongBuffers() {
        var random = SeededRandom(seed: 16)
        let bytes = (0..<20_000).map { _ in UInt8.random(in: 0...255, using: &random) }
        // Around each multiple of the three runs' 768 bytes, and random lengths up to 19 KB; unaligned starts,
        // continuing from a checksum or not.
        var lengths: [Int] = []
        for run in 1...8 {
            let end: Int = run * 768
            lengths += [end - 1, end, end + 1, end + 7, end + 8]
        }
        for _ in 0..<300 { lengths.append(Int.random(in: 700...19_000, using: &random)) }
        bytes.withUnsafeBytes { all in
            for length in lengths {
                let start = Int.random(in: 0...(all.count - length), using: &random) % 64
                let slice = UnsafeRawBufferPointer(rebasing: all[start..<(start + length)])
                let seed = Bool.random(using: &random) ? 0 : UInt32.random(in: 0...UInt32.max, using: &random)
                #expect(CRC32C.checksum(slice, continuing: seed) == CRC32C.portableChecksum(slice, continuing: seed),
                        "seed 16, \(length) bytes from \(start), continuing \(seed)")
            }
        }
    }

    @Test("A changed byte in a row, its metadata, a view page or a commit-log entry: corruptStore naming it; verify lists each; the rest reads")
    func changedBytes() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        do {
            let database = try Database(path: path, options: .init(durability: .none))
            try database.register(makeTaskView())
            try database.newConnection().readWrite { txn in
                for i in 0..<50 {
                    try txn.set(TodoItem(title: "task \(i) with a title long enough", list: "list \(i % 3)", priority: i % 5),
                                forKey: "t\(i)", in: tasks, metadata: NoteInfo(color: "red"))
                }
            }
        }
        let victim = Array("t7".utf8)
        try flipStoredByte(path: path, table: "canopy.objects", key: { $0.count == 6 && $0.suffix(2).elementsEqual(victim) })
        try flipStoredByte(path: path, table: "canopy.metadata", key: { $0.suffix(3).elementsEqual(Array("t11".utf8)) })
        try flipStoredByte(path: path, table: "ext.by-list.pages", key: { _ in true }, at: { $0 - 10 })
        try flipStoredByte(path: path, table: "canopy.commits", key: { _ in true })

        let database = try Database(path: path, options: .init(durability: .none, readOnly: true))
        let connection = database.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
        try connection.read { txn in
            let row = #expect(throws: CanopyError.self) { try txn.object(forKey: "t7", in: tasks) }
            #expect(row?.code == .corruptStore)
            #expect(row?.collection == "tasks")
            #expect(row?.key == "t7")
            #expect(row?.message.contains("checksum") == true, "\(String(describing: row))")
            let metadata = #expect(throws: CanopyError.self) { try txn.metadata(forKey: "t11", in: tasks) }
            #expect(metadata?.code == .corruptStore)
            #expect(metadata?.key == "t11")
            #expect(try txn.object(forKey: "t8", in: tasks)?.title == "task 8 with a title long enough")
            let page = #expect(throws: CanopyError.self) { _ = try txn.persistedView("by-list").checkStructure() }
            #expect(page?.code == .corruptStore)
            #expect(page?.message.contains("table 'ext.by-list.pages', page") == true, "\(String(describing: page))")
            #expect(page?.extensionName == "by-list")

            let problems = try txn.checkStoredRows().problems
            #expect(problems.contains { $0.contains("collection 'tasks', key 't7'") }, "\(problems)")
            #expect(problems.contains { $0.contains("metadata of collection 'tasks', key 't11'") }, "\(problems)")
            #expect(problems.contains { $0.contains("ext.by-list.pages") }, "\(problems)")
            #expect(problems.contains { $0.contains("commit log entry of snapshot") }, "\(problems)")
            #expect(problems.count == 4, "\(problems)")
        }
    }

    @Test("A damaged row is not overwritten blindly: the write that would drop its view entries is corruptStore, nothing changes")
    func writingOverADamagedRow() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        do {
            let database = try Database(path: path, options: .init(durability: .none))
            try database.newConnection().readWrite { txn in try txn.set(Note(title: "a"), forKey: "k", in: notes) }
        }
        try flipStoredByte(path: path, table: "canopy.objects", key: { _ in true })
        let database = try Database(path: path, options: .init(durability: .none))
        let error = #expect(throws: CanopyError.self) {
            try database.newConnection().readWrite { txn in try txn.set(Note(title: "b"), forKey: "k", in: notes) }
        }
        #expect(error?.code == .corruptStore)
        #expect(error?.key == "k")
    }
}
