import Canopy
import CanopyCLI
import CanopyTestSupport
import Foundation
import LMDB
import Testing

@Suite("canopy: bad input gives a clear error and an exit code, never a crash")
struct BadInputTests {
    @Test("a missing path, a directory that is not a database, a file: exit 3 with what to do")
    func cannotOpen() async throws {
        let directory = try TemporaryDirectory(prefix: "canopy-cli-test")
        defer { directory.remove() }
        let missing = await canopy("info", directory.appending("nothing-here"))
        #expect(missing.status == 3)
        #expect(missing.errors.contains("does not exist"))
        #expect(missing.output.isEmpty)

        try FileManager.default.createDirectory(atPath: directory.appending("empty"), withIntermediateDirectories: false)
        let empty = await canopy("views", directory.appending("empty"))
        #expect(empty.status == 3)
        #expect(empty.errors.contains("not a Canopy database"))
        #expect(!FileManager.default.fileExists(atPath: directory.appending("empty/data.mdb")), "inspection created files")

        try Data("hello".utf8).write(to: URL(fileURLWithPath: directory.appending("file.txt")))
        let file = await canopy("info", directory.appending("file.txt"))
        #expect(file.status == 3)
        #expect(file.errors.contains("is a file"))
    }

    @Test("a file of another format where data.mdb should be: exit 3")
    func otherFormat() async throws {
        let directory = try TemporaryDirectory(prefix: "canopy-cli-test")
        defer { directory.remove() }
        let path = directory.appending("db")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        try Data(repeating: 0x5A, count: 64 * 1024).write(to: URL(fileURLWithPath: path + "/data.mdb"))
        let result = await canopy("info", path)
        #expect(result.status == 3)
        #expect(result.errors.contains("cannot open the database"))
        #expect(result.errors.contains("not an LMDB database") || result.errors.contains("LMDB"), "\(result.errors)")
    }

    @Test("a plain LMDB environment without Canopy's records: exit 3, 'not a Canopy database'")
    func plainLMDB() async throws {
        let directory = try TemporaryDirectory(prefix: "canopy-cli-test")
        defer { directory.remove() }
        let path = directory.appending("db")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        do {
            let environment = try Environment(path: path, options: EnvironmentOptions(maxDatabases: 4))
            let table = try environment.openDatabase(named: "other", create: true)
            try environment.write { txn in try txn.put(Array("v".utf8), forKey: Array("k".utf8), in: table) }
        }
        for command in ["info", "verify", "collections"] {
            let result = await canopy(command, path)
            #expect(result.status == 3, "\(command)")
            #expect(result.errors.contains("not a Canopy database"), "\(command): \(result.errors)")
        }
    }

    @Test("unknown collection, key, view, group: exit 1 naming what exists")
    func notFound() async throws {
        try await withFixture { path, _ in
            let collection = await canopy("keys", path, "nope")
            #expect(collection.status == 1)
            #expect(collection.errors.contains("no collection named 'nope'") && collection.errors.contains("memos, tasks"))
            let key = await canopy("get", path, "tasks", "zz")
            #expect(key.status == 1)
            #expect(key.errors.contains("no key 'zz' in collection 'tasks'"))
            let view = await canopy("view", path, "nope")
            #expect(view.status == 1)
            #expect(view.errors.contains("no view named 'nope'") && view.errors.contains("by-list, urgent"))
            let group = await canopy("view", path, "by-list", "--group", "garden")
            #expect(group.status == 1)
            #expect(group.errors.contains("no group 'garden'") && group.errors.contains("home, work"))
            let groups = await canopy("groups", path, "nope")
            #expect(groups.status == 1)
        }
    }

    @Test("usage errors: exit 2")
    func usage() async throws {
        #expect(await canopy("view").status == 2)
        #expect(await canopy("frobnicate", "/tmp").status == 2)
        #expect(await canopy("keys", "/tmp/x", "c", "--limit", "-1").status == 2)
        #expect(await canopy("watch", "/tmp/x", "--group", "g").status == 2)
        #expect(await canopy("import", "/tmp/x", "--codec", "xml").status == 2)
        // A page of no rows said "no rows of N" and offered "next page: --offset 0", the page it had just shown.
        let emptyPage = await canopy("view", "/tmp/x", "v", "--limit", "0")
        #expect(emptyPage.status == 2)
        #expect(emptyPage.errors.contains("--limit must be 1 or more"))
    }

