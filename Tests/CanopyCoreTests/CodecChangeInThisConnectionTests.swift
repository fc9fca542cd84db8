@testable import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Testing

/// A codec changed by a transaction of a connection that had read the collection before: the connection, and the
/// transaction itself, read with the new codec afterwards (the migrator uses a connection of its own for each batch,
/// so an app does not reach this through ``Migrator``; any other writer of a collection record must).
@Suite("A codec changed by this connection is the one it reads with")
struct CodecChangeInThisConnectionTests {
    static let binary = TypedCollection<Note, NoteInfo>("shared-notes")
    static let json = TypedCollection<Note, NoteInfo>("shared-notes", codec: JSONCodec())
    static let step = MigrationStep.changeCodec("to-json", collection: "shared-notes", to: JSONCodec(), object: Note.self, metadata: NoteInfo.self)

    /// Three rows through the binary codec, and `connection` having read one of them (the record it found last).
    static func prepare(_ connection: Connection) throws {
        try connection.readWrite { txn in
            for number in 0..<3 { try txn.set(Note(title: "note \(number)"), forKey: "n\(number)", in: binary) }
        }
        #expect(try connection.read { try $0.object(forKey: "n0", in: binary)?.title } == "note 0")
    }

    /// The committing connection kept the old record as the one it found last: its next transaction refused the new
    /// handle with `codecMismatch` and took the new codec's bytes for the old codec's.
    @Test("the next transaction of the connection that committed the change reads the new codec")
    func nextTransaction() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try Self.prepare(connection)
            try connection.readWrite { txn in _ = try txn.runMigrationBatch(Self.step, after: nil, isFirstBatch: true, limit: 100) }
            try connection.read { txn throws in
                #expect(try txn.codecName(ofCollection: "shared-notes") == "json")
                #expect(try txn.object(forKey: "n1", in: Self.json)?.title == "note 1")
                let old = #expect(throws: CanopyError.self) { try txn.object(forKey: "n2", in: Self.binary) }
                #expect(old?.code == .codecMismatch, "\(String(describing: old))")
            }
        }
    }

    /// Inside the changing transaction: a collection created in it and then changed (the record found last was the
    /// created one), and a stored row read by its key (its codec found by collection id, which asked the
    /// connection's remembered records before the transaction's own).
    @Test("the changing transaction itself reads the new codec, by name and by stored key")
    func sameTransaction() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try Self.prepare(connection)
            try connection.readWrite { txn in
                _ = try txn.runMigrationBatch(Self.step, after: nil, isFirstBatch: true, limit: 100)
                let key = try #require(try txn.storedRowKey(for: RowID(collection: "shared-notes", key: "n1")))
                let row = try #require(try txn.storedRow(for: key))
                #expect(row.codecName == "json")
                #expect(try ExtensionRow(row).object(in: Self.json).title == "note 1")
            }
            let created = TypedCollection<Note, NoteInfo>("created-notes")
            let createdJSON = TypedCollection<Note, NoteInfo>("created-notes", codec: JSONCodec())
            let change = MigrationStep.changeCodec("created-to-json", collection: "created-notes", to: JSONCodec(), object: Note.self, metadata: NoteInfo.self)
            try connection.readWrite { txn in
                try txn.set(Note(title: "made here"), forKey: "m", in: created)
                _ = try txn.runMigrationBatch(change, after: nil, isFirstBatch: true, limit: 100)
                #expect(try txn.codecName(ofCollection: "created-notes") == "json")
                #expect(try txn.object(forKey: "m", in: createdJSON)?.title == "made here")
            }
        }
    }
}
