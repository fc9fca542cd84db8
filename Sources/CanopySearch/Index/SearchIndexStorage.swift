import CanopyCore

/// The tables of a search index and the encodings of their values (one place for each).
///
/// - `postings`: blocks of one word's postings (``SearchPostingBlock``): the folded word's UTF-8, a 0 byte (words never
///   hold one), the block's key (8 bytes, big-endian: its last row's document number, or `UInt64.max` for the word's
///   open block) → `varint(rows)`, `varint(most occurrences in a row)`, `varint(shortest row)`, `varint(length)` and
///   `varint(occurrences)` of its densest row (fewest words per occurrence), then its row numbers fixed-width
///   (`varint(first)`, a width byte, each row's distance from the first: ``SearchPostingBlock/RowNumbers``), then per
///   row, by document number, `varint(body size)` and its posting body (``SearchPosting``: the row's length, its count
///   per field, its positions; a query passes over a body it does not need without reading it). A prefix query walks
///   the keys that start with the prefix.
/// - the row's attachment (its per-row record, kept in the row's own record at the index's attachment slot, written
///   with the row in the same put): `varint(document number)`, `varint(length)`, `varint(k)`, k × (`varint(size)`,
///   word): the row's distinct words, to remove its postings; a single 0 byte (no document is numbered 0) marks a row
///   skipped because it does not decode. A row the index leaves out has none. (Format 3 kept this record in a table
///   of its own, `rows`, keyed by the row's stored key: a second read and put per written row.)
/// - `documents`: which row each document number is (a result's row), 64 numbers to a value
///   (``SearchDocumentTable``). Numbers only ascend, so a transaction's new rows are appended at commit.
/// - `queries`: a live results view's name → its query and frozen statistics (JSON).
/// - `prefixes` (only for an index with ``SearchIndex/prefixLengths``): per word prefix of those lengths (in Unicode
///   scalars), blocks as in `postings`, keyed `prefix 0 K`: each row holding words that start with the prefix once,
///   with the occurrences of all of them (the union a prefix query would merge, stored merged).
/// - `postings-directory` and (with prefix lengths) `prefixes-directory`: per list of `postings` (`prefixes`), its
///   blocks' headers in chunks of 16 (``SearchBlockDirectory``), rewritten with the blocks.
/// - `postings-summary` and (with prefix lengths) `prefixes-summary`: per list of two chunks or more, its chunks'
///   summaries in one value (``SearchListSummary``), rewritten with the chunks.
/// - the extension state record: version 1, `varint(next document number)`, `varint(rows)`, `varint(total length)`.
struct SearchIndexTables: Sendable {
    let postings: ExtensionTable<BytesCoding, BytesCoding>
    let documents: SearchDocumentTable
    let queries: ExtensionTable<StringUTF8Coding, BytesCoding>
    /// The prefix lists; `nil` for an index without prefix lengths (its files have no such table).
    let prefixes: ExtensionTable<BytesCoding, BytesCoding>?
    /// The directory of `postings`' blocks (``SearchBlockDirectory``).
    let postingsDirectory: ExtensionTable<BytesCoding, BytesCoding>
    /// The directory of `prefixes`' blocks; `nil` with `prefixes`.
    let prefixesDirectory: ExtensionTable<BytesCoding, BytesCoding>?
    /// The summaries of `postings`' long lists (``SearchListSummary``).
    let postingsSummaries: ExtensionTable<BytesCoding, BytesCoding>
    /// The summaries of `prefixes`' long lists; `nil` with `prefixes`.
    let prefixesSummaries: ExtensionTable<BytesCoding, BytesCoding>?

