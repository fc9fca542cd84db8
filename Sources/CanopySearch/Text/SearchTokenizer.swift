import Foundation

/// Splits text into the words the search index stores and queries look for: the same function for both, so a query
/// finds what the index holds.
///
/// The rules, on Unicode properties (no locale, no dictionary):
/// 1. A word is a run of letters and digits (general categories L and N), with the combining marks (M) that follow
///    them: `crème`, `h2o`, `naïve`. Everything else separates words: spaces, punctuation (`don't` is `don` `t`, as in
///    SQLite FTS5's `unicode61`), symbols.
/// 2. Each CJK ideograph, hiragana and katakana character is a word of its own (texts in those scripts have no spaces;
///    a phrase query `"東京都"` finds the three in a row). Hangul runs are words, as they are space-separated.
/// 3. Each emoji is a word, with its modifiers and zero-width-joined parts (`👍🏽`, `👨‍👩‍👧`, a flag).
/// 4. Words are folded: case (`Milk` = `milk`, `Straße` = `strasse`), diacritics (`crème` = `creme`), width
///    (full-width `Ａ` = `A`), compatibility forms (`ﬁ` = `fi`), a few letters without a decomposition (`ø` = `o`,
///    `ł` = `l`, `đ` = `d`); emoji lose skin-tone modifiers and variation selectors (`👍🏽` = `👍`).
/// 5. A folded word longer than ``maximumTermBytes`` bytes of UTF-8 is cut there (at a character boundary).
public enum SearchTokenizer {
    /// The longest word stored, in bytes of UTF-8 after folding; longer words are cut (in the index and in queries).
    public static let maximumTermBytes = 200

    /// The words of `text`, folded, with their ranges in `text` (for highlighting).
    public static func tokens(of text: String) -> [SearchToken] {
        var tokens: [SearchToken] = []
        let utf8 = text.utf8
        scan(text) { kind, start, end, bytes in
            let term = fold(bytes, kind: kind)
            guard !term.isEmpty else { return }
            let lower = utf8.index(utf8.startIndex, offsetBy: start)
            let upper = utf8.index(lower, offsetBy: end - start)
            tokens.append(SearchToken(term: String(decoding: term, as: UTF8.self), position: tokens.count, range: lower..<upper))
        }
        return tokens
    }

    /// The folded words of `text` as UTF-8 bytes, in order (a word's position is its index).
    public static func terms(of text: String) -> [[UInt8]] {
        var terms: [[UInt8]] = []
        scan(text) { kind, _, _, bytes in
            let term = fold(bytes, kind: kind)
            if !term.isEmpty { terms.append(term) }
        }
        return terms
    }

    /// Appends the folded words of `text` to `arena`, back to back, and each word's end offset in `arena` to `ends`:
    /// the words of ``terms(of:)`` without an array per word (what ``writeTerms(of:into:used:ends:endCount:)`` writes).
    static func appendTerms(of text: String, to arena: inout [UInt8], ends: inout [Int]) {
        var used = arena.count
        var endCount = ends.count
        writeTerms(of: text, into: &arena, used: &used, ends: &ends, endCount: &endCount)
        arena.removeLast(arena.count - used)
        ends.removeLast(ends.count - endCount)
    }

    /// Writes the folded words of `text` into `arena` from offset `used` on, back to back, and each word's end offset
    /// into `ends` from index `endCount` on, moving both on: the words of ``terms(of:)``, in buffers that only grow
    /// (their elements past `used` and `endCount` are scratch; `arena` keeps at least 8 bytes of room past the words
    /// of an ASCII text). No array per word, and no append per word or text: the index analyses every written row's
    /// texts.
    static func writeTerms(of text: String, into arena: inout [UInt8], used: inout Int, ends: inout [Int], endCount: inout Int) {
        var text = text
        if text.withUTF8({ writeASCIITerms($0, into: &arena, used: &used, ends: &ends, endCount: &endCount) }) { return }
        var words: [UInt8] = []
        var wordEnds: [Int] = []
        scan(text) { kind, _, _, bytes in
            if appendFolded(bytes, kind: kind, to: &words) { wordEnds.append(words.count) }
        }
        reserve(&arena, used + words.count + 8)
        reserve(&ends, endCount + wordEnds.count)
        let start = used
        arena.withUnsafeMutableBufferPointer { arena in
            words.withUnsafeBufferPointer { words in
                guard let out = arena.baseAddress, let from = words.baseAddress else { return }
                (out + start).update(from: from, count: words.count)
            }
        }
        for end in wordEnds {
            ends[endCount] = start + end
            endCount += 1
        }
        used = start + words.count
    }

