import Canopy
import CanopyCoreTestFixtures
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// The UI contract as a property: for random sequences of writes (several operations per commit, several commits per
/// observed span), applying each span's changeset to the previous rendering — as UIKit applies a batch, with every rule
/// it enforces checked by ``ChangesetApplier`` — gives exactly the new rendering read from the view, under mappings of
/// every kind at once (fixed and filtered groups, static and dynamic sections, first/last ranges, reversed groups) and
/// under random mappings that add fixed windows at offsets, flexible windows with random limits and growth, a
/// consolidation threshold and drawing dependencies. Besides the rendering, the applier checks that every row whose
/// object or metadata changed and stays shown is reported (update or move), updates' final index paths, and that every
/// row whose neighbour at a declared offset changed is reloaded or moved.
///
/// CI size: 8 seeds × 150 spans, each checked under 6 fixed and 4 random mappings (12,000 span checks).
/// `CANOPY_PROPERTY_SCALE=N` multiplies the spans per seed.
@Suite("Changeset property: applying the changes gives the new rendering")
struct ChangesetPropertyTests {
    static let lists = ["a", "b", "c", "d", "e"]
    static let archive = TypedCollection<TodoItem, NoteInfo>("archive")

    /// Mappings of every kind, all over the view "by-list".
    static func allMappings() -> [(name: String, mappings: ViewMappings)] {
        var fixedDynamic = ViewMappings(groups: ["a", "b", "c", "d"], view: "by-list")
        fixedDynamic.defaultOptions = .init()

        var fixedStatic = ViewMappings(groups: ["c", "a", "e", "zzz"], view: "by-list")
        fixedStatic.defaultOptions = .init(sectionKind: .static)
        fixedStatic.setReversed(true, forGroup: "a")

        var filteredRanges = ViewMappings(view: "by-list", groupFilter: { _ in true }, sortedBy: { $0 > $1 })
        filteredRanges.defaultOptions = .init(range: .first(3))
        filteredRanges.setReversed(true, forGroup: "b")

        var mixed = ViewMappings(groups: ["a", "b", "c", "d"], view: "by-list")
        mixed.setRange(.last(4), forGroup: "b")
        mixed.setOptions(.init(sectionKind: .dynamic, range: .first(2), isReversed: true), forGroup: "c")
        mixed.setSectionKind(.static, forGroup: "d")
        mixed.setOptions(.init(sectionKind: .static, range: .last(3), isReversed: false), forGroup: "a")

        var filteredLast = ViewMappings(view: "by-list", groupFilter: { $0 != "d" })
        filteredLast.defaultOptions = .init(range: .last(5), isReversed: true)

        var zeroRange = ViewMappings(groups: ["e", "b"], view: "by-list")
        zeroRange.defaultOptions = .init(sectionKind: .static, range: .first(0))
        zeroRange.setRange(.first(1), forGroup: "b")

        return [("fixed dynamic", fixedDynamic), ("fixed static, a reversed", fixedStatic),
                ("filtered desc, first 3, b reversed", filteredRanges), ("mixed ranges", mixed),
                ("filtered without d, last 5 reversed", filteredLast), ("ranges of 0 and 1", zeroRange)]
    }

