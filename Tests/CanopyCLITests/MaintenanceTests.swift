import Canopy
import CanopyCLI
import CanopyTestSupport
import Foundation
import Synchronization
import Testing

@Suite("canopy: backup, export and import", .ownThread)
struct MaintenanceTests {
    @Test("backup (plain and compact) makes a copy that verify accepts and that holds the same rows and views", arguments: [false, true])
    func backup(compact: Bool) async throws {
        try await withFixture { path, directory in
            let destination = directory.appending("copy")
            let result = await canopy(["backup", path, destination] + (compact ? ["--compact"] : []))
            #expect(result.status == 0, "\(result.errors)")
            #expect(result.output.contains("copied to \(destination)"))
            let verify = try await canopy("verify", destination, "--json").json()
            #expect(verify["ok"] == .bool(true))
            #expect(verify["rows"]?.intValue == 8)
            #expect(verify["views"]?.elements.map { $0["entries"]?.intValue } == [6, 4])
            for collection in ["tasks", "memos"] {
                #expect(await canopy("export", path, "--collection", collection).output == (await canopy("export", destination, "--collection", collection).output))
            }
            #expect(await canopy("view", path, "by-list").output.replacingOccurrences(of: path, with: "") == (await canopy("view", destination, "by-list").output))

            let again = await canopy("backup", path, destination)
            #expect(again.status == 1)
            #expect(again.errors.contains("not an empty directory"))
        }
    }

    @Test("export -> import into a new database round-trips every row exactly (dates, doubles, metadata, both codecs)")
    func exportImportRoundTrip() async throws {
        try await withFixture { path, directory in
            let export = await canopy("export", path)
            #expect(export.status == 0, "\(export.errors)")
            let lines = try export.jsonLines()
            #expect(lines.count == 8)
            #expect(lines.first?["collection"]?.stringValue == "memos")
            #expect(lines.first { $0["key"]?.stringValue == "t1" }?["metadata"].map { try? JSONValue.parse($0.text) }??["color"] == .string("blue"))
            let file = directory.appending("rows.jsonl")
            try export.output.write(toFile: file, atomically: true, encoding: .utf8)

            let target = directory.appending("new")
            let imported = await canopy("import", target, "--input", file, "--batch-size", "3")
            #expect(imported.status == 0, "\(imported.errors)")
            #expect(imported.output.contains("imported 8 rows into 2 collection(s)"))
            #expect(!imported.output.contains("stale"))

            let database = try Database(path: target, options: .init(durability: .none))
            try await database.newConnection().read { txn throws in
                for (key, chore, info) in fixtureTasks {
                    #expect(try txn.object(forKey: key, in: tasks) == chore)
                    #expect(try txn.metadata(forKey: key, in: tasks) == info)
                }
                #expect(try txn.object(forKey: "m1", in: memos) == Memo(text: "hello \"world\"", tags: ["a", "b"]))
                #expect(try txn.codecName(ofCollection: "memos") == "json")
                #expect(try txn.count() == 8)
            }
        }
    }

    @Test("import from JSON alone (--no-bytes) stores JSON-codec collections; a binary one is refused, naming the line")
    func importFromJSON() async throws {
        try await withFixture { path, directory in
            let export = await canopy("export", path, "--collection", "memos", "--no-bytes")
            #expect(!export.output.contains("Base64"))
            let file = directory.appending("memos.jsonl")
            // Hand-written JSON for a new JSON-codec collection.
            let extra = #"{"collection":"notes","key":"n1","codec":"json","object":{"text":"hi","tags":["x"]},"metadata":null}"#
            try (export.output + extra + "\n").write(toFile: file, atomically: true, encoding: .utf8)
            let target = directory.appending("new")
            let imported = await canopy("import", target, "--input", file, "--json")
            #expect(try imported.json()["rows"]?.intValue == 3)
            // Hand-written JSON for a binary-codec collection: JSON cannot say which strings were dates or data.
            let binary = directory.appending("binary.jsonl")
            try #"{"collection":"cards","key":"c1","object":{"text":"hi","tags":["x"]}}"#.write(toFile: binary, atomically: true, encoding: .utf8)
            let refused = await canopy("import", target, "--input", binary)
            #expect(refused.status == 1)
            #expect(refused.errors.contains("line 1 (cards/c1)"))
            let database = try Database(path: target, options: .init(durability: .none))
            try await database.newConnection().read { txn throws in
                #expect(try txn.object(forKey: "m1", in: memos) == Memo(text: "hello \"world\"", tags: ["a", "b"]))
                #expect(try txn.object(forKey: "m2", in: memos) == Memo(text: "second", tags: []))
                #expect(try txn.object(forKey: "n1", in: TypedCollection<Memo, NoMetadata>("notes", codec: JSONCodec())) == Memo(text: "hi", tags: ["x"]))
                #expect(try txn.codecName(ofCollection: "notes") == "json")
                #expect(try txn.count(inCollection: "cards") == 0)
            }
        }
    }

