import Canopy
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Synchronization
import Testing

/// Typed grouping, sorting and indexing closures take a `TypedCollection` and see only its rows: writes to other
/// collections (of other types) never reach them.
@Suite("Typed closures see only their collection")
struct TypedClosureTests {
    static func noteView(name: String = "notes-by-priority") -> View {
        View(name: name,
             grouping: .byObject(notes) { _, note in note.priority > 0 ? "p\(note.priority)" : nil },
             sorting: .byObject(notes) { _, _, note in SortKey(.ascending(note.title)) })
    }

    @Test("A view typed for one collection holds only its rows; writes to other collections of other types succeed")
    func typedViewSkipsOtherCollections() throws {
        try withDatabase { database, _ in
            let view = Self.noteView()
            #expect(view.viewOptions.allowedCollections == ["notes"])
            #expect(view.options.allowedCollections == ["notes"])
            #expect(try view.recordedOptions().contains("\"allowedCollections\":[\"notes\"]"))
            let connection = database.newConnection()
            // Rows of another type already there: the population skips them.
            try connection.readWrite { txn throws in try txn.set(TodoItem(title: "t", list: "a", priority: 1), forKey: "t0", in: tasks) }
            try database.register(view)
            try connection.readWrite { txn throws in
                try txn.set(Note(title: "b", priority: 1), forKey: "n1", in: notes)
                try txn.set(Note(title: "a", priority: 1), forKey: "n2", in: notes)
                // Another collection, another type: the notes view's closures never see it.
                try txn.set(TodoItem(title: "t", list: "a", priority: 1), forKey: "t1", in: tasks)
                try txn.set(42, forKey: "answer", in: TypedCollection<Int, NoMetadata>("numbers"))
            }
            try connection.readWrite { txn throws in try txn.set(TodoItem(title: "u", list: "b", priority: 2), forKey: "t1", in: tasks) }
            try connection.read { txn throws in
                let reader = try txn.view("notes-by-priority")
                #expect(try reader.groups() == ["p1"])
                #expect(try reader.rowIDs(inGroup: "p1").map(\.key) == ["n2", "n1"])
                #expect(try reader.count() == 2)
                #expect(try reader.checkInvariants() == [])
            }
        }
    }

    @Test("Grouping and sorting typed for different collections, or for one the options exclude, are refused at registration")
    func contradictoryDefinitionsAreRefused() throws {
        try withDatabase { database, _ in
            let mixed = View(name: "mixed",
                             grouping: .byObject(notes) { _, note in note.title },
                             sorting: .byObject(tasks) { _, _, task in SortKey(.ascending(task.title)) })
            let error = #expect(throws: CanopyError.self) { try database.register(mixed) }
            #expect(error?.code == .invalidArgument)
            #expect(error?.extensionName == "mixed")
            let excluded = View(name: "excluded",
                                grouping: .byObject(notes) { _, note in note.title },
                                sorting: .byKey { _, _, key in SortKey(key) },
                                options: ViewOptions(allowedCollections: ["tasks"]))
            #expect((try? database.register(excluded)) == nil)
            // Nothing was recorded.
            let records = try database.newConnection().read { txn throws in try txn.extensionRecords() }
            #expect(records.isEmpty)
        }
    }

    @Test("A typed closure decodes with its collection's codec: a handle of another codec is codecMismatch")
    func typedClosureChecksTheCodec() throws {
        try withDatabase { database, _ in
            try database.newConnection().readWrite { txn throws in try txn.set(Note(title: "n", priority: 1), forKey: "n1", in: notes) }
            let asJSON = TypedCollection<Note, NoteInfo>("notes", codec: JSONCodec())
            let view = View(name: "json-notes",
                            grouping: .byObject(asJSON) { _, note in note.title },
                            sorting: .byKey { _, _, key in SortKey(key) })
            let error = #expect(throws: CanopyError.self) { try database.register(view) }
            #expect("\(String(describing: error))".contains("codecMismatch"), "\(String(describing: error))")
        }
    }

