import Canopy
import CanopySource
import CanopyTestSupport
import Testing

/// `ViewDatasource.commitManualMove`: a move in the UI persists through the manual view and comes back as a move.
@Suite("Manual moves through a view-backed data source")
struct ManualMoveTests {
    static func withFocusSource(
        reversed: Bool = false,
        _ body: (Database, ViewDatasource<Entry, TextCell, TextHeader, TestContainer>, TestContainer) throws -> Void
    ) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        try database.register(ManualView.make(name: "focus", collections: [entries.name]))
        try database.newConnection().readWrite { txn throws in
            for title in ["A", "B", "C", "D"] {
                try txn.set(Entry(title: title, day: "d", time: 0), forKey: title, in: entries)
                try txn.manualList("focus").append(key: title, inCollection: entries.name)
            }
        }
        let container = TestContainer()
        let factory = ViewFactory()
        factory.registerCell(.type(TextCell.self), in: container) { cell, entry, _ in cell.text = entry.title }
        var mappings = ViewMappings(groups: ["focus"], view: "focus")
        mappings.setReversed(reversed, forGroup: "focus")
        let source = try ViewDatasource(database: database, mappings: mappings, factory: factory, container: container, collection: entries)
        source.editing = Editing(commitEdit: { _, _, _ in }, canMove: { _, _ in true },
                                 commitMove: { [unowned source] from, to in try source.commitManualMove(from: from, to: to) })
        try body(database, source, container)
    }

    static func titles(_ source: ViewDatasource<Entry, TextCell, TextHeader, TestContainer>) -> [String?] {
        Array(source).map { try? $0.get().title }
    }

    @Test("A committed move persists, and the next advance is that move", arguments: [false, true])
    func moveThroughSource(reversed: Bool) throws {
        try Self.withFocusSource(reversed: reversed) { database, source, container in
            let shown = reversed ? ["D", "C", "B", "A"] : ["A", "B", "C", "D"]
            #expect(Self.titles(source) == shown)
            try source.commitMove(from: ViewIndexPath(section: 0, row: 0), to: ViewIndexPath(section: 0, row: 2))
            try source.advance()
            let moved = reversed ? ["C", "B", "D", "A"] : ["B", "C", "A", "D"]
            #expect(Self.titles(source) == moved)
            #expect(container.batches.last?.movedRows.map { [$0.from, $0.to] } == [[ViewIndexPath(section: 0, row: 0), ViewIndexPath(section: 0, row: 2)]])
            try database.newConnection().read { txn throws in
                #expect(try txn.view("focus").rowIDs(inGroup: "focus").map(\.key) == (reversed ? moved.reversed() : moved))
            }
        }
    }

    @Test("A move from a snapshot the list has since changed is refused and changes nothing")
    func staleMove() throws {
        try Self.withFocusSource { database, source, _ in
            try database.newConnection().readWrite { txn throws in try txn.manualList("focus").move(from: 3, to: 0) }  // D A B C
            #expect(throws: SourceError.self) {
                try source.commitMove(from: ViewIndexPath(section: 0, row: 0), to: ViewIndexPath(section: 0, row: 3))
            }
            try database.newConnection().read { txn throws in
                #expect(try txn.view("focus").rowIDs(inGroup: "focus").map(\.key) == ["D", "A", "B", "C"])
            }
            try source.advance()
            try source.commitMove(from: ViewIndexPath(section: 0, row: 0), to: ViewIndexPath(section: 0, row: 3))
            try source.advance()
            #expect(Self.titles(source) == ["A", "B", "C", "D"])
        }
    }
}
