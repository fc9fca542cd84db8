import Canopy
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import LMDB
import Testing

/// The `reminders` database of the build before `canopy/6` (main 323146c, format `canopy/5`): an event and three
/// reminders in two calendars with the six views and the search index of `reminders` (seven extension state records
/// in `canopy.info`), the change feed enabled at snapshot 14, then a reminder done and one added (snapshot 16). Written
/// by that build's own `reminders add`, `reminders done` and `canopy changes --enable`, and kept gzipped in Fixtures/.
func extractCanopy5Fixture(into directory: TemporaryDirectory) throws -> String {
    try unpackGzippedDatabase(
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/canopy5-reminders-323146c.data.mdb.gz"),
        into: directory)
}

/// The extensions of the fixture (six views and the search index).
private let fixtureExtensions = ["agenda", "by-calendar", "by-tag", "focus", "overdue", "search", "search-results"]

/// The bytes stored (checksum trailer included) under `key` of `table` (`nil`: LMDB's main table, which holds each
/// table's root record), read with a plain LMDB environment.
private func storedValue(path: String, table: String?, key: [UInt8]) throws -> [UInt8]? {
    let environment = try Environment(path: path, options: EnvironmentOptions(flags: [.readOnly], maxDatabases: 64))
    let database = try environment.openDatabase(named: table)
    return try environment.read { txn in try txn.value(forKey: key, in: database) }
}

/// What the fixture holds at snapshot 16, read through the views' tables and state records (upgraded or not).
private func expectFixtureViews(_ txn: Canopy.ReadTransaction, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let snapshots = try txn.extensionSnapshots()
    #expect(snapshots.store == 16, sourceLocation: sourceLocation)
    #expect(snapshots.extensions.keys.sorted() == fixtureExtensions && snapshots.extensions.values.allSatisfy { $0 == 16 },
            "\(snapshots)", sourceLocation: sourceLocation)
    for name in ["agenda", "by-calendar"] {
        let view = try txn.persistedView(name)
        #expect(try view.count() == 4, "\(name)", sourceLocation: sourceLocation)
        #expect(try view.checkStructure() == [], "\(name)", sourceLocation: sourceLocation)
    }
    #expect(try txn.persistedView("by-tag").count() == 2, sourceLocation: sourceLocation)
    // Each extension's state record is found (a view's is 20 bytes: version, next page id, next group id).
    for name in fixtureExtensions {
        let size = try txn.withExtensionState(of: name) { $0?.count }
        #expect(size == (name == "search" ? 4 : 20), "\(name): \(String(describing: size))", sourceLocation: sourceLocation)
    }
    #expect(try txn.checkStoredRows().problems == [], sourceLocation: sourceLocation)
}

@Suite("Format canopy/5 → canopy/6: the extensions' state records move into the commit log, in place, in the opening transaction",
       .ownThread)
struct ExtensionStatesInCommitLogUpgradeTests {
    @Test("Read-only: a canopy/5 file reads as it is (state records from canopy.info), and the file is left byte for byte")
    func readOnlyReadsAsItIs() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try extractCanopy5Fixture(into: directory)
        let before = try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb"))
        do {
            let database = try Database(path: path, options: .init(readOnly: true))
            #expect(database.upgradedRecordCount == nil)
            #expect(try database.currentSnapshot() == 16)
            try database.newConnection().read { txn throws in try expectFixtureViews(txn) }
            #expect(try database.readChanges(since: 14).map(\.snapshot) == [15, 16])
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb")) == before)
    }

    @Test("Read-write: one open moves the seven records into the newest entry; views, the log (observers) and the feed carry on")
    func readWriteMovesTheRecords() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try extractCanopy5Fixture(into: directory)
        let agendaBefore = try #require(try storedValue(path: path, table: "canopy.info", key: Array("ext.agenda.state".utf8)))
        do {
            let database = try Database(path: path)
            #expect(database.upgradedFromFormat == "canopy/5")
            #expect(database.upgradedRecordCount == 1 + fixtureExtensions.count)  // the newest entry, each record
            #expect(try database.currentSnapshot() == 16)
            try database.newConnection().read { txn throws in
                try expectFixtureViews(txn)
                // The record moved as it was (its checksum trailer aside).
                let agenda = try txn.withExtensionState(of: "agenda") { $0.map { Array($0) } }
                #expect(agenda.map { $0 + agendaBefore.suffix(4) } == agendaBefore)
            }
            // An observer that was at snapshot 14 catches up from the log: the entries before the upgrade (version 2)
            // and the upgraded newest one (version 3) both read as what the commits changed.
            let observer = database.newConnection()
            try observer.pin()
            let passed = try observer.advance(since: 14)
            #expect(passed.map(\.snapshot) == [15, 16])
            #expect(passed.last?.changedObjects["reminders"] == ["5"], "\(passed)")
            #expect(try database.readChanges(since: 14).map(\.snapshot) == [15, 16])
            try database.newConnection().readWrite { txn in
                try txn.setStoredRow(objectBytes: Array("{}".utf8), metadataBytes: nil, forKey: "new", inCollection: "json-things", codecName: "json")
            }
            #expect(try observer.advance().map(\.snapshot) == [17])
            #expect(try database.readChanges(since: 16).map(\.snapshot) == [17])
        }
        // The format record says canopy/6; each old record is the one-byte marker an older build reads as malformed
        // (a view's state is 20 bytes, a search index's starts with its version, 1).
        #expect(try storedValue(path: path, table: "canopy.info", key: Array("format".utf8)).map { Array($0.prefix(8)) } == Array("canopy/6".utf8))
        for name in fixtureExtensions {
            let marker = try #require(try storedValue(path: path, table: "canopy.info", key: Array("ext.\(name).state".utf8)))
            #expect(marker.count == 1 + 4 && marker.first == 6, "\(name): \(marker)")
        }
        let reopened = try Database(path: path, options: .init(readOnly: true))
        #expect(reopened.upgradedRecordCount == nil)
        #expect(try reopened.currentSnapshot() == 17)
        try reopened.newConnection().read { txn throws in
            // Written by a process that registers none of them: the extensions lag (stale until an app catches them
            // up), and their records carried on into the new state.
            let snapshots = try txn.extensionSnapshots()
            #expect(snapshots.store == 17 && snapshots.extensions.values.allSatisfy { $0 == 16 }, "\(snapshots)")
            for name in fixtureExtensions { #expect(try txn.withExtensionState(of: name) { $0 != nil }, "\(name)") }
            #expect(try txn.checkStoredRows().problems == [])
        }
    }

