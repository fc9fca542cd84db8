import Canopy
import CanopyCoreTestFixtures
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Testing

@Suite("Model evolution article")
struct ModelEvolutionArticleTests {
    @Test("Every code block of ModelEvolution.md is in ModelEvolutionExamples.swift, in order")
    func articleIsCompiled() throws {
        let compiled = try String(contentsOf: DocExamplesTests.root.appendingPathComponent("Tests/CanopyTests/ModelEvolutionExamples.swift"), encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        let blocks = try DocExamplesTests.blocks(ofArticle: "ModelEvolution.md")
        #expect(blocks.count >= 6)
        var searchFrom = 0
        for (number, block) in blocks.enumerated() {
            let start = (searchFrom...max(searchFrom, compiled.count - block.count)).first { offset in
                offset + block.count <= compiled.count && Array(compiled[offset..<(offset + block.count)]) == block
            }
            guard let start else {
                Issue.record("block \(number) of ModelEvolution.md is not in ModelEvolutionExamples.swift (after line \(searchFrom)); copy it there")
                continue
            }
            searchFrom = start + block.count
        }
    }

    @Test("The article's story runs: errors explain, steps migrate, a late old row is skipped and reported")
    func articleRuns() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let connection = database.newConnection()
        let printed = try modelEvolutionExamples(database: database, connection: connection)
        #expect(printed.first?.contains("has no value for 'text'") == true, "\(printed)")
        #expect(printed.last?.hasPrefix("1 notes cannot be shown: ") == true, "\(printed)")
        try connection.read { txn in
            let view = try txn.view("notes-by-title")
            #expect(try view.rowIDs(inGroup: "notes").map(\.key) == ["n1", "n2"])
            #expect(try view.checkInvariants() == [])
        }
        #expect(try database.newConnection().read { txn in try txn.appliedMigrations().map(\.name) }
                == ["note-body-to-text", "note-archived", "note-title-case"])
    }
}
