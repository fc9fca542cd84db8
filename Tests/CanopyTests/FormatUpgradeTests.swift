import Canopy
import CanopyTestSupport
import Foundation
import LMDB
import Testing

/// The `reminders` database of a release that wrote canopy/3 (c908fdd: 4 items, 2 calendars, 2 views), written by
/// that release's own `reminders add` and kept gzipped in Fixtures/.
func extractCanopy3Fixture(into directory: TemporaryDirectory) throws -> String {
    try unpackGzippedDatabase(
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/canopy3-reminders.data.mdb.gz"),
        into: directory)
}

@Suite("Format canopy/3 → canopy/4: upgraded in place by a read-write open, refused read-only")
struct FormatUpgradeTests {
    @Test("Read-only: incompatibleFormat naming `canopy upgrade`, and the file is left byte for byte")
    func readOnlyRefuses() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try extractCanopy3Fixture(into: directory)
        let before = try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb"))
        let error = #expect(throws: CanopyError.self) { _ = try Database(path: path, options: .init(readOnly: true)) }
        #expect(error?.code == .incompatibleFormat)
        #expect(error?.message.contains("canopy upgrade \(path)") == true, "\(String(describing: error))")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb")) == before)
    }

    @Test("Read-write: every record sealed in one transaction; rows, metadata, views and the commit log read as before")
    func readWriteUpgrades() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try extractCanopy3Fixture(into: directory)
        do {
            let database = try Database(path: path)
            let sealed = try #require(database.upgradedRecordCount)
            #expect(sealed > 30)  // 8 rows, metadata, pages, groups, commits, info and extension records
            try database.newConnection().read { txn in
                #expect(try txn.checkStoredRows().problems == [])
                #expect(try txn.collectionNames() == ["calendars", "events", "reminders", "reminders.meta"])
                let milk = try #require(try txn.rawObject(forKey: "3", inCollection: "reminders"))
                let json = try milk.bytes.withUnsafeBytes { try Codecs.jsonText(from: $0, codecName: milk.codec) }
                #expect(json.contains("\"Buy milk\""))
                for name in ["agenda", "by-calendar"] {
                    let view = try txn.persistedView(name)
                    #expect(try view.count() == 4, "\(name)")
                    #expect(try view.checkStructure() == [], "\(name)")
                }
                // The commit log of the old format still reads (observers catch up through it).
                let snapshots = try txn.extensionSnapshots()
                #expect(snapshots.store == 15)
                #expect(snapshots.extensions.values.allSatisfy { $0 == 15 })
            }
            // Values written from now on carry checksums too.
            try database.newConnection().readWrite { txn in
                try txn.setStoredRow(objectBytes: Array("{}".utf8), metadataBytes: nil, forKey: "new", inCollection: "json-things", codecName: "json")
            }
        }
        let reopened = try Database(path: path, options: .init(readOnly: true))
        #expect(reopened.upgradedRecordCount == nil)
        try reopened.newConnection().read { txn throws in #expect(try txn.checkStoredRows().problems == []) }
    }
}
