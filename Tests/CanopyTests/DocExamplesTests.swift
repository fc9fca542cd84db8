import Canopy
import CanopyTestSupport
import Foundation
import Testing

@Suite("Documentation examples")
struct DocExamplesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")

    /// The swift code blocks of an article, each with its lines trimmed of indentation.
    static func blocks(ofArticle name: String) throws -> [[String]] {
        let text = try String(contentsOf: root.appendingPathComponent("Sources/Canopy/Canopy.docc/\(name)"), encoding: .utf8)
        var blocks: [[String]] = []
        var current: [String]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```swift" {
                current = []
            } else if current != nil, line == "```" {
                blocks.append(current ?? [])
                current = nil
            } else if current != nil {
                current?.append(line.trimmingCharacters(in: .whitespaces))
            }
        }
        return blocks
    }

    @Test("Every code block of the Views, Observation and Lists in the user's order articles is in DocExamples.swift, in order")
    func articlesAreCompiled() throws {
        let compiled = try String(contentsOf: Self.root.appendingPathComponent("Tests/CanopyTests/DocExamples.swift"), encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        var searchFrom = 0
        for article in ["Views.md", "Observation.md", "ManualLists.md"] {
            let blocks = try Self.blocks(ofArticle: article)
            #expect(!blocks.isEmpty, "\(article) has no swift block")
            for (number, block) in blocks.enumerated() {
                let start = (searchFrom...max(searchFrom, compiled.count - block.count)).first { offset in
                    offset + block.count <= compiled.count && Array(compiled[offset..<(offset + block.count)]) == block
                }
                guard let start else {
                    Issue.record("block \(number) of \(article) is not in Tests/CanopyTests/DocExamples.swift (after line \(searchFrom)); copy it there")
                    continue
                }
                searchFrom = start + block.count
            }
        }
    }

    @Test("The article examples run on a fresh database")
    func articlesRun() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let connection = database.newConnection()
        try articleExamples(database: database, connection: connection)
        let today = try connection.read { txn in try txn.view("agenda").rowIDs(inGroup: "today") }
        #expect(today == [RowID(collection: "reminders", key: "r1")])
        let focus = try connection.read { txn in try txn.view("focus").rowIDs(inGroup: "focus").map(\.key) }
        #expect(focus == ["t3", "t1", "t2"])
    }
}
