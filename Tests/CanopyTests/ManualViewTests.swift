import Canopy
import CanopyCoreTestFixtures
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// Manual views: lists in the order the app gives them. A property test against a model (random inserts at positions,
/// moves, list removals, store removals, updates; several operations per commit), bad input, and persistence across
/// reopening, rebuilding and writes by a process that did not register the list.
@Suite("Manual views")
struct ManualViewTests {
    static let mappings = ViewMappings(groups: ["focus"], view: "focus")

    static func makeFocus(versionTag: String = "1") -> View {
        ManualView.make(name: "focus", collections: [notes.name], versionTag: versionTag)
    }

    /// The list as the view reads it, as keys.
    static func keys(_ txn: ReadTransaction) throws -> [String] {
        try txn.view("focus").rowIDs(inGroup: "focus").map(\.key)
    }

    /// One random operation on the store and the list, applied to `model` (the list) and `stored` (the rows) too.
    static func randomOperation(
        _ txn: ReadWriteTransaction, random: inout SeededRandom, model: inout [String], stored: inout Set<String>, nextKey: inout Int,
        changed: inout Set<RowID>
    ) throws -> String {
        func pick(_ bound: Int) -> Int { bound <= 0 ? 0 : Int(random.next() % UInt64(bound)) }
        // Ends and near-ends are favoured, so that neighbours run out of gap and the list is renumbered.
        func position(_ bound: Int) -> Int { pick(3) == 0 ? min(pick(2), bound) : pick(bound + 1) }
        let list = try txn.manualList("focus")
        switch pick(100) {
        case 0..<20:  // a new row in the store, not in the list
            let key = "n\(nextKey)"
            nextKey += 1
            try txn.set(Note(title: key), forKey: key, in: notes)
            stored.insert(key)
            return "store insert \(key)"
        case 20..<45:  // a stored row into the list
            guard let key = stored.subtracting(model).sorted().randomElement(using: &random) else { return "nothing" }
            let index = position(model.count)
            try list.insert(key: key, inCollection: notes.name, at: index)
            model.insert(key, at: index)
            return "insert \(key) at \(index)"
        case 45..<70:
            guard !model.isEmpty else { return "nothing" }
            let from = pick(model.count)
            let to = min(position(model.count - 1), model.count - 1)
            try list.move(from: from, to: to)
            model.insert(model.remove(at: from), at: to)
            return "move \(from) to \(to)"
        case 70..<78:
            guard !model.isEmpty else { return "nothing" }
            let index = pick(model.count)
            let id = try list.remove(at: index)
            #expect(id.key == model[index])
            model.remove(at: index)
            return "list remove at \(index)"
        case 78..<86:  // removed from the store: gone from the list
            guard let key = stored.sorted().randomElement(using: &random) else { return "nothing" }
            try txn.remove(key: key, in: notes)
            stored.remove(key)
            model.removeAll { $0 == key }
            return "store remove \(key)"
        case 86..<90:  // removed and written again: out of the list for good
            guard let key = model.randomElement(using: &random) else { return "nothing" }
            try txn.remove(key: key, in: notes)
            try txn.set(Note(title: key, body: "again"), forKey: key, in: notes)
            model.removeAll { $0 == key }
            return "store remove and rewrite \(key)"
        case 90..<96:  // an update keeps the place
            guard let key = model.randomElement(using: &random) else { return "nothing" }
            try txn.set(Note(title: key, body: "b\(random.next() % 100)"), forKey: key, in: notes)
            changed.insert(RowID(collection: notes.name, key: key))
            return "update \(key)"
        default:  // bad input changes nothing
            let count = model.count
            do {
                try list.move(from: count, to: 0)
                Issue.record("a move from \(count) of \(count) rows was accepted")
            } catch let error as CanopyError {
                #expect(error.code == .invalidArgument)
            }
            return "bad move"
        }
    }

