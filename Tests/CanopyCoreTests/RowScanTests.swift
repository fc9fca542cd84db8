import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import LMDB
import Testing

/// The row scan every population reads: each stored row is visited or refused, never left out without a word.
@Suite("Row scan: a row of an unrecorded collection is damage, not a row to skip")
struct RowScanTests {
    /// Copies row `k1`'s record under the collection id `id` (recorded by no collection) as `key`, with a valid
    /// checksum: what a file changed outside Canopy holds, as a damaged disk or a foreign tool leaves it.
    static func addRow(ofCollectionID id: UInt32, key: String, at path: String) throws {
        let environment = try Environment(path: path, options: EnvironmentOptions(maxDatabases: 64))
        try environment.write { txn in
            let objects = try txn.openDatabase(named: "canopy.objects", checksummed: true)
            var existing: [UInt8]?
            try txn.forEach(in: objects) { _, value in
                existing = Array(value)
                return false
            }
            let record = try #require(existing)
            var rowKey: [UInt8] = []
            withUnsafeBytes(of: id.bigEndian) { rowKey.append(contentsOf: $0) }
            rowKey.append(contentsOf: key.utf8)
            try txn.put(record, forKey: rowKey, in: objects)
        }
    }

    @Test("a row whose collection id no record holds ends the scan with corruptStore naming its key (all rows or a collection)")
    func unrecordedCollection() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try makeClosedDatabase(in: directory, rows: 20)
        try Self.addRow(ofCollectionID: 99, key: "ghost", at: path)
        let database = try Database(path: path, options: .init(durability: .none))
        for collections in [nil, Set(["notes"])] as [Set<String>?] {
            var visited = 0
            let error = #expect(throws: CanopyError.self) {
                try database.newConnection().read { txn in
                    try txn.scanRows(inCollections: collections) { _ in
                        visited += 1
                        return true
                    }
                }
            }
            #expect(error?.code == .corruptStore, "\(String(describing: error))")
            #expect(error?.message.contains("'ghost'") == true && error?.message.contains("collection id 99") == true, "\(String(describing: error))")
            // (The id sorts after the notes' rows: they were visited before the scan reached it.)
            #expect(visited == 20)
        }
        // `canopy verify`'s check names it too.
        let report = try database.newConnection().read { txn in try txn.checkStoredRows() }
        #expect(report.problems.contains { $0.contains("'ghost'") && $0.contains("unknown collection id") }, "\(report.problems)")
    }

    @Test("an intact database scans every row")
    func intact() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try makeClosedDatabase(in: directory, rows: 20)
        let database = try Database(path: path, options: .init(durability: .none))
        var visited = 0
        try database.newConnection().read { txn in
            try txn.scanRows { _ in
                visited += 1
                return true
            }
        }
        #expect(visited == 20)
    }
}
