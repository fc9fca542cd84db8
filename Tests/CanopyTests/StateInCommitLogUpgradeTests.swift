import Canopy
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import LMDB
import Testing

/// The `reminders` database of the build before `canopy/5` (main e9145fa, format `canopy/4`): three reminders and an
/// event in two calendars with the six views and the search index of `reminders`, the change feed enabled at snapshot 13, then a reminder
/// done and one added (snapshot 15; the commit log's last keys are feed records). Written by that build's own
/// `reminders add`, `reminders done` and `canopy changes --enable`, and kept gzipped in Fixtures/.
func extractCanopy4Fixture(into directory: TemporaryDirectory) throws -> String {
    try unpackGzippedDatabase(
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/canopy4-reminders-e9145fa.data.mdb.gz"),
        into: directory)
}

/// The bytes stored (checksum trailer included) under `key` of `table`, read with a plain LMDB environment (the
/// databases of the file must be closed).
private func storedValue(path: String, table: String, key: [UInt8]) throws -> [UInt8]? {
    let environment = try Environment(path: path, options: EnvironmentOptions(flags: [.readOnly], maxDatabases: 64))
    let database = try environment.openDatabase(named: table)
    return try environment.read { txn in try txn.value(forKey: key, in: database) }
}

/// The fixture's store and its seven extensions at snapshot 15, its rows whole: what an open of it reads, upgraded or
/// not.
private func expectFixtureState(_ txn: Canopy.ReadTransaction, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let snapshots = try txn.extensionSnapshots()
    #expect(snapshots.store == 15, sourceLocation: sourceLocation)
    #expect(snapshots.extensions.count == 7 && snapshots.extensions.values.allSatisfy { $0 == 15 }, "\(snapshots)", sourceLocation: sourceLocation)
    #expect(try txn.checkStoredRows().problems == [], sourceLocation: sourceLocation)
}

@Suite("Format canopy/4 → canopy/6: the state moves into the commit log, in place, in the opening transaction", .ownThread)
struct StateInCommitLogUpgradeTests {
    @Test("Read-only: a canopy/4 file reads as it is (state from its record), and the file is left byte for byte")
    func readOnlyReadsAsItIs() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try extractCanopy4Fixture(into: directory)
        let before = try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb"))
        do {
            let database = try Database(path: path, options: .init(readOnly: true))
            #expect(database.upgradedRecordCount == nil)
            #expect(try database.currentSnapshot() == 15)
            try database.newConnection().read { txn throws in
                try expectFixtureState(txn)
                #expect(try txn.persistedView("agenda").count() == 3)
            }
            #expect(try database.readChanges(since: 13).map(\.snapshot) == [14, 15])
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb")) == before)
    }

    @Test("Read-write: one open moves the state; snapshots, views, the log (observers) and the feed carry on; commits go on from 15")
    func readWriteMovesTheState() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try extractCanopy4Fixture(into: directory)
        do {
            let database = try Database(path: path)
            #expect(database.upgradedFromFormat == "canopy/4")
            #expect(database.upgradedRecordCount == 2 + 7)  // the newest entry, the old state record, each extension's record
            #expect(try database.currentSnapshot() == 15)
            try database.newConnection().read { txn throws in
                try expectFixtureState(txn)
                for name in ["agenda", "by-calendar"] { #expect(try txn.persistedView(name).checkStructure() == [], "\(name)") }
            }
            // An observer that was at snapshot 13 catches up from the log: the entries before the upgrade (version 1)
            // and the upgraded newest one (version 2, with the state) both read as what the commits changed.
            let observer = database.newConnection()
            try observer.pin()
            let passed = try observer.advance(since: 13)
            #expect(passed.map(\.snapshot) == [14, 15])
            #expect(passed.last?.changedObjects["reminders"] == ["4"], "\(passed)")
            #expect(try database.readChanges(since: 13).map(\.snapshot) == [14, 15])
            try database.newConnection().readWrite { txn in
                try txn.setStoredRow(objectBytes: Array("{}".utf8), metadataBytes: nil, forKey: "new", inCollection: "json-things", codecName: "json")
            }
            #expect(try observer.advance().map(\.snapshot) == [16])
            #expect(try database.readChanges(since: 15).map(\.snapshot) == [16])
        }
        // The format record says canopy/6 (the upgrade goes to this build's format in one step: the extensions' state
        // records moved too); the old state record is the marker older builds read as malformed.
        #expect(try storedValue(path: path, table: "canopy.info", key: Array("format".utf8)).map { Array($0.prefix(8)) } == Array("canopy/6".utf8))
        let marker = try #require(try storedValue(path: path, table: "canopy.info", key: Array("state".utf8)))
        #expect(marker.count < 8 + 4, "an older build must not read a snapshot from it: \(marker)")
        let reopened = try Database(path: path, options: .init(readOnly: true))
        #expect(reopened.upgradedRecordCount == nil)
        #expect(try reopened.currentSnapshot() == 16)
        try reopened.newConnection().read { txn throws in
            // Written by a process that registers none of them: the extensions lag (stale until an app catches them
            // up), as recorded in the new state.
            let snapshots = try txn.extensionSnapshots()
            #expect(snapshots.store == 16 && snapshots.extensions.count == 7 && snapshots.extensions.values.allSatisfy { $0 == 15 }, "\(snapshots)")
            #expect(try txn.checkStoredRows().problems == [])
        }
    }