    /// Opens (creating) the tables; the `prefixes` table only `withPrefixes`.
    static func open(in transaction: ReadWriteTransaction, index: String, withPrefixes: Bool) throws -> SearchIndexTables {
        SearchIndexTables(
            postings: try transaction.openTable("postings", of: index, keys: BytesCoding.self, values: BytesCoding.self),
            documents: SearchDocumentTable(
                table: try transaction.openTable("documents", of: index, keys: UInt64BigEndianCoding.self, values: BytesCoding.self), index: index),
            queries: try transaction.openTable("queries", of: index, keys: StringUTF8Coding.self, values: BytesCoding.self),
            prefixes: withPrefixes ? try transaction.openTable("prefixes", of: index, keys: BytesCoding.self, values: BytesCoding.self) : nil,
            postingsDirectory: try transaction.openTable("postings-directory", of: index, keys: BytesCoding.self, values: BytesCoding.self),
            prefixesDirectory: withPrefixes
                ? try transaction.openTable("prefixes-directory", of: index, keys: BytesCoding.self, values: BytesCoding.self) : nil,
            postingsSummaries: try transaction.openTable("postings-summary", of: index, keys: BytesCoding.self, values: BytesCoding.self),
            prefixesSummaries: withPrefixes
                ? try transaction.openTable("prefixes-summary", of: index, keys: BytesCoding.self, values: BytesCoding.self) : nil)
    }

    /// The stored tables, or `nil` when one is missing (the `prefixes` table counts only `withPrefixes`).
    static func existing(in transaction: ReadTransaction, index: String, withPrefixes: Bool) throws -> SearchIndexTables? {
        guard let postings = try transaction.existingTable("postings", of: index, keys: BytesCoding.self, values: BytesCoding.self),
              let documents = try transaction.existingTable("documents", of: index, keys: UInt64BigEndianCoding.self, values: BytesCoding.self),
              let queries = try transaction.existingTable("queries", of: index, keys: StringUTF8Coding.self, values: BytesCoding.self),
              let postingsDirectory = try transaction.existingTable("postings-directory", of: index, keys: BytesCoding.self, values: BytesCoding.self),
              let postingsSummaries = try transaction.existingTable("postings-summary", of: index, keys: BytesCoding.self, values: BytesCoding.self)
        else { return nil }
        var prefixes: ExtensionTable<BytesCoding, BytesCoding>?
        var prefixesDirectory: ExtensionTable<BytesCoding, BytesCoding>?
        var prefixesSummaries: ExtensionTable<BytesCoding, BytesCoding>?
        if withPrefixes {
            guard let table = try transaction.existingTable("prefixes", of: index, keys: BytesCoding.self, values: BytesCoding.self),
                  let directory = try transaction.existingTable("prefixes-directory", of: index, keys: BytesCoding.self, values: BytesCoding.self),
                  let summaries = try transaction.existingTable("prefixes-summary", of: index, keys: BytesCoding.self, values: BytesCoding.self)
            else { return nil }
            prefixes = table
            prefixesDirectory = directory
            prefixesSummaries = summaries
        }
        return SearchIndexTables(
            postings: postings, documents: SearchDocumentTable(table: documents, index: index), queries: queries, prefixes: prefixes,
            postingsDirectory: postingsDirectory, prefixesDirectory: prefixesDirectory, postingsSummaries: postingsSummaries,
            prefixesSummaries: prefixesSummaries)
    }
}

/// The index's counters, kept in its extension state record.
struct SearchIndexState: Hashable, Sendable {
    var nextDocument: UInt64 = 1
    var documentCount = 0
    var totalLength = 0

    static let version: UInt8 = 1

    var encoded: [UInt8] {
        var out = ByteWriter()
        out.bytes.append(Self.version)
        out.append(varint: nextDocument)
        out.append(varint: UInt64(documentCount))
        out.append(varint: UInt64(totalLength))
        return out.bytes
    }

    init() {}

    init(decoding bytes: UnsafeRawBufferPointer) throws {
        var reader = SearchBytes.Reader(bytes)
        guard try reader.byte() == Self.version else { throw SearchBytes.Malformed("an unknown state version") }
        nextDocument = try reader.varint()
        // Totals over the whole index: any value an Int holds.
        guard let documents = Int(exactly: try reader.varint()), let words = Int(exactly: try reader.varint()) else {
            throw SearchBytes.Malformed("a document or word total is out of range")
        }
        documentCount = documents
        totalLength = words
    }
}

