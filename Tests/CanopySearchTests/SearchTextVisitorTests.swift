import CanopyCore
import CanopyTestSupport
import Testing
@testable import CanopySearch

/// ``SearchIndex/byObject(name:versionTag:_:fields:prefixLengths:)`` reads a written row's texts through its visitor
/// (no array per row) and, everywhere else (highlights, verify, results views), through its text closure: both must
/// give the same analysis — the same words, fields, positions and length, so the same record and postings.
@Suite("Search index: the text visitor and the text closure analyse rows alike")
struct SearchTextVisitorTests {
    struct Note: Codable, Sendable {
        var title: String?
        var body: String
        var tag: String?
    }

    @Test("random rows, fields with and without text: the same record and postings", arguments: [1 as UInt64, 2, 3])
    func sameAnalysis(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let notes = TypedCollection<Note, NoMetadata>("notes")
        let index = SearchIndex.byObject(name: "notes-search", notes, fields: [
            ObjectSearchField("title", weight: 2, \.title), ObjectSearchField("body", \.body), ObjectSearchField("tag") { $0.tag },
        ])
        #expect(index.textVisitor != nil)
        let words = ["milk", "bread", "Crème", "東京", "👍", "oat", "h2o", "", "  ", "brifenquorstel"]
        func text() -> String {
            (0..<Int(random.next() % 9)).map { _ in words[Int(random.next() % UInt64(words.count))] }.joined(separator: " ")
        }
        for number in 0..<300 {
            let note = Note(
                title: random.next() % 3 == 0 ? nil : text(), body: text(), tag: random.next() % 2 == 0 ? nil : text())
            let storedKey = try #require(StoredRowKey(bytes: [0, 0, 0, 1] + Array("n\(number)".utf8)))
            let change = RowChange(
                id: RowID(collection: "notes", key: "n\(number)"), storedKey: storedKey, kind: .insert, objectChanged: true,
                metadataChanged: false, object: note)
            var visited = SearchDocumentAnalysis()
            let included = try index.analyse(SearchRow(change), into: &visited)
            #expect(included, "seed \(seed), row \(number)")
            let texts = try #require(try index.texts(of: SearchRow(change)))
            let read = SearchDocumentAnalysis(texts)
            #expect(visited.record(document: 7) == read.record(document: 7), "seed \(seed), row \(number): \(note)")
            #expect(visited.length == read.length)
            #expect((0..<visited.termCount).map { visited.posting($0) } == (0..<read.termCount).map { read.posting($0) }, "seed \(seed), row \(number)")
        }
    }
}
