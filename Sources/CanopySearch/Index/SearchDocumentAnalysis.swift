import CanopyCore
import Foundation

/// The words of one row, analysed once: its length, its distinct words in byte order, and each word's occurrences
/// (field, position) in order. Flat arrays sorted once — the folded words back to back in one buffer, no array per
/// word or per occurrence — and reusable (``analyse(_:)`` keeps the capacity): the index analyses every row it writes.
struct SearchDocumentAnalysis {
    /// Words in all fields.
    private(set) var length = 0
    /// The folded words in text order (fields, then positions), back to back: word `i` ends at `ends[i]`; then 8
    /// zero bytes (read only as part of the last word's first 8 bytes).
    private var arena: [UInt8] = []
    private var ends: [Int] = []
    /// The bytes of `arena` and the elements of `ends` this row uses: both only grow (written in place by the
    /// tokenizer, ``SearchTokenizer/writeTerms(of:into:used:ends:endCount:)``), what follows is scratch.
    private var arenaUsed = 0
    private var endCount = 0
    /// The fields with words: `(field, first)`, the field's first word's index in text order.
    private var fieldStarts: [(field: Int, first: Int)] = []
    /// The words to sort: each word's first 8 bytes (big-endian, zero-padded: ordered as the words are, since a word
    /// never holds a 0 byte), its bytes in `arena`, its index in text order and its field and position. The first
    /// ``length`` elements are this row's (the array only grows: written through a pointer, not appended to).
    private var sortable: [SortableWord] = []
    /// The occurrences of the distinct words in byte order: `occurrences[terms[t].occurrences]` are word `t`'s, by
    /// field, then position. The first ``length`` elements are this row's (as `sortable`).
    private var occurrences: [SearchPosting.Occurrence] = []
    /// The distinct words, by bytes.
    private var terms: ArraySlice<Term> { termStorage[..<termCount] }
    /// The distinct words' storage: it only grows (written through a pointer, not appended to); the first
    /// ``termCount`` are this row's.
    private var termStorage: [Term] = []
    /// The number of distinct words.
    private(set) var termCount = 0

    /// A distinct word: `arena[start..<end]`, its first 8 bytes `prefix` (big-endian, zero-padded), its occurrences
    /// `occurrences[occurrences]`.
    private struct Term {
        var start: Int
        var end: Int
        var occurrences: Range<Int>
        var prefix: UInt64

        static let zero = Term(start: 0, end: 0, occurrences: 0..<0, prefix: 0)
    }

    private struct SortableWord {
        var prefix: UInt64
        var start: Int
        var end: Int
        var index: Int
        var occurrence: SearchPosting.Occurrence

        static let zero = SortableWord(prefix: 0, start: 0, end: 0, index: 0, occurrence: SearchPosting.Occurrence(field: 0, position: 0))
    }

    init() {}

    init(_ texts: [String?]) { analyse(texts) }


    /// The distinct words, sorted by bytes.
    var sortedTerms: [[UInt8]] { terms.map { Array(arena[$0.start..<$0.end]) } }

    /// Analyses `texts` (one per field; `nil` or empty: none), replacing what the value held.
    ///
    /// The words are written through pointers into arrays that only grow (no append per word: the index analyses
    /// every row it writes).
    mutating func analyse(_ texts: [String?]) {
        begin()
        for field in texts.indices {
            if let text = texts[field] { add(text, field: field) }
        }
        finish()
    }

    /// Starts analysing a row, replacing what the value held: then ``add(_:field:)`` each field's text, in field
    /// order, and ``finish()`` (what ``analyse(_:)`` does with an array of texts).
    mutating func begin() {
        arenaUsed = 0
        endCount = 0
        fieldStarts.removeAll(keepingCapacity: true)
    }

    /// Adds the words of field `field`'s text (fields in ascending order, each once; empty: none).
    mutating func add(_ text: String, field: Int) {
        guard !text.isEmpty else { return }
        let before = endCount
        SearchTokenizer.writeTerms(of: text, into: &arena, used: &arenaUsed, ends: &ends, endCount: &endCount)
        if endCount > before { fieldStarts.append((field, before)) }
    }

