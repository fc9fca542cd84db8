import Canopy
import CanopySource
import CanopyTerminal
import CanopyTestSupport
import Testing

struct Task2: Codable, Sendable, Equatable {
    var title: String
    var group: Int
    var rank: Int
}

let tasks = TypedCollection<Task2, NoMetadata>("tasks")
typealias TaskFactory = Factory<Task2, TerminalCell, TerminalSupplementaryView, TerminalListView, ViewCellIndex, ViewSupplementaryIndex>

func registerTaskView(_ database: Database) throws {
    try database.register(View(
        name: "tasks-by-group",
        grouping: .byObject(tasks) { _, task in "g\(task.group)" },
        sorting: .byObject(tasks) { _, _, task in SortKey(.ascending(task.rank)) }))
}

func makeTaskList(_ database: Database, height: Int) throws -> (TerminalListView, ViewDatasource<Task2, TerminalCell, TerminalSupplementaryView, TerminalListView>) {
    let list = TerminalListView(width: 40, height: height)
    let factory = TaskFactory()
    factory.registerCell(.type(TerminalCell.self), in: list) { cell, task, index in
        cell.columns = [TerminalColumn(index.rowID.key, width: .fixed(6)), TerminalColumn(task.title), TerminalColumn("\(task.rank)", width: .fixed(4), alignment: .right)]
    }
    factory.registerHeaderText { $0.group }
    let source = try ViewDatasource(database: database, mappings: ViewMappings(view: "tasks-by-group", groupFilter: { _ in true }),
                                    factory: factory, container: list, collection: tasks)
    list.dataSource = source
    return (list, source)
}

@Suite("Terminal list over a view")
struct ViewBackedTerminalTests {
    @Test("Randomized: every changeset applies to the terminal view without a validation error, and its rows equal a fresh rendering")
    func randomizedChangesets() throws {
        let seed: UInt64 = 0x5EED_7E41
        var random = SeededRandom(seed: seed)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        try registerTaskView(database)
        let connection = database.newConnection()
        let (list, source) = try makeTaskList(database, height: 1000)
        _ = try list.render()
        var nextKey = 0
        for step in 0..<(150 * testScale()) {
            let operations = Int.random(in: 1...4, using: &random)
            try connection.readWrite { txn in
                for _ in 0..<operations {
                    let existing = try txn.keys(inCollection: "tasks")
                    let choice = existing.isEmpty ? 0 : Int.random(in: 0..<10, using: &random)
                    switch choice {
                    case 0..<4:
                        nextKey += 1
                        try txn.set(Task2(title: "t\(nextKey)", group: Int.random(in: 0..<4, using: &random), rank: Int.random(in: 0..<50, using: &random)),
                                    forKey: "k\(nextKey)", in: tasks)
                    case 4..<6:
                        _ = try txn.remove(key: existing.randomElement(using: &random) ?? "", in: tasks)
                    case 6..<8:
                        let key = existing.randomElement(using: &random) ?? ""
                        try txn.set(Task2(title: "moved \(step)", group: Int.random(in: 0..<4, using: &random), rank: Int.random(in: 0..<50, using: &random)),
                                    forKey: key, in: tasks)
                    default:
                        let key = existing.randomElement(using: &random) ?? ""
                        if var task = try txn.object(forKey: key, in: tasks) {
                            task.title = "edited \(step)"
                            try txn.set(task, forKey: key, in: tasks)
                        }
                    }
                }
            }
            if Int.random(in: 0..<3, using: &random) == 0 { continue }  // let some spans cover several commits
            let changeset = try source.advance()
            #expect(list.lastBatchError == nil, "seed \(seed), step \(step): \(String(describing: list.lastBatchError)) for \(changeset.rowChanges)")
            let rendered = try list.render()
            let (fresh, freshSource) = try makeTaskList(database, height: 1000)
            let expected = try fresh.render()
            #expect(rendered == expected, "seed \(seed), step \(step): the list differs from a fresh rendering after \(changeset.rowChanges)")
            withExtendedLifetime(freshSource) {}
            if rendered != expected || list.lastBatchError != nil { break }
        }
    }

    @Test("A 5-row viewport over 2,000 rows configures about 5 cells")
    func viewportReadsOnlyVisibleRows() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        try registerTaskView(database)
        try database.newConnection().readWrite { txn in
            for index in 0..<2000 { try txn.set(Task2(title: "t\(index)", group: 0, rank: index), forKey: "k\(index)", in: tasks) }
        }
        let (list, source) = try makeTaskList(database, height: 6)
        let lines = try list.render()
        #expect(lines.count == 6 && lines[0].hasPrefix("g0"))
        #expect(list.cellsConfigured == 5)
        withExtendedLifetime(source) {}
    }

    /// Found resizing `reminders tui` in tmux: after the terminal shrank, rows kept their old width (they wrapped onto
    /// the next line), because rows rendered before were reused whatever the width.
    @Test("A new width (the terminal resized), colour or gutter renders every row again, each line exactly the new width")
    func resizeRendersRowsAgain() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        try registerTaskView(database)
        try database.newConnection().readWrite { txn in
            for index in 0..<5 { try txn.set(Task2(title: "a title of some length \(index)", group: 0, rank: index), forKey: "k\(index)", in: tasks) }
        }
        let (list, source) = try makeTaskList(database, height: 6)
        #expect(try list.render().allSatisfy { DisplayWidth.of($0) == 40 })
        for width in [25, 70, 12] {
            list.width = width
            let lines = try list.render()
            #expect(lines.count == 6)
            #expect(lines.allSatisfy { DisplayWidth.of($0) == width }, "width \(width): \(lines)")
        }
        list.showsSelection = true
        #expect(try list.render().allSatisfy { DisplayWidth.of($0) == 12 })
        withExtendedLifetime(source) {}
    }
}
