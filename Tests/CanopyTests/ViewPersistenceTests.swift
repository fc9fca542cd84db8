import Canopy
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// Views across closing and reopening, version tags, missed writes and unregistration. Each session opens the database
/// in its own scope so that it is closed before the next one; the expected contents come from a model of the rows.
@Suite("View persistence")
struct ViewPersistenceTests {
    static let options = DatabaseOptions(durability: .none)

    /// The rows of a session, as the test wrote them.
    typealias Model = [String: TodoItem]

    /// `count` tasks over four lists with priorities 0...4; every seventh is done.
    static func seedModel(count: Int = 120) -> Model {
        var model: Model = [:]
        for i in 0..<count {
            model["k\(i)"] = TodoItem(title: "t\(i % 17)", list: "l\(i % 4)", priority: (i * 7) % 5, done: i % 7 == 0)
        }
        return model
    }

    /// The contents of a view over `model`, computed without the view: open tasks grouped by `group`, ordered by
    /// descending priority, then title, then key (the sorting of ``makeTaskView(name:versionTag:options:)``), keeping
    /// the rows `filter` accepts.
    static func expectedContents(
        _ model: Model, group: (TodoItem) -> String = { $0.list }, filter: (TodoItem) -> Bool = { _ in true }
    ) -> [String: [String]] {
        var groups: [String: [(key: String, task: TodoItem)]] = [:]
        for (key, task) in model where !task.done && filter(task) { groups[group(task), default: []].append((key, task)) }
        return groups.mapValues { rows in
            rows.sorted { lhs, rhs in
                if lhs.task.priority != rhs.task.priority { return lhs.task.priority > rhs.task.priority }
                if lhs.task.title != rhs.task.title { return lhs.task.title.utf8.lexicographicallyPrecedes(rhs.task.title.utf8) }
                return lhs.key.utf8.lexicographicallyPrecedes(rhs.key.utf8)
            }.map(\.key)
        }
    }

    /// Open tasks grouped by priority ("p0"...), with the sorting of the task view: a different grouping under the
    /// same name as ``makeTaskView(name:versionTag:options:)``.
    static func makePriorityView(name: String = "by-list", versionTag: String) -> View {
        View(
            name: name,
            grouping: .byObject(tasks) { _, task in task.done ? nil : "p\(task.priority)" },
            sorting: .byObject(tasks) { _, _, task in SortKey(.descending(task.priority), .ascending(task.title)) },
            versionTag: versionTag)
    }

    static func makeUrgentView(versionTag: String = "1", minimum: Int = 3) -> View {
        FilteredView.make(name: "urgent", parentView: "by-list", versionTag: versionTag) { _, row in
            try row.object(as: TodoItem.self).priority >= minimum
        }
    }

    /// Writes `model` in one transaction.
    static func write(_ model: Model, to database: Database) throws {
        try database.newConnection().readWrite { txn throws in
            for (key, task) in model { try txn.set(task, forKey: key, in: tasks) }
        }
    }

    /// Checks that the views named in `expected` hold exactly those contents, and that their invariants hold.
    static func expectViews(
        _ database: Database, _ expected: [String: [String: [String]]], _ comment: Comment? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        try database.newConnection().read { txn throws in
            for (name, groups) in expected.sorted(by: { $0.key < $1.key }) {
                let reader = try txn.view(name)
                #expect(try contents(of: reader) == groups, "view \(name) \(comment?.rawValue ?? "")", sourceLocation: sourceLocation)
                #expect(try reader.count() == groups.values.reduce(0) { $0 + $1.count }, "view \(name)", sourceLocation: sourceLocation)
                #expect(try reader.checkInvariants() == [], "view \(name) \(comment?.rawValue ?? "")", sourceLocation: sourceLocation)
            }
        }
    }

    /// The names of the LMDB tables (named databases) in the file.
    static func tableNames(_ database: Database) throws -> [String] {
        try database.environment.read { txn in
            let main = try txn.openDatabase(named: nil)
            var names: [String] = []
            try txn.forEach(in: main) { key, _ in
                names.append(String(decoding: key, as: UTF8.self))
                return true
            }
            return names
        }
    }