    /// Grows `buffer` (with zeros) to at least `count` elements, at least doubling it.
    @inline(__always)
    static func reserve<Element: FixedWidthInteger>(_ buffer: inout [Element], _ count: Int) {
        guard buffer.count < count else { return }
        buffer.append(contentsOf: repeatElement(0, count: max(count - buffer.count, buffer.count)))
    }

    /// The words of a text of ASCII bytes only: runs of ASCII letters and digits, lowercased as they are copied, cut
    /// at ``maximumTermBytes`` — what ``scan(_:asciiShortcut:_:)`` and ``appendFolded(_:kind:to:)`` make of such a
    /// text —, written as ``writeTerms(of:into:used:ends:endCount:)`` says. A text with any byte that is not ASCII
    /// (checked first, 8 bytes at a time) writes nothing and returns `false` (it takes the general path).
    ///
    /// One pass over the bytes, each byte classified, lowercased and written in a few instructions, through pointers
    /// (the index splits every written row's texts).
    @inline(__always)
    static func writeASCIITerms(
        _ buffer: UnsafeBufferPointer<UInt8>, into arena: inout [UInt8], used: inout Int, ends: inout [Int], endCount: inout Int
    ) -> Bool {
        guard let input = buffer.baseAddress, !buffer.isEmpty else { return true }
        let count = buffer.count
        var high: UInt64 = 0
        var offset = 0
        let raw = UnsafeRawPointer(input)
        while offset &+ 8 <= count {
            high |= raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            offset &+= 8
        }
        while offset < count {
            high |= UInt64(input[offset])
            offset &+= 1
        }
        guard high & 0x8080_8080_8080_8080 == 0 else { return false }
        // Room for every byte and 8 more, and for a word per two bytes (a word and its separator).
        reserve(&arena, used + count + 8)
        reserve(&ends, endCount + count / 2 + 1)
        let arenaStart = used
        var endIndex = endCount
        let written: Int = arena.withUnsafeMutableBufferPointer { arena in
            ends.withUnsafeMutableBufferPointer { ends in
                guard let out = arena.baseAddress, let endsOut = ends.baseAddress else { return arenaStart }
                // One pass: a word byte is written lowercased and kept; a separator ends the word written so far (cut
                // at the longest word stored: what follows is written over).
                var write = arenaStart
                var wordStart = arenaStart
                var i = 0
                while i < count {
                    let byte = input[i]
                    let lowered = byte | 0x20
                    let isLetter = lowered &- 0x61 < 26
                    if isLetter || byte &- 0x30 < 10 {
                        out[write] = isLetter ? lowered : byte
                        write &+= 1
                    } else if write != wordStart {
                        write = min(write, wordStart &+ maximumTermBytes)
                        endsOut[endIndex] = write
                        endIndex &+= 1
                        wordStart = write
                    }
                    i &+= 1
                }
                if write != wordStart {
                    write = min(write, wordStart &+ maximumTermBytes)
                    endsOut[endIndex] = write
                    endIndex &+= 1
                }
                return write
            }
        }
        used = written
        endCount = endIndex
        return true
    }

    /// The folded words of `text` through the Unicode path alone: every scalar classified by its properties, every
    /// word folded through `String` (no ASCII shortcut). The tokenizer's shortcuts must give exactly these words;
    /// the tests compare them over random texts.
    static func referenceTerms(of text: String) -> [[UInt8]] {
        var terms: [[UInt8]] = []
        scan(text, asciiShortcut: false) { kind, _, _, bytes in
            let term = foldThroughString(bytes, kind: kind)
            if !term.isEmpty { terms.append(term) }
        }
        return terms
    }

    enum Kind { case word, ideograph, emoji }