    @Test("byRow sees rows of several collections with the collection in hand")
    func byRowAcrossCollections() throws {
        try withDatabase { database, _ in
            let both = View(
                name: "everything",
                grouping: .byRow { row in
                    row.collection == notes.name ? "note \(try row.object(in: notes).priority)" : "task \(try row.object(in: tasks).list)"
                },
                sorting: .byRow { _, row in SortKey(.ascending(row.key)) },
                options: ViewOptions(allowedCollections: [notes.name, tasks.name]))
            try database.register(both)
            try database.newConnection().readWrite { txn throws in
                try txn.set(Note(title: "n", priority: 3), forKey: "n1", in: notes)
                try txn.set(TodoItem(title: "t", list: "a", priority: 1), forKey: "t1", in: tasks)
            }
            try database.newConnection().read { txn throws in
                #expect(try txn.view("everything").groups() == ["note 3", "task a"])
            }
            // Decoding a row through another collection's handle is a typed error, not a misread.
            let misread = View(name: "misread", grouping: .byRow { row in try row.object(in: notes).title },
                               sorting: .byKey { _, _, key in SortKey(key) })
            let error = #expect(throws: CanopyError.self) { try database.register(misread) }
            #expect("\(String(describing: error))".contains("invalidArgument"), "\(String(describing: error))")
        }
    }
    /// What a byRow closure's typed reads said, per row key (the accessors' order as in the test).
    final class TypedReads: Sendable {
        let said = Mutex<[String: [String]]>([:])
    }

    @Test("A row's typed accessors refuse another collection or codec with checkTyped's error, for a stored and a written row")
    func typedAccessorsRefuseAsCheckTyped() throws {
        // The accessors compare the names where the row keeps them and fall back to `RowID.checkTyped` for the error:
        // a written row (`RowChange`, the write path) and a stored row (population) must both refuse exactly as it.
        try withDatabase { database, _ in
            let otherCollection = TypedCollection<Note, NoteInfo>("other-notes")
            let otherCodec = TypedCollection<Note, NoteInfo>("notes", codec: JSONCodec())
            let reads = TypedReads()
            @Sendable func outcome(_ body: () throws -> Any?) -> String {
                do {
                    _ = try body()
                    return "ok"
                } catch let error as CanopyError {
                    return "\(error.code) \(error.collection ?? "-") \(error.key ?? "-") \(error.message)"
                } catch {
                    return "\(error)"
                }
            }
            let view = View(
                name: "typed-reads",
                grouping: .byRow { row in
                    let said = [
                        outcome { try row.object(in: otherCollection) }, outcome { try row.metadata(in: otherCollection) },
                        outcome { try row.object(in: otherCodec) }, outcome { try row.metadata(in: otherCodec) },
                        outcome { try row.object(in: notes) }, outcome { try row.metadata(in: notes) },
                    ]
                    reads.said.withLock { $0[row.key] = said }
                    return "all"
                },
                sorting: .byKey { _, _, key in SortKey(key) })
            try database.newConnection().readWrite { txn throws in
                try txn.set(Note(title: "stored"), forKey: "stored", in: notes, metadata: NoteInfo(color: "red"))
            }
            try database.register(view)  // the stored row, by population
            try database.newConnection().readWrite { txn throws in
                try txn.set(Note(title: "written"), forKey: "written", in: notes, metadata: NoteInfo(color: "blue"))
            }
            for key in ["stored", "written"] {
                let id = RowID(collection: "notes", key: key)
                let expected = [
                    outcome { try id.checkTyped(collection: otherCollection.name, codec: otherCollection.codec, recordedCodec: "binary") },
                    outcome { try id.checkTyped(collection: otherCollection.name, codec: otherCollection.codec, recordedCodec: "binary") },
                    outcome { try id.checkTyped(collection: otherCodec.name, codec: otherCodec.codec, recordedCodec: "binary") },
                    outcome { try id.checkTyped(collection: otherCodec.name, codec: otherCodec.codec, recordedCodec: "binary") },
                    "ok", "ok",
                ]
                #expect(expected[0].hasPrefix("invalidArgument") && expected[2].hasPrefix("codecMismatch"), "\(expected)")
                #expect(reads.said.withLock { $0[key] } == expected, "\(key)")
            }
        }
    }
}
