import Canopy
import CanopyCore
import CanopyTestSupport
import Testing
@testable import CanopySearch

/// Every reader of a posting's counts — the one-word walk's block reader, the intersection's first list (its
/// survivors' counts, read in a second walk), the intersection's other lists, the writer's and verify's summary, the phrase reader — accepts
/// exactly the same counts and reads the same numbers from them, or throws: a damaged posting is `corruptStore` on
/// every path, never an answer on one and an error on another.
@Suite("Search index: the posting readers agree on every body")
struct SearchCountReadersPropertyTests {
    /// What a reader made of the test row's body: its length and its occurrences per field (`nil`: it threw).
    struct Outcome: Equatable, CustomStringConvertible {
        var length: Int
        var counts: [Int]
        var description: String { "length \(length), counts \(counts)" }
    }

    static let fieldCount = 4
    /// The second row's body, valid: a reader that runs past the first body reads these bytes.
    static let following: [UInt8] = [1, 1, 0, 1, 1, 0]

    /// A block of rows 1 (`body`) and 2 (``following``).
    static func block(_ body: [UInt8]) -> [UInt8] {
        SearchRewriteDamageTests.block(rows: [(1, body), (2, following)], summaries: [(1, 1), (1, 1)], key: SearchPostingBlock.openBlock).value
    }

    static func add(_ field: Int, _ count: Int, to counts: inout [Int]) {
        if field < fieldCount { counts[field] += count }
    }

    /// The one-word walk (``SearchPostingBlock/Reader/readCounts(_:)``).
    static func walk(_ block: [UInt8]) -> Outcome? {
        try? block.withUnsafeBytes { raw in
            var reader = try SearchPostingBlock.Reader(raw)
            guard try reader.next() == 1 else { return nil }
            var outcome = Outcome(length: 0, counts: [Int](repeating: 0, count: fieldCount))
            try reader.readCounts { length, field, count in
                outcome.length = length
                add(field, count, to: &outcome.counts)
            }
            guard try reader.next() == 2 else { return nil }
            try reader.skipBody()
            return outcome
        }
    }

    /// The intersection's rarest list: its rows (``SearchPostingBlock/appendRows(of:after:upTo:to:rowsBuffer:)``),
    /// then a survivor's counts (``SearchPostingBlock/readCounts(in:base:rows:slots:next:_:)``).
    static func firstList(_ block: [UInt8]) -> Outcome? {
        try? block.withUnsafeBytes { raw in
            var documents: [UInt64] = []
            var rowsBuffer: [UInt64] = []
            try SearchPostingBlock.appendRows(of: raw, after: 0, upTo: SearchPostingBlock.openBlock, to: &documents, rowsBuffer: &rowsBuffer)
            guard documents == [1, 2] else { return nil }
            var outcome = Outcome(length: 0, counts: [Int](repeating: 0, count: fieldCount))
            var next = 0
            let rows = try documents.withUnsafeBufferPointer { rows in
                try [0].withUnsafeBufferPointer { slots in
                    try SearchPostingBlock.readCounts(in: raw, base: 0, rows: rows, slots: slots, next: &next) { _, length, field, count in
                        outcome.length = length
                        add(field, count, to: &outcome.counts)
                    }
                }
            }
            guard rows == 2, next == 1 else { return nil }
            return outcome
        }
    }

    /// The intersection's other lists (``SearchPostingBlock/matchRows(of:after:upTo:candidates:next:rowsBuffer:_:)``).
    static func otherList(_ block: [UInt8]) -> Outcome? {
        try? block.withUnsafeBytes { raw in
            var outcome: Outcome?
            var next = 0
            var rowsBuffer: [UInt64] = []
            try [1 as UInt64].withUnsafeBufferPointer { candidates in
                try SearchPostingBlock.matchRows(
                    of: raw, after: 0, upTo: SearchPostingBlock.openBlock, candidates: candidates, next: &next, rowsBuffer: &rowsBuffer
                ) { _, body in
                    var found = Outcome(length: 0, counts: [Int](repeating: 0, count: fieldCount))
                    try SearchPostingBlock.readCounts(in: raw, body: body) { length, field, count in
                        found.length = length
                        add(field, count, to: &found.counts)
                    }
                    outcome = found
                }
            }
            return outcome
        }
    }

    /// The phrase reader (``SearchPosting/decode(_:positions:)``).
    static func phrase(_ body: [UInt8]) -> Outcome? {
        try? body.withUnsafeBytes { raw in
            let decoded = try SearchPosting.decode(raw, positions: true)
            var outcome = Outcome(length: decoded.length, counts: [Int](repeating: 0, count: fieldCount))
            for entry in decoded.counts { add(entry.field, entry.count, to: &outcome.counts) }
            return outcome
        }
    }

    /// A posting body: `length`, then per field (field, count), then `count` one-byte position deltas per field.
    static func body(length: UInt64, fields: [(field: UInt64, count: UInt64)]) -> [UInt8] {
        var out = ByteWriter()
        out.append(varint: length)
        out.append(varint: UInt64(fields.count))
        for field in fields {
            out.append(varint: field.field)
            out.append(varint: field.count)
        }
        let positions = fields.reduce(0) { $0 + Int($1.count) }
        out.append(varint: UInt64(positions))
        return out.bytes + [UInt8](repeating: 1, count: positions)
    }

    static let lengths: [UInt64] = [0, 1, 2, 3, 5, 127, 128, 300, UInt64(Int32.max), UInt64(Int32.max) + 1, UInt64(UInt32.max), UInt64(UInt32.max) + 1]