/// A row's record: its attachment (see ``SearchIndexTables``).
struct SearchRowRecord: Hashable {
    /// The attachment of a row skipped because the text closure cannot decode it.
    static let skippedMarker: [UInt8] = [0]

    var document: UInt64
    var length: Int
    /// The row's distinct words, sorted.
    var terms: [[UInt8]]

    var encoded: [UInt8] {
        var out = ByteWriter()
        Self.appendHeader(document: document, length: length, termCount: terms.count, to: &out)
        for term in terms { term.withUnsafeBufferPointer { Self.appendTerm($0, to: &out) } }
        return out.bytes
    }

    /// Writes a record's start: then come its `termCount` words (``appendTerm(_:to:)``), sorted.
    static func appendHeader(document: UInt64, length: Int, termCount: Int, to out: inout ByteWriter) {
        out.append(varint: document)
        out.append(varint: UInt64(length))
        out.append(varint: UInt64(termCount))
    }

    static func appendTerm(_ term: UnsafeBufferPointer<UInt8>, to out: inout ByteWriter) {
        SearchBytes.append(varint: UInt64(term.count), to: &out)
        out.bytes.append(contentsOf: term)
    }

    /// The record of `bytes`, or `nil` for the skipped marker.
    static func decode(_ bytes: [UInt8]) throws -> SearchRowRecord? {
        guard bytes != skippedMarker else { return nil }
        return try bytes.withUnsafeBytes { raw in
            var reader = SearchBytes.Reader(raw)
            let document = try reader.varint()
            guard document > 0 else { throw SearchBytes.Malformed("a row record numbered 0") }
            let length = try reader.int()
            let count = try reader.int()
            guard count <= raw.count else { throw SearchBytes.Malformed("a word count larger than the record") }
            var terms: [[UInt8]] = []
            terms.reserveCapacity(count)
            for _ in 0..<count { terms.append(try reader.bytes(try reader.int())) }
            guard reader.isAtEnd else { throw SearchBytes.Malformed("bytes after a row record's words") }
            return SearchRowRecord(document: document, length: length, terms: terms)
        }
    }
}

/// One row's occurrences of one word: per field, its positions. Its body in a block: `varint(row length)`,
/// `varint(n)`, n × (`varint(field)`, `varint(count)`), `varint(size)`, then size bytes: each field's positions as
/// `varint` deltas (a query that needs no positions skips them).
struct SearchPosting {
    var length: Int
    /// (field, positions), by field.
    var fields: [(field: Int, positions: [Int])]

    /// A posting read back: the row length, per field the count, and (when asked for) the positions.
    typealias Decoded = (length: Int, counts: [(field: Int, count: Int)], positions: [[Int]])

    /// One occurrence of a word in a row.
    struct Occurrence: Hashable {
        var field: Int
        var position: Int
    }

    /// The body (the index writes it from a row's analysis with ``encode(length:occurrences:into:)``).
    var encoded: [UInt8] {
        var out = ByteWriter()
        let occurrences = fields.flatMap { entry in entry.positions.map { Occurrence(field: entry.field, position: $0) } }
        Self.encode(length: length, occurrences: occurrences[...], into: &out)
        return out.bytes
    }

    /// The size of a ``compactBody(length:occurrences:)``.
    static let compactBodySize = 6