    /// Sorts and groups the words added since ``begin()``.
    mutating func finish() {
        length = endCount
        termCount = 0
        guard length > 0 else { return }
        // 8 bytes of padding after the last word, so that every word's first 8 bytes are one load (the words are
        // read by their ranges alone).
        SearchTokenizer.reserve(&arena, arenaUsed + 8)
        let used = arenaUsed
        arena.withUnsafeMutableBytes { $0.storeBytes(of: 0 as UInt64, toByteOffset: used, as: UInt64.self) }
        if sortable.count < length { sortable.append(contentsOf: repeatElement(.zero, count: length - sortable.count)) }
        if termStorage.count < length { termStorage.append(contentsOf: repeatElement(.zero, count: length - termStorage.count)) }
        if occurrences.count < length {
            occurrences.append(contentsOf: repeatElement(SearchPosting.Occurrence(field: 0, position: 0), count: length - occurrences.count))
        }
        let length = self.length
        let fieldStarts = self.fieldStarts
        let ends = self.ends
        arena.withUnsafeBufferPointer { arena in
            guard let base = arena.baseAddress else { return }
            let raw = UnsafeRawPointer(base)
            /// The order of two words by bytes: negative, zero or positive.
            func compare(_ a: SortableWord, _ b: SortableWord) -> Int {
                if a.prefix != b.prefix { return a.prefix < b.prefix ? -1 : 1 }
                // Words of at most 8 bytes with the same first 8 bytes are the same word (a word holds no 0 byte, so its
                // zero padding cannot match a byte of another).
                if a.end &- a.start <= 8, b.end &- b.start <= 8 { return 0 }
                return SearchDocumentAnalysis.compare(
                    UnsafeBufferPointer(start: base + a.start, count: a.end - a.start), UnsafeBufferPointer(start: base + b.start, count: b.end - b.start))
            }
            // By word, then in text order.
            func precedes(_ a: SortableWord, _ b: SortableWord) -> Bool {
                let order = compare(a, b)
                return order == 0 ? a.index < b.index : order < 0
            }
            sortable.withUnsafeMutableBufferPointer { all in
                var words = UnsafeMutableBufferPointer(rebasing: all[..<length])
                var start = 0
                var fieldNumber = 0
                var field = fieldStarts[0]
                for index in 0..<length {
                    if fieldNumber + 1 < fieldStarts.count, fieldStarts[fieldNumber + 1].first == index {
                        fieldNumber += 1
                        field = fieldStarts[fieldNumber]
                    }
                    let end = ends[index]
                    // The first 8 bytes, big-endian; the bytes past a shorter word are zeroed.
                    let count = min(8, end &- start)
                    let loaded = raw.loadUnaligned(fromByteOffset: start, as: UInt64.self).bigEndian
                    let prefix = count == 8 ? loaded : loaded & ~(UInt64.max >> (8 &* count))
                    words[index] = SortableWord(
                        prefix: prefix, start: start, end: end, index: index,
                        occurrence: SearchPosting.Occurrence(field: field.field, position: index - field.first))
                    start = end
                }
                if length <= 24 {
                    // Rows are short: an insertion sort. Stable (a word moves only past greater words, and words come
                    // in text order), so equal words stay in text order without comparing their indexes: `precedes`.
                    for position in 1..<max(1, length) {
                        let word = words[position]
                        var slot = position
                        while slot > 0, compare(word, words[slot - 1]) < 0 {
                            words[slot] = words[slot - 1]
                            slot -= 1
                        }
                        words[slot] = word
                    }
                } else {
                    words.sort(by: precedes)
                }
                var distinct = 0
                occurrences.withUnsafeMutableBufferPointer { occurrences in
                    termStorage.withUnsafeMutableBufferPointer { terms in
                        var first = 0
                        for rank in 0..<length {
                            let word = words[rank]
                            occurrences[rank] = word.occurrence
                            if rank + 1 == length || compare(word, words[rank + 1]) != 0 {
                                terms[distinct] = Term(start: word.start, end: word.end, occurrences: first..<(rank + 1), prefix: word.prefix)
                                distinct += 1
                                first = rank + 1
                            }
                        }
                    }
                }
                termCount = distinct
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

    /// Calls `body` with each distinct word's bytes, in byte order, its first 8 bytes (big-endian, zero-padded:
    /// ``SearchPendingPostings/prefix(of:)``), its posting body as a compact code
    /// (``SearchPendingPostings/compactCode(length:field:position:)``, the varying bits of
    /// ``SearchPosting/compactBody(length:occurrences:)``; 0 when it is not compact: ``encodePosting(_:into:)`` writes
    /// it) and its number. Through pointers: the index adds every written row's postings this way.
    @inline(__always)
    func forEachPosting(_ body: (_ word: UnsafeBufferPointer<UInt8>, _ prefix: UInt64, _ compact: UInt32, _ term: Int) -> Void) {
        let length = self.length
        arena.withUnsafeBufferPointer { arena in
            occurrences.withUnsafeBufferPointer { occurrences in
                terms.withUnsafeBufferPointer { terms in
                    guard let words = arena.baseAddress, let all = occurrences.baseAddress else { return }
                    for number in 0..<terms.count {
                        let term = terms[number]
                        var compact: UInt32 = 0
                        if term.occurrences.count == 1, length < 0x80 {
                            let only = all[term.occurrences.lowerBound]
                            if only.field >= 0, only.field < 0x80, only.position >= 0, only.position < 0x80 {
                                // (What ``SearchPosting/compactBody(length:occurrences:)`` gives, its varying bits; the
                                // length is at least 1: never 0.)
                                compact = SearchPendingPostings.compactCode(length: length, field: only.field, position: only.position)
                            }
                        }
                        body(UnsafeBufferPointer(start: words + term.start, count: term.end &- term.start), term.prefix, compact, number)
                    }
                }
            }
        }
    }

    /// Calls `body` with each distinct word's number and bytes, in byte order.
    func forEachTerm(_ body: (Int, UnsafeBufferPointer<UInt8>) throws -> Void) rethrows {
        try arena.withUnsafeBufferPointer { arena in
            for (number, term) in terms.enumerated() { try body(number, UnsafeBufferPointer(rebasing: arena[term.start..<term.end])) }
        }
    }

    // MARK: Prefix lists

    /// Calls `body` with each distinct prefix of `lengths` (Unicode scalars) of the row's words, in byte order per
    /// length, and a writer of its posting body: the occurrences of all the words starting with it, by field, then
    /// position (the body a prefix query's merge of those words gives). Nothing without lengths.
    func forEachPrefix(ofLengths lengths: [Int], _ body: ([UInt8], (inout ByteWriter) -> Void) throws -> Void) rethrows {
        guard !lengths.isEmpty, !terms.isEmpty else { return }
        let words = sortedTerms
        let rowLength = length
        for prefixLength in lengths {
            var term = 0
            while term < words.count {
                guard let cut = Self.byteCount(ofScalars: prefixLength, in: words[term]) else { term += 1; continue }
                let prefix = Array(words[term][..<cut])
                // The words sharing the prefix are next to each other in byte order.
                var end = term + 1
                while end < words.count, words[end].starts(with: prefix) { end += 1 }
                var merged: [SearchPosting.Occurrence] = []
                for word in term..<end { merged.append(contentsOf: occurrences[terms[word].occurrences]) }
                if end - term > 1 { merged.sort { ($0.field, $0.position) < ($1.field, $1.position) } }
                try body(prefix) { SearchPosting.encode(length: rowLength, occurrences: merged[...], into: &$0) }
                term = end
            }
        }
    }

    /// The distinct prefixes of `lengths` (Unicode scalars) of `terms` (sorted by bytes): the prefixes whose lists
    /// hold a row of these words.
    static func distinctPrefixes(of terms: [[UInt8]], lengths: [Int]) -> [[UInt8]] {
        var prefixes: [[UInt8]] = []
        for length in lengths {
            var previous: [UInt8]?
            for term in terms {
                guard let cut = byteCount(ofScalars: length, in: term) else { continue }
                let prefix = Array(term[..<cut])
                if prefix != previous { prefixes.append(prefix) }
                previous = prefix
            }
        }
        return prefixes
    }

    /// The bytes of the first `scalars` Unicode scalars of the UTF-8 `word`, or `nil` when it has fewer.
    static func byteCount(ofScalars scalars: Int, in word: [UInt8]) -> Int? {
        var seen = 0
        for (offset, byte) in word.enumerated() where byte & 0xC0 != 0x80 {
            if seen == scalars { return offset }
            seen += 1
        }
        return seen == scalars ? word.count : nil
    }

    /// Writes the posting body of distinct word `term` (``SearchPosting``).
    func encodePosting(_ term: Int, into out: inout ByteWriter) {
        SearchPosting.encode(length: length, occurrences: occurrences[terms[term].occurrences], into: &out)
    }

    /// The posting body of distinct word `term` as ``SearchPosting/compactBody(length:occurrences:)`` (a word once in
    /// a short row), or `nil`.
    @inline(__always)
    func compactPosting(_ term: Int) -> UInt64? {
        SearchPosting.compactBody(length: length, occurrences: occurrences[terms[term].occurrences])
    }

    /// The posting body of distinct word `term`.
    func posting(_ term: Int) -> [UInt8] {
        var out = ByteWriter()
        encodePosting(term, into: &out)
        return out.bytes
    }

    /// The row's record in the `rows` table (``SearchRowRecord``) for row number `document`.
    ///
    /// (The bytes of ``SearchRowRecord/encoded``, written at once into an array of their exact size: the index makes
    /// one for every row it writes.)
    func record(document: UInt64) -> [UInt8] {
        var size = VarInt.size(of: document) + VarInt.size(of: UInt64(length)) + VarInt.size(of: UInt64(terms.count))
        for term in terms {
            let bytes = term.end - term.start
            size += (bytes < 0x80 ? 1 : VarInt.size(of: UInt64(bytes))) + bytes
        }
        return arena.withUnsafeBufferPointer { arena in
            [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
                guard let out = buffer.baseAddress, let words = arena.baseAddress else { return }
                var offset = VarInt.write(document, to: out)
                offset += VarInt.write(UInt64(length), to: out + offset)
                offset += VarInt.write(UInt64(terms.count), to: out + offset)
                for term in terms {
                    let bytes = term.end - term.start
                    if bytes < 0x80 {
                        out[offset] = UInt8(truncatingIfNeeded: bytes)
                        offset += 1
                    } else {
                        offset += VarInt.write(UInt64(bytes), to: out + offset)
                    }
                    if bytes <= 8, offset &+ 8 <= size {
                        // A word of at most 8 bytes is its first 8 bytes, zero-padded: one store (the padding is
                        // written over by what follows, within the record).
                        UnsafeMutableRawPointer(out + offset).storeBytes(of: term.prefix.bigEndian, as: UInt64.self)
                    } else {
                        // Words are a few bytes: copied byte by byte (no call per word).
                        for index in 0..<bytes { out[offset &+ index] = words[term.start &+ index] }
                    }
                    offset += bytes
                }
                count = offset
            }
        }
    }
}
