import Canopy
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// A reminder-like model for the view tests.
struct TodoItem: Codable, Sendable, Equatable {
    var title: String
    var list: String
    var priority: Int
    var done: Bool = false
}

let tasks = TypedCollection<TodoItem, NoteInfo>("tasks")

/// Groups open tasks by list, sorted by descending priority then title.
func makeTaskView(name: String = "by-list", versionTag: String = "1", options: ViewOptions = .init()) -> View {
    View(
        name: name,
        grouping: .byObject(tasks) { _, task in task.done ? nil : task.list },
        sorting: .byObject(tasks) { _, _, task in SortKey(.descending(task.priority), .ascending(task.title)) },
        versionTag: versionTag, options: options)
}

/// The rows of each group of a view, read by position.
func contents(of view: ViewReader) throws -> [String: [String]] {
    var result: [String: [String]] = [:]
    for group in try view.groups() {
        result[group] = try view.rowIDs(inGroup: group, range: 0..<Int.max).map(\.key)
    }
    return result
}

@Suite("Views")
struct ViewTests {
    @Test func groupsAndSortsAndAnswersPositionQueries() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn throws in
                try txn.set(TodoItem(title: "b", list: "home", priority: 1), forKey: "t1", in: tasks)
                try txn.set(TodoItem(title: "a", list: "home", priority: 1), forKey: "t2", in: tasks)
                try txn.set(TodoItem(title: "z", list: "home", priority: 5), forKey: "t3", in: tasks)
                try txn.set(TodoItem(title: "w", list: "work", priority: 0), forKey: "t4", in: tasks)
                try txn.set(TodoItem(title: "done", list: "work", priority: 9, done: true), forKey: "t5", in: tasks)
            }
            try database.register(makeTaskView())
            try connection.read { txn throws in
                let view = try txn.view("by-list")
                #expect(try view.groups() == ["home", "work"])
                #expect(try view.numberOfGroups() == 2)
                #expect(try view.count() == 4)
                #expect(try view.count(inGroup: "home") == 3)
                #expect(try view.count(inGroup: "nowhere") == 0)
                #expect(try contents(of: view) == ["home": ["t3", "t2", "t1"], "work": ["t4"]])
                #expect(try view.rowID(at: 1, inGroup: "home")?.key == "t2")
                #expect(try view.rowID(at: 3, inGroup: "home") == nil)
                #expect(try view.rowID(at: -1, inGroup: "home") == nil)
                #expect(try view.position(ofKey: "t1", inCollection: "tasks")! == ("home", 2))
                #expect(try view.position(ofKey: "t5", inCollection: "tasks") == nil)
                #expect(try view.object(at: 0, inGroup: "home", in: tasks)?.title == "z")
                #expect(try view.first(inGroup: "home")?.key == "t3")
                #expect(try view.last(inGroup: "home")?.key == "t1")
                #expect(try view.rowIDs(inGroup: "home", offset: 0, limit: 2, reversed: true).map(\.key) == ["t1", "t2"])
                #expect(try view.rowIDs(inGroup: "home", offset: 1, limit: 5).map(\.key) == ["t2", "t1"])
                // Binary search: rows with priority 1.
                let range = try view.findRange(inGroup: "home") { id in
                    let priority = try txn.object(forKey: id.key, in: tasks)?.priority ?? 0
                    return priority > 1 ? .before : (priority == 1 ? .matching : .after)
                }
                #expect(range == 1..<3)
                #expect(try view.checkInvariants() == [])
            }
            // Updates move rows within and across groups; completing a task leaves the view.
            try connection.readWrite { txn throws in
                try txn.set(TodoItem(title: "b", list: "work", priority: 1), forKey: "t1", in: tasks)
                try txn.set(TodoItem(title: "z", list: "home", priority: 5, done: true), forKey: "t3", in: tasks)
                try txn.set(TodoItem(title: "new", list: "errands", priority: 2), forKey: "t6", in: tasks)
                _ = try txn.remove(key: "t4", in: tasks)
            }
            try connection.read { txn throws in
                let view = try txn.view("by-list")
                #expect(try contents(of: view) == ["errands": ["t6"], "home": ["t2"], "work": ["t1"]])
                #expect(try view.checkInvariants() == [])
            }
        }
    }

    @Test func viewsPersistAndRebuildOnlyWhenNeeded() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        do {
            let database = try Database(path: path)
            try database.newConnection().readWrite { txn throws in
                for i in 0..<50 { try txn.set(TodoItem(title: "t\(i)", list: "l\(i % 3)", priority: i % 7), forKey: "k\(i)", in: tasks) }
            }
            let view = makeTaskView()
            try database.register(view)
            #expect(view.lastPopulation?.rowsIndexed == 50)
            try database.newConnection().readWrite { txn throws in
                try txn.set(TodoItem(title: "late", list: "l0", priority: 3), forKey: "late", in: tasks)
            }
        }
        do {
            // Reopened with the same version tag and no missed writes: no rebuild, same contents.
            let database = try Database(path: path)
            let view = makeTaskView()
            try database.register(view)
            #expect(view.lastPopulation == nil)
            try database.newConnection().read { txn throws in
                let reader = try txn.view("by-list")
                #expect(try reader.count() == 51)
                #expect(try reader.checkInvariants() == [])
            }
        }
        do {
            // Written while the view was not registered: caught up from the commit log, not rebuilt.
            let database = try Database(path: path)
            try database.newConnection().readWrite { txn throws in
                try txn.set(TodoItem(title: "missed", list: "l9", priority: 1), forKey: "missed", in: tasks)
            }
            let view = makeTaskView()
            #expect(try database.register(view) == .caughtUp(rows: 1))
            #expect(view.lastPopulation == nil)
            try database.newConnection().read { txn throws in
                let reader = try txn.view("by-list")
                #expect(try reader.count(inGroup: "l9") == 1)
                #expect(try reader.checkInvariants() == [])
            }
        }
        do {
            // A new version tag rebuilds.
            let database = try Database(path: path)
            let view = makeTaskView(versionTag: "2")
            try database.register(view)
            #expect(view.lastPopulation?.reason.contains("version tag") == true)
        }
    }

    @Test func filteredViewKeepsParentOrderAndRefilters() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn throws in
                for i in 0..<40 { try txn.set(TodoItem(title: "t\(i)", list: "l\(i % 2)", priority: i % 5), forKey: "k\(i)", in: tasks) }
            }
            try database.register(makeTaskView())
            let urgent = FilteredView.make(name: "urgent", parentView: "by-list") { _, row in try row.object(as: TodoItem.self).priority >= 3 }
            try database.register(urgent)
            try connection.readWrite { txn throws in
                try txn.set(TodoItem(title: "now urgent", list: "l0", priority: 4), forKey: "k0", in: tasks)
                try txn.set(TodoItem(title: "calm", list: "l1", priority: 0), forKey: "k3", in: tasks)
                try txn.set(TodoItem(title: "brand new", list: "l2", priority: 3), forKey: "fresh", in: tasks)
            }
            try connection.read { txn throws in
                let parent = try txn.view("by-list")
                let filtered = try txn.view("urgent")
                #expect(try filtered.checkInvariants() == [])
                for group in try parent.groups() {
                    let expected = try parent.rowIDs(inGroup: group, range: 0..<Int.max).filter {
                        try txn.object(forKey: $0.key, in: tasks)!.priority >= 3
                    }
                    #expect(try filtered.rowIDs(inGroup: group, range: 0..<Int.max) == expected)
                }
            }
        }
    }

    @Test(arguments: [11 as UInt64, 12, 13])
    func randomOperationsKeepInvariants(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        try withDatabase { database, _ in
            try database.register(makeTaskView())
            try database.register(FilteredView.make(name: "odd", parentView: "by-list") { _, row in
                try row.object(as: TodoItem.self).priority % 2 == 1
            })
            let connection = database.newConnection()
            let lists = ["a", "b", "c", "d"]
            for step in 0..<60 {
                try connection.readWrite { txn throws in
                    for _ in 0..<Int.random(in: 1...40, using: &random) {
                        let key = "k\(Int.random(in: 0..<400, using: &random))"
                        switch Int.random(in: 0..<10, using: &random) {
                        case 0..<6:
                            let task = TodoItem(title: "t\(Int.random(in: 0..<50, using: &random))", list: lists.randomElement(using: &random)!,
                                            priority: Int.random(in: 0..<4, using: &random), done: Int.random(in: 0..<8, using: &random) == 0)
                            try txn.set(task, forKey: key, in: tasks)
                        case 6..<9:
                            _ = try txn.remove(key: key, in: tasks)
                        default:
                            if Int.random(in: 0..<10, using: &random) == 0 { _ = try txn.removeAll(inCollection: "tasks") }
                        }
                    }
                    // Inside the transaction, readers see the pages it changed (held by the view's writer until commit).
                    if step % 5 == 0 {
                        for name in ["by-list", "odd"] {
                            let problems = try txn.view(name).checkInvariants()
                            #expect(problems == [], "seed \(seed) step \(step) view \(name), in the transaction: \(problems.prefix(3))")
                        }
                    }
                }
                try connection.read { txn throws in
                    for name in ["by-list", "odd"] {
                        let problems = try txn.view(name).checkInvariants()
                        #expect(problems == [], "seed \(seed) step \(step) view \(name)")
                    }
                }
            }
        }
    }
}