    /// Calls `emit` with each word's kind, UTF-8 offsets and raw bytes. With `asciiShortcut` (always, but in the
    /// tests' reference path), ASCII bytes are classified inline: letters and digits are word bytes, every other
    /// ASCII character separates, as ``classify(_:)`` says of them.
    @inline(__always)
    static func scan(_ text: String, asciiShortcut: Bool = true, _ emit: (Kind, Int, Int, UnsafeBufferPointer<UInt8>) -> Void) {
        var text = text
        text.withUTF8 { buffer in
            var i = 0
            var start = -1
            var kind = Kind.word
            var joining = false  // the last scalar of the current emoji was a zero-width joiner
            var regionalIndicators = 0
            func finish(at end: Int) {
                if start >= 0 { emit(kind, start, end, UnsafeBufferPointer(rebasing: buffer[start..<end])) }
                start = -1
            }
            func begin(_ newKind: Kind, at offset: Int) {
                start = offset
                kind = newKind
                joining = false
                regionalIndicators = 0
            }
            let count = buffer.count
            while i < count {
                let lead = buffer[i]
                if asciiShortcut, lead < 0x80 {
                    // ASCII: letters and digits make words, everything else separates. A run of word bytes is taken
                    // in one tight loop.
                    if isASCIIWordByte(lead) {
                        if start < 0 || kind != .word { finish(at: i); begin(.word, at: i) }
                        i += 1
                        while i < count, isASCIIWordByte(buffer[i]) { i += 1 }
                    } else {
                        finish(at: i)
                        i += 1
                    }
                    continue
                }
                let (value, length) = lead < 0x80 ? (UInt32(lead), 1) : decodeScalar(buffer, at: i)
                let next = i + length
                switch classify(value) {
                case .letter:
                    if start < 0 || kind != .word { finish(at: i); begin(.word, at: i) }
                case .mark:
                    // Combining marks extend the word or ideograph they follow; alone they separate.
                    if start < 0 || kind == .emoji { finish(at: i) }
                case .ideograph:
                    finish(at: i)
                    begin(.ideograph, at: i)
                case .emoji(let isRegionalIndicator):
                    let continues = start >= 0 && kind == .emoji
                        && (joining || (isRegionalIndicator && regionalIndicators == 1))
                    if !continues { finish(at: i); begin(.emoji, at: i) }
                    joining = false
                    if isRegionalIndicator { regionalIndicators += 1 }
                case .emojiJoiner:
                    if start >= 0 && kind == .emoji { joining = true } else { finish(at: i) }
                case .emojiModifier:
                    if start < 0 || kind != .emoji { finish(at: i) }
                case .separator:
                    finish(at: i)
                }
                i = next
            }
            finish(at: count)
        }
    }

    /// An ASCII letter or digit.
    @inline(__always)
    static func isASCIIWordByte(_ byte: UInt8) -> Bool {
        (byte | 0x20) &- 0x61 < 26 || byte &- 0x30 < 10
    }

    enum ScalarClass: Equatable {
        case letter, mark, ideograph, emoji(regionalIndicator: Bool), emojiJoiner, emojiModifier, separator
    }