    @Test("a corrupted value: get and view report it, verify fails naming it, --raw prints the bytes")
    func corruptedValue() async throws {
        try await withFixture { path, _ in
            // Overwrite the stored object of tasks/t3 with bytes no codec reads (keeping the flag byte: no metadata),
            // with a valid checksum (the codec's turn; a changed byte is the next test).
            do {
                let environment = try Environment(path: path, options: EnvironmentOptions(maxDatabases: 64))
                let collections = try environment.openDatabase(named: "canopy.collections").withChecksums
                let objects = try environment.openDatabase(named: "canopy.objects").withChecksums
                try environment.write { txn in
                    let record = try #require(try txn.value(forKey: Array("tasks".utf8), in: collections))
                    let rowKey = Array(record.prefix(4)) + Array("t3".utf8)
                    try txn.put([0, 0xFF, 0x13, 0x37, 0x00, 0x42], forKey: rowKey, in: objects)
                }
            }
            let get = await canopy("get", path, "tasks", "t3")
            #expect(get.status == 1)
            #expect(get.errors.contains("does not decode") && get.errors.contains("--raw"))
            let raw = await canopy("get", path, "tasks", "t3", "--raw")
            #expect(raw.status == 0)
            #expect(raw.output == "ff13370042\n")
            let view = await canopy("view", path, "by-list", "--json")
            #expect(view.status == 0)
            let rows = try view.json()["rows"]?.elements ?? []
            #expect(rows.first { $0["key"]?.stringValue == "t3" }?["problem"]?.stringValue?.contains("does not decode") == true)
            let verify = await canopy("verify", path)
            #expect(verify.status == 1)
            #expect(verify.output.contains("problem: the object of tasks/t3 does not decode"))
            #expect(verify.output.contains("FAILED"))
            let verifyJSON = try await canopy("verify", path, "--json").json()
            #expect(verifyJSON["ok"] == .bool(false))
            #expect(verifyJSON["problems"]?.elements.count == 1)
            let export = await canopy("export", path)
            #expect(export.status == 1)
            #expect(export.errors.contains("tasks/t3"))
        }
    }

    @Test("a stale view (rows written by a process without it): typed error naming the view and both snapshots")
    func staleView() async throws {
        try await withFixture { path, _ in
            do {
                // The app without its views: writes a row, so the views miss it.
                let database = try Database(path: path, options: .init(durability: .none))
                try await database.newConnection().readWrite { txn in
                    try txn.set(Chore(title: "Sneaky", list: "home", priority: 9, due: Date(timeIntervalSince1970: 0), estimate: 1), forKey: "t9", in: tasks)
                }
                let error = #expect(throws: CanopyError.self) { try database.newConnection().read { txn in _ = try txn.view("by-list") } }
                #expect(error?.code == .staleView)
                #expect(error?.extensionName == "by-list")
                #expect(error?.message.contains("snapshot 3") == true && error?.message.contains("snapshot 4") == true)
            }
            let view = await canopy("view", path, "by-list")
            #expect(view.status == 1)
            #expect(view.errors.contains("stale view") && view.errors.contains("'by-list'"))
            #expect(view.errors.contains("snapshot 3") && view.errors.contains("snapshot 4"))
            let views = try await canopy("views", path, "--json").json()
            #expect(views.elements.map { $0["stale"]?.boolValue } == [true, true])
            let verify = await canopy("verify", path)
            #expect(verify.status == 0)
            #expect(verify.output.contains("warning: view 'by-list' is stale"))

            // Registering the view again rebuilds it; the CLI reads it again.
            do {
                let database = try Database(path: path, options: .init(durability: .none))
                try database.register(byList())
                try database.register(urgent())
            }
            let rows = try await canopy("view", path, "by-list", "--group", "home", "--limit", "1", "--json").json()
            #expect(rows["rows"]?.elements.first?["key"]?.stringValue == "t9")
        }
    }

