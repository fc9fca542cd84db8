import CanopyCLI
import CanopyTestSupport
import Foundation
import LMDB
import Testing

@Suite("canopy on damaged files and the previous format: a report or a typed error that says what to do")
struct DamagedDatabaseTests {
    /// Changes one byte of a stored value in place (checksum untouched), as a damaged disk would.
    func flipByte(_ path: String, table: String, keySuffix: [UInt8]) throws {
        let environment = try Environment(path: path, options: EnvironmentOptions(maxDatabases: 64))
        let database = try environment.openDatabase(named: table)
        try environment.write { txn in
            var found: ([UInt8], [UInt8])?
            try txn.forEach(in: database) { key, value in
                if key.count > keySuffix.count, key.suffix(keySuffix.count).elementsEqual(keySuffix) { found = (Array(key), Array(value)) }
                return found == nil
            }
            guard let (key, stored) = found else { throw CLIFailure(.failed, "no key ending in \(keySuffix) in \(table)") }
            var value = stored
            value[value.count / 2] ^= 0x01
            try txn.put(value, forKey: key, in: database)
        }
    }

    @Test("a changed byte in a row: get is a corruptStore naming collection and key; verify lists it and fails; other rows read")
    func changedByte() async throws {
        try await withFixture { path, _ in
            try flipByte(path, table: "canopy.objects", keySuffix: Array("t3".utf8))
            let get = await canopy("get", path, "tasks", "t3")
            #expect(get.status == 1)
            #expect(get.errors.contains("corruptStore") && get.errors.contains("'tasks'") && get.errors.contains("'t3'") && get.errors.contains("checksum"), "\(get.errors)")
            #expect(await canopy("get", path, "tasks", "t1").status == 0)
            let verify = await canopy("verify", path)
            #expect(verify.status == 1)
            #expect(verify.output.contains("problem: the row of collection 'tasks', key 't3' (table 'canopy.objects') does not match its checksum"), "\(verify.output)")
            #expect(verify.output.contains("FAILED"))
        }
    }

    @Test("a truncated data.mdb: every command says so with both sizes and exits 1, never a signal")
    func truncated() async throws {
        try await withFixture { path, _ in
            let file = URL(fileURLWithPath: path + "/data.mdb")
            let bytes = try Data(contentsOf: file)
            try bytes.prefix(bytes.count / 2).write(to: file)
            for command in [["info", path], ["verify", path], ["get", path, "tasks", "t1"], ["view", path, "by-list"]] {
                let result = await canopy(command)
                #expect(result.status == 1, "\(command)")
                #expect(result.errors.contains("data.mdb is truncated: \(bytes.count / 2) bytes, the database needs") && result.errors.contains("restore a backup"), "\(command): \(result.errors)")
            }
        }
    }

    @Test("a meta page that lost the main table: 'damaged', never 'not a Canopy database' nor the advice to adopt it")
    func damagedIsNotForeign() async throws {
        try await withFixture { path, _ in
            let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path + "/data.mdb"))
            for page in 0..<2 {  // the main table's MDB_db in both meta pages: depth … entries 0, root P_INVALID
                try handle.seek(toOffset: UInt64(page * 4096 + 94))
                try handle.write(contentsOf: [UInt8](repeating: 0, count: 34) + [UInt8](repeating: 0xFF, count: 8))
            }
            try handle.close()
            let info = await canopy("info", path)
            #expect(info.status != 0)
            #expect(info.errors.contains("damaged Canopy database"), "\(info.errors)")
            #expect(!info.errors.contains("not a Canopy database") && !info.errors.contains("adoptForeignEnvironment"), "\(info.errors)")
            #expect(info.errors.contains("restore a backup"))
        }
    }

    @Test("a canopy/3 database: read-only commands refuse it naming `canopy upgrade`; upgrade seals it; verify is ok")
    func upgrade() async throws {
        let directory = try TemporaryDirectory(prefix: "canopy-cli-test")
        defer { directory.remove() }
        let path = directory.appending("db")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        let gunzip = Process()
        gunzip.executableURL = URL(fileURLWithPath: "/bin/sh")
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../CanopyTests/Fixtures/canopy3-reminders.data.mdb.gz").standardizedFileURL.path
        gunzip.arguments = ["-c", "gzip -dc '\(fixture)' > '\(path)/data.mdb'"]
        try gunzip.run()
        gunzip.waitUntilExit()
        #expect(gunzip.terminationStatus == 0)
        let info = await canopy("info", path)
        #expect(info.status == 3)
        #expect(info.errors.contains("canopy upgrade"), "\(info.errors)")
        let upgrade = await canopy("upgrade", path)
        #expect(upgrade.status == 0, "\(upgrade.errors)")
        #expect(upgrade.output.contains("upgraded") && upgrade.output.contains("records checksummed"), "\(upgrade.output)")
        let verify = await canopy("verify", path)
        #expect(verify.status == 0, "\(verify.output)")
        #expect(verify.output.contains("agenda (4 entries)"), "\(verify.output)")
        #expect(await canopy("upgrade", path).output.contains("already in format canopy/6"))
    }

    @Test("a canopy/5 database: read-only commands read it as it is; upgrade moves the extensions' state records; views and verify read the same")
    func upgradeFromCanopy5() async throws {
        let directory = try TemporaryDirectory(prefix: "canopy-cli-test")
        defer { directory.remove() }
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../CanopyTests/Fixtures/canopy5-reminders-323146c.data.mdb.gz").standardizedFileURL
        let path = try unpackGzippedDatabase(fixture, into: directory)
        let before = await canopy("views", path)
        #expect(before.status == 0, "\(before.errors)")
        #expect(before.output.contains("agenda") && before.output.contains("current"), "\(before.output)")
        let upgrade = await canopy("upgrade", path)
        #expect(upgrade.status == 0, "\(upgrade.errors)")
        #expect(upgrade.output.contains("from canopy/5 to canopy/6: 8 records rewritten (the extensions' state records moved into the commit log)"), "\(upgrade.output)")
        #expect(await canopy("views", path).output == before.output)
        let verify = await canopy("verify", path)
        #expect(verify.status == 0, "\(verify.output)")
        #expect(verify.output.contains("agenda (4 entries)"), "\(verify.output)")
    }
}