    /// The body of the usual posting, a word once in a short row (`length`, `field` and `position` below 128: six
    /// one-byte varints, `length 1 field 1 1 position`), as an integer: byte `i` of the body is bits `8i..<8i+8`.
    /// `nil` for any other posting. What ``encode(length:occurrences:into:)`` writes for it: the pending postings
    /// keep such a body in their log entry instead of a buffer.
    @inline(__always)
    static func compactBody(length: Int, occurrences: ArraySlice<Occurrence>) -> UInt64? {
        guard occurrences.count == 1, let only = occurrences.first, length >= 0, length < 0x80,
              only.field >= 0, only.field < 0x80, only.position >= 0, only.position < 0x80 else { return nil }
        return UInt64(length) | 1 << 8 | UInt64(only.field) << 16 | 1 << 24 | 1 << 32 | UInt64(only.position) << 40
    }

    /// Writes the body of a row of `length` words where the word occurs at `occurrences` (by field, then position).
    static func encode(length: Int, occurrences: ArraySlice<Occurrence>, into out: inout ByteWriter) {
        if let compact = compactBody(length: length, occurrences: occurrences) {
            // The usual case (a word once in a short row): six one-byte varints.
            for index in 0..<compactBodySize { out.bytes.append(UInt8(truncatingIfNeeded: compact >> (8 * UInt64(index)))) }
            return
        }
        SearchBytes.append(varint: UInt64(length), to: &out)
        if occurrences.count == 1, let only = occurrences.first {
            // The usual case (a word once in a row): one field, one position.
            SearchBytes.append(varint: 1, to: &out)
            SearchBytes.append(varint: UInt64(only.field), to: &out)
            SearchBytes.append(varint: 1, to: &out)
            SearchBytes.append(varint: UInt64(VarInt.size(of: UInt64(only.position))), to: &out)
            SearchBytes.append(varint: UInt64(only.position), to: &out)
            return
        }
        var fieldCount = 0
        var positionBytes = 0
        var previous = Occurrence(field: -1, position: 0)
        for occurrence in occurrences {
            if occurrence.field != previous.field { fieldCount += 1; previous.position = 0 }
            positionBytes += VarInt.size(of: UInt64(occurrence.position - previous.position))
            previous = occurrence
        }
        SearchBytes.append(varint: UInt64(fieldCount), to: &out)
        var index = occurrences.startIndex
        while index < occurrences.endIndex {
            let field = occurrences[index].field
            var end = index
            while end < occurrences.endIndex, occurrences[end].field == field { end += 1 }
            SearchBytes.append(varint: UInt64(field), to: &out)
            SearchBytes.append(varint: UInt64(end - index), to: &out)
            index = end
        }
        SearchBytes.append(varint: UInt64(positionBytes), to: &out)
        previous = Occurrence(field: -1, position: 0)
        for occurrence in occurrences {
            if occurrence.field != previous.field { previous.position = 0 }
            SearchBytes.append(varint: UInt64(occurrence.position - previous.position), to: &out)
            previous = occurrence
        }
    }

    /// The row length and the occurrences in all fields of a body written by ``encode(length:occurrences:into:)``.
    /// - Throws: ``SearchBytes/Malformed`` when the bytes are not such a body: a count that runs past the end, counts
    ///   ``SearchCounts`` refuses, or positions that do not fill the rest exactly (a block rewritten from such a body
    ///   would carry a wrong header under a valid checksum).
    static func summary(of body: ArraySlice<UInt8>) throws -> (length: Int, occurrences: Int) {
        try body.withUnsafeBufferPointer { try summary(of: $0) }
    }