    @Test("a data.mdb that is a directory, or empty: every reading command exits 3 saying which, never a bare 'could not open'")
    func dataFileDirectoryOrEmpty() async throws {
        let directory = try TemporaryDirectory(prefix: "canopy-cli-test")
        defer { directory.remove() }
        let folder = directory.appending("db-folder")
        try FileManager.default.createDirectory(atPath: folder + "/data.mdb", withIntermediateDirectories: true)
        let empty = directory.appending("db-empty")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: false)
        #expect(FileManager.default.createFile(atPath: empty + "/data.mdb", contents: Data()))
        for (path, says) in [(folder, "data.mdb in the database directory is a directory"), (empty, "data.mdb is empty (0 bytes)")] {
            for command in [["stat", path], ["verify", path], ["views", path], ["export", path], ["info", path]] {
                let result = await canopy(command)
                #expect(result.status == 3 && result.errors.contains(says), "\(command): \(result.status) \(result.errors)")
            }
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: empty + "/data.mdb")).isEmpty, "the empty file stays as it was")
    }

    @Test("import --input DIR: a clear error, and no database is created")
    func importFromADirectory() async throws {
        let directory = try TemporaryDirectory(prefix: "canopy-cli-test")
        defer { directory.remove() }
        let result = await canopy("import", directory.appending("new"), "--input", directory.path)
        #expect(result.status == 1 && result.errors.contains("is a directory"), "\(result.errors)")
        #expect(!FileManager.default.fileExists(atPath: directory.appending("new")))
    }

    @Test("inspecting another program's data.mdb leaves no lock.mdb behind")
    func foreignLeavesNoLockFile() async throws {
        let directory = try TemporaryDirectory(prefix: "canopy-cli-test")
        defer { directory.remove() }
        let other = directory.appending("other")
        try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: false)
        do {
            let environment = try Environment(path: other, options: EnvironmentOptions(maxDatabases: 4))
            let table = try environment.openDatabase(named: "theirs", create: true)
            try environment.write { txn in try txn.put(Array("v".utf8), forKey: Array("k".utf8), in: table) }
        }
        let path = directory.appending("db")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        try FileManager.default.copyItem(atPath: other + "/data.mdb", toPath: path + "/data.mdb")
        for command in ["info", "verify", "keys"] {
            let result = await canopy(command == "keys" ? [command, path, "c"] : [command, path])
            #expect(result.status == 3, "\(command): \(result.errors)")
            #expect(!FileManager.default.fileExists(atPath: path + "/lock.mdb"), "\(command) left lock.mdb behind")
        }
    }

    @Test("keys, view and watch print control characters from the data escaped, never raw to the terminal")
    func controlCharactersAreEscaped() async throws {
        try await withFixture { path, _ in
            let hostile = "evil\u{1B}]0;owned\u{07}\u{1B}[2J"
            do {
                let database = try Database(path: path, options: .init(durability: .none))
                try database.register(byList())
                try database.register(urgent())
                try await database.newConnection().readWrite { txn in
                    try txn.set(Chore(title: "x", list: "home\u{1B}[31m", priority: 4, due: Date(timeIntervalSince1970: 0), estimate: 1), forKey: hostile, in: tasks)
                }
            }
            let keys = await canopy("keys", path, "tasks")
            #expect(!keys.output.contains("\u{1B}") && !keys.output.contains("\u{07}"), "\(keys.output.debugDescription)")
            #expect(keys.output.contains("evil\\u{1B}]0;owned\\u{7}\\u{1B}[2J"), "\(keys.output.debugDescription)")
            let view = await canopy("view", path, "by-list")
            #expect(!view.output.contains("\u{1B}"), "\(view.output.debugDescription)")
            #expect(view.output.contains("home\\u{1B}[31m"))
            let groups = await canopy("groups", path, "by-list")
            #expect(!groups.output.contains("\u{1B}"))
            // JSON escapes them itself.
            #expect(try await canopy("keys", path, "tasks", "--json").json().elements.contains(.string(hostile)))
        }
    }

    @Test("--limit -1 and other negative counts: exit 2 saying the value must be 0 or more (not \"missing value\")")
    func negativeCounts() async throws {
        try await withFixture { path, _ in
            let keys = await canopy("keys", path, "tasks", "--limit", "-1")
            #expect(keys.status == 2 && keys.errors.contains("--limit must be 0 or more"), "\(keys.errors)")
            let view = await canopy("view", path, "by-list", "--offset", "-3")
            #expect(view.status == 2 && view.errors.contains("--offset must be 0 or more"), "\(view.errors)")
            let verify = await canopy("verify", path, "--max-problems", "-1")
            #expect(verify.status == 2 && verify.errors.contains("--max-problems must be 1 or more"), "\(verify.errors)")
        }
    }

    @Test("watch --group of a group that does not exist yet says so, then waits for it")
    func watchMissingGroup() throws {
        guard let executable = canopyExecutable else {
            Issue.record("the canopy executable was not built next to the tests")
            return
        }
        let directory = try TemporaryDirectory(prefix: "canopy-cli-test")
        defer { directory.remove() }
        let path = directory.appending("db")
        try makeFixture(at: path)
        let errors = directory.appending("errors.txt")
        _ = FileManager.default.createFile(atPath: errors, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["watch", path, "--view", "by-list", "--group", "garden", "--count", "1", "--announce"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
        try process.run()
        defer {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        // The note comes before the announcement: once the announcement is read, the note is in the file.
        let announced = output.fileHandleForReading.availableData
        #expect(String(decoding: announced, as: UTF8.self).contains("watching"))
        let note = try String(contentsOfFile: errors, encoding: .utf8)
        #expect(note.contains("view 'by-list' has no group 'garden' yet") && note.contains("home, work"), "\(note)")
    }
}
