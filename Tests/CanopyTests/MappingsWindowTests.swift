import Canopy
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// Observers over the seeded "by-list" view of ``MappingsTests`` (inbox = i4 i2 i3 i1 i5, work = w2 w3 w1, home = h1 in
/// the view's order), and a way to write and check each changeset: it must apply to the rendering before (with every
/// check of ``ChangesetApplier``) and give the rendering after; the tests compare its changes with lists worked out by
/// hand.
final class ObservedView {
    let database: Database
    let directory: TemporaryDirectory
    let connection: Connection
    var observers: [ViewObserver] = []
    var renderings: [Rendering] = []

    init() throws {
        directory = try TemporaryDirectory()
        database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        try database.register(makeTaskView())
        connection = database.newConnection()
        try connection.readWrite { txn throws in
            for (key, task) in MappingsTests.seed { try txn.set(task, forKey: key, in: tasks) }
        }
    }

    deinit { directory.remove() }

    /// Adds an observer; returns its number.
    @discardableResult
    func observe(_ mappings: ViewMappings) throws -> Int {
        let observer = try ViewObserver(database: database, mappings: mappings)
        observers.append(observer)
        renderings.append(try rendering(observer))
        return observers.count - 1
    }

    func rendering(_ observer: ViewObserver) throws -> Rendering {
        let mappings = observer.mappings
        return try observer.read { txn in try Rendering(mappings: mappings, reader: txn.view("by-list")) }
    }

    /// The rows each section of observer `index` shows, as keys.
    func keys(_ index: Int) -> [[String]] { renderings[index].sections.map { $0.rows.map(\.key) } }

    /// Writes `commits`, one transaction each.
    func write(_ commits: (ReadWriteTransaction) throws -> Void...) throws {
        for commit in commits { try connection.readWrite { txn throws in try commit(txn) } }
    }

    /// Advances observer `index`, applies its changeset to the rendering before and checks the result; returns the
    /// section changes and the row changes as text.
    func advance(_ index: Int, changed: Set<String> = [], sourceLocation: SourceLocation = #_sourceLocation) throws -> (sections: [String], rows: [String]) {
        let observer = observers[index]
        let changeset = try observer.advance()
        let after = try rendering(observer)
        do {
            let applied = try observer.read { txn in
                let reader = try txn.view("by-list")
                return try ChangesetApplier.apply(changeset, to: renderings[index],
                                                  changedRows: Set(changed.map { RowID(collection: "tasks", key: $0) })) { section in
                    try changeset.mappings.rowIDs(inSection: section, reader: reader)
                }
            }
            #expect(applied == after, "applied:\n\(applied)\nexpected:\n\(after)", sourceLocation: sourceLocation)
        } catch let violation as ChangesetViolation {
            Issue.record("\(violation)\nbefore:\n\(renderings[index])\nafter:\n\(after)\n\(changeset.rowChanges)", sourceLocation: sourceLocation)
        }
        renderings[index] = after
        return (changeset.sectionChanges.map(\.description), changeset.rowChanges.map(\.description))
    }
}

/// Windows at an offset and flexible windows, with the changesets worked out by hand.
@Suite("Mappings: windows at an offset and flexible windows")
struct MappingsWindowTests {
    static func task(_ title: String, _ priority: Int, list: String = "inbox") -> TodoItem {
        TodoItem(title: title, list: list, priority: priority)
    }

