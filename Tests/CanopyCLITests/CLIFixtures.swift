import Canopy
import CanopyCLI
import CanopyTestSupport
import Foundation
import Testing

/// A chore (task) of the fixture app.
struct Chore: Codable, Sendable, Equatable {
    var title: String
    var list: String
    var priority: Int
    var due: Date
    var estimate: Double
}

/// Metadata of the fixture app's tasks.
struct TaskInfo: Codable, Sendable, Equatable {
    var color: String
}

/// A note of the fixture app, stored with the JSON codec.
struct Memo: Codable, Sendable, Equatable {
    var text: String
    var tags: [String]
}

let tasks = TypedCollection<Chore, TaskInfo>("tasks")
let memos = TypedCollection<Memo, NoMetadata>("memos", codec: JSONCodec())

/// The fixture app's views: tasks grouped by list, most important first; and the urgent ones (priority >= 3).
func byList() -> View {
    View(
        name: "by-list",
        grouping: .byObject(tasks) { _, task in task.list },
        sorting: .byObject(tasks) { _, _, task in SortKey(.descending(task.priority), .ascending(task.title)) },
        versionTag: "2", options: ViewOptions(allowedCollections: ["tasks"]))
}

func urgent() -> View {
    FilteredView.make(name: "urgent", parentView: "by-list") { _, row in try row.object(as: Chore.self).priority >= 3 }
}

/// The fixture app's rows: 6 tasks in two lists (one without metadata), 2 memos.
let fixtureTasks: [(String, Chore, TaskInfo?)] = [
    ("t1", Chore(title: "Buy milk", list: "home", priority: 1, due: Date(timeIntervalSince1970: 1_800_000_000), estimate: 0.5), TaskInfo(color: "blue")),
    ("t2", Chore(title: "Call Ada", list: "work", priority: 3, due: Date(timeIntervalSince1970: 1_800_086_400), estimate: 1), TaskInfo(color: "red")),
    ("t3", Chore(title: "Water plants", list: "home", priority: 3, due: Date(timeIntervalSince1970: 1_800_172_800), estimate: 0.25), nil),
    ("t4", Chore(title: "Write report", list: "work", priority: 5, due: Date(timeIntervalSince1970: 1_800_259_200), estimate: 4), TaskInfo(color: "red")),
    ("t5", Chore(title: "Fix bike", list: "home", priority: 2, due: Date(timeIntervalSince1970: 1_800_345_600), estimate: 2), TaskInfo(color: "green")),
    ("t6", Chore(title: "Plan trip", list: "home", priority: 4, due: Date(timeIntervalSince1970: 1_800_432_000), estimate: 3), nil),
]

/// Creates the fixture database at `path` (views registered, rows written) and closes it.
func makeFixture(at path: String) throws {
    let database = try Database(path: path, options: .init(durability: .none))
    try database.register(byList())
    try database.register(urgent())
    try database.newConnection().readWrite { txn in
        for (key, task, info) in fixtureTasks { try txn.set(task, forKey: key, in: tasks, metadata: info) }
        try txn.set(Memo(text: "hello \"world\"", tags: ["a", "b"]), forKey: "m1", in: memos)
        try txn.set(Memo(text: "second", tags: []), forKey: "m2", in: memos)
    }
}

/// A temporary directory with the fixture database in `db`; removed when `body` returns.
func withFixture<R>(_ body: (_ path: String, _ directory: TemporaryDirectory) async throws -> R) async throws -> R {
    let directory = try TemporaryDirectory(prefix: "canopy-cli-test")
    defer { directory.remove() }
    let path = directory.appending("db")
    try makeFixture(at: path)
    return try await body(path, directory)
}

/// What one in-process run of `canopy` did.
struct CLIResult {
    var status: Int32
    var output: String
    var errors: String

    /// The output parsed as one JSON document.
    func json() throws -> JSONValue { try JSONValue.parse(output.trimmingCharacters(in: .whitespacesAndNewlines)) }

    /// The output parsed as JSON lines.
    func jsonLines() throws -> [JSONValue] {
        try output.split(separator: "\n").map { try JSONValue.parse(String($0)) }
    }
}

/// Runs `canopy` in-process.
func canopy(_ arguments: String...) async -> CLIResult {
    await canopy(arguments)
}

func canopy(_ arguments: [String]) async -> CLIResult {
    let console = Console.capturing()
    let status = await CanopyCLI.run(arguments, console: console)
    return CLIResult(status: status, output: console.output, errors: console.errors)
}

extension JSONValue {
    /// The elements of an array (empty otherwise).
    var elements: [JSONValue] {
        if case .array(let elements) = self { return elements }
        return []
    }

    /// The integer value of a number.
    var intValue: Int? {
        if case .number(let text) = self { return Int(text) }
        return nil
    }

    /// The boolean value.
    var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }
}

/// The `canopy` executable built next to the test bundle, if any.
let canopyExecutable: String? = builtExecutable(named: "canopy")