    @Test("A canopy/5 file open read-only here while another process upgrades it: the next read is incompatibleFormat, never a view's frozen state",
          .timeLimit(.minutes(2)))
    func upgradedUnderAReadOnlyOpen() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try extractCanopy5Fixture(into: directory)
        let database = try Database(path: path, options: .init(readOnly: true))
        #expect(try database.currentSnapshot() == 16)
        try database.newConnection().read { txn throws in #expect(try txn.persistedView("agenda").count() == 4) }
        // The child opens the file read-write (which upgrades it) and commits twice.
        try runCrashWriter(path, ["--commits", "2"], seconds: 60)
        let error = #expect(throws: CanopyError.self) { _ = try database.currentSnapshot() }
        #expect(error?.code == .incompatibleFormat)
        #expect(error?.message.contains("open it again") == true, "\(String(describing: error))")
        let viewError = #expect(throws: CanopyError.self) {
            try database.newConnection().read { txn throws in _ = try txn.persistedView("agenda").count() }
        }
        #expect(viewError?.code == .incompatibleFormat, "\(String(describing: viewError))")
    }

    @Test("A canopy/6 log whose newest entry lost the state records (a version-2 entry written by a tool) is corruptStore, never views without state")
    func newestEntryWithoutRecordsIsDamage() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try extractCanopy5Fixture(into: directory)
        _ = try Database(path: path)  // upgraded
        // A tool puts the entry of snapshot 16 back as a version-2 entry (the first byte; its checksum made anew),
        // without the app's code.
        do {
            let environment = try Environment(path: path, options: EnvironmentOptions(maxDatabases: 64))
            let commits = try environment.openDatabase(named: "canopy.commits")
            let key = withUnsafeBytes(of: UInt64(16).bigEndian) { Array($0) }
            try environment.write { txn in
                let stored = try #require(try txn.value(forKey: key, in: commits))
                var payload = key.withUnsafeBytes { key in stored.withUnsafeBytes { ValueChecksum.payload(of: $0, key: key).map { Array($0) } } } ?? []
                #expect(payload.first == 3)
                payload[0] = 2
                let sealed = key.withUnsafeBytes { key in payload.withUnsafeBytes { ValueChecksum.sealed($0, key: key) } }
                try txn.put(sealed, forKey: key, in: commits)
            }
        }
        for readOnly in [true, false] {
            let error = #expect(throws: CanopyError.self) { _ = try Database(path: path, options: .init(readOnly: readOnly)) }
            #expect(error?.code == .corruptStore, "\(String(describing: error))")
        }
    }

    /// `canopy/5` had no limit on a state record: one of 2,000 bytes (an extension of the app's own, `legacy`) moves
    /// as it is, and the upgraded file reads, writes and reopens; the extension may set the same record again, and
    /// only a different record must fit.
    @Test("A state record over the canopy/6 limit, written by canopy/5: moved as it is, read back, carried by later commits")
    func oversizedRecordMovesAsItIs() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try extractCanopy5Fixture(into: directory)
        let record = (0..<2_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        #expect(record.count > Canopy.ReadWriteTransaction.maximumExtensionStateSize)
        do {
            let environment = try Environment(path: path, options: EnvironmentOptions(maxDatabases: 64))
            let info = try environment.openDatabase(named: "canopy.info")
            let key = Array("ext.legacy.state".utf8)
            try environment.write { txn in
                let sealed = key.withUnsafeBytes { key in record.withUnsafeBytes { ValueChecksum.sealed($0, key: key) } }
                try txn.put(sealed, forKey: key, in: info)
            }
        }
        do {
            let database = try Database(path: path)
            #expect(database.upgradedFromFormat == "canopy/5")
            #expect(database.upgradedRecordCount == 2 + fixtureExtensions.count)
            let connection = database.newConnection()
            #expect(try connection.read { txn in try txn.withExtensionState(of: "legacy") { $0.map { Array($0) } } } == record)
            try connection.readWrite { txn in
                try txn.setStoredRow(objectBytes: Array("{}".utf8), metadataBytes: nil, forKey: "new", inCollection: "json-things", codecName: "json")
                // (Before: the same record set again was refused for its size.)
                try txn.setExtensionState(record, of: "legacy")
            }
            let different = #expect(throws: CanopyError.self) {
                try connection.readWrite { txn in try txn.setExtensionState(record.reversed(), of: "legacy") }
            }
            #expect(different?.code == .extensionFailed && different?.extensionName == "legacy", "\(String(describing: different))")
            #expect(try database.currentSnapshot() == 17)
        }
        let reopened = try Database(path: path, options: .init(readOnly: true))
        try reopened.newConnection().read { txn throws in
            #expect(try txn.withExtensionState(of: "legacy") { $0.map { Array($0) } } == record)
            #expect(try txn.checkStoredRows().problems == [])
        }
    }
}