    @Test("Fixed windows at an offset from the start or the end, plain and reversed, slide as rows come and go")
    func fixedWindowsAtOffsets() throws {
        let view = try ObservedView()
        var fromStart = ViewMappings(groups: ["inbox"], view: "by-list")
        fromStart.setRange(.fixed(length: 2, offset: 1, from: .start), forGroup: "inbox")
        var fromEnd = ViewMappings(groups: ["inbox"], view: "by-list")
        fromEnd.setOptions(.init(range: .fixed(length: 2, offset: 1, from: .end), isReversed: true), forGroup: "inbox")
        try view.observe(fromStart)
        try view.observe(fromEnd)
        // inbox = i4 i2 i3 i1 i5: skip 1 from the start, or 1 from the end (then reversed).
        #expect(view.keys(0) == [["i2", "i3"]])
        #expect(view.keys(1) == [["i1", "i3"]])
        #expect(view.observers[0].mappings.visibleRange(inGroup: "inbox") == 1..<3)
        #expect(view.observers[1].mappings.visibleRange(inGroup: "inbox") == 2..<4)
        #expect(view.observers[1].mappings.indexPath(forIndex: 3, inGroup: "inbox") == ViewIndexPath(section: 0, row: 0))
        #expect(view.observers[1].mappings.position(at: ViewIndexPath(section: 0, row: 1))! == ("inbox", 2))

        // A new first row: the window from the start slides (i3 leaves, i4 enters); the one from the end doesn't move.
        try view.write { txn in try txn.set(Self.task("top", 9), forKey: "i0", in: tasks) }
        #expect(try view.advance(0).rows == ["delete tasks/i3 [0, 1]", "insert tasks/i4 [0, 0]"])
        #expect(view.keys(0) == [["i4", "i2"]])
        #expect(try view.advance(1).rows == [])
        #expect(view.keys(1) == [["i1", "i3"]])

        // The last row goes: the window from the end slides toward the start (i1 moves to its edge, i2 enters).
        try view.write { txn in _ = try txn.remove(key: "i5", in: tasks) }
        #expect(try view.advance(0).rows == [])
        // i0 i4 i2 i3 i1: skip 1 from the end → i2 i3, reversed.
        #expect(try view.advance(1).rows == ["delete tasks/i1 [0, 0]", "insert tasks/i2 [0, 1]"])
        #expect(view.keys(1) == [["i3", "i2"]])
    }

    @Test("Fixed windows past the end of a small group show what there is, and nothing past it")
    func fixedWindowsOnSmallGroups() throws {
        let view = try ObservedView()
        var mappings = ViewMappings(groups: ["work", "home"], view: "by-list")
        mappings.setSectionKind(.static, forGroup: "home")
        mappings.setRange(.fixed(length: 5, offset: 2, from: .start), forGroup: "work")
        mappings.setRange(.fixed(length: 1, offset: 1, from: .end), forGroup: "home")
        try view.observe(mappings)
        #expect(view.keys(0) == [["w1"], []])
        // home grows to 2 rows: its window (1 from the end) now shows the first.
        try view.write { txn in try txn.set(Self.task("zz", -1, list: "home"), forKey: "h2", in: tasks) }
        #expect(try view.advance(0).rows == ["insert tasks/h1 [1, 0]"])
        #expect(view.keys(0) == [["w1"], ["h1"]])
    }

    /// A chat: the latest messages, new ones joining at the bottom, at most 4, at least 2.
    static let chat = ViewMappings.FlexibleWindow(length: 2, from: .end, minLength: 2, maxLength: 4, growth: .bottom)

