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

    /// Calls `body` with the run's rows, body starts and bodies.
    @inline(__always)
    func withBuffers<R>(_ body: (UnsafeBufferPointer<UInt64>, UnsafeBufferPointer<Int>, UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try documents.withUnsafeBufferPointer { documents in
            try starts.withUnsafeBufferPointer { starts in
                try writer.bytes.withUnsafeBufferPointer { bodies in try body(documents, starts, bodies) }
            }
        }
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
/// ``targetBytes``), in document order, with the block's maximum occurrences, minimum row length and densest row first
/// (together an upper bound of any of its rows' scores: ``SearchIndex/bestRows(of:limit:in:)``).
///
/// A block's value (format 6): `varint(rows n)`, `varint(most occurrences in a row)`, `varint(shortest row)`,
/// `varint(length)` and `varint(occurrences)` of its densest row, its rows' score front (``SearchScoreFront``); then
/// its row numbers (``RowNumbers``):
/// `varint(first row)`, one byte `w` (1, 2, 4 or 8) and n × w bytes, each row's distance from the first,
/// little-endian (the first's is 0), ascending; then per row, in the same order, `varint(body size)` and its posting
/// body (``SearchPosting``). An intersection compares row numbers without decoding an entry, and finds a matched row's
/// body by walking the sizes (``BodyWalker``). (Format 5 interleaved `varint(row delta)`, size and body per row.)
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
    /// - Throws: as ``encode(_:_:key:)``.
    static func encode(_ run: SearchPostingRun, _ range: Range<Int>) throws -> [UInt8] {
        try encode(run, range, key: 0).value
    }

    /// The value of the block keyed `key` of `run`'s entries `range` (no removals), and its header for the directory.
    /// - Throws: ``SearchBytes/Malformed`` when `range` is empty (a block holds at least one row: the directory and
    ///   every reader refuse an empty one) or a body is not a posting (``SearchPosting/summary(of:)``): the header
    ///   and score front are built from the bodies, so a block is never written with a header its rows do not give
    ///   (a block read back to be rewritten may hold damage that passed its checksum).
    static func encode(_ run: SearchPostingRun, _ range: Range<Int>, key: UInt64) throws -> (value: [UInt8], header: SearchBlockHeader) {
        try run.withBuffers { documents, starts, bodies in
            let encoding = try Encoding(documents: documents, starts: starts, bodies: bodies, range, key: key)
            let value = try [UInt8](unsafeUninitializedCapacity: encoding.size) { buffer, count in
                try encoding.write(to: UnsafeMutableRawBufferPointer(buffer))
                count = encoding.size
            }
            return (value, encoding.header)
        }
    }

    /// Writes the block keyed `key` of `run`'s entries `range` (no removals) to `table` under `term`, in place in the
    /// map (``/CanopyCore/ExtensionTable/put(reserving:forKey:in:appending:_:)``: no value built in memory first), and
    /// returns its header for the directory. `appending`: the key sorts after every key of the table.
    /// - Throws: as ``encode(_:_:key:)``; what the put throws.
    static func put(
        _ run: SearchPostingRun, _ range: Range<Int>, key: UInt64, term: [UInt8], in table: ExtensionTable<BytesCoding, BytesCoding>,
        _ transaction: ReadWriteTransaction, appending: Bool
    ) throws -> SearchBlockHeader {
        try run.withBuffers { documents, starts, bodies in
            let encoding = try Encoding(documents: documents, starts: starts, bodies: bodies, range, key: key)
            // (A write that throws fails the transaction: the reserved bytes are never kept.)
            try table.put(reserving: encoding.size, forKey: Self.key(term: term, block: key), in: transaction, appending: appending) { stored in
                try encoding.write(to: stored)
            }
            return encoding.header
        }
    }

    /// A block measured before it is written: its header (and score front), its row numbers' first and width, and its
    /// value's exact size, from one pass over its rows' bodies (each checked to be a posting, within the bodies'
    /// bytes, the rows ascending); then ``write(to:)`` writes the value in a second pass over the same entries,
    /// wherever the caller has room for it (an array, or the map itself). Made and used inside the run's
    /// ``SearchPostingRun/withBuffers(_:)``, whose buffers it reads.
    struct Encoding {
        let header: SearchBlockHeader
        let first: UInt64
        let width: Int
        let size: Int
        private let documents: UnsafeBufferPointer<UInt64>
        private let starts: UnsafeBufferPointer<Int>
        private let bodies: UnsafeBufferPointer<UInt8>
        private let range: Range<Int>

        /// Measures the block keyed `key` of entries `range` (rows `documents`, bodies `bodies[starts[i]..<end(i)]`).
        /// - Throws: ``SearchBytes/Malformed`` when `range` is empty or not within the run, a body is not a posting or
        ///   not within `bodies` (a start past the end, or past the next entry's), or the rows do not ascend: ``write(to:)``
        ///   then never reads or writes outside what was measured.
        init(
            documents: UnsafeBufferPointer<UInt64>, starts: UnsafeBufferPointer<Int>, bodies: UnsafeBufferPointer<UInt8>, _ range: Range<Int>,
            key: UInt64
        ) throws {
            guard !range.isEmpty else { throw SearchBytes.Malformed("a posting block of no rows") }
            guard range.lowerBound >= 0, range.upperBound <= documents.count, range.upperBound <= starts.count else {
                throw SearchBytes.Malformed("a posting block of entries \(range) of a run of \(min(documents.count, starts.count))")
            }
            self.documents = documents
            self.starts = starts
            self.bodies = bodies
            self.range = range
            let bodyCount = bodies.count
            func end(_ entry: Int) -> Int { entry + 1 < starts.count ? starts[entry + 1] : bodyCount }
            var maximumOccurrences = 0
            var minimumLength = Int.max
            // The row with the fewest words per occurrence (the densest): length / occurrences smallest.
            var densest = (length: 0, occurrences: 0)
            // The rows' front (``SearchScoreFront``): a row is on it only if no row as short has as many occurrences,
            // so only each length's most occurrences count. Rows shorter than ``frontTableLengths`` (almost all) keep
            // those in a table, read in length order at the end; longer ones are inserted into `frontPoints` as they
            // come. (The same front as inserting every row: a row the table leaves out is beaten by its length's best.)
            var frontPoints: [SearchScoreFront.Point] = []
            var size = 0
            try withUnsafeTemporaryAllocation(of: UInt32.self, capacity: frontTableLengths) { mostByLength in
                mostByLength.initialize(repeating: 0)
                var longestInTable = -1
                for entry in range {
                    let start = starts[entry]
                    let bodySize = end(entry) &- start
                    // Every body within the bodies' bytes (the write copies them), every row above the one before.
                    guard start >= 0, bodySize >= 0, start <= bodyCount &- bodySize else {
                        throw SearchBytes.Malformed("row \(documents[entry])'s posting body (at \(start), \(bodySize) bytes) is outside the run's \(bodyCount) bytes")
                    }
                    guard entry == range.lowerBound || documents[entry] > documents[entry &- 1] else {
                        throw SearchBytes.Malformed("the rows of a posting block do not ascend (\(documents[entry &- 1]), then \(documents[entry]))")
                    }
                    let summary: (length: Int, occurrences: Int)
                    if bodySize == SearchPosting.compactBodySize, let base = bodies.baseAddress {
                        // The usual body, a word once in a short row: `length 1 field 1 1 position`, six one-byte
                        // values. Read at once (two loads), for what ``SearchPosting/summary(of:)`` gives it: its
                        // length and one occurrence, when the length is at least 1 (the position is not read there
                        // either). Any other six bytes are read through it.
                        let raw = UnsafeRawPointer(base + start)
                        let head = UInt32(littleEndian: raw.loadUnaligned(as: UInt32.self))
                        let tail = UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: 4, as: UInt16.self))
                        if head & 0xFF80_FF80 == 0x0100_0100, head & 0xFF != 0, tail & 0xFF == 1 {
                            summary = (Int(head & 0xFF), 1)
                        } else {
                            summary = try Self.summary(of: bodies, start, bodySize, row: documents[entry])
                        }
                    } else {
                        summary = try Self.summary(of: bodies, start, bodySize, row: documents[entry])
                    }
                    // (A summary's occurrences are at least 1 and at most its length, which fits 32 bits: ``SearchCounts``.)
                    if summary.length < frontTableLengths {
                        if UInt32(truncatingIfNeeded: summary.occurrences) > mostByLength[summary.length] {
                            mostByLength[summary.length] = UInt32(truncatingIfNeeded: summary.occurrences)
                        }
                        if summary.length > longestInTable { longestInTable = summary.length }
                    } else {
                        SearchScoreFront.insert(SearchScoreFront.Point(occurrences: summary.occurrences, length: summary.length), into: &frontPoints)
                    }
                    if summary.occurrences > maximumOccurrences { maximumOccurrences = summary.occurrences }
                    if summary.length < minimumLength { minimumLength = summary.length }
                    // (Most rows count one occurrence, as the densest so far often does: then the shorter is denser,
                    // without the products.)
                    if densest.occurrences == 0 {
                        densest = (summary.length, summary.occurrences)
                    } else if summary.occurrences == 1, densest.occurrences == 1 {
                        if summary.length < densest.length { densest.length = summary.length }
                    } else if SearchBlockHeader.isDenser(length: summary.length, occurrences: summary.occurrences, than: densest.length, densest.occurrences) {
                        densest = (summary.length, summary.occurrences)
                    }
                    size &+= (bodySize < 0x80 ? 1 : VarInt.size(of: UInt64(bodySize))) &+ bodySize
                }
                // The table's front: by length, each length whose most occurrences pass every shorter length's.
                var most: UInt32 = 0
                if longestInTable >= 0 {
                    for length in 0...longestInTable where mostByLength[length] > most {
                        most = mostByLength[length]
                        SearchScoreFront.insert(SearchScoreFront.Point(occurrences: Int(most), length: length), into: &frontPoints)
                    }
                }
            }
            let front = SearchScoreFront(cutting: frontPoints)
            size += front.encodedSize
            first = range.isEmpty ? 0 : documents[range.lowerBound]
            let last = range.isEmpty ? 0 : documents[range.upperBound - 1]
            width = RowNumbers.width(spanning: last &- first)
            size += VarInt.size(of: first) + 1 + range.count * width
            var header = SearchBlockHeader(
                block: key, count: range.count, maximumOccurrences: maximumOccurrences, minimumLength: range.isEmpty ? 0 : minimumLength,
                densestLength: densest.length, densestOccurrences: densest.occurrences)
            header.front = front
            size += VarInt.size(of: UInt64(header.count)) + VarInt.size(of: UInt64(header.maximumOccurrences))
                + VarInt.size(of: UInt64(header.minimumLength)) + VarInt.size(of: UInt64(header.densestLength))
                + VarInt.size(of: UInt64(header.densestOccurrences))
            self.header = header
            self.size = size
        }

        /// The summary of the body `bodies[start..<start + size]`, a damaged one named by its row.
        private static func summary(of bodies: UnsafeBufferPointer<UInt8>, _ start: Int, _ size: Int, row: UInt64) throws -> (length: Int, occurrences: Int) {
            do {
                return try SearchPosting.summary(of: UnsafeBufferPointer(rebasing: bodies[start..<(start + size)]))
            } catch let error as SearchBytes.Malformed {
                throw SearchBytes.Malformed("row \(row)'s posting: \(error)")
            }
        }

        /// Writes the block's value to `out`, which must be exactly ``size`` bytes: checked before a byte is written
        /// (the entries were checked when measured, so the write stays within `out`).
        /// - Throws: ``SearchBytes/Malformed`` when `out` is not ``size`` bytes (nothing written), or the value came
        ///   out another size than measured.
        func write(to out: UnsafeMutableRawBufferPointer) throws {
            guard out.count == size, let base = out.baseAddress else {
                throw SearchBytes.Malformed("a posting block of \(size) bytes given \(out.count) bytes to be written to")
            }
            let written = write(to: base.assumingMemoryBound(to: UInt8.self))
            // Every byte counted was written (an empty value would be stored as a block of no bytes).
            guard written == size else { throw SearchBytes.Malformed("a posting block encoded to \(written) of its \(size) bytes") }
        }

        /// Writes the block's value (``size`` bytes, the entries it was measured from) to `out`; returns the bytes
        /// written.
        private func write(to out: UnsafeMutablePointer<UInt8>) -> Int {
            let bodyCount = bodies.count
            var offset = VarInt.write(UInt64(header.count), to: out)
            offset += VarInt.write(UInt64(header.maximumOccurrences), to: out + offset)
            offset += VarInt.write(UInt64(header.minimumLength), to: out + offset)
            offset += VarInt.write(UInt64(header.densestLength), to: out + offset)
            offset += VarInt.write(UInt64(header.densestOccurrences), to: out + offset)
            offset += header.front.write(to: out + offset)
            // The row numbers: the first, then each row's distance from it in `width` bytes (little-endian).
            offset += VarInt.write(first, to: out + offset)
            out[offset] = UInt8(truncatingIfNeeded: width)
            offset += 1
            let rows = UnsafeMutableRawPointer(out + offset)
            let first = self.first
            switch width {
            case 1: for (index, entry) in range.enumerated() { rows.storeBytes(of: UInt8(truncatingIfNeeded: documents[entry] &- first), toByteOffset: index, as: UInt8.self) }
            case 2:
                for (index, entry) in range.enumerated() {
                    rows.storeBytes(of: UInt16(truncatingIfNeeded: documents[entry] &- first).littleEndian, toByteOffset: 2 &* index, as: UInt16.self)
                }
            case 4:
                for (index, entry) in range.enumerated() {
                    rows.storeBytes(of: UInt32(truncatingIfNeeded: documents[entry] &- first).littleEndian, toByteOffset: 4 &* index, as: UInt32.self)
                }
            default:
                for (index, entry) in range.enumerated() {
                    rows.storeBytes(of: (documents[entry] &- first).littleEndian, toByteOffset: 8 &* index, as: UInt64.self)
                }
            }
            offset += range.count &* width
            for entry in range {
                // The body's size, so that a query passes over a body it does not need.
                let start = starts[entry]
                let bodySize = (entry + 1 < starts.count ? starts[entry + 1] : bodyCount) &- start
                if bodySize < 0x80 {
                    out[offset] = UInt8(truncatingIfNeeded: bodySize)
                    offset += 1
                } else {
                    offset += VarInt.write(UInt64(bodySize), to: out + offset)
                }
                // (A body of a byte or more: the bodies are not empty.)
                guard bodySize > 0, let source = bodies.baseAddress else { continue }
                if bodySize == SearchPosting.compactBodySize {
                    // The usual body (six bytes): two loads and two stores.
                    let from = UnsafeRawPointer(source + start)
                    let to = UnsafeMutableRawPointer(out + offset)
                    to.storeBytes(of: from.loadUnaligned(as: UInt32.self), as: UInt32.self)
                    to.storeBytes(of: from.loadUnaligned(fromByteOffset: 4, as: UInt16.self), toByteOffset: 4, as: UInt16.self)
                } else {
                    // Bodies are a few bytes: copied byte by byte (no call per posting).
                    for index in 0..<bodySize { out[offset &+ index] = source[start &+ index] }
                }
                offset += bodySize
            }
            return offset
        }
    }

    /// Rows shorter than this many words keep their front counts in ``encode(_:_:key:)``'s table (longer rows are few).
    static let frontTableLengths = 256

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
        let count = run.count
        let bodyCount = run.writer.bytes.count
        // (Through a pointer: a bulk write cuts every posting it adds here.)
        run.starts.withUnsafeBufferPointer { starts in
            for entry in 0..<count {
                let end = entry &+ 1 < starts.count ? starts[entry &+ 1] : bodyCount
                let entrySize = end &- starts[entry] &+ 7
                if entry > start, entry &- start == maximumDocuments || size &+ entrySize > targetBytes {
                    chunks.append(start..<entry)
                    start = entry
                    size = 0
                }
                size &+= entrySize
            }
        }
        if start < count { chunks.append(start..<count) }
        return chunks
    }

    /// Appends the row numbers of the block `raw` (keyed `blockKey`, after the block keyed `previousKey`) to
    /// `documents`, checked to ascend within the block's range, without reading a body: an intersection reads its
    /// rarest list's rows this way, and the lengths and counts of the few that survive the other lists afterwards
    /// (``readCounts(in:base:rows:slots:next:_:)``). `rowsBuffer`: scratch room, grown when a block has more rows.
    /// - Throws: ``SearchBytes/Malformed`` for a damaged block: row numbers that do not ascend or lie outside its range,
    ///   row numbers past the block.
    static func appendRows(
        of raw: UnsafeRawBufferPointer, after previousKey: UInt64, upTo blockKey: UInt64, to documents: inout [UInt64],
        rowsBuffer: inout [UInt64]
    ) throws {
        let layout = try Layout(raw)
        let rows = layout.rows
        try rows.check(previousKey: previousKey, blockKey: blockKey)
        guard rows.count > 0 else { return }
        if rowsBuffer.count < rows.count { rowsBuffer = [UInt64](repeating: 0, count: rows.count) }
        try rowsBuffer.withUnsafeMutableBufferPointer { buffer in
            guard let decoded = buffer.baseAddress else { return }
            rows.decode(into: decoded)
            // (`check` compared the first row with the block before and the last with the key: ascending, every row is
            // in the range.)
            var previous = decoded[0]
            for index in 1..<rows.count {
                let row = decoded[index]
                guard row > previous else { throw SearchBytes.Malformed("the rows of a block are out of order") }
                previous = row
            }
            documents.append(contentsOf: UnsafeBufferPointer(start: decoded, count: rows.count))
        }
    }

    /// Reads the length and per-field counts of the rows of the block `raw` that are `slots[next...]` (ascending
    /// positions in a list's rows, `rows`; the block's first row is at position `base`), calling `visit` with each
    /// row's place in `slots` and the values ``readCounts(in:body:_:)`` gives, and moves `next` past them. Returns the
    /// block's row count (the next block's `base` is this one's plus it). A row of the block must be the row `rows`
    /// holds at its position: the block read again is the one the rows came from.
    /// - Throws: ``SearchBytes/Malformed`` for a damaged block, a body past it, counts past their body, or a row other
    ///   than the one at its position.
    static func readCounts(
        in raw: UnsafeRawBufferPointer, base: Int, rows: UnsafeBufferPointer<UInt64>, slots: UnsafeBufferPointer<Int>, next: inout Int,
        _ visit: (_ place: Int, _ length: Int, _ field: Int, _ count: Int) -> Void
    ) throws -> Int {
        let layout = try Layout(raw)
        let end = base + layout.count
        guard next < slots.count, slots[next] < end else { return layout.count }
        var bodies = try BodyWalker(raw, layout: layout)
        while next < slots.count, slots[next] < end {
            let slot = slots[next]
            let index = slot - base
            guard index >= 0, slot < rows.count, layout.rows.row(index) == rows[slot] else {
                throw SearchBytes.Malformed("a block read again does not hold the rows read from it")
            }
            let place = next
            try readCounts(in: raw, body: try bodies.body(of: index)) { length, field, count in visit(place, length, field, count) }
            next += 1
        }
        return layout.count
    }

    /// Calls `matched(slot, body)` for each row of the block `raw` (keyed `blockKey`, after the block keyed
    /// `previousKey`) that is `candidates[slot]`, for slots from `next` on (ascending; `next` ends past the last
    /// candidate the block could hold); compares row numbers only (``RowNumbers``, decoded into `rowsBuffer`, scratch
    /// room grown when a block has more rows) and reads no other body.
    /// - Throws: ``SearchBytes/Malformed`` for a damaged block: row numbers that do not ascend, a row outside its
    ///   block's range, a body past the block; and what `matched` throws.
    static func matchRows(
        of raw: UnsafeRawBufferPointer, after previousKey: UInt64, upTo blockKey: UInt64, candidates: UnsafeBufferPointer<UInt64>,
        next: inout Int, rowsBuffer: inout [UInt64], _ matched: (_ slot: Int, _ body: Range<Int>) throws -> Void
    ) throws {
        let layout = try Layout(raw)
        let rows = layout.rows
        try rows.check(previousKey: previousKey, blockKey: blockKey)
        guard rows.count > 0 else { return }
        var bodies = try BodyWalker(raw, layout: layout)
        if rowsBuffer.count < rows.count { rowsBuffer = [UInt64](repeating: 0, count: rows.count) }
        try rowsBuffer.withUnsafeMutableBufferPointer { buffer in
            guard let documents = buffer.baseAddress else { return }
            rows.decode(into: documents)
            // Each candidate moves the block's row forward to the first at or past it. `check` made the last row at
            // least every candidate compared (`candidate <= last`), so the walk stops at the last row at the latest,
            // and rows that do not ascend on the way throw.
            let last = documents[rows.count - 1]
            var slot = next
            var index = 0
            var document = documents[0]
            while slot < candidates.count {
                let candidate = candidates[slot]
                if candidate > last { break }
                while document < candidate {
                    index += 1
                    let following = documents[index]
                    guard following > document else { throw SearchBytes.Malformed("the rows of a block are out of order") }
                    document = following
                }
                if document == candidate { try matched(slot, try bodies.body(of: index)) }
                slot += 1
            }
            // The rows the walk did not reach ascend too: a row out of order hides a candidate behind a larger row
            // the walk stopped at (every row is compared once, here or on the way).
            while index + 1 < rows.count {
                index += 1
                let following = documents[index]
                guard following > document else { throw SearchBytes.Malformed("the rows of a block are out of order") }
                document = following
            }
            next = slot
        }
    }

    /// Reads the length and per-field counts of the entry whose body is `body` in the block `raw` (the place
    /// ``BodyWalker`` gave for this block). Every read stays inside the body: counts that run past its end (bytes that
    /// pass the block's checksum but disagree with the size the block gives the body) throw, never read the next
    /// entry's bytes as counts.
    /// - Throws: ``SearchBytes/Malformed`` when the body is outside the block or its counts run past its end.
    static func readCounts(in raw: UnsafeRawBufferPointer, body: Range<Int>, _ visit: (_ length: Int, _ field: Int, _ count: Int) -> Void) throws {
        guard body.lowerBound >= 0, body.upperBound <= raw.count else { throw SearchBytes.Malformed("a body outside its block") }
        var reader = SearchBytes.Reader(UnsafeRawBufferPointer(rebasing: raw[body]))
        _ = try SearchCounts.read(&reader, visit)
    }

    /// A block's row numbers, read in place: `count` numbers, the first (``first``) then each row's distance from it in
    /// ``width`` bytes, little-endian (the first row's distance is 0). Fixed-width, so that an intersection compares
    /// row numbers at a load each instead of decoding every entry (format 6).
    struct RowNumbers {
        private let base: UnsafeRawPointer?
        let count: Int
        let first: UInt64
        let width: Int

        init(base: UnsafeRawPointer?, count: Int, first: UInt64, width: Int) {
            self.base = base
            self.count = count
            self.first = first
            self.width = width
        }

        /// The fewest bytes (1, 2, 4 or 8) that hold a distance of `span`.
        static func width(spanning span: UInt64) -> Int {
            span <= 0xFF ? 1 : span <= 0xFFFF ? 2 : span <= 0xFFFF_FFFF ? 4 : 8
        }

        /// Row `index` (`0..<count`, which ``Layout`` checked to lie in the block). A distance that carries past
        /// `UInt64.max` wraps below ``first``: the callers' ascending check refuses it.
        @inline(__always)
        func row(_ index: Int) -> UInt64 {
            guard let base else { return first }
            let at = base + index &* width
            switch width {
            case 1: return first &+ UInt64(at.load(as: UInt8.self))
            case 2: return first &+ UInt64(UInt16(littleEndian: at.loadUnaligned(as: UInt16.self)))
            case 4: return first &+ UInt64(UInt32(littleEndian: at.loadUnaligned(as: UInt32.self)))
            default: return first &+ UInt64(littleEndian: at.loadUnaligned(as: UInt64.self))
            }
        }

        /// Writes the rows, in order, to `out` (room for ``count``): one loop per width, a load and an add a row.
        func decode(into out: UnsafeMutablePointer<UInt64>) {
            guard let base else {
                for index in 0..<count { out[index] = first }
                return
            }
            switch width {
            case 1:
                for index in 0..<count { out[index] = first &+ UInt64(base.load(fromByteOffset: index, as: UInt8.self)) }
            case 2:
                for index in 0..<count {
                    out[index] = first &+ UInt64(UInt16(littleEndian: base.loadUnaligned(fromByteOffset: 2 &* index, as: UInt16.self)))
                }
            case 4:
                for index in 0..<count {
                    out[index] = first &+ UInt64(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: 4 &* index, as: UInt32.self)))
                }
            default:
                for index in 0..<count {
                    out[index] = first &+ UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 8 &* index, as: UInt64.self))
                }
            }
        }

        /// Checks the ends: the first row's distance is 0 and it comes after `previousKey`, the last is at most
        /// `blockKey` (the callers check that the rows ascend between them).
        func check(previousKey: UInt64, blockKey: UInt64) throws {
            guard count > 0 else { return }
            guard row(0) == first, first > previousKey, row(count - 1) <= blockKey, row(count - 1) >= first else {
                throw SearchBytes.Malformed("a row outside its block's range")
            }
        }
    }

    /// Where a block's parts are: its header, its row numbers (``RowNumbers``) and where its entries (`varint(body size)`
    /// and body, by row) start. Checks that the row numbers fit in the block.
    struct Layout {
        let count: Int
        let maximumOccurrences: Int
        let minimumLength: Int
        let densestLength: Int
        let densestOccurrences: Int
        /// Where the score front starts (``SearchScoreFront``).
        let frontStart: Int
        let rows: RowNumbers
        let entriesStart: Int

        init(_ raw: UnsafeRawBufferPointer) throws {
            var reader = SearchBytes.Reader(raw)
            count = try reader.int()
            maximumOccurrences = try reader.int()
            minimumLength = try reader.int()
            densestLength = try reader.int()
            densestOccurrences = try reader.int()
            guard count <= raw.count else { throw SearchBytes.Malformed("a block count larger than the block") }
            frontStart = reader.offset
            try SearchScoreFront.skip(&reader)
            let first = try reader.varint()
            let width = Int(try reader.byte())
            guard width == 1 || width == 2 || width == 4 || width == 8 else { throw SearchBytes.Malformed("row numbers \(width) bytes wide") }
            let rowsStart = reader.offset
            // (count ≤ raw.count: the product cannot overflow.)
            try reader.skip(count * width)
            entriesStart = reader.offset
            rows = RowNumbers(base: raw.baseAddress.map { $0 + rowsStart }, count: count, first: first, width: width)
        }
    }

    /// Walks a block's entries by their sizes to the body of a row, forward only (no body read).
    struct BodyWalker {
        private var reader: SearchBytes.Reader
        private let count: Int
        private var index = 0

        init(_ raw: UnsafeRawBufferPointer, layout: Layout) throws {
            reader = SearchBytes.Reader(raw)
            count = layout.count
            try reader.skip(layout.entriesStart)
        }

        /// The body of the entry of row index `entry` (at least the last one asked for).
        /// - Throws: ``SearchBytes/Malformed`` when an entry runs past the block, or `entry` is behind or past the
        ///   entries.
        mutating func body(of entry: Int) throws -> Range<Int> {
            guard entry >= index, entry < count else { throw SearchBytes.Malformed("an entry outside its block") }
            try reader.skipEntries(entry - index)
            index = entry
            let size = try reader.int()
            let start = reader.offset
            try reader.skip(size)
            index += 1
            return start..<reader.offset
        }
    }

    /// Reads a block's entries in order.
    struct Reader {
        private var reader: SearchBytes.Reader
        private let rows: RowNumbers
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
        /// Its rows' score front.
        let front: SearchScoreFront
        private var index = 0
        private var document: UInt64 = 0
        /// Where the current entry's body starts and ends in the block.
        private(set) var bodyStart = 0
        private(set) var bodyEnd = 0

        /// Where the next entry starts.
        var offset: Int { reader.offset }

        init(_ raw: UnsafeRawBufferPointer) throws {
            let layout = try Layout(raw)
            reader = SearchBytes.Reader(raw)
            try reader.skip(layout.entriesStart)
            rows = layout.rows
            count = layout.count
            maximumOccurrences = layout.maximumOccurrences
            minimumLength = layout.minimumLength
            densestLength = layout.densestLength
            densestOccurrences = layout.densestOccurrences
            var frontReader = SearchBytes.Reader(raw)
            try frontReader.skip(layout.frontStart)
            front = try SearchScoreFront.decode(&frontReader)
        }

        /// The next entry's row, its body to be read (``skipBody()``, ``readCounts(_:)``) before the next call; `nil`
        /// after the last.
        @inline(__always)
        mutating func next() throws -> UInt64? {
            guard index < count else {
                guard reader.isAtEnd else { throw SearchBytes.Malformed("bytes after a block's last entry") }
                return nil
            }
            // Row numbers start at 1 and ascend; the first is the block's first number (distance 0).
            let next = rows.row(index)
            guard index == 0 ? next == rows.first && next > 0 : next > document else {
                throw SearchBytes.Malformed("the rows of a block are out of order")
            }
            index += 1
            document = next
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
            _ = try SearchCounts.read(&reader, visit)
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
