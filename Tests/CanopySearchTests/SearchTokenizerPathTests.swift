import CanopyCore
import CanopyTestSupport
import Testing
@testable import CanopySearch

/// The tokenizer's fast paths (ASCII bytes classified inline, ASCII words lowercased without `String`, words written
/// into one buffer) give exactly the words of the Unicode path (every scalar classified by its properties, every word
/// folded through `String`), and the index's analysis of a row gives the words, postings and record the direct
/// computation gives: over random texts mixing ASCII, accents (composed and decomposed), CJK, kana, Hangul, emoji
/// with modifiers, joiners and flags, other scripts, symbols and long words.
@Suite("Search tokenizer: fast paths equal the Unicode path")
struct SearchTokenizerPathTests {
    /// Pieces the random texts are made of, with single scalars drawn from several ranges.
    static let pieces: [String] = [
        "milk", "Milk", "MILK", "h2o", "x", "Z9", "0", "2024", "don't", "e-mail", "a_b", "a^b", "$5", "#1", "*", "~", "|",
        "crème", "cre\u{300}me", "BRÛLÉE", "Straße", "naïve", "Ølberg", "ł", "Đ", "æ", "Œ", "þ", "ı", "ﬁ", "Ａｂｃ", "１２",
        "東京", "都", "ラーメン", "らーめん", "ｶﾀｶﾅ", "한국어", "σοφία", "ΣΟΦΊΑ", "Москва", "עברית", "العربية", "हिन्दी", "ไทย",
        "👍", "👍🏽", "👨‍👩‍👧", "🇫🇷", "🇫🇷🇩🇪", "1️⃣", "❤️", "☺︎", "©", "™", "€", "\u{301}", "\u{200D}", "\u{FE0F}",
        " ", "  ", "\n", "\t", ",", ".", "!", "—", "…", "\u{0}", "\u{7F}", "\u{A0}", "\u{3000}",
    ]

    static func randomScalar(_ random: inout SeededRandom) -> Character {
        let ranges: [ClosedRange<UInt32>] = [
            0x20...0x7E, 0x00...0x7F, 0xA0...0x24F, 0x300...0x36F, 0x370...0x52F, 0x590...0x6FF, 0x900...0x97F,
            0x1E00...0x1EFF, 0x2000...0x206F, 0x3040...0x30FF, 0x4E00...0x4FFF, 0xAC00...0xAD00, 0xFF00...0xFFEF,
            0x1F300...0x1F6FF, 0x1F1E6...0x1F1FF, 0x1F3FB...0x1F3FF, 0x10000...0x10FFFF,
        ]
        let range = ranges[Int(random.next() % UInt64(ranges.count))]
        while true {
            let value = range.lowerBound + UInt32(random.next() % UInt64(range.count))
            if let scalar = Unicode.Scalar(value) { return Character(scalar) }
        }
    }

    static func randomText(_ random: inout SeededRandom) -> String {
        var text = ""
        for _ in 0..<Int(random.next() % 24) {
            switch random.next() % 10 {
            case 0, 1, 2: text.append(randomScalar(&random))
            case 3:
                // A long word: past the 200-byte cut, ASCII or not.
                let unit = ["a", "Ab9", "é", "e\u{301}", "東"][Int(random.next() % 5)]
                text += String(repeating: unit, count: 40 + Int(random.next() % 200))
            default: text += pieces[Int(random.next() % UInt64(pieces.count))]
            }
        }
        return text
    }

    /// A text of ASCII bytes only (the tokenizer's one-pass path), with long words past the cut and every ASCII
    /// separator.
    static func randomASCIIText(_ random: inout SeededRandom) -> String {
        var text = ""
        for _ in 0..<Int(random.next() % 24) {
            switch random.next() % 10 {
            case 0, 1, 2: text.append(Character(Unicode.Scalar(UInt8(random.next() % 128))))
            case 3: text += String(repeating: ["a", "Ab9", "Z"][Int(random.next() % 3)], count: 40 + Int(random.next() % 200))
            default: text += pieces[Int(random.next() % UInt64(pieces.count))].filter(\.isASCII)
            }
        }
        return text
    }