    @Test("A flexible window grows with rows inserted in it and at its growing edge, keeps at most maxLength and at least minLength")
    func flexibleWindowFollowsItsRows() throws {
        let view = try ObservedView()
        var plain = ViewMappings(groups: ["inbox"], view: "by-list")
        plain.setRange(.flexible(Self.chat), forGroup: "inbox")
        var reversed = plain
        // Reversed, the group's end is the section's top: the same window grows at the top.
        var reversedChat = Self.chat
        reversedChat.growth = .top
        reversed.setOptions(.init(range: .flexible(reversedChat), isReversed: true), forGroup: "inbox")
        var dependent = plain
        dependent.setDrawingDependencies([1], forGroup: "inbox")
        try view.observe(plain)
        try view.observe(reversed)
        try view.observe(dependent)
        #expect(view.keys(0) == [["i1", "i5"]])
        #expect(view.keys(1) == [["i5", "i1"]])
        #expect(view.observers[0].mappings.flexibleWindow(forGroup: "inbox")! == (0, 2))

        func expectWindow(_ keys: [String], offset: Int, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(view.keys(0) == [keys], sourceLocation: sourceLocation)
            #expect(view.keys(1) == [keys.reversed()], sourceLocation: sourceLocation)
            #expect(view.keys(2) == [keys], sourceLocation: sourceLocation)
            for observer in view.observers {
                #expect(observer.mappings.flexibleWindow(forGroup: "inbox")! == (offset, keys.count), sourceLocation: sourceLocation)
            }
        }

        // A new last row is at the window's bottom edge: it joins.
        try view.write { txn in try txn.set(Self.task("m", -1), forKey: "i6", in: tasks) }
        #expect(try view.advance(0).rows == ["insert tasks/i6 [0, 2]"])
        #expect(try view.advance(1).rows == ["insert tasks/i6 [0, 0]"])
        // With a dependency on the row below, i5 (which now has i6 below it) is redrawn.
        #expect(try view.advance(2).rows == ["insert tasks/i6 [0, 2]", "update tasks/i5 [0, 1] -> [0, 1]"])
        expectWindow(["i1", "i5", "i6"], offset: 0)

        // A row far above is not at an edge; one between i1 and i5 is inside: it joins.
        try view.write { txn in
            try txn.set(Self.task("top", 9), forKey: "i0", in: tasks)
            try txn.set(Self.task("f", 1), forKey: "i9", in: tasks)
        }
        #expect(try view.advance(0).rows == ["insert tasks/i9 [0, 1]"])
        _ = try view.advance(1)
        _ = try view.advance(2)
        expectWindow(["i1", "i9", "i5", "i6"], offset: 0)

        // A row just above i1 is at the top edge, where this window doesn't grow: it stays out.
        try view.write { txn in try txn.set(Self.task("d", 1), forKey: "j1", in: tasks) }
        #expect(try view.advance(0).rows == [])
        #expect(try view.advance(1).rows == [])
        #expect(try view.advance(2).rows == [])
        expectWindow(["i1", "i9", "i5", "i6"], offset: 0)

        // Another new last row joins; 5 rows exceed maxLength 4: the row farthest from the edge (the end) leaves.
        try view.write { txn in try txn.set(Self.task("n", -2), forKey: "i7", in: tasks) }
        #expect(try view.advance(0).rows == ["delete tasks/i1 [0, 0]", "insert tasks/i7 [0, 3]"])
        #expect(try view.advance(1).rows == ["delete tasks/i1 [0, 3]", "insert tasks/i7 [0, 0]"])
        #expect(try view.advance(2).rows == ["delete tasks/i1 [0, 0]", "insert tasks/i7 [0, 3]", "update tasks/i6 [0, 3] -> [0, 2]"])
        expectWindow(["i9", "i5", "i6", "i7"], offset: 0)

        // Three of its rows go: one is left, below minLength 2: it takes the row before it (away from its edge).
        try view.write({ txn in
            _ = try txn.remove(key: "i9", in: tasks)
            _ = try txn.remove(key: "i5", in: tasks)
        }, { txn in _ = try txn.remove(key: "i6", in: tasks) })
        #expect(try view.advance(0).rows == ["delete tasks/i9 [0, 0]", "delete tasks/i5 [0, 1]", "delete tasks/i6 [0, 2]", "insert tasks/i1 [0, 0]"])
        _ = try view.advance(1)
        // i7's row below is still none; i1 is new: nothing else to redraw.
        #expect(try view.advance(2).rows == ["delete tasks/i9 [0, 0]", "delete tasks/i5 [0, 1]", "delete tasks/i6 [0, 2]", "insert tasks/i1 [0, 0]"])
        expectWindow(["i1", "i7"], offset: 0)

        // "Load more": two more rows above, as a changeset at the same snapshot.
        let old = view.observers[0].mappings
        var more = old
        more.setFlexibleWindow(offset: 0, length: 4, forGroup: "inbox")
        #expect(more.flexibleWindow(forGroup: "inbox")! == (0, 4))
        let changes = try view.observers[0].read { txn in try ViewChangeset.compute(from: old, to: more, reader: txn.view("by-list")) }
        // inbox = i0 i4 i2 i3 j1 i1 i7.
        #expect(changes.rowChanges.map(\.description) == ["insert tasks/i3 [0, 0]", "insert tasks/j1 [0, 1]"])
        #expect(changes.sectionChanges.isEmpty)
        let applied = try view.observers[0].read { txn in
            try ChangesetApplier.apply(changes, to: view.renderings[0]) { _ in [] }
        }
        #expect(applied.sections.map { $0.rows.map(\.key) } == [["i3", "j1", "i1", "i7"]])
        // Only ranges may differ between the two mappings.
        var other = old
        other.setReversed(true, forGroup: "inbox")
        #expect(throws: CanopyError.self) {
            try view.observers[0].read { txn in _ = try ViewChangeset.compute(from: old, to: other, reader: txn.view("by-list")) }
        }
        // Past the group, the window shows what there is.
        more.setFlexibleWindow(offset: 5, length: 100, forGroup: "inbox")
        #expect(more.flexibleWindow(forGroup: "inbox")! == (5, 2))
        #expect(more.visibleRange(inGroup: "inbox") == 0..<2)
    }

    @Test("A flexible window at an offset from the start follows its rows where a fixed one slides")
    func flexibleWindowFromStart() throws {
        let view = try ObservedView()
        var flexible = ViewMappings(groups: ["inbox"], view: "by-list")
        flexible.setRange(.flexible(.init(length: 2, offset: 1, from: .start, growth: .top)), forGroup: "inbox")
        var fixed = ViewMappings(groups: ["inbox"], view: "by-list")
        fixed.setRange(.fixed(length: 2, offset: 1, from: .start), forGroup: "inbox")
        try view.observe(flexible)
        try view.observe(fixed)
        #expect(view.keys(0) == [["i2", "i3"]])
        // a0 sorts between i4 and i2: the top edge, where the window grows.
        try view.write { txn in try txn.set(Self.task("b", 3), forKey: "a0", in: tasks) }
        #expect(try view.advance(0).rows == ["insert tasks/a0 [0, 0]"])
        #expect(view.keys(0) == [["a0", "i2", "i3"]])
        #expect(view.observers[0].mappings.flexibleWindow(forGroup: "inbox")! == (1, 3))
        #expect(try view.advance(1).rows == ["delete tasks/i3 [0, 1]", "insert tasks/a0 [0, 0]"])
        // The row before the window goes: the flexible window keeps its rows (offset 0 now), the fixed one slides.
        try view.write { txn in _ = try txn.remove(key: "i4", in: tasks) }
        #expect(try view.advance(0).rows == [])
        #expect(view.observers[0].mappings.flexibleWindow(forGroup: "inbox")! == (0, 3))
        #expect(try view.advance(1).rows == ["delete tasks/a0 [0, 0]", "insert tasks/i3 [0, 1]"])
        #expect(view.keys(1) == [["i2", "i3"]])
        // A row of the window moves to its bottom edge (after i3, before i1): it stays, though the window doesn't
        // grow at the bottom.
        try view.write { txn in try txn.set(Self.task("z", 2), forKey: "a0", in: tasks) }
        #expect(try view.advance(0).rows == ["move tasks/a0 [0, 0] -> [0, 2]"])
        #expect(view.keys(0) == [["i2", "i3", "a0"]])
        // An emptied group restarts from the definition when rows come back.
        try view.write { txn in
            for key in ["i1", "i2", "i3", "i5", "a0"] { _ = try txn.remove(key: key, in: tasks) }
        }
        #expect(try view.advance(0).sections == ["delete section 0 (inbox)"])
        #expect(view.observers[0].mappings.flexibleWindow(forGroup: "inbox")! == (0, 0))
        try view.write { txn in
            for (index, key) in ["n1", "n2", "n3", "n4"].enumerated() { try txn.set(Self.task(key, 9 - index), forKey: key, in: tasks) }
        }
        #expect(try view.advance(0).sections == ["insert section 0 (inbox)"])
        #expect(view.keys(0) == [["n2", "n3"]])
        #expect(view.observers[0].mappings.flexibleWindow(forGroup: "inbox")! == (1, 2))
    }

    @Test("Flexible window queries are total; limits and offsets out of range are clamped")
    func flexibleWindowQueriesAreTotal() throws {
        let view = try ObservedView()
        var mappings = ViewMappings(groups: ["inbox", "work", "missing"], view: "by-list")
        mappings.setRange(.flexible(.init(length: -3, offset: -2, from: .end, minLength: 9, maxLength: 3)), forGroup: "inbox")
        mappings.setRange(.flexible(.init(length: .max, offset: .max, from: .start)), forGroup: "work")
        mappings.setRange(.flexible(.init(length: 2)), forGroup: "missing")
        #expect(mappings.flexibleWindow(forGroup: "home") == nil)
        #expect(mappings.flexibleWindow(forGroup: "nowhere") == nil)
        mappings.setFlexibleWindow(offset: 1, length: 1, forGroup: "home")  // not flexible: nothing happens
        #expect(mappings.flexibleWindow(forGroup: "home") == nil)
        try view.observe(mappings)
        let current = view.observers[0].mappings
        // minLength is capped at maxLength (3): the last 3 rows.
        #expect(current.flexibleWindow(forGroup: "inbox")! == (0, 3))
        #expect(view.keys(0) == [["i3", "i1", "i5"], []])
        #expect(current.flexibleWindow(forGroup: "work")! == (3, 0))
        #expect(current.flexibleWindow(forGroup: "missing")! == (0, 0))
        #expect(current.visibleRange(inGroup: "work") == 3..<3)
        #expect(current.numberOfItems(inSection: 1) == 0)
        #expect(current.position(at: ViewIndexPath(section: 1, row: 0)) == nil)
        #expect(current.indexPath(forIndex: 0, inGroup: "work") == nil)
    }
}
