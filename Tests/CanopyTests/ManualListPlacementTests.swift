import Canopy
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// A manual list's edits are the list's changes alone: a move writes the list's order table and pages, no row; an
/// insertion or removal sets or clears the list's mark on the row without telling any other extension. So other views
/// report nothing, and the commit records no row as changed.
@Suite("Manual views: edits write no row and reach no other view")
struct ManualListPlacementTests {
    /// Another view over the same rows (a new object per database: a view holds its database's state).
    static func all() -> View {
        View(name: "all", grouping: .byKey { collection, _ in collection == notes.name ? "all" : nil },
             sorting: .byKey { _, _, key in SortKey(.ascending(key)) })
    }

    /// The rows each commit after `snapshot` records as changed (objects and metadata), from the commit log.
    static func changedRows(_ database: Database, since snapshot: UInt64) throws -> [[String]] {
        let connection = database.newConnection()
        _ = try connection.pin()
        return try connection.advance(since: snapshot).map { notification in
            (notification.changedObjects.flatMap { collection, keys in keys.map { "\(collection)/\($0)" } }
                + notification.changedMetadata.flatMap { collection, keys in keys.map { "\(collection)/\($0) metadata" } }).sorted()
        }
    }

    /// Each row's attachment to the list, by key.
    static func marks(_ txn: ReadTransaction) throws -> [String: [UInt8]] {
        guard let slot = try txn.attachmentSlot(for: "focus") else { return [:] }
        var marks: [String: [UInt8]] = [:]
        for key in try txn.keys(inCollection: notes.name) {
            guard let rowKey = try txn.storedRowKey(for: RowID(collection: notes.name, key: key)) else { continue }
            marks[key] = try txn.attachment(at: slot, forRow: rowKey)
        }
        return marks
    }

    @Test("Moves, renumbering included, record no changed row, leave the rows' records as they were, and other views report nothing",
          arguments: [1 as UInt64, 2, 3])
    func movesWriteNoRow(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        try withDatabase { database, _ in
            try database.register(ManualViewTests.makeFocus())
            try database.register(Self.all())
            let keys = (0..<40).map { String(format: "k%02d", $0) }
            try database.newConnection().readWrite { txn throws in
                let list = try txn.manualList("focus")
                for key in keys {
                    try txn.set(Note(title: key), forKey: key, in: notes)
                    try list.append(key: key, inCollection: notes.name)
                }
            }
            var snapshot = try database.currentSnapshot()
            let focus = try ViewObserver(database: database, mappings: ManualViewTests.mappings)
            let other = try ViewObserver(database: database, mappings: ViewMappings(groups: ["all"], view: "all"))
            let marksBefore = try database.newConnection().read { txn throws in try Self.marks(txn) }
            #expect(Set(marksBefore.values) == [[0xFE]], "every row in the list carries the list's mark")
            var model = keys
            var moves = 0
            for commit in 0..<60 {
                try database.newConnection().readWrite { txn throws in
                    let list = try txn.manualList("focus")
                    for _ in 0..<(1 + Int(random.next() % 3)) {
                        let from = Int(random.next() % UInt64(model.count))
                        // Mostly to the top or next to it: the gaps there run out and rows are renumbered.
                        let to = random.next() % 4 == 0 ? Int(random.next() % UInt64(model.count)) : Int(random.next() % 2)
                        try list.move(from: from, to: to)
                        model.insert(model.remove(at: from), at: to)
                    }
                }
                let context = "seed \(seed), commit \(commit)"
                // (A commit of moves from a row's place to the same place writes nothing, so there may be no commit.)
                let rowsChanged = try Self.changedRows(database, since: snapshot)
                #expect(rowsChanged.count <= 1 && rowsChanged.allSatisfy(\.isEmpty), "a move recorded changed rows \(rowsChanged); \(context)")
                snapshot = try database.currentSnapshot()
                let otherChanges = try other.advance()
                #expect(otherChanges.rowChanges.isEmpty && !otherChanges.isReload, "the other view reported \(otherChanges.rowChanges); \(context)")
                let changes = try focus.advance()
                #expect(changes.rowChanges.allSatisfy { $0.kind == .move }, "\(changes.rowChanges); \(context)")
                moves += changes.rowChanges.count
                try database.newConnection().read { txn throws in
                    #expect(try ManualViewTests.keys(txn) == model, "\(context)")
                }
            }
            #expect(moves > 0)
            try database.newConnection().read { txn throws in
                #expect(try Self.marks(txn) == marksBefore, "a move rewrote a row's attachment")
                #expect(try txn.view("focus").checkInvariants() == [])
                let problems = try txn.view("all").checkInvariants()
                #expect(problems == [], "\(problems)")
            }
        }
    }