    @Test("A canopy/4 log that lost the state's own commit: the upgrade's entry says its changes are unknown, so an observer reloads (snapshotMismatch), never reads 'nothing changed'")
    func lostNewestEntryIsAGap() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try extractCanopy4Fixture(into: directory)
        // A tool removes the entry of commit 15 (the state's) from the canopy/4 log, without the app's code.
        do {
            let environment = try Environment(path: path, options: EnvironmentOptions(maxDatabases: 64))
            let commits = try environment.openDatabase(named: "canopy.commits")
            let deleted = try environment.write { txn in try txn.delete(withUnsafeBytes(of: UInt64(15).bigEndian) { Array($0) }, in: commits) }
            #expect(deleted)
        }
        let database = try Database(path: path)
        #expect(database.upgradedFromFormat == "canopy/4")
        #expect(try database.currentSnapshot() == 15)
        try database.newConnection().read { txn throws in
            #expect(try txn.extensionSnapshots().extensions.values.allSatisfy { $0 == 15 })
            #expect(try txn.checkStoredRows().problems == [])
        }
        let observer = database.newConnection()
        try observer.pin()
        let error = #expect(throws: CanopyError.self) { _ = try observer.advance(since: 13) }
        #expect(error?.code == .snapshotMismatch, "\(String(describing: error))")
        // Commits after the upgrade are read as usual.
        try database.newConnection().readWrite { txn in
            try txn.setStoredRow(objectBytes: Array("{}".utf8), metadataBytes: nil, forKey: "new", inCollection: "json-things", codecName: "json")
        }
        #expect(try observer.advance(since: 15).map(\.snapshot) == [16])
    }

    @Test("A canopy/4 file open read-only here while another process upgrades it: the next read is incompatibleFormat, never a frozen snapshot",
          .timeLimit(.minutes(2)))
    func upgradedUnderAReadOnlyOpen() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try extractCanopy4Fixture(into: directory)
        let database = try Database(path: path, options: .init(readOnly: true))
        #expect(try database.currentSnapshot() == 15)
        // The child opens the file read-write (which upgrades it) and commits twice.
        try runCrashWriter(path, ["--commits", "2"], seconds: 60)
        let error = #expect(throws: CanopyError.self) { _ = try database.currentSnapshot() }
        #expect(error?.code == .incompatibleFormat)
        #expect(error?.message.contains("open it again") == true, "\(String(describing: error))")
    }

    @Test("A new store's log begins with the state of snapshot 0; a log that lost every entry is corruptStore, never snapshot 0")
    func emptyLogIsDamage() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        do {
            let database = try Database(path: path, options: .init(durability: .none))
            #expect(try database.currentSnapshot() == 0)
            try database.newConnection().readWrite { txn in
                try txn.setStoredRow(objectBytes: Array("{}".utf8), metadataBytes: nil, forKey: "a", inCollection: "things", codecName: "json")
            }
            #expect(try database.currentSnapshot() == 1)
        }
        // A tool deletes the log's entries (without the app's code): the state is gone with them.
        do {
            let environment = try Environment(path: path, options: EnvironmentOptions(maxDatabases: 64))
            let commits = try environment.openDatabase(named: "canopy.commits")
            try environment.write { txn in try txn.empty(commits) }
        }
        let error = #expect(throws: CanopyError.self) { _ = try Database(path: path, options: .init(readOnly: true)) }
        #expect(error?.code == .corruptStore, "\(String(describing: error))")
    }
}
