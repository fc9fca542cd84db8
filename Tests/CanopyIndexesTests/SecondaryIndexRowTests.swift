import CanopyCore
import CanopyCoreTestFixtures
import CanopyIndexes
import CanopyTestSupport
import Foundation
import Testing

/// A note of the app's first model version (no priority), and of its second: the second cannot decode the first's rows.
private struct NoteV1: Codable, Sendable { var title: String; var day: String }
private struct NoteV2: Codable, Sendable { var title: String; var filedUnder: String; var priority: Int }
private let notesV1 = TypedCollection<NoteV1, NoMetadata>("notes")
private let notesV2 = TypedCollection<NoteV2, NoMetadata>("notes")
/// Rows of another collection and type beside the indexed one.
private struct Chore: Codable, Sendable { var title: String; var priority: Int }
private let chores = TypedCollection<Chore, NoMetadata>("chores")

/// What an indexer sees of a row: only its collection's rows, and rows it cannot decode are left out and recorded.
/// (Moved from CanopyTests, which no longer depends on CanopyIndexes.)
@Suite("Secondary index rows")
struct SecondaryIndexRowTests {
    @Test("A secondary index typed for one collection indexes only its rows")
    func typedIndexSkipsOtherCollections() throws {
        try withDatabase { database, _ in
            let byPriority = SecondaryIndex<Int64OrderedCoding>.byObject(name: "notes-by-priority", notes) { _, note in Int64(note.priority) }
            #expect(byPriority.collections == ["notes"])
            try database.register(byPriority)
            let connection = database.newConnection()
            try connection.readWrite { txn throws in
                try txn.set(Note(title: "n", priority: 2), forKey: "n1", in: notes)
                try txn.set(Chore(title: "t", priority: 2), forKey: "t1", in: chores)
            }
            try connection.read { txn throws in
                #expect(try byPriority.rowIDs(equalTo: 2, in: txn) == [RowID(collection: "notes", key: "n1")])
            }
        }
    }

    /// Before, the index's registration threw `decodingFailed` on the first old row.
    @Test("a secondary index skips the rows it cannot decode, records them, and takes them back once rewritten")
    func indexSkipsUndecodableRows() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let connection = database.newConnection()
        try connection.readWrite { txn in
            for number in 0..<4 { try txn.set(NoteV1(title: "old \(number)", day: "mon"), forKey: "old\(number)", in: notesV1) }
            try txn.set(NoteV2(title: "new", filedUnder: "mon", priority: 2), forKey: "new", in: notesV2)
        }
        let index = SecondaryIndex<Int64OrderedCoding>.byObject(name: "by-priority", notesV2) { _, note in
            Int64(note.priority)
        }
        try database.register(index)
        try connection.read { txn throws in
            #expect(try index.count(in: txn) == 1)
            #expect(try txn.skippedRows(ofExtension: "by-priority")?.count == 4)
            #expect(try index.value(of: RowID(collection: "notes", key: "old0"), in: txn) == nil)
        }
        try connection.readWrite { txn in
            try txn.set(NoteV2(title: "old 0", filedUnder: "mon", priority: 2), forKey: "old0", in: notesV2)
            try txn.remove(key: "old1", in: notesV2)
        }
        try connection.read { txn throws in
            #expect(try index.rowIDs(equalTo: 2, in: txn).map(\.key) == ["new", "old0"])
            #expect(try index.count(in: txn) == 2)
            #expect(try txn.skippedRows(ofExtension: "by-priority")?.count == 2)
        }
    }
}
