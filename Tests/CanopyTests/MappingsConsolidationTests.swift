import Canopy
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// Consolidated groups and drawing dependencies, with the changesets worked out by hand (see ``ObservedView``).
@Suite("Mappings: consolidated groups and drawing dependencies")
struct MappingsConsolidationTests {
    static func task(_ title: String, _ priority: Int, list: String = "inbox") -> TodoItem {
        TodoItem(title: title, list: list, priority: priority)
    }

    @Test("Below the threshold every group shows in one section; crossing it, in either direction, deletes and inserts sections")
    func consolidation() throws {
        let view = try ObservedView()
        var mappings = ViewMappings(groups: ["inbox", "work", "home"], view: "by-list")
        mappings.setConsolidation(threshold: 10, sectionName: "all")
        try view.observe(mappings)
        // 5 + 3 + 1 = 9 rows < 10: one section.
        #expect(view.keys(0) == [["i4", "i2", "i3", "i1", "i5", "w2", "w3", "w1", "h1"]])
        let current = view.observers[0].mappings
        #expect(current.isConsolidated)
        #expect(current.numberOfSections == 1)
        #expect(current.group(forSection: 0) == "all")
        #expect(current.group(forSection: 1) == nil)
        #expect(current.groups(inSection: 0) == ["inbox", "work", "home"])
        #expect(current.groups(inSection: 1) == [])
        #expect(current.section(forGroup: "work") == 0)
        #expect(current.section(forGroup: "all") == 0)
        #expect(current.section(forGroup: "errands") == nil)
        #expect(current.numberOfItems(inSection: 0) == 9)
        #expect(current.numberOfItems(inSection: -1) == 0)
        #expect(current.numberOfItems(inGroup: "work") == 3)
        #expect(current.indexPath(forIndex: 0, inGroup: "work") == ViewIndexPath(section: 0, row: 5))
        #expect(current.indexPath(forIndex: 3, inGroup: "work") == nil)
        #expect(current.position(at: ViewIndexPath(section: 0, row: 8))! == ("home", 0))
        #expect(current.position(at: ViewIndexPath(section: 0, row: 9)) == nil)
        #expect(current.position(at: ViewIndexPath(section: 0, row: -1)) == nil)
        #expect(current.position(at: ViewIndexPath(section: 1, row: 0)) == nil)
        try view.observers[0].read { txn in
            let reader = try txn.view("by-list")
            #expect(try current.indexPath(of: RowID(collection: "tasks", key: "w1"), reader: reader) == ViewIndexPath(section: 0, row: 7))
            #expect(try current.rowID(at: ViewIndexPath(section: 0, row: 5), reader: reader)?.key == "w2")
            #expect(try current.rowIDs(inSection: 1, reader: reader) == [])
        }
        #expect(current.description.hasSuffix("[all: (inbox: 5, work: 3, home: 1)]"))

        // 10 rows: one section per group.
        try view.write { txn in try txn.set(Self.task("first", 5, list: "work"), forKey: "w0", in: tasks) }
        var changes = try view.advance(0)
        #expect(changes.sections == ["delete section 0 (all)", "insert section 0 (inbox)", "insert section 1 (work)", "insert section 2 (home)"])
        #expect(changes.rows == [])
        #expect(!view.observers[0].mappings.isConsolidated)

        // 8 rows (home empties): one section again.
        try view.write { txn in
            _ = try txn.remove(key: "h1", in: tasks)
            _ = try txn.remove(key: "w0", in: tasks)
        }
        changes = try view.advance(0)
        #expect(changes.sections == ["delete section 0 (inbox)", "delete section 1 (work)", "delete section 2 (home)", "insert section 0 (all)"])
        #expect(view.keys(0) == [["i4", "i2", "i3", "i1", "i5", "w2", "w3", "w1"]])

        // Across the threshold and back within one span (10 rows, then 9): the section stays, rows are reported.
        try view.write({ txn in
            try txn.set(Self.task("first", 5, list: "work"), forKey: "w0", in: tasks)
            try txn.set(Self.task("z", 0, list: "home"), forKey: "h1", in: tasks)
        }, { txn in _ = try txn.remove(key: "w1", in: tasks) })
        changes = try view.advance(0)
        #expect(changes.sections == [])
        #expect(changes.rows == ["delete tasks/w1 [0, 7]", "insert tasks/w0 [0, 5]", "insert tasks/h1 [0, 8]"])
        #expect(view.keys(0) == [["i4", "i2", "i3", "i1", "i5", "w0", "w2", "w3", "h1"]])

        // The other way: 10 rows (one section per group), then within one span 9 and 10 again.
        try view.write { txn in try txn.set(Self.task("q", 0, list: "work"), forKey: "w4", in: tasks) }
        changes = try view.advance(0)
        #expect(changes.sections == ["delete section 0 (all)", "insert section 0 (inbox)", "insert section 1 (work)", "insert section 2 (home)"])
        try view.write({ txn in _ = try txn.remove(key: "i5", in: tasks) },
                       { txn in try txn.set(Self.task("m", -1), forKey: "i6", in: tasks) })
        changes = try view.advance(0)
        #expect(changes.sections == [])
        #expect(changes.rows == ["delete tasks/i5 [0, 4]", "insert tasks/i6 [0, 4]"])
        #expect(view.keys(0) == [["i4", "i2", "i3", "i1", "i6"], ["w0", "w2", "w3", "w4"], ["h1"]])

        // Turning it off.
        var off = view.observers[0].mappings
        off.setConsolidation(threshold: 0, sectionName: "all")
        #expect(!off.isConsolidated)
        #expect(off.consolidationThreshold == 0)
    }

