import CanopyCore
import CanopyTestSupport
import Testing
@testable import CanopySearch

/// A row's analysis at the edges the pointer code handles: words sharing their first 8 bytes (of lengths at, below and
/// above 8), a row past the insertion sort's 24 words, a text of 1 MB, words past the 200-byte cut, NUL bytes and
/// non-ASCII bytes: the same words, postings and record as the direct computation.
@Suite("Search analysis: edge inputs")
struct SearchAnalysisEdgeTests {
    static let texts: [[String?]] = [
        ["abcdefgh abcdefg abcdefghi abcdefgh abcdefghij abcdefgh0 abcdefgh abcdefg"],
        [String(repeating: "abcdefgh abcdefg abcdefghX abc\u{0}def ab\u{0} a ", count: 10), "abcdefgh"],
        [String(repeating: "w", count: 1_000_000)],
        [(0..<150_000).map { "w\($0 % 997)" }.joined(separator: " ")],
        [String(repeating: "é", count: 300) + " " + String(repeating: "e", count: 300) + " " + String(repeating: "ab", count: 150)],
        ["", nil, "\u{0}\u{0}", "x"],
        [String(repeating: "ÀbCdÉfGh ", count: 40) + "àbcdéfgh àbcdéfg"],
    ]

    @Test("the words, postings and record of edge rows", arguments: texts.indices)
    func edge(index: Int) {
        let texts = Self.texts[index]
        let (occurrences, length) = referenceOccurrences(of: texts)
        let words = occurrences.keys.sorted { $0.lexicographicallyPrecedes($1) }
        let analysis = SearchDocumentAnalysis(texts)
        #expect(analysis.length == length)
        #expect(analysis.sortedTerms == words)
        for (term, word) in words.enumerated() where term < analysis.termCount {
            var expected = ByteWriter()
            SearchPosting.encode(length: length, occurrences: (occurrences[word] ?? [])[...], into: &expected)
            #expect(analysis.posting(term) == expected.bytes, "row \(index), word \(term)")
        }
        #expect(analysis.record(document: 7) == SearchRowRecord(document: 7, length: length, terms: words).encoded)
    }
}
