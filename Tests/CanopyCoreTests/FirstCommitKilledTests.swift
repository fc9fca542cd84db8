import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import LMDB
import Testing

/// A process killed inside the very first write transaction of a new database leaves Canopy's table names in pages
/// that no meta page leads to. The file is new, not damaged: the next open initializes it.
@Suite("A new database whose first transaction never committed")
struct FirstCommitKilledTests {
    private struct Abandon: Error {}

    @Test("Canopy's table names left by an uncommitted first transaction do not make the file 'damaged'")
    func uncommittedFirstTransaction() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        do {
            // With a write map, LMDB writes a transaction's pages straight into the file: aborting it leaves them
            // there, as a kill before the meta page is written does.
            let environment = try Environment(path: path, options: .init(flags: .writeMap, maxDatabases: 8))
            #expect(throws: Abandon.self) {
                try environment.write { txn in
                    for name in ["canopy.info", "canopy.objects"] {
                        let table = try txn.openDatabase(named: name, flags: .create)
                        try txn.put(Array("value".utf8), forKey: Array("key".utf8), in: table)
                    }
                    throw Abandon()
                }
            }
        }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb"))
        try #require(bytes.range(of: Data("canopy.objects".utf8)) != nil, "the uncommitted pages were not in the file")
        let database = try Database(path: path)
        let connection = database.newConnection()
        try connection.readWrite { txn in try txn.set(Note(title: "first"), forKey: "k", in: notes) }
        #expect(try connection.read { txn in try txn.object(forKey: "k", in: notes) } == Note(title: "first"))
    }
}