    @Test("import into a database with views marks them stale and says so; the app's next registration rebuilds them")
    func importMarksViewsStale() async throws {
        try await withFixture { path, directory in
            let file = directory.appending("one.jsonl")
            let chore = Chore(title: "Imported", list: "garden", priority: 7, due: Date(timeIntervalSince1970: 1_800_000_000), estimate: 1)
            let temporary = directory.appending("tmp")
            do {
                let database = try Database(path: temporary, options: .init(durability: .none))
                try await database.newConnection().readWrite { txn in try txn.set(chore, forKey: "t7", in: tasks) }
            }
            let line = await canopy("export", temporary).output
            #expect(line.contains("Imported"))
            try line.write(toFile: file, atomically: true, encoding: .utf8)
            let imported = await canopy("import", path, "--input", file)
            #expect(imported.status == 0, "\(imported.errors)")
            #expect(imported.output.contains("views left stale (brought up to date when the app next registers them or writes): by-list, urgent"))
            #expect(await canopy("view", path, "by-list").status == 1)

            let database = try Database(path: path, options: .init(durability: .none))
            try database.register(byList())
            try database.register(urgent())
            try await database.newConnection().read { txn throws in
                let view = try txn.view("by-list")
                #expect(try view.groups() == ["garden", "home", "work"])
                #expect(try view.rowID(at: 0, inGroup: "garden") == RowID(collection: "tasks", key: "t7"))
                #expect(try txn.view("urgent").count() == 5)
            }
        }
    }

    @Test("An app keeps its views registered while `canopy import` (another process) writes; after the app's next write, views and verify tell the truth",
          .timeLimit(.minutes(1)))
    func importWhileAppRuns() async throws {
        let executable = try #require(canopyExecutable, "the canopy executable was not built")
        try await withFixture { path, directory in
            let app = try Database(path: path, options: .init(durability: .none))
            try app.register(byList())
            try app.register(urgent())
            let temporary = directory.appending("tmp")
            do {
                let database = try Database(path: temporary, options: .init(durability: .none))
                let chore = Chore(title: "Imported", list: "home", priority: 9, due: Date(timeIntervalSince1970: 1_800_000_000), estimate: 1)
                try await database.newConnection().readWrite { txn in try txn.set(chore, forKey: "t7", in: tasks) }
            }
            let file = directory.appending("one.jsonl")
            try await canopy("export", temporary).output.write(toFile: file, atomically: true, encoding: .utf8)
            func run(_ arguments: String...) -> (status: Int32?, output: String) {
                guard let child = try? ChildProcess(executable, arguments) else { return (nil, "") }
                let output = child.remainingLines().joined(separator: "\n")
                return (child.waitForExit(), output)
            }
            #expect(run("import", path, "--input", file).status == 0)
            #expect(run("views", path).output.contains("stale"))
            // The app writes something else: its views are caught up first, then recorded as current.
            try await app.newConnection().readWrite { txn in
                try txn.set(Chore(title: "Mine", list: "work", priority: 1, due: Date(timeIntervalSince1970: 0), estimate: 1), forKey: "t8", in: tasks)
            }
            let views = run("views", path).output
            #expect(!views.contains("stale"), "\(views)")
            let verify = run("verify", path)
            #expect(verify.status == 0 && verify.output.hasPrefix("ok"), "\(verify.output)")
            #expect(run("view", path, "by-list", "--group", "home").output.contains("t7"))
            #expect(run("view", path, "urgent", "--group", "home").output.contains("t7"))
        }
    }

    @Test("import rejects a malformed line with its number and imports nothing after the last complete batch")
    func importMalformed() async throws {
        try await withFixture { _, directory in
            let file = directory.appending("bad.jsonl")
            try "{\"collection\":\"c\",\"key\":\"k\",\"object\":1}\n{not json\n".write(toFile: file, atomically: true, encoding: .utf8)
            let result = await canopy("import", directory.appending("new"), "--input", file)
            #expect(result.status == 1)
            #expect(result.errors.contains("line 2 is not JSON"))
        }
    }
}