    @Test("Well-formed bodies with any counts: all five readers accept the same ones with the same numbers", arguments: [1 as UInt64, 2, 3])
    func wellFormedBodies(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        var accepted = 0
        for round in 0..<3_000 {
            let length = Self.lengths[Int(random.next() % UInt64(Self.lengths.count))]
            let fields = (0..<Int(random.next() % 4)).map { _ in (field: random.next() % 5, count: random.next() % 6) }
            let body = Self.body(length: length, fields: fields)
            let block = Self.block(body)
            let walk = Self.walk(block)
            let context = "seed \(seed), round \(round): length \(length), fields \(fields), body \(body)"
            #expect(Self.firstList(block) == walk, "first list; \(context)")
            #expect(Self.otherList(block) == walk, "other list; \(context)")
            #expect(Self.phrase(body) == walk, "phrase; \(context)")
            let summary = try? SearchPosting.summary(of: body[...])
            #expect(summary?.length == walk?.length, "summary; \(context)")
            if let summary, let walk { #expect(summary.occurrences == fields.reduce(0) { $0 + Int($1.count) } && walk.counts.reduce(0, +) <= summary.occurrences, "summary; \(context)") }
            if walk != nil { accepted += 1 }
        }
        // Both kinds were drawn.
        #expect(accepted > 100 && accepted < 2_900, "seed \(seed): \(accepted) accepted")
    }

    @Test("Damaged bodies (bytes changed, cut or added): the three block readers agree; the summary and the phrase reader accept none the walk refuses",
          arguments: [7 as UInt64, 8, 9])
    func damagedBodies(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        for round in 0..<3_000 {
            let length = Self.lengths[Int(random.next() % 8)]
            let fields = (0..<Int(1 + random.next() % 2)).map { _ in (field: random.next() % 3, count: 1 + random.next() % 3) }
            var body = Self.body(length: length, fields: fields)
            switch random.next() % 3 {
            case 0: body[Int(random.next() % UInt64(body.count))] = UInt8(truncatingIfNeeded: random.next())
            case 1: body.removeLast(1 + Int(random.next() % UInt64(body.count)))
            default: body += (0..<(1 + random.next() % 3)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            }
            let block = Self.block(body)
            let walk = Self.walk(block)
            let context = "seed \(seed), round \(round): body \(body)"
            #expect(Self.firstList(block) == walk, "first list; \(context)")
            #expect(Self.otherList(block) == walk, "other list; \(context)")
            if let phrase = Self.phrase(body) { #expect(phrase == walk, "phrase; \(context)") }
            if let summary = try? SearchPosting.summary(of: body[...]) { #expect(summary.length == walk?.length, "summary; \(context)") }
        }
    }

    /// The same bodies through an index, on every query path: the best rows from block headers (`milk`), the one-word
    /// walk (a count of `milk`), the intersection with `milk` as its first list (`milk mint`) and as another
    /// (`mint milk`), and a phrase: each answers exactly when the walk does (the phrase, which reads positions too,
    /// never when the walk refuses).
    @Test("One damaged posting in an index: every query path answers or is corruptStore alike", arguments: [21 as UInt64])
    func everyQueryPath(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (_, index, connection) = try openNoteIndex(in: directory, titles: ["a": "milk mild mint", "b": "milk mild mint", "c": "milk mild mint"])
        let three = SearchListBoundsTests.body(length: 3, count: 1)
        func outcome(_ query: String, _ read: (ReadTransaction) throws -> Int) -> Bool {
            do { _ = try connection.read(read); return true } catch let error as CanopyError where error.code == .corruptStore { return false } catch {
                Issue.record("\(query): \(error)")
                return false
            }
        }
        var answered = 0
        for round in 0..<150 {
            var body = SearchListBoundsTests.body(length: 3, count: 1 + Int(random.next() % 3))
            switch random.next() % 3 {
            case 0: body[Int(random.next() % UInt64(body.count))] = UInt8(truncatingIfNeeded: random.next() % 8)
            case 1: body.removeLast(Int(random.next() % UInt64(body.count)))
            default: body += [UInt8(truncatingIfNeeded: random.next() % 4)]
            }
            // The header the body gives, when the walk reads it (so that the best rows' header check agrees).
            let walked = Self.walk(Self.block(body))
            let header = walked.map { (length: $0.length, occurrences: $0.counts.reduce(0, +)) } ?? (length: 1, occurrences: 1)
            try SearchListBoundsTests.store(
                [([(1, three, 3, 1), (2, body, header.length, header.occurrences), (3, three, 3, 1)], SearchPostingBlock.openBlock)],
                word: "milk", index, connection)
            let context = "seed \(seed), round \(round): body \(body), walk \(String(describing: walked))"
            let walk = outcome("count") { try index.count(matching: SearchQuery("milk"), in: $0) }
            #expect(walk == (walked != nil), "count; \(context)")
            for query in ["milk", "milk mint", "mint milk"] {
                #expect(outcome(query) { try index.search(query, in: $0, highlights: false).count } == walk, "\(query); \(context)")
            }
            if outcome("phrase", { try index.search("\"milk mild\"", in: $0, highlights: false).count }) { #expect(walk, "phrase; \(context)") }
            if walk { answered += 1 }
        }
        #expect(answered > 10 && answered < 140, "seed \(seed): \(answered) answered")
    }
}
