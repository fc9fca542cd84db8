import Canopy
import CanopySearch
import CanopySearchTestFixtures
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// The rules views follow, for the search index: catch-up after another process wrote without it, a definition
/// fingerprint, a spot check of the closure, rows it cannot decode skipped and recorded; and bad input.
@Suite("Search index: currency, definition, skipped rows, bad input", .ownThread)
struct SearchRulesTests {
    static func entrySearch() -> SearchIndex { crashWriterSearch() }

    @Test("Another process writes without the index: reads say staleView; the next write catches it up; results equal brute force",
          .timeLimit(.minutes(5)))
    func catchUp() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let database = try Database(path: path, options: .init(durability: .none))
        let index = Self.entrySearch()
        try database.register(index)
        try database.newConnection().readWrite { txn in
            for number in 1...4 { try txn.set(CrashWriterEntry(number: number, part: "a"), forKey: "seed-\(number)", in: crashWriterEntries) }
        }
        let writer = try #require(builtExecutable(named: "CrashWriter"), "the CrashWriter executable was not built")
        let child = try ChildProcess(writer, [path, "none", "--commits", "8", "--churn"])
        _ = child.remainingLines(seconds: 120)
        #expect(child.waitForExit(seconds: 120) == 0)
        let stale = #expect(throws: CanopyError.self) { try database.newConnection().read { txn in _ = try index.search("a", in: txn) } }
        #expect(stale?.code == .staleView)
        try database.newConnection().readWrite { txn in
            try txn.set(CrashWriterEntry(number: 100, part: "b"), forKey: "mine", in: crashWriterEntries)
        }
        try database.newConnection().read { txn in
            var parts: [String: [String]] = [:]
            for key in try txn.keys(inCollection: crashWriterEntries.name) {
                guard let entry = try txn.object(forKey: key, in: crashWriterEntries) else { continue }
                parts[entry.part, default: []].append(key)
            }
            for part in ["a", "b"] {
                let found = try index.search(part, in: txn, limit: 10_000, highlights: false).map(\.id.key).sorted()
                #expect(found == (parts[part] ?? []).sorted(), "part \(part)")
            }
            #expect(try index.search("n100", in: txn).map(\.id.key) == ["mine"])
        }
    }

    /// Rows the index had indexed, changed by a process that does not register it: rewritten (their records keep
    /// the index's attachment: the old words), removed, or removed and written again (the attachment is gone with the
    /// record; their old postings are found through `documents` only by a rebuild).
    @Test("Another process rewrites, removes, or removes and writes again rows the index holds: after catch-up every word finds exactly its rows",
          .timeLimit(.minutes(5)), arguments: [["--churn"], ["--regroup", "7"], ["--churn", "--regroup", "11"]])
    func catchUpOfIndexedRows(_ mode: [String]) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let database = try Database(path: path, options: .init(durability: .none))
        let index = Self.entrySearch()
        try database.register(index)
        // The writer's own key scheme and counter: its commits remove and rewrite these rows.
        try database.newConnection().readWrite { txn in
            for number in 1...10 {
                for part in ["a", "b"] { try txn.set(CrashWriterEntry(number: number, part: part), forKey: "\(number)-\(part)", in: crashWriterEntries) }
            }
            try txn.set(10, forKey: "n", in: TypedCollection<Int, NoMetadata>("counter"))
        }
        let writer = try #require(builtExecutable(named: "CrashWriter"), "the CrashWriter executable was not built")
        let child = try ChildProcess(writer, [path, "none", "--commits", "6"] + mode)
        _ = child.remainingLines(seconds: 120)
        #expect(child.waitForExit(seconds: 120) == 0)
        try database.newConnection().readWrite { txn in
            try txn.set(CrashWriterEntry(number: 100, part: "b"), forKey: "mine", in: crashWriterEntries)
        }
        try database.newConnection().read { txn in
            var byWord: [String: [String]] = [:]
            for key in try txn.keys(inCollection: crashWriterEntries.name) {
                guard let entry = try txn.object(forKey: key, in: crashWriterEntries) else { continue }
                byWord[entry.part, default: []].append(key)
                byWord["n\(entry.number)", default: []].append(key)
            }
            let words = ["a", "b", "c"] + (0...100).map { "n\($0)" }
            for word in words {
                let found = try index.search(word, in: txn, limit: 10_000, highlights: false).map(\.id.key).sorted()
                #expect(found == (byWord[word] ?? []).sorted(), "\(mode): \(word)")
            }
        }
    }

    @Test("A changed field weight rebuilds (definition fingerprint); a changed closure without a new tag is caught by the spot check")
    func definition() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        do {
            let database = try Database(path: path, options: .init(durability: .none))
            #expect(try database.register(makeNoteSearch()) == .rebuilt(.firstRegistration))
            try database.newConnection().readWrite { txn in try txn.set(Note(title: "milk", body: "bread"), forKey: "a", in: notes) }
        }
        do {
            let database = try Database(path: path, options: .init(durability: .none))
            #expect(try database.register(makeNoteSearch()) == .current, "the same definition writes nothing")
        }
        do {
            let database = try Database(path: path, options: .init(durability: .none))
            let outcome = try database.register(makeNoteSearch(titleWeight: 3))
            guard case .rebuilt(.definitionChanged) = outcome else { Issue.record("expected a rebuild for the new weight, got \(outcome)"); return }
        }
        let database = try Database(path: path, options: .init(durability: .none))
        // The same fields and tag, but the closure now reads the body as the title: the stored words differ.
        let changed = SearchIndex.byObject(name: "note-search", notes, fields: [
            ObjectSearchField("title", weight: 3, \.body), ObjectSearchField("body", \.title),
        ])
        let outcome = try database.register(changed)
        guard case .rebuilt(.storedStateMismatch) = outcome else { Issue.record("expected the spot check to rebuild, got \(outcome)"); return }
    }

    struct OtherModel: Codable { var number: Int }

    @Test("A row that does not decode is skipped and recorded, not a failed write; rewritten so that it decodes, it is taken back")
    func skippedRows() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let index = makeNoteSearch()
        try database.register(index)
        let wrong = TypedCollection<OtherModel, NoMetadata>("notes")
        try database.newConnection().readWrite { txn in
            try txn.set(Note(title: "milk", body: nil), forKey: "good", in: notes)
            try txn.set(OtherModel(number: 1), forKey: "bad", in: wrong)
        }
        let (skipped, found) = try database.newConnection().read { txn in
            (try txn.skippedRows(ofExtension: "note-search")?.rows.map(\.key), try index.search("milk", in: txn).map(\.id.key))
        }
        #expect(skipped == ["bad"])
        #expect(found == ["good"])
        try database.newConnection().readWrite { txn in try txn.set(Note(title: "milk again", body: nil), forKey: "bad", in: notes) }
        let (skippedAfter, foundAfter) = try database.newConnection().read { txn in
            (try txn.skippedRows(ofExtension: "note-search")?.count ?? 0, try index.search("milk", in: txn, highlights: false).map(\.id.key).sorted())
        }
        #expect(skippedAfter == 0)
        #expect(foundAfter == ["bad", "good"])
    }

    @Test("Bad queries: typed errors naming the problem; a results view keeps its query and rows")
    func badInput() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let index = makeNoteSearch()
        let results = SearchResultsView.ranked(name: "note-results", index: index)
        try database.register(index)
        try database.register(results.view)
        try database.newConnection().readWrite { txn in
            try txn.set(Note(title: "milk", body: nil), forKey: "a", in: notes)
            try results.setQuery("milk", in: txn)
        }
        let snapshot = try database.currentSnapshot()
        let cases: [(String, String)] = [
            ("", "empty"), ("   \n", "empty"), ("!!! ... — ?", "no word"), ("\"buy milk", "not closed"), ("mi*lk", "may only end"),
            ("*", "must follow"), ("milk-*", "must follow"), (String(repeating: "milk ", count: 200_000), "bytes long"),
            ((0..<65).map { "w\($0)" }.joined(separator: " "), "more than 64 terms"),
        ]
        for (query, expected) in cases {
            let error = #expect(throws: CanopyError.self) { _ = try SearchQuery(query) }
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains(expected) == true, "\(query.prefix(30)): \(error?.message ?? "")")
            let searchError = #expect(throws: CanopyError.self) { try database.newConnection().read { txn in _ = try index.search(query, in: txn) } }
            #expect(searchError?.code == .invalidArgument)
            if !query.allSatisfy(\.isWhitespace) {
                let viewError = #expect(throws: CanopyError.self) { try database.newConnection().readWrite { txn in try results.setQuery(query, in: txn) } }
                #expect(viewError?.code == .invalidArgument)
            }
        }
        #expect(try database.currentSnapshot() == snapshot, "nothing was written")
        let (storedQuery, rows, none) = try database.newConnection().read { txn in
            (try results.query(in: txn)?.text, try txn.view("note-results").rowIDs(inGroup: "results").map(\.key), try index.search("milk", in: txn, limit: 0))
        }
        #expect(storedQuery == "milk")
        #expect(rows == ["a"])
        #expect(none.isEmpty)
        #expect(throws: CanopyError.self) { try database.newConnection().read { txn in _ = try index.search("milk", in: txn, limit: -1) } }
        // An empty query clears the results: that is its documented meaning for a results view.
        try database.newConnection().readWrite { txn in try results.setQuery("", in: txn) }
        let (cleared, count) = try database.newConnection().read { txn in (try results.query(in: txn), try txn.view("note-results").count()) }
        #expect(cleared == nil)
        #expect(count == 0)
    }

    @Test("A results view registered without its index is a typed error, not an empty view")
    func resultsWithoutIndex() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        try database.newConnection().readWrite { txn in try txn.set(Note(title: "milk", body: nil), forKey: "a", in: notes) }
        let results = SearchResultsView.ranked(name: "note-results", index: makeNoteSearch())
        let error = #expect(throws: CanopyError.self) { try database.register(results.view) }
        #expect(error?.message.contains("note-search") == true, "\(String(describing: error))")
    }
}
