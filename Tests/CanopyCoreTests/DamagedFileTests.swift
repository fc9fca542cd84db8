import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import LMDB
import Testing

/// Writes `bytes` at `offset` of both meta pages (pages 0 and 1) of the data file at `path`.
func patchMetaPages(path: String, offset: Int, bytes: [UInt8]) throws {
    let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path + "/data.mdb"))
    defer { try? handle.close() }
    for page in 0..<2 {
        try handle.seek(toOffset: UInt64(page * 4096 + offset))
        try handle.write(contentsOf: bytes)
    }
}

/// A database of `rows` notes at `directory/db`, closed.
func makeClosedDatabase(in directory: TemporaryDirectory, rows: Int = 2_000) throws -> String {
    let path = directory.appending("db")
    let database = try Database(path: path, options: .init(durability: .none))
    try database.newConnection().readWrite { txn in
        for i in 0..<rows { try txn.set(Note(title: "note \(i)", body: String(repeating: "b", count: 100)), forKey: "k\(i)", in: notes) }
    }
    return path
}

@Suite("Damaged files: truncated, broken meta pages — corruptStore, never a signal, never taken for foreign")
struct DamagedFileTests {
    @Test("A truncated data.mdb (random lengths, seeded): a typed error naming both sizes before LMDB maps it, or all rows read")
    func truncated() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try makeClosedDatabase(in: directory)
        let original = try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb"))
        var random = SeededRandom(seed: 2)
        var refused = 0
        for round in 0..<40 {
            let length = round == 0 ? original.count / 2 : Int.random(in: 1..<original.count, using: &random)
            try original.prefix(length).write(to: URL(fileURLWithPath: path + "/data.mdb"))
            for readOnly in [true, false] {
                do {
                    let database = try Database(path: path, options: .init(durability: .none, readOnly: readOnly))
                    #expect(try database.newConnection().read { txn in try txn.count(inCollection: "notes") } == 2_000)
                } catch let error as CanopyError {
                    refused += 1
                    #expect(error.code == .corruptStore || error.code == .cannotOpen, "seed 2, length \(length): \(error)")
                    if error.code == .corruptStore {
                        #expect(error.message.contains("data.mdb is truncated: \(length) bytes, the database needs"), "seed 2, length \(length): \(error)")
                        #expect(error.message.contains("restore a backup"))
                    }
                }
            }
        }
        #expect(refused >= 60)
        // Below LMDB too: the environment is not opened.
        try original.prefix(original.count / 3).write(to: URL(fileURLWithPath: path + "/data.mdb"))
        let error = #expect(throws: LMDBError.self) { _ = try Environment(path: path, options: .init(flags: .readOnly)) }
        #expect(error?.code == .fileTruncated)
    }

    @Test("Broken meta pages (no LMDB magic): a damaged Canopy database, not 'not an LMDB file'")
    func brokenMagic() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try makeClosedDatabase(in: directory, rows: 10)
        try patchMetaPages(path: path, offset: 16, bytes: [0, 0, 0, 0])
        for readOnly in [true, false] {
            let error = #expect(throws: CanopyError.self) { _ = try Database(path: path, options: .init(readOnly: readOnly)) }
            #expect(error?.code == .corruptStore)
            #expect(error?.message.contains("damaged Canopy database") == true, "\(String(describing: error))")
        }
    }

    @Test("A meta page whose main table is lost: corruptStore, never initialized as new, adopted or called foreign; nothing written")
    func lostMainTable() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try makeClosedDatabase(in: directory, rows: 10)
        // The main table (MDB_db at byte 88 of each meta page): depth, page counts and entries 0, root P_INVALID.
        try patchMetaPages(path: path, offset: 94, bytes: [UInt8](repeating: 0, count: 34) + [UInt8](repeating: 0xFF, count: 8))
        let before = try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb"))
        for options in [DatabaseOptions(readOnly: true), DatabaseOptions(), DatabaseOptions(adoptForeignEnvironment: true)] {
            let error = #expect(throws: CanopyError.self) { _ = try Database(path: path, options: options) }
            #expect(error?.code == .corruptStore, "\(options)")
            #expect(error?.message.contains("damaged Canopy database") == true, "\(String(describing: error))")
            #expect(error?.message.contains("adoptForeignEnvironment") == false)
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb")) == before)
    }

    /// A meta page whose last used page is the largest number: the size it needs cannot be told, and the message
    /// saying so added one to that number (an overflow trap: opening the file ended the process with SIGILL).
    @Test("A meta page naming the last page 2^64 - 1: the truncated-file error, not a trap")
    func lastPageAtTheLimit() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try makeClosedDatabase(in: directory, rows: 10)
        try patchMetaPages(path: path, offset: 136, bytes: [UInt8](repeating: 0xFF, count: 8))
        for readOnly in [true, false] {
            let error = #expect(throws: CanopyError.self) { _ = try Database(path: path, options: .init(readOnly: readOnly)) }
            #expect(error?.code == .corruptStore, "\(String(describing: error))")
            #expect(error?.message.contains("data.mdb is truncated") == true, "\(String(describing: error))")
        }
    }
}
