import CanopyCore

/// One word's postings in document order, in memory: a write transaction's pending changes to the word, or a block
/// read back to be rewritten. Entry `i` is row `documents[i]` with the posting body
/// `writer.bytes[starts[i]..<end(i)]` (``SearchPosting/encode(length:occurrences:into:)``); an empty body is a removal (pending changes
/// only). Flat arrays: no allocation per posting.
struct SearchPostingRun {
    var documents: [UInt64] = []
    var starts: [Int] = []
    var writer = ByteWriter(capacity: 0)

    var count: Int { documents.count }

    func end(_ entry: Int) -> Int { entry + 1 < starts.count ? starts[entry + 1] : writer.bytes.count }

    func body(_ entry: Int) -> ArraySlice<UInt8> { writer.bytes[starts[entry]..<end(entry)] }

    func isRemoval(_ entry: Int) -> Bool { starts[entry] == end(entry) }

    /// Appends row `document`'s posting, written by `encode` (nothing written: a removal).
    mutating func append(_ document: UInt64, _ encode: (inout ByteWriter) -> Void) {
        documents.append(document)
        starts.append(writer.bytes.count)
        encode(&writer)
    }

    mutating func removeAll() {
        documents.removeAll(keepingCapacity: true)
        starts.removeAll(keepingCapacity: true)
        writer.bytes.removeAll(keepingCapacity: true)
    }

    mutating func append(_ document: UInt64, body: ArraySlice<UInt8>) {
        documents.append(document)
        starts.append(writer.bytes.count)
        writer.bytes.append(contentsOf: body)
    }

    /// The run by document, each document once: the last change of a row wins (a row changed twice in a transaction).
    func normalized() -> SearchPostingRun {
        var ascending = true
        for entry in documents.indices.dropFirst() where documents[entry - 1] >= documents[entry] {
            ascending = false
            break
        }
        if ascending { return self }
        let order = documents.indices.sorted { (documents[$0], $0) < (documents[$1], $1) }
        var result = SearchPostingRun()
        for (position, entry) in order.enumerated() {
            if position + 1 < order.count, documents[order[position + 1]] == documents[entry] { continue }
            result.append(documents[entry], body: body(entry))
        }
        return result
    }
}

/// The blocks of the `postings` table: each holds up to ``maximumDocuments`` rows' postings of one word (about
/// ``targetBytes``), in document order, delta-encoded, with the block's maximum occurrences, minimum row length and
/// densest row first (together an upper bound of any of its rows' scores: ``SearchIndex/bestRows(of:limit:in:)``).
///
/// A word's blocks partition its rows: the block keyed `word 0 K` holds the rows after the previous block's key, up to
/// `K` — the last row of a full block, or `UInt64.max` for the word's last (open) block, where new rows (always
/// numbered above every other) are appended. So the block that holds row `d` is the first key `>= word 0 d`.
enum SearchPostingBlock {
    static let maximumDocuments = 128
    /// Blocks are cut before they grow past this size (a value stays in its leaf page); a row with a longer posting
    /// has a block of its own.
    static let targetBytes = 1_600
    /// The key of a word's open block.
    static let openBlock = UInt64.max

    /// The key of `term`'s block `block`.
    static func key(term: [UInt8], block: UInt64) -> [UInt8] {
        var key = term
        key.reserveCapacity(term.count + 9)
        key.append(0)
        withUnsafeBytes(of: block.bigEndian) { key.append(contentsOf: $0) }
        return key
    }

    /// The block number at the end of a posting key.
    static func block(ofKey key: UnsafeRawBufferPointer) throws -> UInt64 {
        guard key.count >= 9, key[key.count - 9] == 0 else { throw SearchBytes.Malformed("a posting key without a block number") }
        return UInt64(bigEndian: key.loadUnaligned(fromByteOffset: key.count - 8, as: UInt64.self))
    }

    /// The value of the block of `run`'s entries `range` (no removals).
    ///
    /// (Read and written through pointers, into an array of the value's exact size: a bulk write encodes every
    /// posting it adds once here.)
    static func encode(_ run: SearchPostingRun, _ range: Range<Int>) -> [UInt8] {
        encode(run, range, key: 0).value
    }

    /// The value of the block keyed `key` of `run`'s entries `range` (no removals), and its header for the directory.
    static func encode(_ run: SearchPostingRun, _ range: Range<Int>, key: UInt64) -> (value: [UInt8], header: SearchBlockHeader) {
        run.documents.withUnsafeBufferPointer { documents in
            run.starts.withUnsafeBufferPointer { starts in
                run.writer.bytes.withUnsafeBufferPointer { bodies in
                    encode(documents: documents, starts: starts, bodies: bodies, range, key: key)
                }
            }
        }
    }