    /// Random mappings with every option: fixed or filtered groups, random ranges (fixed at offsets, flexible with
    /// random limits and growth), reversal, drawing dependencies, and a consolidation threshold.
    static func randomMappings(random: inout SeededRandom, consolidation: Bool = true) -> ViewMappings {
        func pick(_ bound: Int) -> Int { Int(random.next() % UInt64(bound)) }
        var mappings: ViewMappings
        if pick(2) == 0 {
            let order = (lists + ["zzz"]).filter { _ in pick(4) != 0 }
            mappings = ViewMappings(groups: order.isEmpty ? ["a"] : order, view: "by-list")
        } else {
            let excluded = lists[pick(lists.count)]
            mappings = ViewMappings(view: "by-list", groupFilter: { $0 != excluded }, sortedBy: { $0 > $1 })
        }
        for group in lists + ["zzz"] {
            let edge: ViewMappings.GroupEdge = pick(2) == 0 ? .start : .end
            let range: ViewMappings.ItemRange?
            switch pick(6) {
            case 0: range = nil
            case 1: range = pick(2) == 0 ? .first(pick(5)) : .last(pick(5))
            case 2: range = .fixed(length: pick(6), offset: pick(4), from: edge)
            default:
                let growth: [ViewMappings.FlexibleWindow.Growth] = [[], .top, .bottom, .both]
                let minLength = pick(4)
                range = .flexible(.init(length: pick(7), offset: pick(4), from: edge, minLength: minLength,
                                        maxLength: pick(3) == 0 ? .max : minLength + pick(6), growth: growth[pick(4)]))
            }
            let dependencies: [Set<Int>] = [[], [-1], [1], [-1, 1], [-2, 1], [2]]
            mappings.setOptions(.init(sectionKind: pick(3) == 0 ? .static : .dynamic, range: range, isReversed: pick(2) == 0,
                                      drawingDependencies: dependencies[pick(dependencies.count)]), forGroup: group)
        }
        // A consolidated section may show a row of a many-group view twice; the applier tells rows apart by section.
        if pick(3) != 0, consolidation { mappings.setConsolidation(threshold: 1 + pick(14), sectionName: "all") }
        return mappings
    }

    /// A random write: what the span's commits are made of. Rows whose object or metadata the write changes (and that
    /// may stay shown) join `changed`.
    static func randomOperation(_ txn: ReadWriteTransaction, random: inout SeededRandom, keys: inout [String], nextKey: inout Int,
                                changed: inout Set<RowID>) throws -> String {
        func randomTask() -> TodoItem {
            TodoItem(title: ["x", "y", "z"][Int(random.next() % 3)], list: lists[Int(random.next() % UInt64(lists.count))],
                 priority: Int(random.next() % 4), done: random.next() % 8 == 0)
        }
        func existingKey() -> String? { keys.isEmpty ? nil : keys[Int(random.next() % UInt64(keys.count))] }
        switch random.next() % 100 {
        case 0..<30:  // insert
            let key = "k\(nextKey)"
            nextKey += 1
            keys.append(key)
            let task = randomTask()
            try txn.set(task, forKey: key, in: tasks)
            return "insert \(key) \(task)"
        case 30..<40:  // update that stays: a new object with the same place
            guard let key = existingKey(), let task = try txn.object(forKey: key, in: tasks) else { return "nothing" }
            try txn.replace(task, forKey: key, in: tasks)  // same grouping and sort key
            changed.insert(RowID(collection: tasks.name, key: key))
            return "replace-same \(key)"
        case 40..<60:  // update that moves within or across groups (or out of / into the view via `done`)
            guard let key = existingKey() else { return "nothing" }
            let task = randomTask()
            try txn.replace(task, forKey: key, in: tasks)
            changed.insert(RowID(collection: tasks.name, key: key))
            return "replace \(key) \(task)"
        case 60..<66:  // metadata only
            guard let key = existingKey() else { return "nothing" }
            try txn.replaceMetadata(NoteInfo(color: "c\(random.next() % 5)"), forKey: key, in: tasks)
            changed.insert(RowID(collection: tasks.name, key: key))
            return "metadata \(key)"
        case 66..<70:
            guard let key = existingKey() else { return "nothing" }
            _ = try txn.touchObject(forKey: key, inCollection: tasks.name)
            changed.insert(RowID(collection: tasks.name, key: key))
            return "touch \(key)"
        case 70..<85:  // remove one
            guard let key = existingKey() else { return "nothing" }
            keys.removeAll { $0 == key }
            try txn.remove(key: key, in: tasks)
            return "remove \(key)"
        case 85..<90:  // remove then insert the same key in one commit: a move, even at the same place
            guard let key = existingKey(), let task = try txn.object(forKey: key, in: tasks) else { return "nothing" }
            try txn.remove(key: key, in: tasks)
            try txn.set(random.next() % 2 == 0 ? task : randomTask(), forKey: key, in: tasks)
            changed.insert(RowID(collection: tasks.name, key: key))
            return "remove-and-reinsert \(key)"
        case 90..<95:  // the second collection
            let key = "r\(nextKey)"
            nextKey += 1
            try txn.set(randomTask(), forKey: key, in: archive)
            return "insert archive/\(key)"
        case 95..<98:
            let removed = try txn.removeAll(inCollection: archive.name)
            return "remove all archive (\(removed))"
        default:  // remove several
            let victims = keys.filter { _ in random.next() % 4 == 0 }
            keys.removeAll { victims.contains($0) }
            let removed = try txn.remove(keys: victims, inCollection: tasks.name)
            return "remove \(removed) keys"
        }
    }

