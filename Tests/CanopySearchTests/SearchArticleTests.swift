import Canopy
import CanopySearch
import CanopyTestSupport
import Foundation
import Testing

@Suite("CanopySearch documentation examples")
struct SearchArticleTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")

    static func lines(_ text: some StringProtocol) -> [String] {
        text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// The swift blocks of `text`, each as trimmed, non-empty lines.
    static func blocks(_ text: String) -> [[String]] {
        var blocks: [[String]] = []
        var current: [String]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```swift" { current = [] } else if current != nil, line == "```" {
                blocks.append(current ?? [])
                current = nil
            } else if current != nil, !line.trimmingCharacters(in: .whitespaces).isEmpty {
                current?.append(line.trimmingCharacters(in: .whitespaces))
            }
        }
        return blocks
    }

    @Test("Every swift block of FullTextSearch.md is in SearchArticleExamples.swift, in order; the README's recipe too")
    func blocksAreCompiled() throws {
        let compiled = Self.lines(try String(contentsOf: Self.root.appendingPathComponent("Tests/CanopySearchTests/SearchArticleExamples.swift"), encoding: .utf8))
        let article = try String(contentsOf: Self.root.appendingPathComponent("Sources/CanopySearch/CanopySearch.docc/FullTextSearch.md"), encoding: .utf8)
        var from = 0
        let blocks = Self.blocks(article)
        #expect(blocks.count == 2)
        for block in blocks {
            let start = (from..<max(from, compiled.count)).first { offset in
                offset + block.count <= compiled.count && Array(compiled[offset..<(offset + block.count)]) == block
            }
            #expect(start != nil, "this block of the article is not in SearchArticleExamples.swift:\n\(block.joined(separator: "\n"))")
            from = (start ?? from) + block.count
        }
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let marker = try #require(readme.range(of: "<!-- search-recipe:"), "README has no search recipe")
        let readmeBlock = try #require(Self.blocks(String(readme[marker.upperBound...])).first)
        let source = try String(contentsOf: Self.root.appendingPathComponent("Tests/CanopySearchTests/SearchArticleExamples.swift"), encoding: .utf8)
        let begin = try #require(source.range(of: "// SEARCH RECIPE BEGIN\n"))
        let end = try #require(source[begin.upperBound...].range(of: "// SEARCH RECIPE END"))
        #expect(readmeBlock == Self.lines(source[begin.upperBound..<end.lowerBound]), "README's search recipe and SearchArticleExamples.swift differ")
    }

    @Test("The article's examples run: ranked hits with highlights, then the live results' changesets")
    func examplesRun() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let (hits, changes, narrowed) = try searchArticleExamples(database: database, connection: database.newConnection())
        #expect(hits.map(\.id.key) == ["n1"], "only n1 has both a milk… word and creme")
        #expect(hits.first?.fields.map { $0.highlighted(open: "[", close: "]") } == ["Groceries", "Oat [milk], bread, [crème] fraîche"])
        #expect(changes.sectionChanges.map(\.kind) == [.insert])
        #expect(narrowed.rowChanges.map { "\($0.kind) \($0.id.key)" }.sorted() == ["delete n1", "move n2"])

        let other = try TemporaryDirectory()
        defer { other.remove() }
        let recipeDatabase = try Database(path: other.appending("db"), options: .init(durability: .none))
        struct Note: Codable, Sendable { var title: String; var body: String }
        try recipeDatabase.newConnection().readWrite { txn in
            try txn.set(Note(title: "Oats", body: "with crème fraîche"), forKey: "a", in: TypedCollection<Note, NoMetadata>("notes"))
            try txn.set(Note(title: "Oats", body: "plain"), forKey: "b", in: TypedCollection<Note, NoMetadata>("notes"))
        }
        #expect(try searchReadmeRecipe(database: recipeDatabase, connection: recipeDatabase.newConnection()) == ["**Oats** — with **crème** **fraîche**"])
    }
}
