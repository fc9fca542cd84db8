import CanopyCore

/// A parsed full-text query: terms that must all match (AND).
///
/// The syntax:
/// - `milk bread`: rows with both words (in any field, anywhere);
/// - `milk*`: a prefix — any word that starts with `milk` (`milk`, `milkshake`);
/// - `"buy milk"`: a phrase — the words next to each other, in this order, in one field; `"buy mil*"` ends with a
///   prefix;
/// - a bare word that the tokenizer splits (`don't`, `e-mail`) is a phrase of its parts, as in SQLite FTS5.
///
/// Words are split and folded by ``SearchTokenizer``, as the index's text is, so `Crème` finds `creme`. Punctuation
/// between words is ignored; `OR`, `NOT` and `-` have no special meaning (they are searched as words or ignored).
///
/// Bad input is a ``/CanopyCore/CanopyError/Code/invalidArgument`` naming what is wrong: an empty query, one with no
/// word (only punctuation or spaces), a quote not closed, a `*` not at the end of a word, more than
/// ``maximumBytes`` bytes or ``maximumTerms`` terms.
public struct SearchQuery: Hashable, Sendable, CustomStringConvertible {
    /// One term of a query: one or more words in a row (a phrase), the last of which may be a prefix.
    public struct Term: Hashable, Sendable {
        /// The folded words, in order.
        public var words: [String]
        /// Whether the last word matches any word that starts with it.
        public var isPrefix: Bool

        /// Creates a term.
        public init(words: [String], isPrefix: Bool = false) {
            self.words = words
            self.isPrefix = isPrefix
        }

        var wordBytes: [[UInt8]] { words.map { Array($0.utf8) } }
    }

    /// The longest query accepted, in bytes of UTF-8.
    public static let maximumBytes = 4_096
    /// The most terms a query may have.
    public static let maximumTerms = 64

    /// The query's text, as given.
    public let text: String
    /// Its terms; every one must match.
    public let terms: [Term]

    /// Parses `text`.
    /// - Throws: ``/CanopyCore/CanopyError/Code/invalidArgument`` for an empty query, a query without words, an
    ///   unclosed quote, a misplaced `*`, or a query over the limits; the message says which.
    public init(_ text: String) throws {
        let byteCount = text.utf8.count
        guard byteCount <= Self.maximumBytes else {
            throw Self.invalid("the query is \(byteCount) bytes long; at most \(Self.maximumBytes) bytes are accepted (shorten it)")
        }
        var terms: [Term] = []
        var rest = Substring(text)
        while true {
            rest = rest.drop { $0.isWhitespace }
            guard let first = rest.first else { break }
            var content: Substring
            if first == "\"" {
                let afterQuote = rest.dropFirst()
                guard let close = afterQuote.firstIndex(of: "\"") else {
                    let offset = text.distance(from: text.startIndex, to: rest.startIndex)
                    throw Self.invalid("the phrase opened by the quote at character \(offset) is not closed; add a closing \" or remove the quote")
                }
                content = afterQuote[..<close]
                rest = afterQuote[afterQuote.index(after: close)...]
            } else {
                let end = rest.firstIndex { $0.isWhitespace || $0 == "\"" } ?? rest.endIndex
                content = rest[..<end]
                rest = rest[end...]
            }
            var isPrefix = false
            if first == "\"" {
                if rest.first == "*" { isPrefix = true; rest = rest.dropFirst() }
                if content.last == "*" { isPrefix = true; content = content.dropLast() }
            } else if content.last == "*" {
                isPrefix = true
                content = content.dropLast()
            }
            if content.contains("*") {
                throw Self.invalid("'*' may only end a word (a prefix, as in milk*); found it inside '\(content.prefix(40))'")
            }
            let words = SearchTokenizer.tokens(of: String(content)).map(\.term)
            guard !words.isEmpty else {
                if isPrefix, content.isEmpty { throw Self.invalid("'*' must follow the start of a word (as in milk*)") }
                continue  // punctuation only, or an empty phrase: no word to look for
            }
            if isPrefix, let last = content.unicodeScalars.last, SearchTokenizer.classify(last.value) == .separator {
                throw Self.invalid("'*' must follow the start of a word (as in milk*), not punctuation ('\(content.suffix(20))*')")
            }
            terms.append(Term(words: words, isPrefix: isPrefix))
            guard terms.count <= Self.maximumTerms else {
                throw Self.invalid("the query has more than \(Self.maximumTerms) terms; search with fewer words")
            }
        }
        guard !terms.isEmpty else {
            throw Self.invalid(text.allSatisfy(\.isWhitespace)
                ? "the query is empty; type at least one word"
                : "the query has no word to search for (only punctuation or symbols); type at least one letter or digit")
        }
        self.text = text
        self.terms = terms
    }

    /// The text.
    public var description: String { text }

    static func invalid(_ message: String) -> CanopyError {
        CanopyError(.invalidArgument, message)
    }
}
