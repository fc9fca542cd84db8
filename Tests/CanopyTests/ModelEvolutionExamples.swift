import Canopy
import CanopyCoreTestFixtures
import Foundation

/// The code blocks of the DocC article ModelEvolution.md, in order and verbatim (indented), with the writes between
/// them that make the story true, so that compiling the tests compiles the article and ModelEvolutionArticleTests runs
/// it on a fresh database. Returns what the last block printed.
func modelEvolutionExamples(database: Database, connection: Connection) throws -> [String] {
    var printed: [String] = []
    func print(_ text: String) { printed.append(text) }

    // From the article, verbatim.
    struct NoteV1: Codable, Sendable {
        var title: String
        var body: String
    }
    let notesV1 = TypedCollection<NoteV1, NoMetadata>("notes")

    try connection.readWrite { txn in
        try txn.set(NoteV1(title: "groceries", body: "milk"), forKey: "n1", in: notesV1)
        try txn.set(NoteV1(title: "ideas", body: "a store"), forKey: "n2", in: notesV1)
    }

    // From the article, verbatim.
    struct NoteWithColor: Codable, Sendable {
        var title: String
        var body: String
        var color: String?
    }

    let colored = try connection.read { txn in try txn.object(forKey: "n1", in: TypedCollection<NoteWithColor, NoMetadata>("notes")) }
    guard colored?.color == nil, colored?.body == "milk" else { throw CanopyError(.invalidArgument, "an added optional did not read as nil") }

    // From the article, verbatim.
    struct Note: Codable, Sendable {
        var title: String
        var text: String
        var archived: Bool
    }
    let notes = TypedCollection<Note, NoMetadata>("notes")

    do {
        _ = try connection.read { txn in try txn.object(forKey: "n1", in: notes) }
        throw CanopyError(.invalidArgument, "a row of version 1 decoded as version 3")
    } catch let error as CanopyError where error.code == .decodingFailed {
        print(error.message)
    }

    // From the article, verbatim.
    var migrator = Migrator()
    migrator.append(.renameKey("note-body-to-text", collection: "notes", from: "body", to: "text"))
    migrator.append(.addKey("note-archived", collection: "notes", "archived", value: .bool(false)))
    try migrator.migrate(database)

    let notesView = View(
        name: "notes-by-title",
        grouping: .byObject(notes) { _, note in note.archived ? nil : "notes" },
        sorting: .byObject(notes) { _, _, note in SortKey(note.title) },
    options: ViewOptions(allowedCollections: ["notes"]))
    try database.register(notesView)

    // Version 4 ships from here: its migrate runs before its registrations (a new process would not have registered
    // the view yet).
    try database.unregisterExtension(named: "notes-by-title")

    // From the article, verbatim.
    migrator.append(.typed("note-title-case", collection: "notes", from: Note.self, to: Note.self) { _, note in
        Note(title: note.title.capitalized, text: note.text, archived: note.archived)
    })
    try migrator.migrate(database)

    try database.register(notesView)
    // A row written by an old build, after the migration: the view leaves it out.
    try connection.readWrite { txn in try txn.set(NoteV1(title: "late", body: "old build"), forKey: "n3", in: notesV1) }

    // From the article, verbatim.
    struct Tag: Codable, Sendable {
        var name: String
        var pinned: Bool

        init(name: String, pinned: Bool) {
            self.name = name
            self.pinned = pinned
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            pinned = try container.decodeIfPresent(Bool.self, forKey: .pinned) ?? false
        }
    }

    struct TagV1: Codable, Sendable { var name: String }
    let tags = TypedCollection<Tag, NoMetadata>("tags")
    try connection.readWrite { txn in
        try txn.set(Tag(name: "home", pinned: true), forKey: "t1", in: tags)
        try txn.set(TagV1(name: "work"), forKey: "t2", in: TypedCollection<TagV1, NoMetadata>("tags"))
    }
    // The decode of a full row first (the binary codec's fast path learns the type), then of an old one.
    let pinned = try connection.read { txn in
        [try txn.object(forKey: "t1", in: tags)?.pinned, try txn.object(forKey: "t2", in: tags)?.pinned]
    }
    guard pinned == [true, false] else { throw CanopyError(.invalidArgument, "decodeIfPresent did not supply the default: \(pinned)") }

    // From the article, verbatim.
    let skipped = try connection.read { txn in try txn.skippedRows(ofExtension: "notes-by-title") }
    if let skipped {
        print("\(skipped.count) notes cannot be shown: \(skipped.firstError)")
    }
    return printed
}
