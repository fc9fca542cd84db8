import Canopy
import CanopyCoreTestFixtures
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Testing

@Suite("Model evolution", .ownThread)
struct ModelEvolutionTests {
    static var childPath: String? { builtExecutable(named: "EvolutionChild") }

    // MARK: Errors that explain

    @Test("a missing key names the key, the type and the likely cause, never 'corrupt'", arguments: ["binary", "json"])
    func missingKeyIsExplained(codecName: String) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let codec = try #require(Codecs.named(codecName))
        try database.newConnection().readWrite { txn throws in
            try txn.set(EvolutionNoteV1(title: "a", day: "d"), forKey: "k", in: TypedCollection<EvolutionNoteV1, NoMetadata>("notes", codec: codec))
        }
        let error = #expect(throws: CanopyError.self) {
            try database.newConnection().read { txn in try txn.object(forKey: "k", in: TypedCollection<EvolutionNote, NoMetadata>("notes", codec: codec)) }
        }
        #expect(error?.code == .decodingFailed)
        #expect(error?.key == "k")
        #expect(error?.collection == "notes")
        let message = error?.message ?? ""
        #expect(message.contains("has no value for 'filedUnder'"), "\(message)")
        #expect(message.contains("a property added to EvolutionNote"), "\(message)")
        #expect(message.contains("Model evolution"), "\(message)")
        #expect(!message.contains("corrupt"), "\(message)")
    }

    struct Counted: Codable { var count: String }
    struct CountedNumber: Codable { var count: Int }
    struct Optionally: Codable { var count: Int? }

    @Test("a type mismatch names the key and both types; a null names the key", arguments: ["binary", "json"])
    func typeMismatchIsExplained(codecName: String) throws {
        let codec = try #require(Codecs.named(codecName))
        let bytes = try codec.encode(Counted(count: "three"))
        let mismatch = try #require(throws: (any Error).self) { try bytes.withUnsafeBytes { try codec.decode(CountedNumber.self, from: $0) } }
        let message = Codecs.explainDecodingFailure(mismatch, decoding: CountedNumber.self, codecName: codecName)
        #expect(message.contains("at 'count' is not an Int"), "\(message)")
        #expect(message.contains("string"), "\(message)")
        #expect(!message.contains("corrupt"), "\(message)")

        let null = try codec.encode(Optionally(count: nil))
        let missing = try #require(throws: (any Error).self) { try null.withUnsafeBytes { try codec.decode(CountedNumber.self, from: $0) } }
        let nullMessage = Codecs.explainDecodingFailure(missing, decoding: CountedNumber.self, codecName: codecName)
        #expect(nullMessage.contains("'count'"), "\(nullMessage)")
    }

    @Test("bytes that do not parse are called corrupt", arguments: ["binary", "json"])
    func corruptBytesAreCorrupt(codecName: String) throws {
        let codec = try #require(Codecs.named(codecName))
        let garbage: [UInt8] = [1, 0x0B, 0xFF, 0xFF]
        let error = try #require(throws: (any Error).self) { try garbage.withUnsafeBytes { try codec.decode(CountedNumber.self, from: $0) } }
        let message = Codecs.explainDecodingFailure(error, decoding: CountedNumber.self, codecName: codecName)
        #expect(message.contains("corrupt"), "\(message)")
    }

    // MARK: Skipped rows

    /// Rows of the old model under a view of the new one: before, the registration threw `decodingFailed` (the app
    /// did not start); now the view holds the rows that decode and records the others.
    @Test("a view skips the rows it cannot decode, records them, and takes them back once rewritten")
    func viewSkipsUndecodableRows() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let connection = database.newConnection()
        try connection.readWrite { txn throws in
            for number in 0..<6 {
                try txn.set(EvolutionNoteV1(title: "old \(number)", day: "mon"), forKey: "old\(number)", in: evolutionNotesV1)
            }
            try txn.set(EvolutionNote(title: "new", filedUnder: "mon", priority: 2), forKey: "new", in: evolutionNotes)
        }
        let view = evolutionViewV2()
        try database.register(view)
        #expect(view.lastPopulation?.rowsSkipped == 6)
        try connection.read { txn throws in
            #expect(try txn.view("notes-by-day").count() == 1)
            let skipped = try #require(try txn.skippedRows(ofExtension: "notes-by-day"))
            #expect(skipped.count == 6)
            #expect(skipped.rows.first == RowID(collection: "notes", key: "old0"))
            #expect(skipped.firstError.contains("has no value for 'filedUnder'"))
            #expect(try txn.view("notes-by-day").checkInvariants() == [])
        }
        // Rewritten with the new type, a row enters the view and leaves the record; a removed one leaves it too.
        try connection.readWrite { txn throws in
            try txn.set(EvolutionNote(title: "old 0", filedUnder: "mon", priority: 3), forKey: "old0", in: evolutionNotes)
            try txn.remove(key: "old1", in: evolutionNotes)
            // A touched row that still does not decode stays out (and is not counted twice).
            try txn.touchObject(forKey: "old2", inCollection: "notes")
        }
        try connection.read { txn throws in
            let reader = try txn.view("notes-by-day")
            #expect(try reader.rowIDs(inGroup: "mon").map(\.key) == ["old0", "new"])
            #expect(try txn.skippedRows(ofExtension: "notes-by-day")?.count == 4)
            #expect(try reader.checkInvariants() == [])
        }
        // A migration rewrites the rest: at the next registration they are all in the view, and the record is gone.
        try database.unregisterExtension(named: "notes-by-day")
        var migrator = Migrator()
        migrator.append(.transform("v2", collection: "notes") { _, value in
            guard let day = value["day"] else { return }
            value["day"] = nil
            value["filedUnder"] = day
            value["priority"] = .int(1)
        })
        try migrator.migrate(database)
        try database.register(evolutionViewV2())
        try connection.read { txn throws in
            #expect(try txn.view("notes-by-day").count() == 6)
            #expect(try txn.skippedRows(ofExtension: "notes-by-day") == nil)
        }
    }

    @Test("with strictDecoding the registration fails as before, naming the row")
    func strictDecodingFails() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        try database.newConnection().readWrite { txn throws in
            try txn.set(EvolutionNoteV1(title: "old", day: "mon"), forKey: "old", in: evolutionNotesV1)
        }
        let strict = View(
            name: "strict", grouping: .byObject(evolutionNotes) { _, note in note.filedUnder },
            sorting: .byKey { _, _, key in SortKey(key) }, options: ViewOptions(strictDecoding: true))
        let error = #expect(throws: CanopyError.self) { try database.register(strict) }
        #expect(error?.code == .decodingFailed)
        #expect(error?.key == "old")
        #expect(database.registeredExtension(named: "strict") == nil)
    }

    // MARK: Across processes

    /// Another process (without the view) rewrites a skipped row as the new model, writes an old one, removes one:
    /// this process's next write catches the view up, and the record follows (a removal is counted by a rebuild).
    @Test("catching up from other processes' writes keeps the skipped rows' record right", .timeLimit(.minutes(2)))
    func catchUpKeepsSkippedRowsRight() throws {
        let child = try #require(Self.childPath, "the EvolutionChild executable was not built")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let database = try Database(path: path, options: .init(durability: .none))
        let connection = database.newConnection()
        try connection.readWrite { txn in
            for number in 0..<3 { try txn.set(EvolutionNoteV1(title: "old \(number)", day: "mon"), forKey: "old\(number)", in: evolutionNotesV1) }
        }
        try database.register(evolutionViewV2())
        func run(_ arguments: String...) {
            let process = try? ChildProcess(child, [path] + arguments)
            #expect(process?.remainingLines() == ["done"])
            #expect(process?.waitForExit() == 0)
        }
        func touchAndCheck(skipped: Int, inView: [String]) throws {
            try connection.readWrite { txn in try txn.set(EvolutionNote(title: "z", filedUnder: "tue", priority: 0), forKey: "z", in: evolutionNotes) }
            try connection.read { txn throws in
                let view = try txn.view("notes-by-day")
                #expect(try view.rowIDs(inGroup: "mon").map(\.key) == inView)
                #expect(try txn.skippedRows(ofExtension: "notes-by-day")?.count ?? 0 == skipped)
                #expect(try view.checkInvariants() == [])
            }
        }
        run("write-new", "old0")
        run("write-old", "x1")
        try touchAndCheck(skipped: 3, inView: ["old0"])
        run("remove", "old1")
        try touchAndCheck(skipped: 2, inView: ["old0"])
    }

    /// Version 1 (a child process) writes rows and its view; version 2 (another child) migrates and registers its
    /// view. Every row reads as version 2, the view equals brute force, and an observer of the view sees a reload.
    @Test("v1 → v2 in child processes: rows migrated, view right, observers reload", .timeLimit(.minutes(5)))
    func versionOneToTwoAcrossProcesses() throws {
        let child = try #require(Self.childPath, "the EvolutionChild executable was not built")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let count = 700
        let v1 = try ChildProcess(child, [path, "v1", "\(count)"])
        #expect(v1.remainingLines() == ["done"])
        #expect(v1.waitForExit() == 0)

        let database = try Database(path: path, options: .init(durability: .none))
        let observer = try ViewObserver(database: database, mappings: ViewMappings(view: "notes-by-day", groupFilter: { _ in true }))
        #expect((0..<7).reduce(0) { $0 + observer.mappings.numberOfItems(inGroup: "day \($1)") } == count)

        let v2 = try ChildProcess(child, [path, "v2", "128"])
        #expect(v2.remainingLines().filter { !$0.hasPrefix("batch ") } == ["migrated 1", "registered \(count)"])
        #expect(v2.waitForExit() == 0)

        let changes = try observer.advance()
        #expect(changes.isReload)
        try database.newConnection().read { txn throws in
            var expected: [String: [(Int, String, String)]] = [:]
            try txn.enumerateObjects(in: evolutionNotes) { key, note in
                #expect(note.priority == 1)
                expected[note.filedUnder, default: []].append((-note.priority, note.title, key))
                return true
            }
            let view = try txn.view("notes-by-day")
            #expect(try view.groups() == expected.keys.sorted())
            for (group, rows) in expected {
                // Priority (highest first), then title by UTF-8 bytes; titles are unique.
                let sorted = rows.sorted { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1.utf8.lexicographicallyPrecedes($1.1.utf8) }
                #expect(try view.rowIDs(inGroup: group).map(\.key) == sorted.map(\.2), "group \(group)")
            }
            #expect(try view.checkStructure() == [])
        }
    }

    /// Kills version 2 at random moments while it migrates in batches; after every kill each row reads as version 1
    /// (not reached yet) or version 2 (done), the migrated rows are exactly those up to the checkpoint, and a last
    /// run finishes with a right view. 2,000 rows and 10 kills by default (seed printed on failure);
    /// `CANOPY_MIGRATION_ROWS=200000 CANOPY_MIGRATION_KILLS=30` for the full run.
    @Test("kill -9 during a batched migration: rows are old or new, never unreadable; it resumes", .timeLimit(.minutes(20)))
    func killedMigrationResumes() throws {
        let child = try #require(Self.childPath, "the EvolutionChild executable was not built")
        let environment = ProcessInfo.processInfo.environment
        let rows = Int(environment["CANOPY_MIGRATION_ROWS"] ?? "") ?? 5_000
        let kills = Int(environment["CANOPY_MIGRATION_KILLS"] ?? "") ?? 10
        let batch = max(1, rows / 100)
        let seed: UInt64 = 0x16E7
        var random = SeededRandom(seed: seed)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let v1 = try ChildProcess(child, [path, "v1", "\(rows)"])
        #expect(v1.remainingLines(seconds: 600) == ["done"])
        _ = v1.waitForExit(seconds: 600)

        var killsDone = 0
        var finished = false
        var lastCheckpoint = -1
        // Each run commits 1 to `most` batches, pausing after each until the test says go (the child reads a line),
        // and is killed either at its last pause (between two committed batches) or after one more go-ahead, at a
        // random moment of its next batch (or at the pause after it, if that batch was quicker). So a run migrates at
        // most `most + 1` of the ~100 batches and the migration cannot end before the last kill, however slow or fast
        // either process runs; the delay only varies where a kill lands.
        let most = max(1, min(3, 100 / kills - 1))
        while killsDone < kills && !finished {
            let v2 = try ChildProcess(child, [path, "v2-paced", "\(batch)"], talking: true)
            let batches = Int.random(in: 1...most, using: &random)
            var seen = 0
            while seen < batches, let line = v2.nextLine(seconds: 600) {
                guard line.hasPrefix("batch ") else { break }
                seen += 1
                if seen < batches { try v2.send("go") }
            }
            if seen == batches && Bool.random(using: &random) {
                try v2.send("go")
                usleep(UInt32(Int.random(in: 0..<3_000, using: &random)))
            }
            v2.kill9()
            killsDone += 1
            let database = try Database(path: path, options: .init(durability: .none, readOnly: true))
            try database.newConnection().read { txn throws in
                let applied = try txn.appliedMigrations().contains { $0.name == "notes-priority-and-filedUnder" }
                let checkpoint = try txn.migrationsInProgress().first?.after
                var migrated = 0
                var index = 0
                try txn.enumerateStoredRows(inCollection: "notes") { key, object, _ in
                    let value = try StoredValue(decoding: object, codecName: "binary")
                    let isNew = value["priority"] != nil
                    let shouldBeNew = applied || (checkpoint.map { key.utf8.lexicographicallyPrecedes($0.utf8) || key == $0 } ?? false)
                    #expect(isNew == shouldBeNew, "seed \(seed) kill \(killsDone): row \(key) is \(isNew ? "new" : "old"), checkpoint \(checkpoint ?? "none")")
                    if isNew {
                        _ = try JSONDecoder().decode(EvolutionNote.self, from: Data(Codecs.jsonText(from: object, codecName: "binary").utf8))
                        migrated += 1
                    } else {
                        _ = try JSONDecoder().decode(EvolutionNoteV1.self, from: Data(Codecs.jsonText(from: object, codecName: "binary").utf8))
                    }
                    index += 1
                    return true
                }
                #expect(index == rows, "seed \(seed) kill \(killsDone)")
                #expect(migrated >= lastCheckpoint, "seed \(seed): the migration went back")
                lastCheckpoint = migrated
                finished = applied
            }
        }
        let last = try ChildProcess(child, [path, "v2", "\(batch)"])
        let lines = last.remainingLines(seconds: 600)
        #expect(lines.last == "registered \(rows)", "seed \(seed): \(lines.suffix(3))")
        #expect(killsDone == kills, "seed \(seed): the migration finished after \(killsDone) of \(kills) kills")
        #expect(last.waitForExit(seconds: 600) == 0)
        let database = try Database(path: path, options: .init(durability: .none))
        try database.register(evolutionViewV2())
        try database.newConnection().read { txn throws in
            #expect(try txn.count(inCollection: "notes") == rows)
            #expect(try txn.view("notes-by-day").checkInvariants() == [])
            #expect(try txn.appliedMigrations().first?.rows == rows)
        }
    }
}
