import Canopy
import CanopySource
import CanopyTerminal
import CanopyTestSupport
import Foundation
import Synchronization
import Testing

@Suite("README recipes", .ownThread)
struct ReadmeRecipesTests {
    static let testsFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    static let names = ["paging", "delete-group", "observe-async", "live-list", "server", "index", "many-groups", "feed"]

    /// Each README block marked `<!-- recipe: NAME -->` is, line for line (indentation aside), the code between the
    /// `RECIPE NAME` markers of ReadmeRecipes.swift: compiling the tests compiles the README's recipes.
    @Test(arguments: names) func readmeHoldsTheCompiledRecipe(name: String) throws {
        let readme = try String(contentsOf: Self.testsFolder.appendingPathComponent("../../README.md"), encoding: .utf8)
        let block = Self.lines(try #require(swiftBlock(after: "<!-- recipe: \(name) ", in: readme), "README has no recipe '\(name)'"))
        let source = try String(contentsOf: Self.testsFolder.appendingPathComponent("ReadmeRecipes.swift"), encoding: .utf8)
        let begin = try #require(source.range(of: "// RECIPE \(name) BEGIN\n"))
        let finish = try #require(source[begin.upperBound...].range(of: "// RECIPE \(name) END"))
        let compiled = Self.lines(String(source[begin.upperBound..<finish.lowerBound]))
        #expect(block == compiled, "README's recipe '\(name)' and ReadmeRecipes.swift differ: copy one onto the other")
    }

    static func lines(_ text: String) -> [String] {
        text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// A database with the quick start's "by-list" view and `count` reminders in "home" and 3 in "work".
    func withReminders<R>(home count: Int = 300, _ body: (Database, Connection) async throws -> R) async throws -> R {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        try database.register(View(
            name: "by-list", grouping: .byObject(recipeReminders) { _, reminder in reminder.list },
            sorting: .byObject(recipeReminders) { _, key, _ in SortKey(key) }))
        let connection = database.newConnection()
        try await connection.readWrite { txn in
            for number in 0..<count {
                try txn.set(Reminder(title: "home \(number)", list: "home", priority: number % 10), forKey: String(format: "h%04d", number),
                            in: recipeReminders)
            }
            for number in 0..<3 {
                try txn.set(Reminder(title: "work \(number)", list: "work", priority: 1), forKey: "w\(number)", in: recipeReminders)
            }
        }
        return try await body(database, connection)
    }

    @Test func pagingReadsOnePageByPosition() async throws {
        try await withReminders { _, connection in
            let page = try recipePaging(connection: connection)
            #expect(page == (200..<250).map { "home \($0)" })
        }
        try await withReminders(home: 210) { _, connection in
            let shortPage = try recipePaging(connection: connection)
            #expect(shortPage == (200..<210).map { "home \($0)" })
        }
    }

    @Test func deletingAGroupEmptiesIt() async throws {
        try await withReminders { database, connection in
            #expect(try recipeDeleteGroup(connection: connection) == 3)
            let (groups, gone) = try await connection.read { txn in
                (try txn.view("by-list").groups(), try txn.object(forKey: "w0", in: recipeReminders) == nil)
            }
            #expect(groups == ["home"] && gone)
            _ = database
        }
    }

    @Test(.timeLimit(.minutes(1))) func observingFromAsyncCodeSeesTheCommit() async throws {
        try await withReminders { database, connection in
            let observer = try ViewObserver(database: database, mappings: ViewMappings(groups: ["home", "work"], view: "by-list"))
            try await connection.readWrite { txn in try txn.set(Reminder(title: "new", list: "work", priority: 1), forKey: "w9", in: recipeReminders) }
            let seen = Recorded()
            try await recipeObserveAsync(observer: observer) { changes in
                for change in changes.rowChanges { seen.add(change.id.key) }
                return true
            }
            #expect(seen.keys == ["w9"])
        }
    }

    @Test(.timeLimit(.minutes(1))) func theLiveListRedrawsAfterACommit() async throws {
        try await withReminders(home: 2) { database, connection in
            let list = TerminalListView(width: 60, height: 20)
            let factory = Factory<Reminder, TerminalCell, TerminalSupplementaryView, TerminalListView, ViewCellIndex, ViewSupplementaryIndex>()
            factory.registerCell(.type(TerminalCell.self), in: list) { cell, reminder, _ in cell.columns = [TerminalColumn(reminder.title)] }
            let source = try ViewDatasource(database: database, mappings: ViewMappings(view: "by-list", groupFilter: { _ in true }),
                                            factory: factory, container: list, collection: recipeReminders)
            list.dataSource = source
            #expect(try !list.renderToString().contains("Fresh"))
            try await connection.readWrite { txn in
                try txn.set(Reminder(title: "Fresh", list: "home", priority: 7), forKey: "a0", in: recipeReminders)
            }
            try await recipeLiveList(database: database, list: list, source: source) { true }
            #expect(try list.renderToString().contains("Fresh"))
        }
    }

    @Test func theRequestHandlerReadsAndWritesThroughTheAsyncAPI() async throws {
        try await withReminders { database, connection in
            let reminder = try await recipeRequestHandler(database: database, id: "w1")
            #expect(reminder?.title == "work 1")
            let logged = try await connection.read { txn in try txn.object(forKey: "log-w1", in: recipeReminders) }
            #expect(logged?.title == "Seen by the server")
        }
    }

    @Test func theIndexFindsRowsByRange() async throws {
        try await withReminders(home: 20) { database, connection in
            let urgent = try recipeIndex(database: database, connection: connection)
            #expect(Set(urgent) == Set((0..<20).filter { (3...9).contains($0 % 10) }.map { "home \($0)" }))
        }
    }

    @Test func theManyGroupViewShowsAnUrgentReminderUnderItsListAndUnderUrgent() async throws {
        try await withReminders(home: 20) { database, connection in
            let urgent = try recipeManyGroups(database: database, connection: connection)
            let expected = (0..<20).filter { $0 % 10 >= 3 }.map { "home \($0)" }
            #expect(Set(urgent) == Set(expected))
            let home = try connection.read { txn in try txn.view("lists-and-urgent").count(inGroup: "home") }
            #expect(home == 20)
        }
    }

    @Test(.timeLimit(.minutes(1))) func theFeedConsumerAppliesEachCommit() async throws {
        try await withReminders(home: 1) { database, connection in
            // Enabled before the recipe runs (the recipe's own enableChangeFeed then changes nothing), so that these
            // three commits are in the feed when the consumer starts.
            let start = try database.enableChangeFeed()
            for key in ["f0", "f1", "f2"] {
                try await connection.readWrite { txn in try txn.set(Reminder(title: "f", list: "home", priority: 1), forKey: key, in: recipeReminders) }
            }
            let applied = Recorded()
            try await recipeFeed(database: database, apply: { applied.add($0.key) }, until: { $0 == start + 3 })
            #expect(applied.keys == ["f0", "f1", "f2"])
            #expect(try database.feedConsumer(named: "search-indexer")?.checkpoint == start + 3)
        }
    }
}

/// Keys applied by the feed recipe's consumer.
final class Recorded: Sendable {
    private let state = Mutex<[String]>([])
    func add(_ key: String) { state.withLock { $0.append(key) } }
    var keys: [String] { state.withLock { $0 } }
}
