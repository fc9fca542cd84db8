import Canopy
import CanopySource
import CanopyTerminal
import CanopyTestSupport
import Foundation
import Testing

struct Reminder: Codable, Sendable {
    var title: String
    var list: String
}

let reminders = TypedCollection<Reminder, NoMetadata>("reminders")

/// The README's "Lists" example, verbatim between the markers.
func readmeListExample(database: Database) throws -> String {
    // README-BEGIN
    let list = TerminalListView(width: 60, height: 20)
    let factory = Factory<Reminder, TerminalCell, TerminalSupplementaryView, TerminalListView, ViewCellIndex, ViewSupplementaryIndex>()
    factory.registerCell(.type(TerminalCell.self), in: list) { cell, reminder, index in
        cell.columns = [TerminalColumn(reminder.title), TerminalColumn(reminder.list, width: .fixed(8))]
    }
    factory.registerHeaderText { $0.group }
    let source = try ViewDatasource(database: database, mappings: ViewMappings(view: "by-list", groupFilter: { _ in true }),
                                    factory: factory, container: list, collection: reminders)
    list.dataSource = source           // the list keeps its data source (which holds the list weakly)
    print(try list.renderToString())
    try source.advance()               // after commits: one checked batch
    // README-END
    return try withExtendedLifetime(source) { try list.renderToString() }
}

@Suite("README")
struct ReadmeExampleTests {
    @Test("The README's list example is compiled here and runs")
    func listExample() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        let parts = source.components(separatedBy: "// README-" + "BEGIN\n")
        let body = try #require(parts.last?.components(separatedBy: "    // README-" + "END").first)
        let lines = body.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let readmeLines = readme.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines.count == 11)
        for line in lines { #expect(readmeLines.contains(line), "README lacks: \(line)") }

        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        try database.register(View(name: "by-list", grouping: .byObject(reminders) { _, reminder in reminder.list },
                                   sorting: .byObject(reminders) { _, _, reminder in SortKey(.ascending(reminder.title)) }))
        try database.newConnection().readWrite { try $0.set(Reminder(title: "Buy milk", list: "home"), forKey: "r1", in: reminders) }
        let text = try readmeListExample(database: database)
        #expect(text.hasPrefix("home"))
        #expect(text.contains("Buy milk"))
    }
}