    static func classify(_ value: UInt32) -> ScalarClass {
        if value == 0x200D { return .emojiJoiner }
        if value == 0xFE0F || value == 0xFE0E || value == 0x20E3 || (0x1F3FB...0x1F3FF).contains(value) || (0xE0020...0xE007F).contains(value) {
            return .emojiModifier
        }
        if (0x1F1E6...0x1F1FF).contains(value) { return .emoji(regionalIndicator: true) }
        guard let scalar = Unicode.Scalar(value) else { return .separator }
        let properties = scalar.properties
        if properties.isIdeographic || (0x3040...0x30FF).contains(value) || (0x31F0...0x31FF).contains(value) || (0xFF66...0xFF9F).contains(value) {
            return .ideograph
        }
        switch properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
             .decimalNumber, .letterNumber, .otherNumber:
            return .letter
        case .nonspacingMark, .spacingMark, .enclosingMark:
            return .mark
        case .otherSymbol where properties.isEmoji:
            return .emoji(regionalIndicator: false)
        default:
            return .separator
        }
    }

    /// The scalar value and byte length of the UTF-8 sequence at `i` (the buffer is valid UTF-8: it is a String's).
    @inline(__always)
    static func decodeScalar(_ buffer: UnsafeBufferPointer<UInt8>, at i: Int) -> (UInt32, Int) {
        let lead = UInt32(buffer[i])
        func continuation(_ offset: Int) -> UInt32 { i + offset < buffer.count ? UInt32(buffer[i + offset] & 0x3F) : 0 }
        if lead < 0xE0 { return (((lead & 0x1F) << 6) | continuation(1), 2) }
        if lead < 0xF0 { return (((lead & 0x0F) << 12) | (continuation(1) << 6) | continuation(2), 3) }
        return (((lead & 0x07) << 18) | (continuation(1) << 12) | (continuation(2) << 6) | continuation(3), 4)
    }

    /// The folded form of a word's bytes (see the type's rules), cut at ``maximumTermBytes``.
    static func fold(_ bytes: UnsafeBufferPointer<UInt8>, kind: Kind) -> [UInt8] {
        var out: [UInt8] = []
        _ = appendFolded(bytes, kind: kind, to: &out)
        return out
    }

    /// Appends the folded form of a word's bytes to `out` (see ``fold(_:kind:)``); returns whether it is not empty.
    /// An ASCII word (its bytes are letters and digits: ``scan(_:asciiShortcut:_:)`` made it) folds to its lowercase
    /// bytes, which is what the `String` path gives it; any other word takes that path.
    @inline(__always)
    static func appendFolded(_ bytes: UnsafeBufferPointer<UInt8>, kind: Kind, to out: inout [UInt8]) -> Bool {
        var ascii = true
        for byte in bytes where byte >= 0x80 {
            ascii = false
            break
        }
        guard ascii else {
            let folded = foldThroughString(bytes, kind: kind)
            out.append(contentsOf: folded)
            return !folded.isEmpty
        }
        // Copied at once, then lowercased in place.
        let start = out.count
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes.prefix(maximumTermBytes)))
        out.withUnsafeMutableBufferPointer { out in
            for index in start..<out.count where out[index] &- 0x41 < 26 { out[index] |= 0x20 }
        }
        return !bytes.isEmpty
    }

    /// The folded form of any word's bytes through `String` and Foundation's folding (the Unicode path).
    static func foldThroughString(_ bytes: UnsafeBufferPointer<UInt8>, kind: Kind) -> [UInt8] {
        let word = String(decoding: bytes, as: UTF8.self)
        var folded: String
        switch kind {
        case .emoji:
            folded = String(String.UnicodeScalarView(word.unicodeScalars.filter {
                $0.value != 0xFE0F && $0.value != 0xFE0E && !(0x1F3FB...0x1F3FF).contains($0.value)
            }))
        case .word, .ideograph:
            folded = word.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil)
            if folded.unicodeScalars.contains(where: { extraFolds[$0.value] != nil }) {
                folded = String(String.UnicodeScalarView(folded.unicodeScalars.flatMap { scalar -> [Unicode.Scalar] in
                    extraFolds[scalar.value].map { Array($0.unicodeScalars) } ?? [scalar]
                }))
            }
        }
        return cut(Array(folded.utf8))
    }

    /// Letters that have no canonical decomposition but read as a base letter with a stroke or a ligature.
    static let extraFolds: [UInt32: String] = [
        0xF8: "o", 0xD8: "o", 0x142: "l", 0x141: "l", 0x111: "d", 0x110: "d", 0x127: "h", 0x126: "h", 0x167: "t",
        0x166: "t", 0x131: "i", 0xE6: "ae", 0xC6: "ae", 0x153: "oe", 0x152: "oe", 0xFE: "th", 0xDE: "th",
    ]

    /// `bytes` cut to at most ``maximumTermBytes``, at a character (scalar) boundary.
    static func cut(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count > maximumTermBytes else { return bytes }
        var end = maximumTermBytes
        while end > 0 && bytes[end] & 0xC0 == 0x80 { end -= 1 }
        return Array(bytes[..<end])
    }
}

/// A word of a text as the search index sees it.
public struct SearchToken: Hashable, Sendable {
    /// The folded word (the form stored in the index).
    public var term: String
    /// Its position among the text's words, from 0.
    public var position: Int
    /// Where it is in the original text.
    public var range: Range<String.Index>
}