    /// Runs `spans` spans for `seed`, checking every mapping after each; returns the number of span checks and how often
    /// each kind of change was reported (so the test can tell that the generator reaches every case).
    static func run(seed: UInt64, spans: Int, manyGroups: Bool = false) throws -> (checks: Int, kinds: [String: Int]) {
        var kinds: [String: Int] = [:]
        var random = SeededRandom(seed: seed)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        try database.register(manyGroups ? makeTagView() : makeTaskView())
        let writer = database.newConnection()
        var mappings = allMappings()
        for index in 0..<randomMappingsPerSeed {
            mappings.append(("random \(index)", randomMappings(random: &random, consolidation: !manyGroups)))
        }
        let observers = try mappings.map { ($0.name, try ViewObserver(database: database, mappings: $0.mappings)) }
        var keys: [String] = []
        var nextKey = 0
        var checks = 0
        var history: [String] = []

        for span in 0..<spans {
            let before = try observers.map { _, observer in
                let mappings = observer.mappings
                return try observer.read { txn in try Rendering(mappings: mappings, reader: txn.view("by-list")) }
            }
            let commits = 1 + Int(random.next() % 4)
            history.removeAll()
            var changed = Set<RowID>()
            for commit in 0..<commits {
                let operations = 1 + Int(random.next() % 5)
                try writer.readWrite { txn in
                    for _ in 0..<operations {
                        history.append("commit \(commit): " + (try randomOperation(txn, random: &random, keys: &keys, nextKey: &nextKey, changed: &changed)))
                    }
                }
            }
            for ((name, observer), old) in zip(observers, before) {
                let wasConsolidated = observer.mappings.isConsolidated
                let changeset = try observer.advance()
                if wasConsolidated != changeset.mappings.isConsolidated { kinds["consolidation crossing", default: 0] += 1 }
                for change in changeset.rowChanges { kinds["row \(change.kind)", default: 0] += 1 }
                for change in changeset.rowChanges where change.kind == .update && !change.objectChanged && !change.metadataChanged {
                    kinds["dependency update", default: 0] += 1
                }
                for change in changeset.sectionChanges { kinds["section \(change.kind)", default: 0] += 1 }
                try observer.read { txn in
                    let reader = try txn.view("by-list")
                    let expected = try Rendering(mappings: changeset.mappings, reader: reader)
                    let context = "\(manyGroups ? "many groups, " : "")seed \(seed), span \(span), mappings '\(name)' \(observer.mappings)\nwrites:\n\(history.joined(separator: "\n"))\nbefore:\n\(old)\nafter:\n\(expected)\nchanges: \(changeset.sectionChanges) \(changeset.rowChanges)"
                    #expect(!changeset.isReload, "unexpected reload; \(context)")
                    do {
                        let applied = try ChangesetApplier.apply(changeset, to: old, changedRows: changed, rowsInManyGroups: manyGroups) { section in
                            try changeset.mappings.rowIDs(inSection: section, reader: reader)
                        }
                        #expect(applied == expected, "applying the changes gave\n\(applied)\n\(context)")
                    } catch let violation as ChangesetViolation {
                        Issue.record("\(violation); \(context)")
                    }
                    if span % 25 == 0 || span == spans - 1 {
                        #expect(try reader.checkInvariants() == [], "\(manyGroups ? "many groups, " : "")seed \(seed), span \(span)")
                    }
                }
                checks += 1
            }
        }
        return (checks, kinds)
    }

