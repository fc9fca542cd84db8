import CanopyCore
import CanopyTestSupport
import Testing
@testable import CanopySearch

/// A write transaction's pending postings hand out, word by word in byte order, each row's last posting with exactly
/// the bytes of the posting layout (``SearchPosting``) — whether the log kept the body inline (a word once in a short
/// row) or in its buffer, with removals, rows written twice and long rows mixed in, and after the log is emptied and
/// reused. The expected bodies are written here from the layout itself, not by the index's encoder.
@Suite("Search pending postings: the bytes of the posting layout, by word and row")
struct SearchPendingPostingsTests {
    /// A posting body as the layout says: `varint(row length)`, `varint(n)`, n × (`varint(field)`, `varint(count)`),
    /// `varint(size)`, then each field's positions as varint deltas from the field's previous position (from 0).
    static func layoutBody(length: Int, occurrences: [SearchPosting.Occurrence]) -> [UInt8] {
        var bytes: [UInt8] = []
        VarInt.append(UInt64(length), to: &bytes)
        let fields = Dictionary(grouping: occurrences, by: \.field).sorted { $0.key < $1.key }
        VarInt.append(UInt64(fields.count), to: &bytes)
        var positions: [UInt8] = []
        for (field, occurrences) in fields {
            VarInt.append(UInt64(field), to: &bytes)
            VarInt.append(UInt64(occurrences.count), to: &bytes)
            var previous = 0
            for occurrence in occurrences.sorted(by: { $0.position < $1.position }) {
                VarInt.append(UInt64(occurrence.position - previous), to: &positions)
                previous = occurrence.position
            }
        }
        VarInt.append(UInt64(positions.count), to: &bytes)
        return bytes + positions
    }

    /// A row's texts: short ASCII rows mostly (compact bodies), some Unicode, some of more than 127 words or with a
    /// word more than once (bodies in the buffer), several fields.
    static func randomTexts(_ random: inout SeededRandom) -> [String?] {
        let words = ["milk", "bread", "Crème", "東京", "👍", "a", "b", "c", "d", "e", "f", "g", "h", "h2o", "zz"]
        return (0..<(1 + Int(random.next() % 3))).map { _ in
            if random.next() % 6 == 0 { return nil }
            let count = random.next() % 8 == 0 ? 120 + Int(random.next() % 40) : Int(random.next() % 9)
            return (0..<count).map { _ in words[Int(random.next() % UInt64(words.count))] }.joined(separator: " ")
        }
    }

    @Test("by word and row, the layout's bytes", arguments: [1 as UInt64, 2, 3, 4])
    func bytes(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        var pending = SearchPendingPostings()
        var analysis = SearchDocumentAnalysis()
        for round in 0..<3 {
            // The expected log: per word, per row, the last body (empty: a removal).
            var expected: [[UInt8]: [UInt64: [UInt8]]] = [:]
            for _ in 0..<400 {
                let document = 1 + random.next() % 150
                if random.next() % 5 == 0 {
                    // A removal of a row's posting of a word.
                    let word = Array(["milk", "bread", "zz", "gone"][Int(random.next() % 4)].utf8)
                    word.withUnsafeBufferPointer { pending.append(term: $0, document: document) { _ in } }
                    expected[word, default: [:]][document] = []
                    continue
                }
                Self.log(Self.randomTexts(&random), document: document, into: &pending, &analysis, &expected)
            }
            Self.check(pending, expected, "seed \(seed), round \(round)")
            pending.removeAll()
        }
    }

    /// What `pending` hands out is `expected` (per word, per row, the last body; empty: a removal), word by word in
    /// byte order.
    static func check(_ pending: SearchPendingPostings, _ expected: [[UInt8]: [UInt64: [UInt8]]], _ context: String) {
        var words: [[UInt8]] = []
        var pending = pending  // (Handing the postings out gives the log's memory back.)
        pending.forEachTerm { term, run in
            words.append(term)
            let rows = expected[term] ?? [:]
            #expect(run.documents == rows.keys.sorted(), "\(context), word \(term)")
            for entry in 0..<run.count where entry < run.documents.count {
                #expect(Array(run.body(entry)) == rows[run.documents[entry]], "\(context), row \(run.documents[entry])")
            }
        }
        #expect(words == expected.keys.sorted { $0.lexicographicallyPrecedes($1) }, "\(context)")
    }