    @Test("A consolidated section named like a listed group switches consolidation off at once")
    func consolidationNamedLikeAFixedGroup() throws {
        var mappings = ViewMappings(groups: ["inbox", "work", "home"], view: "by-list")
        mappings.setConsolidation(threshold: 10, sectionName: "work")
        #expect(mappings.consolidationThreshold == 0)
        #expect(mappings.consolidatedSectionName == "")
        let view = try ObservedView()
        try view.observe(mappings)
        let current = view.observers[0].mappings
        // 9 rows would have consolidated: each group keeps its own section, and "work" names only work's rows.
        #expect(!current.isConsolidated)
        #expect(current.numberOfSections == 3)
        #expect(current.group(forSection: 1) == "work")
        #expect(view.keys(0) == [["i4", "i2", "i3", "i1", "i5"], ["w2", "w3", "w1"], ["h1"]])
        // A name that is not a group's still consolidates.
        var other = ViewMappings(groups: ["inbox", "work", "home"], view: "by-list")
        other.setConsolidation(threshold: 10, sectionName: "all")
        #expect(other.consolidationThreshold == 10)
    }

    @Test("Filtered mappings switch consolidation off at the first update that finds a group of the section's name")
    func consolidationNamedLikeAFilteredGroup() throws {
        let view = try ObservedView()
        var mappings = ViewMappings(view: "by-list", groupFilter: { _ in true })
        mappings.setConsolidation(threshold: 20, sectionName: "errands")
        try view.observe(mappings)
        #expect(view.observers[0].mappings.isConsolidated)
        #expect(view.observers[0].mappings.group(forSection: 0) == "errands")
        // A group named "errands" appears: the consolidated section would name it while showing every group.
        try view.write { txn in try txn.set(Self.task("stamps", 1, list: "errands"), forKey: "e1", in: tasks) }
        let changes = try view.advance(0)
        let current = view.observers[0].mappings
        #expect(current.consolidationThreshold == 0)
        #expect(!current.isConsolidated)
        #expect(changes.sections == ["delete section 0 (errands)", "insert section 0 (errands)", "insert section 1 (home)",
                                     "insert section 2 (inbox)", "insert section 3 (work)"])
        #expect(view.keys(0) == [["e1"], ["h1"], ["i4", "i2", "i3", "i1", "i5"], ["w2", "w3", "w1"]])
        #expect(current.group(forSection: 0) == "errands" && current.numberOfItems(inSection: 0) == 1)
        // It stays off when the group goes again.
        try view.write { txn in _ = try txn.remove(key: "e1", in: tasks) }
        _ = try view.advance(0)
        #expect(!view.observers[0].mappings.isConsolidated)
    }

    @Test("The threshold counts the rows shown (after windows); a window's rows slide inside the consolidated section")
    func consolidationWithWindows() throws {
        let view = try ObservedView()
        var mappings = ViewMappings(groups: ["inbox", "work"], view: "by-list")
        mappings.setOptions(.init(range: .first(2), isReversed: true), forGroup: "inbox")
        mappings.setConsolidation(threshold: 6, sectionName: "few")
        try view.observe(mappings)
        // inbox shows 2 of 5 (reversed), work 3: 5 rows < 6.
        #expect(view.keys(0) == [["i2", "i4", "w2", "w3", "w1"]])
        try view.write { txn in try txn.set(Self.task("top", 9), forKey: "i0", in: tasks) }
        let slid = try view.advance(0)
        #expect(slid.sections == [])
        #expect(slid.rows == ["delete tasks/i2 [0, 0]", "insert tasks/i0 [0, 1]"])
        #expect(view.keys(0) == [["i4", "i0", "w2", "w3", "w1"]])
        try view.write { txn in try txn.set(Self.task("first", 5, list: "work"), forKey: "w0", in: tasks) }
        let crossed = try view.advance(0)
        #expect(crossed.sections == ["delete section 0 (few)", "insert section 0 (inbox)", "insert section 1 (work)"])
        #expect(view.keys(0) == [["i4", "i0"], ["w0", "w2", "w3", "w1"]])
    }

    @Test("A row whose neighbour above changed — another row, or the same row changed — is reloaded; deletes and moves absorb it")
    func dependencyOnRowAbove() throws {
        let view = try ObservedView()
        var mappings = ViewMappings(groups: ["inbox"], view: "by-list")
        mappings.setDrawingDependencies([-1], forGroup: "inbox")
        #expect(mappings.options(forGroup: "inbox").drawingDependencies == [-1])
        try view.observe(mappings)
        #expect(view.keys(0) == [["i4", "i2", "i3", "i1", "i5"]])

        // i2's metadata changes: i2 is updated, and i3 (below it) redrawn.
        try view.write { txn in try txn.replaceMetadata(NoteInfo(color: "red"), forKey: "i2", in: tasks) }
        #expect(try view.advance(0, changed: ["i2"]).rows == ["update tasks/i2 [0, 1] -> [0, 1]", "update tasks/i3 [0, 2] -> [0, 2]"])
        // i3 goes: i1 has i2 above it now.
        try view.write { txn in _ = try txn.remove(key: "i3", in: tasks) }
        #expect(try view.advance(0).rows == ["delete tasks/i3 [0, 2]", "update tasks/i1 [0, 3] -> [0, 2]"])
        // A new first row: i4 has a row above it now.
        try view.write { txn in try txn.set(Self.task("top", 9), forKey: "i0", in: tasks) }
        #expect(try view.advance(0).rows == ["insert tasks/i0 [0, 0]", "update tasks/i4 [0, 0] -> [0, 1]"])
        // i5 moves to the top: i0 has it above; i1 keeps i2 above.
        try view.write { txn in try txn.set(Self.task("0", 9), forKey: "i5", in: tasks) }
        #expect(try view.advance(0, changed: ["i5"]).rows == ["move tasks/i5 [0, 4] -> [0, 0]", "update tasks/i0 [0, 0] -> [0, 1]"])
        #expect(view.keys(0) == [["i5", "i0", "i4", "i2", "i1"]])
        // i4 changes and i2 (below it, whose redraw it implies) goes: the delete absorbs it; i1 has i4 above now.
        try view.write { txn in
            try txn.replaceMetadata(NoteInfo(color: "blue"), forKey: "i4", in: tasks)
            _ = try txn.remove(key: "i2", in: tasks)
        }
        #expect(try view.advance(0, changed: ["i4"]).rows == [
            "delete tasks/i2 [0, 3]", "update tasks/i4 [0, 2] -> [0, 2]", "update tasks/i1 [0, 4] -> [0, 3]",
        ])
    }

    @Test("Dependencies follow the rows as shown: reversed groups and windows")
    func dependencyReversedAndWindowed() throws {
        let view = try ObservedView()
        var reversed = ViewMappings(groups: ["work"], view: "by-list")
        reversed.setOptions(.init(isReversed: true, drawingDependencies: [1]), forGroup: "work")
        var windowed = reversed
        windowed.setRange(.last(3), forGroup: "work")
        var extreme = ViewMappings(groups: ["work"], view: "by-list")
        extreme.setDrawingDependencies([Int.min, 0, Int.max, -2], forGroup: "work")
        try view.observe(reversed)
        try view.observe(windowed)
        try view.observe(extreme)
        #expect(view.keys(0) == [["w1", "w3", "w2"]])
        #expect(view.keys(1) == [["w1", "w3", "w2"]])
        // w4 sorts between w3 and w1 (work = w2 w3 w4 w1), shown below w1: w1 has another row below it.
        try view.write { txn in try txn.set(Self.task("b", 1, list: "work"), forKey: "w4", in: tasks) }
        #expect(try view.advance(0).rows == ["insert tasks/w4 [0, 1]", "update tasks/w1 [0, 0] -> [0, 0]"])
        // The last 3 drop w2: w3 has nothing below it now.
        #expect(try view.advance(1).rows == [
            "delete tasks/w2 [0, 2]", "insert tasks/w4 [0, 1]", "update tasks/w1 [0, 0] -> [0, 0]", "update tasks/w3 [0, 1] -> [0, 2]",
        ])
        #expect(view.keys(1) == [["w1", "w4", "w3"]])
        // Offsets of Int.min, 0 and Int.max change nothing; with -2, w1 (in work = w2 w3 w4 w1) has w3 two rows above
        // where it had w2.
        #expect(try view.advance(2).rows == ["insert tasks/w4 [0, 2]", "update tasks/w1 [0, 2] -> [0, 3]"])
    }
}