    private static func encode(
        documents: UnsafeBufferPointer<UInt64>, starts: UnsafeBufferPointer<Int>, bodies: UnsafeBufferPointer<UInt8>, _ range: Range<Int>,
        key: UInt64
    ) -> (value: [UInt8], header: SearchBlockHeader) {
        func end(_ entry: Int) -> Int { entry + 1 < starts.count ? starts[entry + 1] : bodies.count }
        var maximumOccurrences = 0
        var minimumLength = Int.max
        // The row with the fewest words per occurrence (the densest): length / occurrences smallest.
        var densest = (length: 0, occurrences: 0)
        var size = 0
        var previous: UInt64 = 0
        for entry in range {
            let summary = SearchPosting.summary(of: UnsafeBufferPointer(rebasing: bodies[starts[entry]..<end(entry)]))
            maximumOccurrences = max(maximumOccurrences, summary.occurrences)
            minimumLength = min(minimumLength, summary.length)
            if densest.occurrences == 0
                || SearchBlockHeader.isDenser(length: summary.length, occurrences: summary.occurrences, than: densest.length, densest.occurrences) {
                densest = (summary.length, summary.occurrences)
            }
            let bodySize = end(entry) - starts[entry]
            size += VarInt.size(of: documents[entry] - previous) + VarInt.size(of: UInt64(bodySize)) + bodySize
            previous = documents[entry]
        }
        let header: (UInt64, UInt64, UInt64, UInt64, UInt64) = (
            UInt64(range.count), UInt64(maximumOccurrences), UInt64(range.isEmpty ? 0 : minimumLength), UInt64(densest.length),
            UInt64(densest.occurrences))
        size += VarInt.size(of: header.0) + VarInt.size(of: header.1) + VarInt.size(of: header.2) + VarInt.size(of: header.3)
            + VarInt.size(of: header.4)
        let value = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            guard let out = buffer.baseAddress else { return }
            var offset = VarInt.write(header.0, to: out)
            offset += VarInt.write(header.1, to: out + offset)
            offset += VarInt.write(header.2, to: out + offset)
            offset += VarInt.write(header.3, to: out + offset)
            offset += VarInt.write(header.4, to: out + offset)
            var previous: UInt64 = 0
            for entry in range {
                let delta = documents[entry] - previous
                if delta < 0x80 {
                    out[offset] = UInt8(truncatingIfNeeded: delta)
                    offset += 1
                } else {
                    offset += VarInt.write(delta, to: out + offset)
                }
                previous = documents[entry]
                // The body's size, so that a query passes over a body it does not need.
                let bodySize = end(entry) - starts[entry]
                if bodySize < 0x80 {
                    out[offset] = UInt8(truncatingIfNeeded: bodySize)
                    offset += 1
                } else {
                    offset += VarInt.write(UInt64(bodySize), to: out + offset)
                }
                // Bodies are a few bytes: copied byte by byte (no call per posting).
                for index in starts[entry]..<end(entry) {
                    out[offset] = bodies[index]
                    offset += 1
                }
            }
            count = offset
        }
        let blockHeader = SearchBlockHeader(
            block: key, count: range.count, maximumOccurrences: maximumOccurrences, minimumLength: range.isEmpty ? 0 : minimumLength,
            densestLength: densest.length, densestOccurrences: densest.occurrences)
        return (value, blockHeader)
    }

    /// The entries of a stored block, to rewrite it.
    static func decode(_ raw: UnsafeRawBufferPointer) throws -> SearchPostingRun {
        var run = SearchPostingRun()
        run.writer.bytes.reserveCapacity(raw.count)
        var reader = try Reader(raw)
        while let document = try reader.next() {
            run.append(document, body: ArraySlice(UnsafeRawBufferPointer(rebasing: raw[reader.bodyStart..<reader.bodyEnd])))
            try reader.skipBody()
        }
        return run
    }

    /// The entries of `stored` with `changes[range]` applied (both by document; a change replaces or removes the
    /// stored entry of its row).
    static func merge(_ stored: SearchPostingRun, _ changes: SearchPostingRun, _ range: Range<Int>) -> SearchPostingRun {
        var result = SearchPostingRun()
        result.writer.bytes.reserveCapacity(stored.writer.bytes.count + changes.writer.bytes.count)
        var s = 0
        var c = range.lowerBound
        while s < stored.count || c < range.upperBound {
            if c == range.upperBound || (s < stored.count && stored.documents[s] < changes.documents[c]) {
                result.append(stored.documents[s], body: stored.body(s))
                s += 1
                continue
            }
            if s < stored.count, stored.documents[s] == changes.documents[c] { s += 1 }
            if !changes.isRemoval(c) { result.append(changes.documents[c], body: changes.body(c)) }
            c += 1
        }
        return result
    }

    /// `run`'s entries cut into blocks: each range ends a block.
    static func chunks(of run: SearchPostingRun) -> [Range<Int>] {
        var chunks: [Range<Int>] = []
        var start = 0
        var size = 0
        for entry in 0..<run.count {
            let entrySize = run.end(entry) - run.starts[entry] + 7
            if entry > start, entry - start == maximumDocuments || size + entrySize > targetBytes {
                chunks.append(start..<entry)
                start = entry
                size = 0
            }
            size += entrySize
        }
        if start < run.count { chunks.append(start..<run.count) }
        return chunks
    }

    /// Appends the rows of the block `raw` (keyed `blockKey`, after the block keyed `previousKey`) to `documents`, and
    /// where each one's body starts and ends to `bodyStarts` and `bodyEnds`, reading no body (an intersection reads
    /// every row of its rarest list this way).
    /// - Throws: ``SearchBytes/Malformed`` for a damaged block (as ``Reader`` does) or a row outside its block's range.
    static func appendRows(
        of raw: UnsafeRawBufferPointer, after previousKey: UInt64, upTo blockKey: UInt64, to documents: inout [UInt64], bodyStarts: inout [Int32],
        bodyEnds: inout [Int32]
    ) throws {
        var rows = try RowScanner(raw, after: previousKey, upTo: blockKey)
        documents.reserveCapacity(documents.count + rows.remaining)
        bodyStarts.reserveCapacity(bodyStarts.count + rows.remaining)
        bodyEnds.reserveCapacity(bodyEnds.count + rows.remaining)
        while try rows.next() {
            documents.append(rows.document)
            // (A block is a value of at most a few KB: its offsets fit; a clamped one fails readCounts' bound check.)
            bodyStarts.append(Int32(clamping: rows.bodyStart))
            bodyEnds.append(Int32(clamping: rows.bodyEnd))
        }
    }

    /// Calls `matched(slot, body)` for each row of the block `raw` (keyed `blockKey`, after the block keyed
    /// `previousKey`) that is `candidates[slot]`, for slots from `next` on (ascending; `next` ends past the last
    /// candidate the block could hold); reads no other body.
    /// - Throws: as ``appendRows(of:after:upTo:to:bodyStarts:)``, and what `matched` throws.
    static func matchRows(
        of raw: UnsafeRawBufferPointer, after previousKey: UInt64, upTo blockKey: UInt64, candidates: UnsafeBufferPointer<UInt64>,
        next: inout Int, _ matched: (_ slot: Int, _ body: Range<Int>) throws -> Void
    ) throws {
        var slot = next
        var rows = try RowScanner(raw, after: previousKey, upTo: blockKey)
        while slot < candidates.count, try rows.next() {
            let document = rows.document
            while slot < candidates.count, candidates[slot] < document { slot += 1 }
            if slot < candidates.count, candidates[slot] == document {
                try matched(slot, rows.bodyStart..<rows.bodyEnd)
                slot += 1
            }
        }
        next = slot
    }

    /// A block's rows and their bodies' places, over its raw bytes (no body read); checks what ``Reader`` checks.
    struct RowScanner {
        private let base: UnsafeRawPointer?
        private let count: Int
        private var offset: Int
        private(set) var remaining: Int
        private let previousKey: UInt64
        private let blockKey: UInt64
        private(set) var document: UInt64 = 0
        private(set) var bodyStart = 0
        /// Where the current row's body ends (its size said so; within the block).
        private(set) var bodyEnd = 0

        init(_ raw: UnsafeRawBufferPointer, after previousKey: UInt64, upTo blockKey: UInt64) throws {
            let header = try Reader(raw)
            base = raw.baseAddress
            count = raw.count
            offset = header.offset
            remaining = header.count
            self.previousKey = previousKey
            self.blockKey = blockKey
        }

        /// Moves to the next row (``document``, ``bodyStart``); `false` after the last.
        @inline(__always)
        mutating func next() throws -> Bool {
            guard remaining > 0, let base else {
                guard offset == count else { throw SearchBytes.Malformed("bytes after a block's last entry") }
                return false
            }
            remaining -= 1
            let delta = try Self.varint(base, &offset, count)
            let (sum, overflow) = document.addingReportingOverflow(delta)
            guard delta > 0, !overflow else { throw SearchBytes.Malformed("the rows of a block are out of order") }
            document = sum
            let size = try Self.varint(base, &offset, count)
            guard size <= UInt64(count - offset) else { throw SearchBytes.Malformed("an entry's body runs past its block") }
            bodyStart = offset
            offset += Int(size)
            bodyEnd = offset
            guard document > previousKey, document <= blockKey else { throw SearchBytes.Malformed("a row outside its block's range") }
            return true
        }

        /// A varint at `offset`: one or two bytes here, longer ones by ``VarInt``.
        @inline(__always)
        private static func varint(_ base: UnsafeRawPointer, _ offset: inout Int, _ count: Int) throws -> UInt64 {
            if offset + 1 < count {
                let first = base.load(fromByteOffset: offset, as: UInt8.self)
                if first < 0x80 {
                    offset += 1
                    return UInt64(first)
                }
                let second = base.load(fromByteOffset: offset + 1, as: UInt8.self)
                if second < 0x80, second > 0 {
                    offset += 2
                    return UInt64(first & 0x7F) | UInt64(second) << 7
                }
            }
            do { return try VarInt.read(base, at: &offset, limit: count) } catch { throw SearchBytes.Malformed("a varint is malformed (\(error))") }
        }
    }

    /// Reads the length and per-field counts of the entry whose body is `body` in the block `raw` (the place
    /// ``RowScanner`` gave for this block). Every read stays inside the body: counts that run past its end (bytes that
    /// pass the block's checksum but disagree with the size the block gives the body) throw, never read the next
    /// entry's bytes as counts.
    /// - Throws: ``SearchBytes/Malformed`` when the body is outside the block or its counts run past its end.
    static func readCounts(in raw: UnsafeRawBufferPointer, body: Range<Int>, _ visit: (_ length: Int, _ field: Int, _ count: Int) -> Void) throws {
        guard body.lowerBound >= 0, body.upperBound <= raw.count else { throw SearchBytes.Malformed("a body outside its block") }
        var reader = SearchBytes.Reader(UnsafeRawBufferPointer(rebasing: raw[body]))
        let length = try reader.int()
        let fields = try reader.int()
        for _ in 0..<fields {
            let field = try reader.int()
            visit(length, field, try reader.int())
        }
    }

    /// Reads a block's entries in order.
    struct Reader {
        private var reader: SearchBytes.Reader
        /// The block's entries.
        let count: Int
        /// The most occurrences of the word in one of its rows.
        let maximumOccurrences: Int
        /// The shortest of its rows, in words.
        let minimumLength: Int
        /// The length and occurrences of its densest row (the fewest words per occurrence of the word): every row's
        /// `length / occurrences` is at least `densestLength / densestOccurrences`.
        let densestLength: Int
        let densestOccurrences: Int
        private var remaining: Int
        private var document: UInt64 = 0
        /// Where the current entry's body starts and ends in the block.
        private(set) var bodyStart = 0
        private(set) var bodyEnd = 0

        /// Where the next entry starts.
        var offset: Int { reader.offset }

        init(_ raw: UnsafeRawBufferPointer) throws {
            reader = SearchBytes.Reader(raw)
            count = try reader.int()
            maximumOccurrences = try reader.int()
            minimumLength = try reader.int()
            densestLength = try reader.int()
            densestOccurrences = try reader.int()
            guard count <= raw.count else { throw SearchBytes.Malformed("a block count larger than the block") }
            remaining = count
        }

        /// The next entry's row, its body to be read (``skipBody()``, ``readCounts(_:)``) before the next call; `nil`
        /// after the last.
        @inline(__always)
        mutating func next() throws -> UInt64? {
            guard remaining > 0 else {
                guard reader.isAtEnd else { throw SearchBytes.Malformed("bytes after a block's last entry") }
                return nil
            }
            remaining -= 1
            // Row numbers start at 1 and ascend: every delta is at least 1.
            let delta = try reader.varint()
            let (sum, overflow) = document.addingReportingOverflow(delta)
            guard delta > 0, !overflow else { throw SearchBytes.Malformed("the rows of a block are out of order") }
            document = sum
            let size = try reader.int()
            bodyStart = reader.offset
            bodyEnd = bodyStart + size
            guard bodyEnd <= reader.buffer.count else { throw SearchBytes.Malformed("an entry's body runs past its block") }
            return document
        }

        /// Passes over the entry's body (its size is known: no byte of it is read).
        @inline(__always)
        mutating func skipBody() throws {
            try reader.skip(bodyEnd - reader.offset)
        }

        /// Reads the entry's length and calls `visit` with each field's count; skips the positions.
        @inline(__always)
        mutating func readCounts(_ visit: (_ length: Int, _ field: Int, _ count: Int) -> Void) throws {
            let length = try reader.int()
            let fields = try reader.int()
            for _ in 0..<fields {
                let field = try reader.int()
                visit(length, field, try reader.int())
            }
            guard reader.offset <= bodyEnd else { throw SearchBytes.Malformed("an entry's counts run past its body") }
            try skipBody()
        }

        /// Reads the entry's body with its positions.
        mutating func readPosting() throws -> SearchPosting.Decoded {
            let start = bodyStart
            try skipBody()
            return try SearchPosting.decode(UnsafeRawBufferPointer(rebasing: reader.buffer[start..<bodyEnd]), positions: true)
        }
    }
}
