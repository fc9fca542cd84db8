import Canopy
import CanopySource
import CanopyTerminal
import CanopyTestSupport
import Foundation
import Testing

/// The CanopySource DocC article's example (Sources/CanopySource/CanopySource.docc/CanopySource.md), compiled here and
/// run: a cell that reads a related object (the reminder's calendar) through the index's pinned transaction.
enum ArticleExample {
    struct Reminder: Codable, Sendable {
        var title: String
        var calendar: String
        var day: String
    }

    struct Calendar: Codable, Sendable {
        var name: String
    }

    static let reminders = TypedCollection<Reminder, NoMetadata>("article-reminders")
    static let calendars = TypedCollection<Calendar, NoMetadata>("article-calendars")

    /// The article's block, verbatim between the markers, with what it needs around it.
    static func run(database: Database, list: TerminalListView) throws -> ViewDatasource<Reminder, TerminalCell, TerminalSupplementaryView, TerminalListView> {
        let calendars = Self.calendars
        let reminders = Self.reminders
        // ARTICLE-BEGIN
        let factory = Factory<Reminder, TerminalCell, TerminalSupplementaryView, TerminalListView, ViewCellIndex, ViewSupplementaryIndex>()
        factory.registerCell(.type(TerminalCell.self), in: list) { cell, reminder, index in
            let calendar = try index.transaction().object(forKey: reminder.calendar, in: calendars)
            cell.columns = [TerminalColumn(reminder.title), TerminalColumn(calendar?.name ?? "", width: .fixed(10))]
        }
        let source = try ViewDatasource(database: database, mappings: ViewMappings(view: "agenda", groupFilter: { _ in true }),
                                        factory: factory, container: list, collection: reminders)
        // ARTICLE-END
        return source
    }
}

@Suite("DocC article")
struct ArticleExampleTests {
    @Test("The CanopySource article's example is compiled here, verbatim, and shows the related object")
    func articleExample() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
        let article = try String(contentsOf: root.appendingPathComponent("Sources/CanopySource/CanopySource.docc/CanopySource.md"),
                                 encoding: .utf8)
        let blockStart = try #require(article.range(of: "```swift\n"))
        let blockEnd = try #require(article[blockStart.upperBound...].range(of: "```"))
        let articleLines = article[blockStart.upperBound..<blockEnd.lowerBound].split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }
        let thisFile = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        let body = try #require(thisFile.components(separatedBy: "// ARTICLE-" + "BEGIN\n").last?
            .components(separatedBy: "        // ARTICLE-" + "END").first)
        let compiledLines = body.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(compiledLines == articleLines, "the article's block and this file's differ: copy one onto the other")

        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        try database.register(View(
            name: "agenda",
            grouping: .byObject(ArticleExample.reminders) { _, reminder in reminder.day },
            sorting: .byObject(ArticleExample.reminders) { _, _, reminder in SortKey(.ascending(reminder.title)) }))
        try database.newConnection().readWrite { txn in
            try txn.set(ArticleExample.Calendar(name: "Work"), forKey: "c1", in: ArticleExample.calendars)
            try txn.set(ArticleExample.Reminder(title: "Call Ada", calendar: "c1", day: "mon"), forKey: "r1", in: ArticleExample.reminders)
        }
        let list = TerminalListView(width: 40, height: 5)
        let source = try ArticleExample.run(database: database, list: list)
        list.dataSource = source
        let text = try withExtendedLifetime(source) { try list.renderToString() }
        #expect(text.contains("Call Ada"))
        #expect(text.contains("Work"), "the cell read the calendar through the index's transaction:\n\(text)")
    }
}
