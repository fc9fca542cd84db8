import Canopy
import CanopySearch
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// Live search results as a property: random spans of commits that write rows and change the query (new queries,
/// refinements, clearing, invalid queries that change nothing), observed through mappings over a ranked results view
/// and over a results view grouped like a parent view. Applying each span's changeset to the previous rendering
/// (``ChangesetApplier``: UIKit's rules) gives the new rendering, and the new rendering is the brute-force model's:
/// the rows matching the current query, ranked with the statistics frozen when the query was set (ties by key), or in
/// the parent's groups and order.
@Suite("Search results view: changesets from old results to new")
struct SearchResultsPropertyTests {
    static func parentView() -> View {
        View(name: "by-folder", grouping: .byObject(notes) { _, note in note.folder },
             sorting: .byObject(notes) { _, _, note in SortKey(.ascending(note.title)) })
    }

    static func expectedRanked(_ model: Model) -> Rendering {
        guard let query = model.query, let statistics = model.frozen else { return Rendering(sections: []) }
        let hits = BruteForce.search(query, model.rows, statistics: statistics)
        return hits.isEmpty ? Rendering(sections: []) : Rendering(sections: [("results", hits.map { RowID(collection: notes.name, key: $0.key) })])
    }

    static func expectedGrouped(_ model: Model) -> Rendering {
        guard let query = model.query else { return Rendering(sections: []) }
        let matching = model.rows.filter { BruteForce.score(query, $0.value, BruteForce.statistics(query, model.rows)) != nil }
        let groups = Dictionary(grouping: matching, by: { $0.value.folder })
        return Rendering(sections: groups.keys.sorted().map { folder in
            let rows = (groups[folder] ?? []).sorted {
                $0.value.title != $1.value.title ? $0.value.title.utf8.lexicographicallyPrecedes($1.value.title.utf8)
                    : $0.key.utf8.lexicographicallyPrecedes($1.key.utf8)
            }
            return (folder, rows.map { RowID(collection: notes.name, key: $0.key) })
        })
    }

    struct Model {
        var rows: [String: Note] = [:]
        var query: SearchQuery?
        var frozen: SearchStatistics?
    }

    @Test("Random writes and query changes; each changeset reproduces the model's rendering", arguments: [1 as UInt64, 2, 3, 4, 5, 6])
    func randomSpans(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let index = makeNoteSearch()
        let ranked = SearchResultsView.ranked(name: "note-results", index: index)
        let grouped = SearchResultsView.grouped(name: "folder-results", index: index, parentView: "by-folder")
        try database.register(index)
        try database.register(Self.parentView())
        try database.register(ranked.view)
        try database.register(grouped.view)
        let observers: [(name: String, observer: ViewObserver, expected: (Model) -> Rendering)] = [
            ("ranked", try ViewObserver(database: database, mappings: ViewMappings(groups: ["results"], view: "note-results")), Self.expectedRanked),
            ("grouped", try ViewObserver(database: database, mappings: ViewMappings(groups: ["home", "inbox", "work"], view: "folder-results")),
             Self.expectedGrouped),
        ]
        var model = Model()
        var kinds: [String: Int] = [:]
        for span in 0..<100 {
            let before = try observers.map { entry in
                try entry.observer.read { txn in try Rendering(mappings: entry.observer.mappings, reader: txn.view(entry.observer.mappings.view)) }
            }
            var history: [String] = []
            var changed = Set<RowID>()
            for _ in 0..<(1 + Int(random.next() % 3)) {
                try database.newConnection().readWrite { txn in
                    for _ in 0..<(1 + Int(random.next() % 4)) {
                        let key = "n\(random.next() % 30)"
                        switch random.next() % 10 {
                        case 0..<4:
                            let note = randomNote(&random)
                            try txn.set(note, forKey: key, in: notes)
                            model.rows[key] = note
                            changed.insert(RowID(collection: notes.name, key: key))
                            history.append("set \(key) \(note)")
                        case 4..<6:
                            try txn.remove(key: key, in: notes)
                            model.rows[key] = nil
                            history.append("remove \(key)")
                        case 6:
                            try ranked.setQuery("", in: txn)
                            try grouped.setQuery("", in: txn)
                            model.query = nil
                            model.frozen = nil
                            history.append("clear")
                        case 7:
                            // Bad input changes nothing.
                            let bad = ["\"milk", "  ", "!!!", "mi*lk"][Int(random.next() % 4)]
                            if bad.allSatisfy(\.isWhitespace) { break }
                            #expect(throws: CanopyError.self) { try ranked.setQuery(bad, in: txn) }
                            history.append("bad \(bad)")
                        default:
                            // A new query, or the same one again (its rows stay: updates, or moves when the
                            // statistics changed since).
                            let vocabularyWord = vocabulary[Int(random.next() % UInt64(vocabulary.count))]
                            let text = random.next() % 3 == 0 ? (model.query?.text ?? vocabularyWord)
                                : random.next() % 2 == 0 ? vocabularyWord : randomQuery(&random)
                            let query = try SearchQuery(text)
                            try ranked.setQuery(text, in: txn)
                            try grouped.setQuery(text, in: txn)
                            model.query = query
                            model.frozen = BruteForce.statistics(query, model.rows)
                            history.append("query \(text)")
                        }
                    }
                }
            }
            for ((name, observer, expectedRendering), old) in zip(observers, before) {
                let changeset = try observer.advance()
                for change in changeset.rowChanges { kinds["\(name) \(change.kind)", default: 0] += 1 }
                try observer.read { txn in
                    let reader = try txn.view(observer.mappings.view)
                    let rendering = try Rendering(mappings: changeset.mappings, reader: reader)
                    let context = "seed \(seed), span \(span), \(name)\n\(history.joined(separator: "\n"))\nbefore:\n\(old)\nafter:\n\(rendering)"
                    #expect(rendering == expectedRendering(model), "the view is not the model's rendering:\n\(expectedRendering(model))\n\(context)")
                    #expect(!changeset.isReload, "unexpected reload; \(context)")
                    do {
                        let applied = try ChangesetApplier.apply(changeset, to: old, changedRows: changed) { section in
                            try changeset.mappings.rowIDs(inSection: section, reader: reader)
                        }
                        #expect(applied == rendering, "applying the changes gave\n\(applied)\n\(context)")
                    } catch let violation as ChangesetViolation {
                        Issue.record("\(violation); \(context)")
                    }
                }
            }
            let stored = try database.newConnection().read { txn in try ranked.query(in: txn) }
            #expect(stored == model.query, "seed \(seed), span \(span): the stored query")
        }
        for kind in ["ranked insert", "ranked delete", "ranked move", "grouped insert", "grouped delete", "grouped update"] {
            #expect(kinds[kind, default: 0] > 0, "seed \(seed) never produced a \(kind): \(kinds)")
        }
    }
}