    static let randomMappingsPerSeed = 4

    @Test("Random spans of commits under six kinds of mappings and four random ones", arguments: [1 as UInt64, 2, 3, 4, 5, 6, 7, 8])
    func randomSpans(seed: UInt64) throws {
        let spans = 150 * testScale("CANOPY_PROPERTY_SCALE")
        let started = Date()
        let (checks, kinds) = try Self.run(seed: seed, spans: spans)
        #expect(checks == spans * (Self.allMappings().count + Self.randomMappingsPerSeed))
        for kind in ["row insert", "row delete", "row move", "row update", "section insert", "section delete", "dependency update",
                     "consolidation crossing"] {
            #expect(kinds[kind, default: 0] > 0, "seed \(seed) never produced a \(kind): \(kinds)")
        }
        if testScale("CANOPY_PROPERTY_SCALE") > 1 {
            print("changeset property, seed \(seed): \(checks) span checks (\(kinds)) in \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
        }
    }
}

/// The UI contract for a view whose rows are in many groups: the same random spans, with a grouping that puts a task in
/// a set of groups derived from its list, priority and title (so a replace changes the set: groups joined, left and
/// kept), sorted per group (group "b" orders by title first, the others by priority first). Applying each changeset
/// to the rendering before gives the rendering after, per row and section.
///
/// CI size: 8 seeds × 150 spans, each checked under 6 fixed and 4 random mappings (no consolidation: a consolidated
/// section may show one row twice). `CANOPY_PROPERTY_SCALE=N` multiplies the spans per seed.
@Suite("Changeset property: rows in many groups")
struct ManyGroupsChangesetPropertyTests {
    @Test("Random spans where rows change their sets of groups", arguments: [11 as UInt64, 12, 13, 14, 15, 16, 17, 18])
    func randomSpans(seed: UInt64) throws {
        let spans = 150 * testScale("CANOPY_PROPERTY_SCALE")
        let (checks, kinds) = try ChangesetPropertyTests.run(seed: seed, spans: spans, manyGroups: true)
        #expect(checks == spans * (ChangesetPropertyTests.allMappings().count + ChangesetPropertyTests.randomMappingsPerSeed))
        for kind in ["row insert", "row delete", "row move", "row update", "section insert", "section delete", "dependency update"] {
            #expect(kinds[kind, default: 0] > 0, "seed \(seed) never produced a \(kind): \(kinds)")
        }
    }
}

/// The groups of a task in the many-group view of the tests: none when done; else its list, the list its priority
/// points to, and "e" for titles "z" — one to three groups that a replace changes.
func taskGroups(_ task: TodoItem) -> Set<String> {
    guard !task.done else { return [] }
    let lists = ChangesetPropertyTests.lists
    var groups: Set<String> = [task.list]
    if task.priority >= 2, let at = lists.firstIndex(of: task.list) { groups.insert(lists[(at + task.priority) % lists.count]) }
    if task.title == "z" { groups.insert("e") }
    return groups
}

/// A many-group view over tasks (see ``taskGroups(_:)``), with a per-group sort key.
func makeTagView(name: String = "by-list", versionTag: String = "1") -> View {
    View(
        name: name,
        grouping: .manyByObject(tasks) { _, task in taskGroups(task) },
        sorting: .byObject(tasks) { group, _, task in
            group == "b" ? SortKey(.ascending(task.title), .descending(task.priority)) : SortKey(.descending(task.priority), .ascending(task.title))
        },
        versionTag: versionTag)
}
