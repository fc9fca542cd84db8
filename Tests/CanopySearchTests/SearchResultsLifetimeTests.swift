import Canopy
import CanopyCore
import CanopyTestSupport
import Testing
@testable import CanopySearch

/// A results view holds its index; the index finds its results views (to load their queries at every write) by name.
/// Both strong, they were a cycle: the index, its results views, their views and every view directory those cached
/// (AddressSanitizer's leak check: 2,057 blocks, 284 KB after the search suite, allocated in `ViewIndex.updatePage`)
/// outlived the database and the app. The index holds them weakly; a results view the app let go of while its view
/// stays registered still has its query loaded at every write, and the index still finds it.
@Suite("Search results views: no reference cycle with their index")
struct SearchResultsLifetimeTests {
    /// Weak references to what a search-using app makes.
    struct Made {
        weak var database: Database?
        weak var index: SearchIndex?
        weak var ranked: SearchResultsView?
        weak var rankedView: View?
        weak var grouped: SearchResultsView?
        weak var groupedView: View?
    }

    /// Opens a database in `directory`, registers an index, a ranked and a grouped results view, writes rows, sets
    /// queries, reads and observes the results; then lets everything go.
    static func useAndLetGo(_ directory: TemporaryDirectory) throws -> Made {
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let index = makeNoteSearch()
        let all = View(name: "all-notes", grouping: .byObject(notes) { _, _ in "all" },
                       sorting: .byObject(notes) { _, _, note in SortKey(.ascending(note.title)) })
        let ranked = SearchResultsView.ranked(name: "note-results", index: index)
        let grouped = SearchResultsView.grouped(name: "note-grouped", index: index, parentView: "all-notes")
        try database.register(index)
        try database.register(all)
        try database.register(ranked.view)
        try database.register(grouped.view)
        let connection = database.newConnection()
        let observer = try ViewObserver(database: database, mappings: ViewMappings(groups: ["results"], view: "note-results"))
        for round in 0..<20 {
            try connection.readWrite { txn in
                for number in 0..<10 {
                    try txn.set(Note(title: number % 2 == 0 ? "milk \(round)" : "bread \(round)", body: "oat"), forKey: "n\(round)-\(number)", in: notes)
                }
                try ranked.setQuery(round % 2 == 0 ? "milk" : "oat", in: txn)
                try grouped.setQuery("milk", in: txn)
            }
            _ = try observer.advance()
        }
        try connection.read { txn throws in
            #expect(try txn.view("note-results").count() == 200)  // the last query, "oat": every row
            #expect(try txn.view("note-grouped").count() == 100)
        }
        return Made(database: database, index: index, ranked: ranked, rankedView: ranked.view, grouped: grouped, groupedView: grouped.view)
    }

    @Test("once the app lets go of the database, its index and results views, none of them is alive")
    func nothingOutlivesTheApp() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let made = try Self.useAndLetGo(directory)
        // (Before the fix: the index and both results views, with their views, were still alive here.)
        #expect(made.database == nil)
        #expect(made.index == nil, "the search index outlived its database and the app")
        #expect(made.ranked == nil && made.rankedView == nil, "the ranked results view outlived the app")
        #expect(made.grouped == nil && made.groupedView == nil, "the grouped results view outlived the app")
    }

    @Test("a results view the app let go of, its view still registered: its query still places rows, and the index still finds it")
    func letGoWhileRegistered() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let index = makeNoteSearch()
        try database.register(index)
        weak var released: SearchResultsView?
        do {
            let ranked = SearchResultsView.ranked(name: "note-results", index: index)
            released = ranked
            try database.register(ranked.view)
            try database.newConnection().readWrite { txn in
                try txn.set(Note(title: "milk"), forKey: "a", in: notes)
                try ranked.setQuery("milk", in: txn)
            }
        }
        #expect(released == nil)
        // The next write loads the stored query into the view's closures (through the index's weak binding) and places
        // the new rows by it.
        try database.newConnection().readWrite { txn in
            try txn.set(Note(title: "oat milk"), forKey: "b", in: notes)
            try txn.set(Note(title: "bread"), forKey: "c", in: notes)
        }
        let found = try #require(index.resultsView(named: "note-results"))
        #expect(try database.newConnection().read { txn in try txn.view("note-results").rowIDs(inGroup: "results").map(\.key).sorted() } == ["a", "b"])
        try database.newConnection().readWrite { txn in try found.setQuery("bread", in: txn) }
        try database.newConnection().readWrite { txn in try txn.set(Note(title: "bread and milk"), forKey: "d", in: notes) }
        #expect(try database.newConnection().read { txn in try txn.view("note-results").rowIDs(inGroup: "results").map(\.key).sorted() } == ["c", "d"])
        #expect(try database.newConnection().read { txn in try found.query(in: txn)?.text } == "bread")
    }
}