    @Test("words: the fast paths against the Unicode path", arguments: [1 as UInt64, 2, 3, 4, 5, 6])
    func words(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        for round in 0..<1_500 {
            // Seeds 5 and 6: ASCII texts only (the one-pass path); a text with one other byte takes the general path.
            let text = seed > 4 ? Self.randomASCIIText(&random) + (round % 3 == 0 ? "é" : "") : Self.randomText(&random)
            let expected = SearchTokenizer.referenceTerms(of: text)
            let terms = SearchTokenizer.terms(of: text)
            #expect(terms == expected, "seed \(seed), round \(round): \(text.debugDescription)")
            #expect(SearchTokenizer.tokens(of: text).map { Array($0.term.utf8) } == expected, "seed \(seed), round \(round)")
            var arena: [UInt8] = []
            var ends: [Int] = []
            SearchTokenizer.appendTerms(of: text, to: &arena, ends: &ends)
            let split = ends.indices.map { Array(arena[($0 == 0 ? 0 : ends[$0 - 1])..<ends[$0]]) }
            #expect(split == expected, "seed \(seed), round \(round): \(text.debugDescription)")
            if terms != expected { return }
        }
    }

    @Test("a row's analysis: its words, postings and record as computed directly", arguments: [1 as UInt64, 2, 3])
    func analysis(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        // One value reused from row to row, as the writer does.
        var reused = SearchDocumentAnalysis()
        for round in 0..<600 {
            let texts: [String?] = (0..<(1 + Int(random.next() % 3))).map { _ in
                random.next() % 5 == 0 ? nil : random.next() % 2 == 0 ? Self.randomASCIIText(&random) : Self.randomText(&random)
            }
            // Directly: every word with its field and position, grouped by word in byte order.
            let (occurrences, length) = referenceOccurrences(of: texts)
            let words = occurrences.keys.sorted { $0.lexicographicallyPrecedes($1) }
            reused.analyse(texts)
            for analysis in [reused, SearchDocumentAnalysis(texts)] {
                #expect(analysis.length == length, "seed \(seed), round \(round)")
                #expect(analysis.sortedTerms == words, "seed \(seed), round \(round): \(texts)")
                for (term, word) in words.enumerated() where term < analysis.termCount {
                    var expected = ByteWriter()
                    SearchPosting.encode(length: length, occurrences: (occurrences[word] ?? [])[...], into: &expected)
                    #expect(analysis.posting(term) == expected.bytes, "seed \(seed), round \(round), word \(term)")
                    let fields = Dictionary(grouping: occurrences[word] ?? [], by: \.field).sorted { $0.key < $1.key }
                    let posting = SearchPosting(length: length, fields: fields.map { ($0.key, $0.value.map(\.position)) })
                    #expect(analysis.posting(term) == posting.encoded, "seed \(seed), round \(round), word \(term)")
                }
                #expect(analysis.record(document: 7) == SearchRowRecord(document: 7, length: length, terms: words).encoded,
                        "seed \(seed), round \(round)")
            }
        }
    }
}

/// Every word of `texts` through the reference tokenizer (``SearchTokenizer/referenceTerms(of:)``: the Unicode path
/// alone) with its field and position, by word, and the row's length in words: what an analysis and a posting must
/// say, computed without them.
func referenceOccurrences(of texts: [String?]) -> (occurrences: [[UInt8]: [SearchPosting.Occurrence]], length: Int) {
    var occurrences: [[UInt8]: [SearchPosting.Occurrence]] = [:]
    var length = 0
    for (field, text) in texts.enumerated() {
        for (position, word) in SearchTokenizer.referenceTerms(of: text ?? "").enumerated() {
            occurrences[word, default: []].append(SearchPosting.Occurrence(field: field, position: position))
            length += 1
        }
    }
    return (occurrences, length)
}