    // MARK: Reopening

    @Test("Close and reopen keeps a view and its filtered view without recomputing them")
    func reopenWithoutRebuild() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        var model = Self.seedModel()
        let urgent: (TodoItem) -> Bool = { $0.priority >= 3 }
        do {
            let database = try Database(path: path, options: Self.options)
            try Self.write(model, to: database)
            let view = makeTaskView()
            let filtered = Self.makeUrgentView()
            try database.register(view)
            try database.register(filtered)
            #expect(view.lastPopulation?.reason == "first registration")
            #expect(view.lastPopulation?.rowsIndexed == Self.expectedContents(model).values.reduce(0) { $0 + $1.count })
            #expect(filtered.lastPopulation?.reason == "first registration")
            // Incremental changes after population are persisted too.
            try database.newConnection().readWrite { txn throws in
                try txn.set(TodoItem(title: "new", list: "l9", priority: 4), forKey: "new", in: tasks)
                _ = try txn.remove(key: "k1", in: tasks)
                try txn.set(TodoItem(title: "moved", list: "l0", priority: 3), forKey: "k2", in: tasks)
            }
            model["new"] = TodoItem(title: "new", list: "l9", priority: 4)
            model["k1"] = nil
            model["k2"] = TodoItem(title: "moved", list: "l0", priority: 3)
            try Self.expectViews(database, ["by-list": Self.expectedContents(model), "urgent": Self.expectedContents(model, filter: urgent)])
        }
        for session in 0..<2 {
            // Reopened with the same version tags and no missed writes: no population, same contents — also after a
            // session that wrote through the views.
            let database = try Database(path: path, options: Self.options)
            let view = makeTaskView()
            let filtered = Self.makeUrgentView()
            try database.register(view)
            try database.register(filtered)
            #expect(view.lastPopulation == nil, "session \(session)")
            #expect(filtered.lastPopulation == nil, "session \(session)")
            try Self.expectViews(database, ["by-list": Self.expectedContents(model), "urgent": Self.expectedContents(model, filter: urgent)],
                                 "session \(session)")
            try database.newConnection().readWrite { txn throws in
                try txn.set(TodoItem(title: "s\(session)", list: "l1", priority: 4), forKey: "s\(session)", in: tasks)
            }
            model["s\(session)"] = TodoItem(title: "s\(session)", list: "l1", priority: 4)
            try Self.expectViews(database, ["by-list": Self.expectedContents(model), "urgent": Self.expectedContents(model, filter: urgent)],
                                 "session \(session) after a write")
        }
        do {
            // Opening the database without the views and only reading is not a missed write.
            let database = try Database(path: path, options: Self.options)
            #expect(try database.newConnection().read { txn throws in try txn.count(inCollection: "tasks") } == model.count)
        }
        do {
            let database = try Database(path: path, options: Self.options)
            let view = makeTaskView()
            try database.register(view)
            #expect(view.lastPopulation == nil)
            try Self.expectViews(database, ["by-list": Self.expectedContents(model)])
        }
    }

    // MARK: Version tags

    @Test("Registering with a different version tag rebuilds with the new grouping, once")
    func versionTagRebuilds() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let model = Self.seedModel()
        let byPriority: (TodoItem) -> String = { "p\($0.priority)" }
        do {
            let database = try Database(path: path, options: Self.options)
            try Self.write(model, to: database)
            try database.register(makeTaskView(versionTag: "1"))
            try Self.expectViews(database, ["by-list": Self.expectedContents(model)])
        }
        do {
            let database = try Database(path: path, options: Self.options)
            let view = Self.makePriorityView(versionTag: "2")
            try database.register(view)
            #expect(view.lastPopulation?.reason == "version tag changed from '1' to '2'")
            #expect(view.lastPopulation?.rowsExamined == model.count)
            #expect(view.lastPopulation?.groups == 5)
            try Self.expectViews(database, ["by-list": Self.expectedContents(model, group: byPriority)])
            #expect(try database.recordedExtensions().first { $0.name == "by-list" }?.versionTag == "2")
        }
        do {
            // The new tag is recorded: the next session does not rebuild again.
            let database = try Database(path: path, options: Self.options)
            let view = Self.makePriorityView(versionTag: "2")
            try database.register(view)
            #expect(view.lastPopulation == nil)
            try Self.expectViews(database, ["by-list": Self.expectedContents(model, group: byPriority)])
        }
        do {
            // Going back to an older tag is a change too.
            let database = try Database(path: path, options: Self.options)
            let view = makeTaskView(versionTag: "1")
            try database.register(view)
            #expect(view.lastPopulation?.reason == "version tag changed from '2' to '1'")
            try Self.expectViews(database, ["by-list": Self.expectedContents(model)])
        }
    }

    @Test("A filtered view whose filter changes with a new version tag refilters; its parent is not rebuilt")
    func filteredViewRefilters() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let model = Self.seedModel()
        do {
            let database = try Database(path: path, options: Self.options)
            try Self.write(model, to: database)
            try database.register(makeTaskView())
            try database.register(Self.makeUrgentView(versionTag: "1", minimum: 3))
            try Self.expectViews(database, ["urgent": Self.expectedContents(model, filter: { $0.priority >= 3 })])
        }
        do {
            let database = try Database(path: path, options: Self.options)
            let parent = makeTaskView()
            let filtered = Self.makeUrgentView(versionTag: "2", minimum: 1)
            try database.register(parent)
            try database.register(filtered)
            #expect(parent.lastPopulation == nil)
            #expect(filtered.lastPopulation?.reason == "version tag changed from '1' to '2'")
            // The rebuild walks the parent's rows only.
            #expect(filtered.lastPopulation?.rowsExamined == Self.expectedContents(model).values.reduce(0) { $0 + $1.count })
            try Self.expectViews(database, ["by-list": Self.expectedContents(model), "urgent": Self.expectedContents(model, filter: { $0.priority >= 1 })])

            // In the same process: unregister and register a new filter under a new tag.
            try database.unregisterExtension(named: "urgent")
            let again = Self.makeUrgentView(versionTag: "3", minimum: 4)
            try database.register(again)
            #expect(again.lastPopulation != nil)
            try Self.expectViews(database, ["urgent": Self.expectedContents(model, filter: { $0.priority >= 4 })])
        }
        do {
            // The parent's grouping changes under a new tag while the filtered view's tag stays: the filtered view must
            // follow the parent's new groups, not keep the old ones.
            let database = try Database(path: path, options: Self.options)
            let parent = Self.makePriorityView(versionTag: "2")
            let filtered = Self.makeUrgentView(versionTag: "3", minimum: 4)
            try database.register(parent)
            try database.register(filtered)
            #expect(parent.lastPopulation != nil)
            #expect(filtered.lastPopulation != nil)
            try Self.expectViews(database, [
                "by-list": Self.expectedContents(model, group: { "p\($0.priority)" }),
                "urgent": Self.expectedContents(model, group: { "p\($0.priority)" }, filter: { $0.priority >= 4 }),
            ])
        }
    }

    // MARK: Missed writes

    /// Kinds of writes made while the views were not registered.
    enum MissedWrite: String, CaseIterable, Sendable {
        case insertIntoNewGroup, updateAcrossGroups, updateLeavingView, updateWithinGroup, remove, removeAll, manyWrites
        /// More rows than the persisted commit log lists per commit (16,384): logged with its changes unknown, so the
        /// views cannot catch up from the log and must be rebuilt from the rows.
        case bulkWrite

        func apply(_ txn: ReadWriteTransaction, _ model: inout Model) throws {
            func set(_ key: String, _ task: TodoItem) throws {
                try txn.set(task, forKey: key, in: tasks)
                model[key] = task
            }
            switch self {
            case .insertIntoNewGroup: try set("fresh", TodoItem(title: "fresh", list: "l-new", priority: 4))
            case .updateAcrossGroups: try set("k1", TodoItem(title: "t1", list: "l3", priority: 4))
            case .updateLeavingView: try set("k2", TodoItem(title: "t2", list: "l2", priority: 4, done: true))
            case .updateWithinGroup: try set("k3", TodoItem(title: "a", list: "l3", priority: 0))
            case .remove:
                _ = try txn.remove(key: "k5", in: tasks)
                model["k5"] = nil
            case .removeAll:
                _ = try txn.removeAll(inCollection: "tasks")
                model = [:]
                try set("after", TodoItem(title: "after", list: "l0", priority: 3))
            case .manyWrites:
                for i in stride(from: 0, to: 120, by: 3) { try set("k\(i)", TodoItem(title: "m\(i)", list: "l\(i % 5)", priority: i % 4)) }
                for i in stride(from: 1, to: 120, by: 11) {
                    _ = try txn.remove(key: "k\(i)", in: tasks)
                    model["k\(i)"] = nil
                }
            case .bulkWrite:
                try set("k1", TodoItem(title: "t1", list: "l3", priority: 4))
                _ = try txn.remove(key: "k5", in: tasks)
                model["k5"] = nil
                for i in 0..<16_384 { try set("b\(i)", TodoItem(title: "b\(i)", list: "l\(i % 5)", priority: i % 5)) }
            }
        }
    }

    @Test("Writes made while the views were not registered are caught up from the commit log (rebuilt when a whole collection went)",
          arguments: MissedWrite.allCases)
    func missedWritesCatchUp(write: MissedWrite) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        var model = Self.seedModel()
        let urgent: (TodoItem) -> Bool = { $0.priority >= 3 }
        do {
            let database = try Database(path: path, options: Self.options)
            try Self.write(model, to: database)
            try database.register(makeTaskView())
            try database.register(Self.makeUrgentView())
        }
        do {
            // Opened without the views.
            let database = try Database(path: path, options: Self.options)
            try database.newConnection().readWrite { txn throws in try write.apply(txn, &model) }
        }
        do {
            let database = try Database(path: path, options: Self.options)
            let view = makeTaskView()
            let filtered = Self.makeUrgentView()
            let outcome = try database.register(view)
            let filteredOutcome = try database.register(filtered)
            if write == .removeAll {
                #expect(view.lastPopulation?.reason.contains("while the extension was not registered") == true)
                #expect(filteredOutcome == .rebuilt(.dependencyRebuilt("by-list")))
            } else if write == .bulkWrite {
                guard case .rebuilt(.missedWrites) = outcome else {
                    Issue.record("a bulk commit the log does not list was caught up: \(outcome)")
                    return
                }
                #expect(filteredOutcome == .rebuilt(.dependencyRebuilt("by-list")), "\(filteredOutcome)")
                #expect(view.lastPopulation != nil)
            } else {
                let rows = write == .manyWrites ? 47 : 1  // 40 set, 11 removed, 4 of them both
                #expect(outcome == .caughtUp(rows: rows), "\(outcome)")
                #expect(filteredOutcome == .caughtUp(rows: rows), "\(filteredOutcome)")
                #expect(view.lastPopulation == nil && filtered.lastPopulation == nil)
            }
            try Self.expectViews(database, ["by-list": Self.expectedContents(model), "urgent": Self.expectedContents(model, filter: urgent)])
            // Brought up to date: registering again in another process is a read.
            #expect(try database.newConnection().read { txn in try txn.extensionSnapshots() }.extensions["by-list"] == database.currentSnapshot())
        }
    }

    @Test("In one process, a view unregistered without dropping its storage and registered again after writes is rebuilt")
    func unregisterWriteRegisterRebuilds() throws {
        try withDatabase { database, _ in
            var model = Self.seedModel()
            try Self.write(model, to: database)
            try database.register(makeTaskView())
            try database.unregisterExtension(named: "by-list")
            #expect(database.registeredExtension(named: "by-list") == nil)
            try database.newConnection().readWrite { txn throws in
                try txn.set(TodoItem(title: "missed", list: "l0", priority: 4), forKey: "k4", in: tasks)
                _ = try txn.remove(key: "k8", in: tasks)
            }
            model["k4"] = TodoItem(title: "missed", list: "l0", priority: 4)
            model["k8"] = nil
            let view = makeTaskView()
            try database.register(view)
            #expect(view.lastPopulation != nil)
            try Self.expectViews(database, ["by-list": Self.expectedContents(model)])
        }
    }

    @Test("A parent view rebuilt with a new grouping under a registered filtered view leaves the filtered view right")
    func parentRebuiltUnderFilteredView() throws {
        try withDatabase { database, _ in
            var model = Self.seedModel()
            try Self.write(model, to: database)
            try database.register(makeTaskView())
            let urgent = Self.makeUrgentView()
            try database.register(urgent)
            try database.unregisterExtension(named: "by-list")
            // Written while the parent is away: the filtered view cannot place the rows.
            try database.newConnection().readWrite { txn throws in
                try txn.set(TodoItem(title: "gap", list: "l2", priority: 4), forKey: "k3", in: tasks)
                try txn.set(TodoItem(title: "gap new", list: "l1", priority: 3), forKey: "gap", in: tasks)
            }
            model["k3"] = TodoItem(title: "gap", list: "l2", priority: 4)
            model["gap"] = TodoItem(title: "gap new", list: "l1", priority: 3)
            try database.register(Self.makePriorityView(versionTag: "2"))
            #expect(urgent.lastPopulation?.reason == "its dependency 'by-list' was rebuilt")
            try Self.expectViews(database, [
                "by-list": Self.expectedContents(model, group: { "p\($0.priority)" }),
                "urgent": Self.expectedContents(model, group: { "p\($0.priority)" }, filter: { $0.priority >= 3 }),
            ])
        }
    }

    // MARK: Unregistering

    @Test("Unregistering with dropStorage removes the view's tables; without it the tables stay")
    func unregisterDropsStorage() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        var model = Self.seedModel()
        let viewTables = ["ext.by-list.groups", "ext.by-list.pages"]
        let otherTables = ["ext.other.groups", "ext.other.pages"]
        do {
            let database = try Database(path: path, options: Self.options)
            try Self.write(model, to: database)
            try database.register(makeTaskView())
            try database.register(makeTaskView(name: "other"))
            let before = try Self.tableNames(database)
            #expect(viewTables.allSatisfy(before.contains), "\(before)")
            #expect(otherTables.allSatisfy(before.contains), "\(before)")

            try database.unregisterExtension(named: "by-list", dropStorage: true)
            let after = try Self.tableNames(database)
            #expect(after.filter { $0.hasPrefix("ext.by-list.") } == [], "\(after)")
            #expect(otherTables.allSatisfy(after.contains), "\(after)")
            #expect(database.registeredExtension(named: "by-list") == nil)
            #expect(try database.recordedExtensions().map(\.name) == ["other"])
            let error = #expect(throws: CanopyError.self) { try database.newConnection().read { txn throws in _ = try txn.view("by-list") } }
            #expect(error?.code == .extensionNotRegistered)

            // The remaining view keeps working through writes.
            try database.newConnection().readWrite { txn throws in try txn.set(TodoItem(title: "x", list: "l1", priority: 2), forKey: "x", in: tasks) }
            model["x"] = TodoItem(title: "x", list: "l1", priority: 2)
            try Self.expectViews(database, ["other": Self.expectedContents(model)])

            // Registering it again starts from scratch.
            let view = makeTaskView()
            try database.register(view)
            #expect(view.lastPopulation?.reason == "first registration")
            #expect(viewTables.allSatisfy(try Self.tableNames(database).contains))
            try Self.expectViews(database, ["by-list": Self.expectedContents(model)])

            // Without dropStorage the tables stay, but the registration is forgotten.
            try database.unregisterExtension(named: "other")
            #expect(otherTables.allSatisfy(try Self.tableNames(database).contains))
            #expect(try database.recordedExtensions().map(\.name) == ["by-list"])
        }
        do {
            // Reopened: the dropped tables did not come back; "other" registers as new and is rebuilt.
            let database = try Database(path: path, options: Self.options)
            let other = makeTaskView(name: "other")
            try database.register(other)
            #expect(other.lastPopulation?.reason == "first registration")
            try Self.expectViews(database, ["other": Self.expectedContents(model)])
        }
    }
}
