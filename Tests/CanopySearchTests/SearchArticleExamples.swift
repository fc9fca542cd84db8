import Canopy
import CanopySearch
import Foundation

/// The code blocks of the CanopySearch article FullTextSearch.md, in order and verbatim (indented), so that compiling
/// the tests compiles the article; SearchArticleTests checks it and runs it on a fresh database.
func searchArticleExamples(database: Database, connection: Connection) throws -> (hits: [SearchHit], changes: ViewChangeset, narrowed: ViewChangeset) {
    struct Note: Codable, Sendable { var title: String; var body: String }
    let notes = TypedCollection<Note, NoMetadata>("notes")

    let search = SearchIndex.byObject(name: "note-search", notes, fields: [
        ObjectSearchField("title", weight: 2, \.title),
        ObjectSearchField("body", \.body),
    ])
    try database.register(search)

    try connection.readWrite { txn in
        try txn.set(Note(title: "Groceries", body: "Oat milk, bread, crème fraîche"), forKey: "n1", in: notes)
        try txn.set(Note(title: "Milkshake recipe", body: "Milk, ice cream"), forKey: "n2", in: notes)
    }

    let hits = try connection.read { txn in try search.search("milk* creme", in: txn, limit: 20) }
    for hit in hits {
        for field in hit.fields { print(hit.id.key, field.highlighted(open: "[", close: "]")) }
    }

    let results = SearchResultsView.ranked(name: "note-results", index: search)
    try database.register(results.view)
    let observer = try ViewObserver(database: database, mappings: ViewMappings(groups: ["results"], view: "note-results"))

    try connection.readWrite { txn in try results.setQuery("milk", in: txn) }
    let changes = try observer.advance()  // the section appears, with the rows that match "milk"
    try connection.readWrite { txn in try results.setQuery("milkshake", in: txn) }
    let narrowed = try observer.advance()  // n1 leaves (a delete), n2 moves up
    return (hits, changes, narrowed)
}

/// The README's search recipe, verbatim between its markers (SearchArticleTests checks the README holds it).
func searchReadmeRecipe(database: Database, connection: Connection) throws -> [String] {
    struct Note: Codable, Sendable { var title: String; var body: String }
    let notes = TypedCollection<Note, NoMetadata>("notes")
    // SEARCH RECIPE BEGIN
    let search = SearchIndex.byObject(name: "note-search", notes, fields: [
        ObjectSearchField("title", weight: 2, \.title), ObjectSearchField("body", \.body),
    ])
    try database.register(search)
    let found = try connection.read { txn in
        try search.search("oat* \"crème fraîche\"", in: txn, limit: 20).map { hit in
            hit.fields.map { $0.highlighted(open: "**", close: "**") }.joined(separator: " — ")
        }
    }
    // SEARCH RECIPE END
    return found
}
