import Canopy
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// A migration that changes a collection's codec while other connections (in this process, and in other processes)
/// have already read the collection: their next read through the old codec's handle is refused with
/// `codecMismatch`, and a read through the new codec's handle decodes — never bytes decoded by the wrong codec.
@Suite("Codec change seen by other connections", .ownThread)
struct CodecChangeAcrossConnectionsTests {
    static var childPath: String? { builtExecutable(named: "EvolutionChild") }
    static let jsonNotes = TypedCollection<EvolutionNoteV1, NoMetadata>("notes", codec: JSONCodec())

    /// Writes rows "n0".."n4" through the binary codec, and lets `reader` learn the collection (and cache "n0").
    static func prepare(_ database: Database, reader: Connection) throws {
        try database.newConnection().readWrite { txn in
            for number in 0..<5 { try txn.set(EvolutionNoteV1(title: "note \(number)", day: "mon"), forKey: "n\(number)", in: evolutionNotesV1) }
        }
        try reader.read { txn throws in
            #expect(try txn.object(forKey: "n0", in: evolutionNotesV1)?.title == "note 0")
            #expect(try txn.codecName(ofCollection: "notes") == "binary")
        }
    }

    /// After the change: reads of a key not in the reader's cache, and of the cached key, with both handles.
    static func expectNewCodec(_ reader: Connection) throws {
        try reader.read { txn throws in
            #expect(try txn.codecName(ofCollection: "notes") == "json")
            for key in ["n0", "n3"] {
                let old = #expect(throws: CanopyError.self) { try txn.object(forKey: key, in: evolutionNotesV1) }
                #expect(old?.code == .codecMismatch, "\(key) through the old codec: \(String(describing: old))")
                #expect(try txn.object(forKey: key, in: jsonNotes) == EvolutionNoteV1(title: "note \(key.dropFirst())", day: "mon"))
            }
        }
    }

    @Test("another connection of this process sees the migrated codec", .timeLimit(.minutes(1)))
    func otherConnectionInProcess() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let reader = database.newConnection()
        try Self.prepare(database, reader: reader)
        var migrator = Migrator()
        migrator.append(.changeCodec("notes-json", collection: "notes", to: JSONCodec(), object: EvolutionNoteV1.self, metadata: NoMetadata.self))
        #expect(try migrator.migrate(database).map(\.rows) == [5])
        try Self.expectNewCodec(reader)
    }

    @Test("a connection of this process that never read the collection before the change sees the new codec", .timeLimit(.minutes(1)))
    func freshConnectionInProcess() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        try Self.prepare(database, reader: database.newConnection())
        var migrator = Migrator()
        migrator.append(.changeCodec("notes-json", collection: "notes", to: JSONCodec(), object: EvolutionNoteV1.self, metadata: NoMetadata.self))
        _ = try migrator.migrate(database)
        try Self.expectNewCodec(database.newConnection())
    }

    /// A connection pinned to a snapshot before the change reads that snapshot's codec, though this process already
    /// knows the new one (it made the change): its first read of the collection is after the migration committed.
    @Test("a connection pinned before the change reads its snapshot's codec, then the new one once advanced", .timeLimit(.minutes(1)))
    func pinnedBeforeTheChange() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        try Self.prepare(database, reader: database.newConnection())
        let pinned = database.newConnection()
        _ = try pinned.pin()
        var migrator = Migrator()
        migrator.append(.changeCodec("notes-json", collection: "notes", to: JSONCodec(), object: EvolutionNoteV1.self, metadata: NoMetadata.self))
        _ = try migrator.migrate(database)
        try pinned.read { txn throws in
            #expect(try txn.codecName(ofCollection: "notes") == "binary")
            #expect(try txn.object(forKey: "n2", in: evolutionNotesV1) == EvolutionNoteV1(title: "note 2", day: "mon"))
            let new = #expect(throws: CanopyError.self) { try txn.object(forKey: "n2", in: Self.jsonNotes) }
            #expect(new?.code == .codecMismatch)
        }
        _ = try pinned.advance()
        try Self.expectNewCodec(pinned)
    }

    @Test("a connection sees the codec another process migrated", .timeLimit(.minutes(2)))
    func otherProcess() throws {
        let child = try #require(Self.childPath, "the EvolutionChild executable was not built")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let database = try Database(path: path, options: .init(durability: .none))
        let reader = database.newConnection()
        try Self.prepare(database, reader: reader)
        let process = try ChildProcess(child, [path, "notes-to-json"])
        #expect(process.remainingLines() == ["migrated 5"])
        #expect(process.waitForExit() == 0)
        try Self.expectNewCodec(reader)
        try Self.expectNewCodec(database.newConnection())
    }
}