    /// Logs row `document`'s postings of `texts` (fields) into `pending` and `expected`.
    static func log(_ texts: [String?], document: UInt64, into pending: inout SearchPendingPostings,
                    _ analysis: inout SearchDocumentAnalysis, _ expected: inout [[UInt8]: [UInt64: [UInt8]]]) {
        analysis.analyse(texts)
        pending.append(wordsOf: analysis, document: document)
        let (occurrences, length) = referenceOccurrences(of: texts)
        for (word, places) in occurrences {
            expected[word, default: [:]][document] = Self.layoutBody(length: length, occurrences: places)
        }
    }

    /// The log keeps a short row's body in 21 bits (length, field and position below 128): at 127, at 0 and just past
    /// (a body of its own), each gives the layout's bytes back.
    @Test("a compact body at its bounds comes back as the layout's bytes")
    func compactBounds() {
        var pending = SearchPendingPostings()
        var analysis = SearchDocumentAnalysis()
        var expected: [[UInt8]: [UInt64: [UInt8]]] = [:]
        let filler = (0..<126).map { "w\($0)" }
        let rows: [[String?]] = [
            [filler.joined(separator: " ") + " last"],  // 127 words: "last" at position 126
            [(filler + ["x", "last"]).joined(separator: " ")],  // 128 words: not compact
            Array(repeating: nil, count: 127) + ["far"],  // field 127
            Array(repeating: nil, count: 128) + ["far"],  // field 128: not compact
            ["solo"],
        ]
        for (document, texts) in rows.enumerated() {
            Self.log(texts, document: UInt64(document), into: &pending, &analysis, &expected)
        }
        Self.check(pending, expected, "bounds")
    }

    /// A word logged in thousands of rows, others in hundreds; rows come out of order and twice (a removal, then a
    /// posting again), and the log is emptied and used again: each word's rows, each once with its last body.
    @Test("a word in thousands of rows, out of order and rewritten", arguments: [5 as UInt64, 6])
    func longChains(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        var pending = SearchPendingPostings()
        var analysis = SearchDocumentAnalysis()
        for round in 0..<2 {
            var expected: [[UInt8]: [UInt64: [UInt8]]] = [:]
            for step in 0..<3_000 {
                let document = step % 7 == 0 ? random.next() % 2_000 : UInt64(step)
                if step % 11 == 0 {
                    let word = Array("milk".utf8)
                    word.withUnsafeBufferPointer { pending.append(term: $0, document: document) { _ in } }
                    expected[word, default: [:]][document] = []
                    continue
                }
                var texts: [String?] = ["milk w\(step % 13)"]
                if step % 5 == 0 { texts.append("milk bread milk") }
                Self.log(texts, document: document, into: &pending, &analysis, &expected)
            }
            Self.check(pending, expected, "seed \(seed), round \(round)")
            pending.removeAll()
        }
    }

    @Test("the compact body is the layout's six one-byte varints, and only for them")
    func compactBody() {
        for (length, field, position) in [(1, 0, 0), (127, 3, 126), (5, 127, 4), (128, 0, 0), (5, 128, 0), (5, 0, 128), (200, 1, 150)] {
            let occurrence = SearchPosting.Occurrence(field: field, position: position)
            let compact = SearchPosting.compactBody(length: length, occurrences: [occurrence][...])
            let layout = Self.layoutBody(length: length, occurrences: [occurrence])
            if length < 128, field < 128, position < 128 {
                let bytes = compact.map { value in (0..<SearchPosting.compactBodySize).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) } }
                #expect(bytes == layout, "\(length), \(field), \(position)")
            } else {
                #expect(compact == nil, "\(length), \(field), \(position)")
            }
            var written = ByteWriter()
            SearchPosting.encode(length: length, occurrences: [occurrence][...], into: &written)
            #expect(written.bytes == layout, "\(length), \(field), \(position)")
        }
        let twice = [SearchPosting.Occurrence(field: 0, position: 1), SearchPosting.Occurrence(field: 0, position: 3)]
        #expect(SearchPosting.compactBody(length: 4, occurrences: twice[...]) == nil)
    }
}
