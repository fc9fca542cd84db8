import Canopy
import CanopySource
import CanopyTerminal
import CanopyTestSupport
import Testing

/// The model as an older build wrote it, and as this build reads it (a field was added, not optional).
struct OldTask: Codable, Sendable { var title: String }
struct NewTask: Codable, Sendable { var title: String; var priority: Int }
let oldTasks = TypedCollection<OldTask, NoMetadata>("model-tasks")
let newTasks = TypedCollection<NewTask, NoMetadata>("model-tasks")

@Suite("Robust lists")
struct RobustListTests {
    typealias Source = ViewDatasource<NewTask, TerminalCell, TerminalSupplementaryView, TerminalListView>

    @Test("A row whose item no longer decodes (a model that changed) is an error line; the other rows render")
    func unreadableRow() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        try database.register(View(name: "by-key", grouping: .byKey { _, _ in "all" }, sorting: .byKey { _, _, key in SortKey(.ascending(key)) }))
        try database.newConnection().readWrite { txn in
            try txn.set(NewTask(title: "Fresh", priority: 1), forKey: "a", in: newTasks)
            try txn.set(OldTask(title: "Written by the old build"), forKey: "b", in: oldTasks)
            try txn.set(NewTask(title: "Also fresh", priority: 2), forKey: "c", in: newTasks)
        }
        let list = TerminalListView(width: 60, height: 5)
        let factory = Source.SourceFactory()
        factory.registerCell(.type(TerminalCell.self), in: list) { cell, task, _ in cell.columns = [TerminalColumn(task.title)] }
        list.dataSource = try Source(database: database, mappings: ViewMappings(view: "by-key", groupFilter: { _ in true }),
                                     factory: factory, container: list, collection: newTasks)
        let lines = try list.render().map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines.count == 3)
        #expect(lines[0] == "Fresh" && lines[2] == "Also fresh", "\(lines)")
        #expect(lines[1].hasPrefix("⚠ [0, 1]"), "\(lines)")
        #expect(list.lastErrors.count == 1)
        #expect(list.lastErrors.first?.indexPath == ViewIndexPath(section: 0, row: 1))
        #expect(list.lastErrors.first?.underlying is CanopyError, "\(String(describing: list.lastErrors.first))")
        // The source, as a collection, says which row failed instead of a silent nil.
        let source = try #require(list.dataSource as? Source)
        #expect(source.map { (try? $0.get())?.title } == ["Fresh", nil, "Also fresh"])
        guard case .failure(let error) = source[1] else { Issue.record("row 1 read"); return }
        #expect(error.code == .rowFailed && error.indexPath == ViewIndexPath(section: 0, row: 1))
    }

    @Test("A cell whose configuration throws is an error line with the index path and the error underneath")
    func throwingConfiguration() throws {
        struct Refused: Error {}
        let list = TerminalListView(width: 40, height: 5)
        let factory = Factory<String, TerminalCell, TerminalSupplementaryView, TerminalListView, IndexPathIndex, IndexPathIndex>()
        factory.registerCell(.builder(identifier: "plain") { TerminalCell() }, in: list, key: "default") { cell, item, _ in
            if item == "bad" { throw Refused() }
            cell.columns = [TerminalColumn(item)]
        }
        list.dataSource = StaticDatasource(items: ["one", "bad", "three"], factory: factory, container: list)
        let lines = try list.render().map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines[0] == "one" && lines[2] == "three" && lines[1].hasPrefix("⚠ [0, 1]"), "\(lines)")
        let error = try #require(list.lastErrors.first)
        #expect(error.indexPath == ViewIndexPath(section: 0, row: 1) && error.code == .rowFailed && error.underlying is Refused)
    }

    @Test("The list keeps its data source: one not retained elsewhere still shows its rows")
    func keepsDataSource() throws {
        let list = TerminalListView(width: 20, height: 3)
        func attach() {
            let factory = Factory<String, TerminalCell, TerminalSupplementaryView, TerminalListView, IndexPathIndex, IndexPathIndex>()
            factory.registerCell(.type(TerminalCell.self), in: list) { cell, item, _ in cell.columns = [TerminalColumn(item)] }
            list.dataSource = StaticDatasource(items: ["kept"], factory: factory, container: list)
        }
        attach()
        #expect(try list.render().first?.hasPrefix("kept") == true)
    }

    @Test("Changing the width lays every row out again (a right-aligned column moves to the new edge)")
    func relayoutOnWidthChange() throws {
        let (list, source) = makeList(sampleRows, width: 50)
        defer { keepAlive(source) }
        _ = try list.render()
        list.width = 30
        let lines = try list.render()
        #expect(lines.allSatisfy { DisplayWidth.of($0) == 30 }, "\(lines)")
        #expect(lines.contains { $0.hasSuffix("  100") }, "\(lines)")
    }

    @Test("The selection follows its row when a change moves it, and highlights it")
    func selectionFollowsRow() throws {
        struct Row: Identifiable, Equatable { let id: String }
        let list = TerminalListView(width: 20, height: 5)
        list.showsSelection = true
        let factory = Factory<Row, TerminalCell, TerminalSupplementaryView, TerminalListView, IndexPathIndex, IndexPathIndex>()
        factory.registerCell(.type(TerminalCell.self), in: list) { cell, row, _ in cell.columns = [TerminalColumn(row.id)] }
        let source = StaticDatasource(items: ["a", "b", "c", "d"].map(Row.init), factory: factory, container: list, identity: .identifiable)
        list.dataSource = source
        list.select(ViewIndexPath(section: 0, row: 2))
        source.items = ["c", "a", "b", "d"].map(Row.init)   // c moves to the top
        #expect(source.lastUpdateError == nil)
        #expect(list.selectedIndexPath == ViewIndexPath(section: 0, row: 0))
        #expect(try list.render().first?.hasPrefix("> c") == true)
        list.colour = true
        let selected = try #require(try list.render().first)
        #expect(selected.hasPrefix("\u{1B}[7m") && selected.hasSuffix("\u{1B}[0m"), "the whole selected row is in reverse video")
    }

    @Test("A reload is its own kind: never an empty batch that reads as 'nothing changed'")
    func reloadIsExplicit() throws {
        let mappings = ViewMappings(groups: ["g"], view: "v")
        let reload = ViewChangeset.reload(from: 3, mappings: mappings)
        #expect(reload.kind == .reload && !reload.isEmpty)
        #expect(ContainerUpdate(reload) == .reload)
        let nothing = ViewChangeset(sectionChanges: [], rowChanges: [], mappings: mappings, fromSnapshot: 3, toSnapshot: 4, isReload: false)
        #expect(nothing.kind == .changes && nothing.isEmpty)
        #expect(ContainerUpdate(nothing) == .batch(BatchUpdates()))
    }
}
