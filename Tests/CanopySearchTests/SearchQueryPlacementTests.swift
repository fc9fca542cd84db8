import Canopy
import CanopySearch
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// A query change is the results view's change alone: it places rows again in the results view (and views filtered
/// from it) through `placeAgain`, touching no row, so every other view's changeset for that commit is empty.
@Suite("Search results view: a query change reaches no other view")
struct SearchQueryPlacementTests {
    @Test("Random query changes: the other views' changesets are empty, the results' changesets give the new results",
          arguments: [1 as UInt64, 2, 3, 4])
    func otherViewsReportNothing(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let index = makeNoteSearch()
        let byTitle = View(name: "by-title", grouping: .byObject(notes) { _, note in note.title.isEmpty ? "-" : String(note.title.prefix(1)) },
                           sorting: .byObject(notes) { _, _, note in SortKey(.ascending(note.title)) })
        let all = View(name: "all", grouping: .byKey { collection, _ in collection == notes.name ? "all" : nil },
                       sorting: .byKey { _, _, key in SortKey(.ascending(key)) })
        let ranked = SearchResultsView.ranked(name: "results", index: index)
        let grouped = SearchResultsView.grouped(name: "grouped-results", index: index, parentView: "by-title")
        try database.register(index)
        try database.register(byTitle)
        try database.register(all)
        try database.register(ranked.view)
        try database.register(grouped.view)
        try database.newConnection().readWrite { txn in
            for number in 0..<60 { try txn.set(randomNote(&random), forKey: "n\(number)", in: notes) }
        }
        let others = try ["by-title", "all"].map { name in
            try ViewObserver(database: database, mappings: ViewMappings(view: name, groupFilter: { _ in true }))
        }
        let results = try ViewObserver(database: database, mappings: ViewMappings(groups: ["results"], view: "results"))
        var moved = 0
        for step in 0..<40 {
            let query = step % 7 == 6 ? "" : randomQuery(&random)
            let old = try results.read { txn throws in try Rendering(mappings: results.mappings, reader: txn.view("results")) }
            try database.newConnection().readWrite { txn in
                try ranked.setQuery(query, in: txn)
                try grouped.setQuery(query, in: txn)
            }
            let context = "seed \(seed), step \(step), query '\(query)'"
            for observer in others {
                let changeset = try observer.advance()
                #expect(changeset.rowChanges.isEmpty && changeset.sectionChanges.isEmpty && !changeset.isReload,
                        "\(observer.mappings.view) reported \(changeset.rowChanges.map { "\($0.kind) \($0.id.key)" }) for a query change; \(context)")
            }
            let changeset = try results.advance()
            moved += changeset.rowChanges.count
            try results.read { txn throws in
                let reader = try txn.view("results")
                let expected = try Rendering(mappings: changeset.mappings, reader: reader)
                let applied = try ChangesetApplier.apply(changeset, to: old, changedRows: []) { section in
                    try changeset.mappings.rowIDs(inSection: section, reader: reader)
                }
                #expect(applied == expected, "\(context)")
                #expect(try reader.checkInvariants() == [], "\(context)")
                #expect(try txn.view("grouped-results").checkInvariants() == [], "\(context)")
            }
        }
        #expect(moved > 0, "seed \(seed): no query changed the results")
    }
}
