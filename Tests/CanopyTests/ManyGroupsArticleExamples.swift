import Canopy
import CanopyCoreTestFixtures
import Foundation

/// The code blocks of the DocC article ManyGroups.md, in order and verbatim (indented), so that compiling the tests
/// compiles the article and ManyGroupsArticleTests runs it on a fresh database.
func manyGroupsArticleExamples(database: Database, connection: Connection) throws -> [ViewChangeset.RowChange] {
    // From the article, verbatim (ManyGroupsArticleTests checks it).
    struct Note: Codable, Sendable { var title: String; var tags: [String] }
    let notes = TypedCollection<Note, NoMetadata>("notes")

    let byTag = View(
        name: "by-tag",
        grouping: .manyByObject(notes) { _, note in Set(note.tags) },
        sorting: .byObject(notes) { _, _, note in SortKey(.ascending(note.title.lowercased())) },
        versionTag: "1")
    try database.register(byTag)

    try connection.readWrite { txn in
        try txn.set(Note(title: "Milk", tags: ["shop", "home"]), forKey: "n1", in: notes)
        try txn.set(Note(title: "Bread", tags: ["shop", "home", "work"]), forKey: "n2", in: notes)
    }
    try connection.read { txn in
        let view = try txn.view("by-tag")
        print(try view.groups())                                  // ["home", "shop", "work"]
        let milk = RowID(collection: "notes", key: "n1")
        print(try view.positions(of: milk).map { "\($0.group) \($0.index)" })  // ["home 1", "shop 1"]
    }

    // A second observer, for the test to check what the article prints.
    let checker = try ViewObserver(database: database, mappings: ViewMappings(groups: ["home", "shop", "work"], view: "by-tag"))
    // From the article, verbatim.
    let tagObserver = try ViewObserver(database: database, mappings: ViewMappings(groups: ["home", "shop", "work"], view: "by-tag"))
    try connection.readWrite { txn in
        try txn.set(Note(title: "Milk", tags: ["shop", "work"]), forKey: "n1", in: notes)
    }
    for change in try tagObserver.advance().rowChanges {
        print(change)  // delete notes/n1 [0, 1], insert notes/n1 [2, 1], update notes/n1 [1, 1] -> [1, 1]
    }

    return try checker.advance().rowChanges
}
