import CanopyCore
import Foundation

/// The words of one row, analysed once: its length, its distinct words in byte order, and each word's occurrences
/// (field, position) in order. Flat arrays sorted once — the folded words back to back in one buffer, no array per
/// word or per occurrence — and reusable (``analyse(_:)`` keeps the capacity): the index analyses every row it writes.
struct SearchDocumentAnalysis {
    /// Words in all fields.
    private(set) var length = 0
    /// The folded words in text order (fields, then positions), back to back: word `i` ends at `ends[i]`.
    private var arena: [UInt8] = []
    private var ends: [Int] = []
    /// Word `i`'s field and position (in text order).
    private var places: [SearchPosting.Occurrence] = []
    /// Word indices by word bytes, then text order.
    private var order: [Int] = []
    /// The occurrences of the distinct words in `order`'s order: `occurrences[terms[t].occurrences]` are word `t`'s, by field,
    /// then position.
    private var occurrences: [SearchPosting.Occurrence] = []
    /// The distinct words, by bytes.
    private var terms: [Term] = []
    /// Word `i`'s first bytes (to sort).
    private var prefixes: [UInt64] = []

    /// A distinct word: `arena[start..<end]`, its occurrences `occurrences[occurrences]`.
    private struct Term {
        var start: Int
        var end: Int
        var occurrences: Range<Int>
    }

    init() {}

    init(_ texts: [String?]) { analyse(texts) }

    /// The number of distinct words.
    var termCount: Int { terms.count }

    /// The distinct words, sorted by bytes.
    var sortedTerms: [[UInt8]] { terms.map { Array(arena[$0.start..<$0.end]) } }

    /// Analyses `texts` (one per field; `nil` or empty: none), replacing what the value held.
    mutating func analyse(_ texts: [String?]) {
        arena.removeAll(keepingCapacity: true)
        ends.removeAll(keepingCapacity: true)
        places.removeAll(keepingCapacity: true)
        for (field, text) in texts.enumerated() {
            guard let text, !text.isEmpty else { continue }
            let before = ends.count
            SearchTokenizer.appendTerms(of: text, to: &arena, ends: &ends)
            for position in 0..<(ends.count - before) { places.append(SearchPosting.Occurrence(field: field, position: position)) }
        }
        length = ends.count
        order.removeAll(keepingCapacity: true)
        order.append(contentsOf: 0..<length)
        occurrences.removeAll(keepingCapacity: true)
        terms.removeAll(keepingCapacity: true)
        guard length > 0 else { return }
        // Each word's first 8 bytes, big-endian, zero-padded: ordered as the words are (a word never holds a 0 byte),
        // so most comparisons are one integer comparison; equal prefixes compare the bytes.
        prefixes.removeAll(keepingCapacity: true)
        let ends = self.ends
        arena.withUnsafeBufferPointer { arena in
            for word in 0..<length {
                let start = word == 0 ? 0 : ends[word - 1]
                let count = min(8, ends[word] - start)
                var prefix: UInt64 = 0
                for offset in 0..<count { prefix = prefix << 8 | UInt64(arena[start + offset]) }
                prefixes.append(prefix << (8 * (8 - count)))
            }
        }
        let firstBytes = self.prefixes
        arena.withUnsafeBufferPointer { arena in
            func word(_ index: Int) -> UnsafeBufferPointer<UInt8> {
                UnsafeBufferPointer(rebasing: arena[(index == 0 ? 0 : ends[index - 1])..<ends[index]])
            }
            /// The order of words `a` and `b` by bytes: negative, zero or positive.
            func compare(_ a: Int, _ b: Int) -> Int {
                if firstBytes[a] != firstBytes[b] { return firstBytes[a] < firstBytes[b] ? -1 : 1 }
                return SearchDocumentAnalysis.compare(word(a), word(b))
            }
            // By word, then in text order: the order of `places`.
            func precedes(_ a: Int, _ b: Int) -> Bool {
                let order = compare(a, b)
                return order == 0 ? a < b : order < 0
            }
            if length <= 24 {
                // Rows are short: an insertion sort.
                order.withUnsafeMutableBufferPointer { order in
                    for index in 1..<max(1, length) {
                        let word = order[index]
                        var slot = index
                        while slot > 0, precedes(word, order[slot - 1]) {
                            order[slot] = order[slot - 1]
                            slot -= 1
                        }
                        order[slot] = word
                    }
                }
            } else {
                order.sort(by: precedes)
            }
            var start = 0
            for rank in 0..<length {
                let word = order[rank]
                occurrences.append(places[word])
                if rank + 1 == length || compare(word, order[rank + 1]) != 0 {
                    terms.append(Term(start: word == 0 ? 0 : ends[word - 1], end: ends[word], occurrences: start..<(rank + 1)))
                    start = rank + 1
                }
            }
        }
    }

    /// The byte order of two words: negative, zero or positive.
    @inline(__always)
    static func compare(_ left: UnsafeBufferPointer<UInt8>, _ right: UnsafeBufferPointer<UInt8>) -> Int {
        let common = min(left.count, right.count)
        if common > 0, let l = left.baseAddress, let r = right.baseAddress {
            let order = memcmp(l, r, common)
            if order != 0 { return Int(order) }
        }
        return left.count - right.count
    }

    /// Calls `body` with the bytes of distinct word `term`.
    func withTerm<Result>(_ term: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        try arena.withUnsafeBufferPointer { try body(UnsafeBufferPointer(rebasing: $0[terms[term].start..<terms[term].end])) }
    }

    /// Calls `body` with each distinct word's number and bytes, in byte order.
    func forEachTerm(_ body: (Int, UnsafeBufferPointer<UInt8>) throws -> Void) rethrows {
        try arena.withUnsafeBufferPointer { arena in
            for (number, term) in terms.enumerated() { try body(number, UnsafeBufferPointer(rebasing: arena[term.start..<term.end])) }
        }
    }

    /// Writes the posting body of distinct word `term` (``SearchPosting``).
    func encodePosting(_ term: Int, into out: inout ByteWriter) {
        SearchPosting.encode(length: length, occurrences: occurrences[terms[term].occurrences], into: &out)
    }

    /// The posting body of distinct word `term`.
    func posting(_ term: Int) -> [UInt8] {
        var out = ByteWriter()
        encodePosting(term, into: &out)
        return out.bytes
    }

    /// The row's record in the `rows` table (``SearchRowRecord``) for row number `document`.
    func record(document: UInt64) -> [UInt8] {
        var out = ByteWriter(capacity: 8 + arena.count + 2 * termCount)
        SearchRowRecord.appendHeader(document: document, length: length, termCount: termCount, to: &out)
        forEachTerm { _, term in SearchRowRecord.appendTerm(term, to: &out) }
        return out.bytes
    }
}