    /// The same, of the body's bytes.
    @inline(__always)
    static func summary(of body: UnsafeBufferPointer<UInt8>) throws -> (length: Int, occurrences: Int) {
        // Most values are below 128 (one byte each): read inline; anything else through the checked reader.
        let count = body.count
        if count >= 2, body[0] < 0x80, body[1] < 0x80 {
            let length = Int(body[0])
            let fields = Int(body[1])
            var offset = 2
            var occurrences = 0
            var fast = true
            for _ in 0..<fields {
                guard offset + 1 < count, body[offset] < 0x80, body[offset + 1] < 0x80, body[offset + 1] > 0 else { fast = false; break }
                occurrences += Int(body[offset + 1])
                offset += 2
            }
            // Then the positions' size, one byte here, and exactly that many bytes of positions. (What ``SearchCounts``
            // checks, for one-byte values: at least one occurrence, at most the row's length.)
            if fast, occurrences > 0, occurrences <= length, offset < count, body[offset] < 0x80, offset + 1 + Int(body[offset]) == count { return (length, occurrences) }
        }
        var reader = SearchBytes.Reader(UnsafeRawBufferPointer(body))
        // (Checked as the queries check them: a write never rewrites, nor verify passes, a posting a query refuses.)
        var length = 0
        let occurrences = try SearchCounts.read(&reader) { rowLength, _, _ in length = rowLength }
        try reader.skip(try reader.int())
        guard reader.isAtEnd else { throw SearchBytes.Malformed("a posting's positions do not end where its body does") }
        return (length, occurrences)
    }

    /// Reads the row length and per-field counts (and, with `positions`, the positions) of a body.
    /// - Throws: ``SearchBytes/Malformed`` when the bytes are not such a body, or its counts are not what
    ///   ``SearchCounts`` accepts.
    static func decode(_ raw: UnsafeRawBufferPointer, positions: Bool) throws -> Decoded {
        var reader = SearchBytes.Reader(raw)
        // (Checked as every reader of counts checks them: a phrase query never reads a posting the word's own query
        // refuses.)
        var length = 0
        var counts: [(field: Int, count: Int)] = []
        _ = try SearchCounts.read(&reader) { rowLength, field, count in
            length = rowLength
            counts.append((field, count))
        }
        let size = try reader.int()
        guard positions else { return (length, counts, []) }
        let end = reader.offset + size
        guard end <= raw.count else { throw SearchBytes.Malformed("positions past the end of the posting") }
        var all: [[Int]] = []
        for entry in counts {
            guard entry.count <= size else { throw SearchBytes.Malformed("a position count larger than the posting") }
            var list: [Int] = []
            list.reserveCapacity(entry.count)
            var position = 0
            for _ in 0..<entry.count {
                position += try reader.int()
                list.append(position)
            }
            all.append(list)
        }
        guard reader.offset == end else { throw SearchBytes.Malformed("the positions of a posting do not fill it") }
        return (length, counts, all)
    }
}

/// The counts a posting gives, checked as they are read: a row's length fits an `Int32` (no storable row holds more
/// words), each field's count is at least 1, and the counts add up to at most the row's length (every occurrence is
/// one of its words). Every search path reads counts through this, so the dense merge's 32-bit arrays and the other
/// paths' `Int` sums see the same numbers or the same `corruptStore`.
enum SearchCounts {
    /// Reads a posting's length and per-field counts from `reader` (at the body's start), checked, calling `visit`
    /// with each field's; returns the occurrences in all fields. The one reader of counts: the one-word walk, the
    /// intersection, the best rows, the phrase reader and the writer's summary all read them through it (or, for a body
    /// of one-byte values, inline with the same bounds).
    /// - Throws: ``SearchBytes/Malformed`` for counts cut short, or ones ``check(length:count:total:)`` refuses, or none.
    @inline(__always)
    static func read(_ reader: inout SearchBytes.Reader, _ visit: (_ length: Int, _ field: Int, _ count: Int) -> Void) throws -> Int {
        let length = try reader.int()
        let fields = try reader.int()
        var total = 0
        for _ in 0..<fields {
            let field = try reader.int()
            let count = try reader.int()
            try check(length: length, count: count, total: &total)
            visit(length, field, count)
        }
        guard total > 0 else { throw SearchBytes.Malformed("a posting with no occurrence") }
        return total
    }

    @inline(__always)
    static func check(length: Int, count: Int, total: inout Int) throws {
        guard length <= Int(Int32.max), count > 0, count <= length - total else {
            throw SearchBytes.Malformed("a posting counts \(count) more occurrences after \(total) in a row of \(length) words")
        }
        total += count
    }
}