    @Test("Random inserts, moves and removals: the list equals the model and each changeset gives the new list",
          arguments: [1 as UInt64, 2, 3, 4, 5, 6])
    func randomEdits(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        try withDatabase { database, _ in
            try database.register(Self.makeFocus())
            let observer = try ViewObserver(database: database, mappings: Self.mappings)
            var model: [String] = []
            var stored: Set<String> = []
            var nextKey = 0
            var kinds: [String: Int] = [:]
            for commit in 0..<(250 * testScale("CANOPY_PROPERTY_SCALE")) {
                let old = try observer.read { txn throws in try Rendering(mappings: observer.mappings, reader: txn.view("focus")) }
                var history: [String] = []
                var changed = Set<RowID>()
                try database.newConnection().readWrite { txn throws in
                    for _ in 0..<(1 + Int(random.next() % 4)) {
                        history.append(try Self.randomOperation(txn, random: &random, model: &model, stored: &stored, nextKey: &nextKey, changed: &changed))
                    }
                }
                let changeset = try observer.advance()
                for change in changeset.rowChanges { kinds["\(change.kind)", default: 0] += 1 }
                try observer.read { txn throws in
                    let reader = try txn.view("focus")
                    let context = "seed \(seed), commit \(commit): \(history)"
                    #expect(try Self.keys(txn) == model, "\(context)")
                    let expected = try Rendering(mappings: changeset.mappings, reader: reader)
                    #expect(!changeset.isReload, "\(context)")
                    do {
                        let applied = try ChangesetApplier.apply(changeset, to: old, changedRows: changed) { section in
                            try changeset.mappings.rowIDs(inSection: section, reader: reader)
                        }
                        #expect(applied == expected, "applying the changes gave\n\(applied)\nexpected\n\(expected)\n\(context)")
                    } catch let violation as ChangesetViolation {
                        Issue.record("\(violation); \(context)")
                    }
                    if commit % 50 == 0 { #expect(try reader.checkInvariants() == [], "\(context)") }
                }
            }
            for kind in ["insert", "delete", "move", "update"] {
                #expect(kinds[kind, default: 0] > 0, "seed \(seed) never produced a \(kind): \(kinds)")
            }
        }
    }

    @Test("Inserting again and again between the same two rows renumbers rows around the place and keeps the order")
    func renumbering() throws {
        try withDatabase { database, _ in
            try database.register(Self.makeFocus())
            var model: [String] = []
            try database.newConnection().readWrite { txn throws in
                let list = try txn.manualList("focus")
                for i in 0..<200 {
                    let key = "k\(i)"
                    try txn.set(Note(title: key), forKey: key, in: notes)
                    // Always at 1: the gap after the first row halves each time, until rows around it are renumbered.
                    let index = min(1, model.count)
                    try list.insert(key: key, inCollection: notes.name, at: index)
                    model.insert(key, at: index)
                }
                #expect(try Self.keys(txn) == model)
            }
            try database.newConnection().read { txn throws in
                #expect(try Self.keys(txn) == model)
                #expect(try txn.view("focus").checkInvariants() == [])
            }
        }
    }

    /// Saw it fail with the whole-list renumbering: the 33rd move to the top renumbered all 3,000 rows (a changeset
    /// of 3,000 changes).
    @Test("Moving rows to the top again and again renumbers only a few rows around the place, and keeps the order",
          arguments: [("top", 0), ("second", 1), ("bottom", -1)])
    func renumberingIsLocal(pattern: String, destination: Int) throws {
        try withDatabase { database, _ in
            try database.register(Self.makeFocus())
            let count = 3_000
            var model: [String] = []
            try database.newConnection().readWrite { txn throws in
                let list = try txn.manualList("focus")
                for i in 0..<count {
                    let key = "k\(i)"
                    try txn.set(Note(title: key), forKey: key, in: notes)
                    try list.append(key: key, inCollection: notes.name)
                    model.append(key)
                }
            }
            let observer = try ViewObserver(database: database, mappings: Self.mappings)
            var random = SeededRandom(seed: 7)
            var changed: [Int] = []
            for move in 0..<300 {
                let from = Int(random.next() % UInt64(count))
                let to = destination >= 0 ? destination : count - 1
                try database.newConnection().readWrite { txn throws in try txn.manualList("focus").move(from: from, to: to) }
                let old = Rendering(sections: [("focus", model.map { RowID(collection: notes.name, key: $0) })])
                model.insert(model.remove(at: from), at: to)
                let changeset = try observer.advance()
                #expect(!changeset.isReload, "\(pattern), move \(move)")
                changed.append(changeset.rowChanges.count)
                // Rows renumbered around the place are in the changeset too (moves in place): applied to the list as
                // it was, it still gives the list as it is.
                let new = Rendering(sections: [("focus", model.map { RowID(collection: notes.name, key: $0) })])
                do {
                    let applied = try ChangesetApplier.apply(changeset, to: old) { _ in new.sections[0].rows }
                    #expect(applied == new, "\(pattern), move \(move) from \(from) to \(to)")
                } catch let violation as ChangesetViolation {
                    Issue.record("\(violation); \(pattern), move \(move)")
                }
            }
            try database.newConnection().read { txn throws in
                #expect(try Self.keys(txn) == model, "\(pattern)")
                #expect(try txn.view("focus").checkInvariants() == [], "\(pattern)")
            }
            // One move is one change, plus the rows renumbered around the place now and then.
            #expect(changed.max() ?? 0 <= count / 4, "\(pattern): \(changed)")
            #expect(changed.reduce(0, +) <= 300 * 16, "\(pattern): \(changed.reduce(0, +)) changes for 300 moves")
        }
    }

    @Test("Bad input is a typed error and changes nothing")
    func badInput() throws {
        try withDatabase { database, _ in
            try database.register(Self.makeFocus())
            try database.register(View(name: "plain", grouping: .byKey { _, _ in "all" }, sorting: .byKey { _, _, key in SortKey(.ascending(key)) }))
            try database.newConnection().readWrite { txn throws in
                for key in ["a", "b", "c"] {
                    try txn.set(Note(title: key), forKey: key, in: notes)
                    try txn.manualList("focus").append(key: key, inCollection: notes.name)
                }
                try txn.set(Note(title: "loose"), forKey: "loose", in: notes)
                try txn.set(Note(title: "other"), forKey: "x", in: jsonNotes)
            }
            let before = try database.newConnection().read { txn throws in txn.snapshot }
            func expectInvalid(_ what: String, _ code: CanopyError.Code = .invalidArgument, _ body: (ManualListEditor) throws -> Void) throws {
                do {
                    try database.newConnection().readWrite { txn throws in try body(try txn.manualList("focus")) }
                    Issue.record("\(what) was accepted")
                } catch let error as CanopyError {
                    #expect(error.code == code, "\(what): \(error)")
                    #expect(error.extensionName == "focus", "\(what): \(error)")
                }
                try database.newConnection().read { txn throws in
                    #expect(try Self.keys(txn) == ["a", "b", "c"], "\(what)")
                    #expect(txn.snapshot == before, "\(what)")
                }
            }
            try expectInvalid("insert at 4 of 3") { try $0.insert(key: "loose", inCollection: notes.name, at: 4) }
            try expectInvalid("insert at -1") { try $0.insert(key: "loose", inCollection: notes.name, at: -1) }
            try expectInvalid("a row not in the store") { try $0.insert(key: "missing", inCollection: notes.name, at: 0) }
            try expectInvalid("a row of another collection") { try $0.insert(key: "x", inCollection: jsonNotes.name, at: 0) }
            try expectInvalid("a row already in the list") { try $0.append(key: "b", inCollection: notes.name) }
            try expectInvalid("move from 3") { try $0.move(from: 3, to: 0) }
            try expectInvalid("move to 3") { try $0.move(from: 0, to: 3) }
            try expectInvalid("move from -1") { try $0.move(from: -1, to: 0) }
            try expectInvalid("remove at 3") { try $0.remove(at: 3) }
            try expectInvalid("insert at Int.max") { try $0.insert(key: "loose", inCollection: notes.name, at: .max) }
            try expectInvalid("move from Int.min") { try $0.move(from: .min, to: 0) }
            try expectInvalid("remove at Int.max") { try $0.remove(at: .max) }
            // Removing a row that is not in the list, or is of a collection the list does not hold, answers false and
            // changes nothing (nor does it write a commit).
            try database.newConnection().readWrite { txn throws in
                let list = try txn.manualList("focus")
                #expect(try list.remove(key: "loose", inCollection: notes.name) == false)
                #expect(try list.remove(key: "missing", inCollection: notes.name) == false)
                #expect(try list.remove(key: "x", inCollection: jsonNotes.name) == false)
            }
            try database.newConnection().read { txn throws in
                #expect(try Self.keys(txn) == ["a", "b", "c"])
                #expect(txn.snapshot == before)
            }
            // Inside one transaction, a refused call leaves the list as it was and the transaction usable.
            try database.newConnection().readWrite { txn throws in
                let list = try txn.manualList("focus")
                #expect(throws: CanopyError.self) { try list.move(from: 0, to: 7) }
                #expect(try Self.keys(txn) == ["a", "b", "c"])
                try list.move(from: 0, to: 2)
            }
            try database.newConnection().read { txn throws in #expect(try Self.keys(txn) == ["b", "c", "a"]) }
            // Not a manual view, or no view at all.
            try database.newConnection().readWrite { txn throws in
                do { _ = try txn.manualList("plain"); Issue.record("a sorted view was taken as a manual list") } catch let error as CanopyError {
                    #expect(error.code == .invalidArgument)
                }
                do { _ = try txn.manualList("nope"); Issue.record("a missing view was taken as a manual list") } catch let error as CanopyError {
                    #expect(error.code == .extensionNotRegistered)
                }
            }
        }
    }

    @Test("The order survives reopening, a rebuild, and removals by a process that did not register the list")
    func persistence() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let options = DatabaseOptions(durability: .none)
        do {
            let database = try Database(path: path, options: options)
            try database.register(Self.makeFocus())
            try database.newConnection().readWrite { txn throws in
                let list = try txn.manualList("focus")
                for key in ["a", "b", "c", "d", "e"] {
                    try txn.set(Note(title: key), forKey: key, in: notes)
                    try list.insert(key: key, inCollection: notes.name, at: 0)
                }
                try list.move(from: 4, to: 1)
            }
            try database.newConnection().read { txn throws in #expect(try Self.keys(txn) == ["e", "a", "d", "c", "b"]) }
        }
        do {
            // Reopened: the same list, read through the registered view, with no population.
            let database = try Database(path: path, options: options)
            let focus = Self.makeFocus()
            try database.register(focus)
            #expect(focus.lastPopulation == nil)
            try database.newConnection().read { txn throws in #expect(try Self.keys(txn) == ["e", "a", "d", "c", "b"]) }
        }
        do {
            // A new version tag rebuilds the pages from the row scan; the order comes from the order table.
            let database = try Database(path: path, options: options)
            let focus = Self.makeFocus(versionTag: "2")
            try database.register(focus)
            #expect(focus.lastPopulation != nil)
            try database.newConnection().read { txn throws in
                #expect(try Self.keys(txn) == ["e", "a", "d", "c", "b"])
                #expect(try txn.view("focus").checkInvariants() == [])
            }
        }
        do {
            // A process without the list removes "d" and updates "a".
            let database = try Database(path: path, options: options)
            try database.newConnection().readWrite { txn throws in
                try txn.remove(key: "d", in: notes)
                try txn.set(Note(title: "a", body: "edited"), forKey: "a", in: notes)
            }
        }
        do {
            // Registering catches the list up: "d" is gone, and writing it again does not bring it back.
            let database = try Database(path: path, options: options)
            try database.register(Self.makeFocus(versionTag: "2"))
            try database.newConnection().read { txn throws in #expect(try Self.keys(txn) == ["e", "a", "c", "b"]) }
            try database.newConnection().readWrite { txn throws in try txn.set(Note(title: "d"), forKey: "d", in: notes) }
            try database.newConnection().read { txn throws in #expect(try Self.keys(txn) == ["e", "a", "c", "b"]) }
            try database.newConnection().readWrite { txn throws in try txn.manualList("focus").insert(key: "d", inCollection: notes.name, at: 4) }
            try database.newConnection().read { txn throws in #expect(try Self.keys(txn) == ["e", "a", "c", "b", "d"]) }
        }
    }
}