    @Test("An insertion or a removal from the list sets or clears the row's mark; other views and the commit's changed rows say nothing")
    func membershipReachesNoOtherView() throws {
        try withDatabase { database, _ in
            try database.register(ManualViewTests.makeFocus())
            try database.register(Self.all())
            try database.newConnection().readWrite { txn throws in
                for key in ["a", "b", "c"] { try txn.set(Note(title: key), forKey: key, in: notes) }
                try txn.manualList("focus").append(key: "b", inCollection: notes.name)
            }
            var snapshot = try database.currentSnapshot()
            let other = try ViewObserver(database: database, mappings: ViewMappings(groups: ["all"], view: "all"))
            let focus = try ViewObserver(database: database, mappings: ManualViewTests.mappings)
            try database.newConnection().readWrite { txn throws in
                let list = try txn.manualList("focus")
                try list.append(key: "a", inCollection: notes.name)
                try list.insert(key: "c", inCollection: notes.name, at: 0)
            }
            #expect(try Self.changedRows(database, since: snapshot) == [[]])
            snapshot = try database.currentSnapshot()
            #expect(try other.advance().rowChanges.isEmpty)
            let inserted = try focus.advance().rowChanges.map { "\($0.kind) \($0.id.key)" }.sorted()
            #expect(inserted == ["insert a", "insert c"], "\(inserted)")
            try database.newConnection().read { txn throws in
                #expect(try Self.marks(txn) == ["a": [0xFE], "b": [0xFE], "c": [0xFE]])
            }
            try database.newConnection().readWrite { txn throws in
                #expect(try txn.manualList("focus").remove(key: "a", inCollection: notes.name))
            }
            #expect(try Self.changedRows(database, since: snapshot) == [[]])
            snapshot = try database.currentSnapshot()
            #expect(try other.advance().rowChanges.isEmpty)
            #expect(try focus.advance().rowChanges.map { "\($0.kind) \($0.id.key)" } == ["delete a"])
            try database.newConnection().read { txn throws in
                #expect(try Self.marks(txn) == ["b": [0xFE], "c": [0xFE]])
                #expect(try txn.view("focus").checkInvariants() == [])
            }
            // An update of a row in the list is still an update in the list and a change of the row.
            try database.newConnection().readWrite { txn throws in try txn.set(Note(title: "c", body: "edited"), forKey: "c", in: notes) }
            #expect(try Self.changedRows(database, since: snapshot) == [["notes/c"]])
            #expect(try focus.advance().rowChanges.map { "\($0.kind) \($0.id.key)" } == ["update c"])
            #expect(try other.advance().rowChanges.map { "\($0.kind) \($0.id.key)" } == ["update c"])
        }
    }

    @Test("A filtered view over a manual list is refused: its moves reach no other view")
    func filteredOverManualRefused() throws {
        try withDatabase { database, _ in
            try database.register(ManualViewTests.makeFocus())
            let error = #expect(throws: CanopyError.self) {
                try database.register(FilteredView.make(name: "focus-short", parentView: "focus") { _, _ in true })
            }
            #expect(error?.code == .invalidArgument, "\(String(describing: error))")
            #expect(error?.message.contains("manual list") == true, "\(String(describing: error))")
        }
    }

    @Test("placeAgain names a registered extension: another name is a typed error and writes nothing")
    func placeAgainUnknownExtension() throws {
        try withDatabase { database, _ in
            try database.register(ManualViewTests.makeFocus())
            let error = #expect(throws: CanopyError.self) {
                try database.newConnection().readWrite { txn throws in
                    try txn.set(Note(title: "a"), forKey: "a", in: notes)
                    try txn.placeAgain([RowID(collection: notes.name, key: "a")], inExtension: "nope")
                }
            }
            #expect(error?.code == .extensionNotRegistered)
            #expect(try database.newConnection().read { txn throws in try txn.count(inCollection: notes.name) } == 0)
        }
    }
}