/// The index's values are written with CanopyCore's ``ByteWriter`` (its one variable-length integer code, ``VarInt``)
/// and read through ``SearchBytes/Reader``: ``ByteReader`` plus counts and lengths bounded to what an `Int` holds, so
/// damaged bytes throw ``SearchBytes/Malformed`` and never trap.
enum SearchBytes {
    /// Appends `value` as a ``VarInt`` to `out`: a value below 128 is its one byte, written here; larger ones by
    /// ``ByteWriter/append(varint:)`` (a posting is mostly small numbers).
    @inline(__always)
    static func append(varint value: UInt64, to out: inout ByteWriter) {
        if value < 0x80 { out.bytes.append(UInt8(truncatingIfNeeded: value)) } else { out.append(varint: value) }
    }

    struct Malformed: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    struct Reader {
        private var reader: ByteReader

        init(_ raw: UnsafeRawBufferPointer) { reader = ByteReader(raw) }

        var offset: Int { reader.offset }
        var buffer: UnsafeRawBufferPointer { reader.buffer }
        var isAtEnd: Bool { reader.isAtEnd }

        @inline(__always)
        mutating func skip(_ count: Int) throws {
            guard count >= 0, count <= reader.buffer.count - reader.offset else { throw Malformed("the value ends early") }
            reader.offset += count
        }

        /// Passes over `entries` entries of `varint(size)` then `size` bytes each (a block's postings), reading each
        /// one-byte size inline.
        @inline(__always)
        mutating func skipEntries(_ entries: Int) throws {
            let buffer = reader.buffer
            var offset = reader.offset
            for _ in 0..<max(entries, 0) {
                guard offset < buffer.count else { throw Malformed("the value ends early") }
                let size = buffer[offset]
                if size < 0x80 {
                    offset += 1 &+ Int(size)
                } else {
                    reader.offset = offset
                    try skip(try int())
                    offset = reader.offset
                }
            }
            // (A size past the end stops the next turn, or here.)
            guard offset <= buffer.count else { throw Malformed("the value ends early") }
            reader.offset = offset
        }

        mutating func byte() throws -> UInt8 {
            do { return try reader.readByte() } catch { throw Malformed("the value ends early") }
        }

        /// (Through ``VarInt``'s inlinable reader: a query reads several per posting.)
        @inline(__always)
        mutating func varint() throws -> UInt64 {
            // Most values of a posting are below 2^14 (a row-number delta, a count): one or two bytes, read here.
            let offset = reader.offset
            if offset < reader.buffer.count {
                let byte = reader.buffer[offset]
                if byte < 0x80 {
                    reader.offset = offset + 1
                    return UInt64(byte)
                }
                if offset + 1 < reader.buffer.count {
                    let second = reader.buffer[offset + 1]
                    // (A zero second byte is a non-minimal encoding: the general reader decides.)
                    if second < 0x80, second > 0 {
                        reader.offset = offset + 2
                        return UInt64(byte & 0x7F) | UInt64(second) << 7
                    }
                }
            }
            guard let base = reader.buffer.baseAddress else { throw Malformed("the value ends early") }
            do { return try VarInt.read(base, at: &reader.offset, limit: reader.buffer.count) } catch { throw Malformed("a varint is malformed (\(error))") }
        }

        /// A count, length, field or position delta: a varint that fits in 32 bits (words, fields and positions of
        /// one row are far fewer), so sums of them cannot overflow an `Int` either.
        @inline(__always)
        mutating func int() throws -> Int {
            let value = try varint()
            guard value <= UInt64(UInt32.max) else { throw Malformed("a count of \(value) is out of range") }
            return Int(value)
        }

        mutating func bytes(_ count: Int) throws -> [UInt8] {
            do {
                try reader.need(count)
                defer { reader.offset += count }
                return Array(reader.buffer[reader.offset..<(reader.offset + count)])
            } catch {
                throw Malformed("the value ends early")
            }
        }
    }
}
