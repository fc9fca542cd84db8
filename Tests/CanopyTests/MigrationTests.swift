import Canopy
import CanopyCoreTestFixtures
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Testing

@Suite("Migrations")
struct MigrationTests {
    static func writeV1(_ database: Database, count: Int, codec: any Codec = BinaryCodec()) throws {
        let notes = TypedCollection<EvolutionNoteV1, NoMetadata>("notes", codec: codec)
        try database.newConnection().readWrite { txn throws in
            for number in 0..<count {
                try txn.set(EvolutionNoteV1(title: "note \(number)", day: "day \(number % 3)"), forKey: String(format: "n%07d", number), in: notes)
            }
        }
    }

    static func keys(_ count: Int) -> [String] { (0..<count).map { String(format: "n%07d", $0) } }

    @Test("a typed step rewrites every row once; migrating again applies nothing; the step is recorded")
    func typedStepAppliesOnce() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        try Self.writeV1(database, count: 25)
        let applied = try evolutionMigrator(batchSize: 10).migrate(database)
        #expect(applied.map(\.name) == ["notes-priority-and-filedUnder"])
        #expect(applied.first?.rows == 25)
        try database.newConnection().read { txn throws in
            for (number, key) in Self.keys(25).enumerated() {
                #expect(try txn.object(forKey: key, in: evolutionNotes) == EvolutionNote(title: "note \(number)", filedUnder: "day \(number % 3)", priority: 1))
            }
            #expect(try txn.appliedMigrations().map(\.name) == ["notes-priority-and-filedUnder"])
            #expect(try txn.migrationsInProgress().isEmpty)
        }
        #expect(try evolutionMigrator().migrate(database).isEmpty)
        #expect(try evolutionMigrator().pendingSteps(in: database).isEmpty)
    }

    struct EventV1: Codable, Equatable {
        var title: String
        var at: Date
        var blob: Data
        var ratio: Float
        var stars: String
    }

    struct Event: Codable, Equatable {
        var name: String
        var at: Date
        var ratio: Float
        var done: Bool
        var stars: Int
    }

    @Test("untyped steps rename, add, remove and change keys without the app's types, and keep dates exactly",
          arguments: ["binary", "json"])
    func untypedSteps(codecName: String) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let codec = try #require(Codecs.named(codecName))
        let old = TypedCollection<EventV1, NoMetadata>("events", codec: codec)
        let new = TypedCollection<Event, NoMetadata>("events", codec: codec)
        let date = Date(timeIntervalSinceReferenceDate: 812_345_678.123_456_7)
        try database.newConnection().readWrite { txn throws in
            for number in 0..<5 {
                try txn.set(EventV1(title: "e\(number)", at: date + Double(number), blob: Data([1, 2, 3]), ratio: 0.1, stars: "\(number)"),
                            forKey: "e\(number)", in: old)
            }
        }
        var migrator = Migrator(batchSize: 2)
        migrator.append(.renameKey("title-to-name", collection: "events", from: "title", to: "name"))
        migrator.append(.addKey("done", collection: "events", "done", value: .bool(false)))
        migrator.append(.removeKey("no-blob", collection: "events", "blob"))
        migrator.append(.changeValue("stars-number", collection: "events", key: "stars") { value in
            guard case .string(let text) = value, let number = Int64(text) else { throw CanopyError(.invalidArgument, "stars is not a number") }
            return .int(number)
        })
        #expect(try migrator.migrate(database).count == 4)
        try database.newConnection().read { txn throws in
            for number in 0..<5 {
                #expect(try txn.object(forKey: "e\(number)", in: new) == Event(name: "e\(number)", at: date + Double(number), ratio: 0.1, done: false, stars: number))
            }
        }
    }

    @Test("a stored value read without types writes back the same bytes (binary)")
    func storedValueRoundTrip() throws {
        let value = EventV1(title: "t", at: Date(timeIntervalSinceReferenceDate: 1.25e8), blob: Data([0, 255]), ratio: .infinity, stars: "x")
        let bytes = try BinaryCodec().encode(value)
        let stored = try bytes.withUnsafeBytes { try StoredValue(decoding: $0, codecName: "binary") }
        #expect(stored.keys == ["title", "at", "blob", "ratio", "stars"])
        #expect(try stored.encoded(codecName: "binary") == bytes)
        #expect(throws: CodecError.self) { try [UInt8]([1, 0x0B, 9]).withUnsafeBytes { try StoredValue(decoding: $0, codecName: "binary") } }
    }

    @Test("collection steps: rename in batches, delete, change the codec (typed)")
    func collectionSteps() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        try Self.writeV1(database, count: 10)
        try database.newConnection().readWrite { txn throws in
            try txn.set("gone", forKey: "x", in: TypedCollection<String, NoMetadata>("scratch"))
            try txn.set(EvolutionNoteV1(title: "m", day: "d"), forKey: "n0000001", in: TypedCollection<EvolutionNoteV1, NoMetadata>("notes"),
                        metadata: NoMetadata())
        }
        var migrator = Migrator(batchSize: 3)
        migrator.append(.renameCollection("notes-to-archive", from: "notes", to: "archive"))
        migrator.append(.deleteCollection("drop-scratch", collection: "scratch"))
        migrator.append(.changeCodec("archive-json", collection: "archive", to: JSONCodec(), object: EvolutionNoteV1.self, metadata: NoMetadata.self))
        #expect(try migrator.migrate(database).map(\.rows) == [10, 1, 10])
        let archive = TypedCollection<EvolutionNoteV1, NoMetadata>("archive", codec: JSONCodec())
        try database.newConnection().read { txn throws in
            #expect(try txn.count(inCollection: "notes") == 0)
            #expect(try txn.count(inCollection: "scratch") == 0)
            #expect(try txn.codecName(ofCollection: "archive") == "json")
            #expect(try txn.object(forKey: "n0000009", in: archive) == EvolutionNoteV1(title: "note 9", day: "day 0"))
            #expect(try txn.metadata(forKey: "n0000001", in: archive) == NoMetadata())
        }
        // Renaming onto a collection with rows is refused.
        try database.newConnection().readWrite { txn throws in
            try txn.set("x", forKey: "a", in: TypedCollection<String, NoMetadata>("left"))
            try txn.set("y", forKey: "b", in: TypedCollection<String, NoMetadata>("right"))
        }
        var clash = migrator
        clash.append(.renameCollection("left-to-right", from: "left", to: "right"))
        let error = #expect(throws: CanopyError.self) { try clash.migrate(database) }
        #expect(error?.code == .migrationFailed)
        #expect(error?.message.contains("already has rows") == true)
    }

    /// A step that throws at row 5 of 10: nothing of it is visible, the error names the step and the row; fixed, it
    /// runs. (Without the batch's rollback the first rows would be new and the rest old, unrecorded.)
    @Test("a throwing step leaves nothing behind, names the step and row, and runs once fixed")
    func throwingStep() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        try Self.writeV1(database, count: 10)
        let before = try database.currentSnapshot()
        var broken = Migrator()
        broken.append(.typed("v2", collection: "notes", from: EvolutionNoteV1.self, to: EvolutionNote.self) { key, old in
            guard key != "n0000005" else { throw CanopyError(.invalidArgument, "no priority for \(old.title)") }
            return EvolutionNote(title: old.title, filedUnder: old.day, priority: 1)
        })
        let error = #expect(throws: CanopyError.self) { try broken.migrate(database) }
        #expect(error?.code == .migrationFailed)
        #expect(error?.migrationStep == "v2")
        #expect(error?.key == "n0000005")
        #expect(error?.collection == "notes")
        #expect(error?.message.contains("nothing of the step was written") == true)
        #expect(try database.currentSnapshot() == before)
        try database.newConnection().read { txn throws in
            #expect(try txn.appliedMigrations().isEmpty)
            #expect(try txn.migrationsInProgress().isEmpty)
            for key in Self.keys(10) { #expect(try txn.object(forKey: key, in: evolutionNotesV1) != nil) }
        }
        #expect(try evolutionMigrator().migrate(database).count == 1)
        try database.newConnection().read { txn throws in
            for key in Self.keys(10) { #expect(try txn.object(forKey: key, in: evolutionNotes)?.priority == 1) }
        }
    }

    @Test("a batched step that throws keeps its committed batches and resumes after its checkpoint")
    func batchedThrowingStepResumes() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        try Self.writeV1(database, count: 10)
        var broken = Migrator(batchSize: 3)
        broken.append(.typed("notes-priority-and-filedUnder", collection: "notes", from: EvolutionNoteV1.self, to: EvolutionNote.self) { key, old in
            guard key != "n0000007" else { throw CanopyError(.invalidArgument, "not yet") }
            return EvolutionNote(title: old.title, filedUnder: old.day, priority: 1)
        })
        let error = #expect(throws: CanopyError.self) { try broken.migrate(database) }
        #expect(error?.key == "n0000007")
        #expect(error?.message.contains("resumes after row 'n0000005'") == true)
        try database.newConnection().read { txn throws in
            let progress = try txn.migrationsInProgress()
            #expect(progress.map(\.name) == ["notes-priority-and-filedUnder"])
            #expect(progress.first?.after == "n0000005")
            #expect(progress.first?.rows == 6)
            #expect(progress.first?.batches == 2)
        }
        // Rows 0-5 are new, 6-9 old: the fixed step resumes at 6 (it would fail decoding row 0 as the old type).
        #expect(try evolutionMigrator(batchSize: 3).migrate(database).first?.rows == 10)
        try database.newConnection().read { txn throws in
            for key in Self.keys(10) { #expect(try txn.object(forKey: key, in: evolutionNotes)?.priority == 1) }
            #expect(try txn.migrationsInProgress().isEmpty)
        }
    }

    @Test("refused: a registered extension, an unknown applied step, an inserted step, two steps of one name, a read-only database")
    func refusals() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        do {
            let database = try Database(path: path, options: .init(durability: .none))
            try Self.writeV1(database, count: 3)
            try database.register(evolutionViewV1())
            let error = #expect(throws: CanopyError.self) { try evolutionMigrator().migrate(database) }
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains("migrate before registering extensions") == true)
            try database.unregisterExtension(named: "notes-by-day")
            try evolutionMigrator().migrate(database)

            var older = Migrator()
            older.append(.addKey("other", collection: "notes", "x", value: .null))
            let unknown = #expect(throws: CanopyError.self) { try older.migrate(database) }
            #expect(unknown?.code == .migrationFailed)
            #expect(unknown?.message.contains("does not list") == true)

            var inserted = Migrator()
            inserted.append(.addKey("inserted", collection: "notes", "x", value: .null))
            for step in evolutionMigrator().steps { inserted.append(step) }
            let insertion = #expect(throws: CanopyError.self) { try inserted.migrate(database) }
            #expect(insertion?.message.contains("never inserted") == true)

            var twice = evolutionMigrator()
            twice.append(.addKey("notes-priority-and-filedUnder", collection: "notes", "x", value: .null))
            #expect(throws: CanopyError.self) { try twice.migrate(database) }
        }
        let readOnly = try Database(path: path, options: .init(readOnly: true))
        var more = evolutionMigrator()
        more.append(.addKey("more", collection: "notes", "x", value: .null))
        let error = #expect(throws: CanopyError.self) { try more.migrate(readOnly) }
        #expect(error?.code == .readOnly)
    }
}
