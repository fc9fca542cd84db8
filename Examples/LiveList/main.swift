// The example of the CanopyTerminal article "A live terminal list in 30 lines" (the test
// Tests/CanopyTerminalTests/LiveListTests.swift checks that the article shows this code and drives it in tmux).
// Run it: `swift run live-list /tmp/notes`, then add notes from another process; d deletes the selected one.
// ARTICLE-BEGIN
import Canopy
import CanopySource
import CanopyTerminal
import Foundation

struct Note: Codable, Sendable { var title: String; var list: String }
let notes = TypedCollection<Note, NoMetadata>("notes")

TerminalRunner.runApp {
    let database = try Database(path: CommandLine.arguments.dropFirst().first ?? "notes.canopy")
    try database.register(View(name: "by-list",
                               grouping: .byObject(notes) { _, note in note.list },
                               sorting: .byObject(notes) { _, _, note in SortKey(.ascending(note.title)) }))
    let list = TerminalListView(colour: TerminalColorPolicy.isEnabled(fileDescriptor: 1, environment: ProcessInfo.processInfo.environment))
    let factory = Factory<Note, TerminalCell, TerminalSupplementaryView, TerminalListView, ViewCellIndex, ViewSupplementaryIndex>()
    factory.registerCell(.type(TerminalCell.self), in: list) { cell, note, index in
        cell.columns = [TerminalColumn(note.title), TerminalColumn("#" + index.rowID.key, width: .fixed(8), alignment: .right)]
    }
    factory.registerHeaderText { index in index.group }
    let source = try ViewDatasource(database: database, mappings: ViewMappings(view: "by-list", groupFilter: { _ in true }),
                                    factory: factory, container: list, collection: notes)
    list.dataSource = source
    let runner = TerminalRunner(list: list, title: "Notes · ↑↓ select · d delete · q quit")
    runner.follow(source)
    runner.bind(.character("d")) { runner in
        guard let path = list.selectedIndexPath, let id = try source.rowID(at: path) else { return }
        try database.newConnection().readWrite { _ = try $0.remove(key: id.key, in: notes) }
        runner.status = "Deleted #\(id.key)."
    }
    return try runner.run()
}
// ARTICLE-END
