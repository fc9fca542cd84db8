@testable import Canopy
import CanopyCoreTestFixtures
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// A view writer inserts the entries of rows that enter the view together, sorted, at the first read of the view's
/// pages in the transaction or at commit. These tests hold every read in and after such a transaction to what the
/// rows say, and the result to what a population of the same rows builds.
@Suite("Views: new entries inserted together at the first read or at commit")
struct PendingInsertTests {
    /// The rows of each group, as the model says they must be: open tasks by list, by descending priority, then title
    /// (titles are unique, so no tie reaches the row key).
    private static func expected(_ rows: [String: TodoItem], filter: (TodoItem) -> Bool = { _ in true }) -> [String: [String]] {
        var groups: [String: [(key: String, item: TodoItem)]] = [:]
        for (key, item) in rows where !item.done && filter(item) { groups[item.list, default: []].append((key, item)) }
        return groups.mapValues { rows in
            rows.sorted { ($0.item.priority, $1.item.title) > ($1.item.priority, $0.item.title) }.map(\.key)
        }
    }

    @Test("Reads in the transaction, the committed view, a filtered child and an observer's changeset all see every new entry (seeded)",
          arguments: [1, 2, 3, 77] as [UInt64])
    func readsSeeEveryNewEntry(seed: UInt64) throws {
        try withDatabase { database, _ in
            var random = SeededRandom(seed: seed)
            let lists = ["home", "work", "errands", "garden"]
            let urgent: (TodoItem) -> Bool = { $0.priority >= 5 }
            try database.register(makeTaskView())
            try database.register(FilteredView.make(name: "urgent", parentView: "by-list") { _, row in try row.object(in: tasks).priority >= 5 })
            let connection = database.newConnection()
            var rows: [String: TodoItem] = [:]
            var title = 0
            func item(list: String? = nil) -> TodoItem {
                title += 1
                return TodoItem(title: String(format: "t%05d", title), list: list ?? lists[Int.random(in: 0..<lists.count, using: &random)],
                                priority: Int.random(in: 0..<10, using: &random), done: Int.random(in: 0..<10, using: &random) == 0)
            }
            // Two lists have rows (and pages) before the transaction; two are new in it.
            try connection.readWrite { txn throws in
                for index in 0..<40 {
                    let value = item(list: lists[index % 2])
                    try txn.set(value, forKey: "old\(index)", in: tasks)
                    rows["old\(index)"] = value
                }
            }
            let mappings = ViewMappings(groups: lists, view: "by-list")
            let observer = try ViewObserver(database: database, mappings: mappings)
            let before = try observer.read { txn in try Rendering(mappings: observer.mappings, reader: txn.view("by-list")) }
            var reads = 0
            try connection.readWrite { txn throws in
                for step in 0..<700 {
                    switch Int.random(in: 0..<100, using: &random) {
                    case 0..<60:
                        let value = item()
                        try txn.set(value, forKey: "new\(step)", in: tasks)
                        rows["new\(step)"] = value
                    case 60..<72:
                        guard let key = rows.keys.sorted().randomElement(using: &random) else { continue }
                        let value = item()
                        try txn.set(value, forKey: key, in: tasks)
                        rows[key] = value
                    case 72..<82:
                        guard let key = rows.keys.sorted().randomElement(using: &random) else { continue }
                        #expect(try txn.remove(key: key, in: tasks))
                        rows[key] = nil
                    case 82..<90:
                        // A read in the middle of the transaction: the entries placed so far are all there.
                        reads += 1
                        let view = try txn.view("by-list")
                        let want = Self.expected(rows)
                        let list = lists[Int.random(in: 0..<lists.count, using: &random)]
                        #expect(try view.count(inGroup: list) == want[list]?.count ?? 0, "seed \(seed), step \(step): count of \(list)")
                        if let keys = want[list], !keys.isEmpty {
                            let at = Int.random(in: 0..<keys.count, using: &random)
                            #expect(try view.rowID(at: at, inGroup: list)?.key == keys[at], "seed \(seed), step \(step): row \(at) of \(list)")
                        }
                        if step % 3 == 0 {
                            #expect(try contents(of: txn.view("urgent")) == Self.expected(rows, filter: urgent), "seed \(seed), step \(step): urgent")
                        }
                    default:
                        continue
                    }
                }
            }
            #expect(reads > 0)
            try connection.read { txn throws in
                let view = try txn.view("by-list")
                #expect(try contents(of: view) == Self.expected(rows), "seed \(seed): the committed view")
                #expect(try view.checkInvariants() == [], "seed \(seed)")
                #expect(try contents(of: txn.view("urgent")) == Self.expected(rows, filter: urgent), "seed \(seed): the filtered view")
                #expect(try txn.view("urgent").checkInvariants() == [], "seed \(seed)")
            }
            // The observer's changeset turns the rendering before the transaction into the one after.
            let changes = try observer.advance()
            let after = try observer.read { txn in
                try ChangesetApplier.apply(changes, to: before) { try changes.mappings.rowIDs(inSection: $0, reader: txn.view("by-list")) }
            }
            let fresh = try observer.read { txn in try Rendering(mappings: observer.mappings, reader: txn.view("by-list")) }
            #expect(after == fresh, "seed \(seed): the changeset")
            // A population of the same rows builds the same view.
            try database.register(makeTaskView(name: "by-list-rebuilt"))
            try connection.read { txn throws in
                #expect(try contents(of: txn.view("by-list-rebuilt")) == contents(of: txn.view("by-list")), "seed \(seed): against a population")
            }
        }
    }

    /// A read in the transaction inserts the pending entries; when that fails part way (a page of the group is
    /// missing), the app may catch the error and go on. The commit must not then leave rows whose records say they are
    /// in the view while their entries never reached its pages.
    @Test("A failed insertion of the pending entries, caught by the app, keeps the transaction from committing")
    func failedInsertionRefusesTheCommit() throws {
        try withDatabase { database, _ in
            try database.register(makeTaskView())
            let connection = database.newConnection()
            try connection.readWrite { txn in
                for index in 0..<10 { try txn.set(TodoItem(title: "h\(index)", list: "home", priority: 1), forKey: "h\(index)", in: tasks) }
            }
            // A later commit of another group, so that the home pages are read from the file, not from the pages the
            // last commit wrote.
            try connection.readWrite { txn in try txn.set(TodoItem(title: "w", list: "work", priority: 1), forKey: "w", in: tasks) }
            // The view's pages go missing (a damaged file): its directory still names them.
            try connection.readWrite { txn in
                let tables = try ViewTables.open(in: txn, view: "by-list")
                let next = try tables.loadIndex(txn).nextPageID
                for id in 1..<next where try tables.hasPage(id, txn) { try tables.deletePage(id, txn) }
                txn.markWritten()
            }
            let committed = Result {
                try connection.readWrite { txn in
                    try txn.set(TodoItem(title: "new", list: "home", priority: 9), forKey: "new", in: tasks)
                    let error = #expect(throws: CanopyError.self) { try txn.view("by-list").rowID(at: 0, inGroup: "home") }
                    #expect(error?.code == .corruptStore, "\(String(describing: error))")
                    // The app catches the error and commits.
                }
            }
            #expect(throws: CanopyError.self) { try committed.get() }
            #expect(try connection.read { txn in try txn.object(forKey: "new", in: tasks) } == nil)
        }
    }
}