@Suite("canopy backup while another process writes", .ownThread)
struct HotBackupTests {
    @Test("a backup taken while a writer commits is consistent: verify accepts it and its view holds every row", .timeLimit(.minutes(1)))
    func hotBackup() async throws {
        let writerPath = try #require(crashWriterExecutable, "the CrashWriter executable was not built")
        let directory = try TemporaryDirectory(prefix: "canopy-cli-test")
        defer { directory.remove() }
        let path = directory.appending("db")
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: writerPath)
        writer.arguments = [path, "none", "--with-view"]  // commits until killed
        let pipe = Pipe()
        writer.standardOutput = pipe
        try writer.run()
        defer { if writer.isRunning { kill(writer.processIdentifier, SIGKILL) } }
        // Wait until it has committed a few transactions (its "acked n" lines).
        var acked = 0
        let handle = pipe.fileHandleForReading
        while acked < 20 {
            let chunk = handle.availableData
            guard !chunk.isEmpty else { break }
            acked += String(decoding: chunk, as: UTF8.self).components(separatedBy: "acked").count - 1
        }
        try #require(acked >= 20, "the writer did not commit")

        let result = await canopy("backup", path, directory.appending("copy"))
        kill(writer.processIdentifier, SIGKILL)
        #expect(result.status == 0, "\(result.errors)")
        let verify = try await canopy("verify", directory.appending("copy"), "--json").json()
        #expect(verify["ok"] == .bool(true), "\(verify.text)")
        let rows = try #require(verify["rows"]?.intValue)
        // Every transaction wrote a counter row and two entries, all of which the view holds.
        #expect(rows >= 41 && (rows - 1) % 2 == 0)
        #expect(verify["views"]?.elements.first?["entries"]?.intValue == rows - 1)
        #expect(verify["views"]?.elements.first?["stale"] == .bool(false))
    }
}

/// The CrashWriter executable (a writer that commits until killed), built next to the test bundle.
let crashWriterExecutable: String? = builtExecutable(named: "CrashWriter")

@Suite("canopy: a write blocked behind another process", .ownThread)
struct WriteLockWaitTests {
    @Test("import behind another process's write transaction says which process holds the write lock, then completes",
          .timeLimit(.minutes(2)))
    func blockedWriterSaysWhoHoldsTheLock() throws {
        guard let canopyPath = canopyExecutable, let writer = builtExecutable(named: "CrashWriter") else {
            Issue.record("the canopy and CrashWriter executables were not built next to the tests")
            return
        }
        try withFixtureSync { path, directory in
            let holder = try ChildProcess(writer, [path, "none", "--hold-write"])
            defer { holder.kill9() }
            #expect(holder.nextLine() == "holding")
            let input = directory.appending("rows.jsonl")
            // JSON alone is accepted for a JSON-codec collection (a binary one would need the stored bytes).
            try #"{"collection":"notes","key":"n1","codec":"json","object":{"text":"hi"}}"#.write(toFile: input, atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: canopyPath)
            process.arguments = ["import", path, "--input", input]
            let errors = Pipe()
            process.standardError = errors
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            // The note comes after a few seconds of waiting; read standard error until it does (bounded).
            let noted = DispatchSemaphore(value: 0)
            let text = Mutex("")
            Thread {
                while true {
                    let chunk = errors.fileHandleForReading.availableData
                    if chunk.isEmpty { break }
                    let all = text.withLock { $0 += String(decoding: chunk, as: UTF8.self); return $0 }
                    if all.contains("write lock") { noted.signal() }
                }
                noted.signal()
            }.start()
            #expect(noted.wait(timeout: .now() + 60) == .success)
            let note = text.withLock { $0 }
            #expect(note.contains("held by process \(holder.processID)"), "\(note)")
            holder.kill9()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "\(text.withLock { $0 })")
        }
    }
}

/// A temporary directory with the fixture database, for tests that are not async.
func withFixtureSync(_ body: (_ path: String, _ directory: TemporaryDirectory) throws -> Void) throws {
    let directory = try TemporaryDirectory(prefix: "canopy-cli-test")
    defer { directory.remove() }
    let path = directory.appending("db")
    try makeFixture(at: path)
    try body(path, directory)
}

