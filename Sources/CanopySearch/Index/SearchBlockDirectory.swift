import CanopyCore

/// The header of one stored posting block: its key, its rows and what bounds their scores (as its value starts with,
/// ``SearchPostingBlock``), as the list's directory holds it.
struct SearchBlockHeader: Hashable {
    /// The block's key (its last row, or ``SearchPostingBlock/openBlock``).
    var block: UInt64
    var count: Int
    var maximumOccurrences: Int
    var minimumLength: Int
    var densestLength: Int
    var densestOccurrences: Int
    /// Its rows' (occurrences, length) front, which bounds their scores exactly for one field (format 6).
    var front = SearchScoreFront()

    /// Whether a row of `length` words holding the term `occurrences` times is denser (fewer words per occurrence)
    /// than one of `otherLength` words and `otherOccurrences`: `length · otherOccurrences < otherLength · occurrences`,
    /// multiplied in full width (counts read from disk reach 2^32 − 1, and sums of them more: a product of two can
    /// pass what an `Int` holds, and a damaged value must not trap).
    static func isDenser(length: Int, occurrences: Int, than otherLength: Int, _ otherOccurrences: Int) -> Bool {
        let left = length.multipliedFullWidth(by: otherOccurrences)
        let right = otherLength.multipliedFullWidth(by: occurrences)
        return (left.high, left.low) < (right.high, right.low)
    }
}

/// The directory of a posting table (`postings` or `prefixes`): per list (a word or a prefix), its blocks' headers in
/// chunks, so that a query learns how many rows a list holds and which of its blocks can hold its best rows from a
/// few small values instead of one read per block (a block is about 1.6 KB, checksummed whole at every read).
///
/// A chunk holds the headers of up to ``maximumBlocks`` consecutive blocks of one list, keyed `word 0 K` where `K` is
/// its last block's key: as blocks partition a list's rows, chunks partition its blocks, so the chunk naming block
/// `k` is the first key `>= word 0 k`. Value: `varint(blocks)`, `varint(rows in all)`, the chunk's bound inputs
/// (`varint(most occurrences)` of its blocks, `varint(length)` and `varint(occurrences)` of its densest row, and the
/// front of its blocks' score fronts, ``SearchScoreFront``: a bound of every block's, so a query decodes only the
/// chunks whose bound reaches its best scores), then per block, by key: `varint(key − previous key)` (the first from
/// 0), `varint(rows)`, `varint(most occurrences)`, `varint(shortest row)`, `varint(length)` and `varint(occurrences)`
/// of its densest row, and its score front (as its block's header holds them). Every write of a block rewrites its chunk
/// in the same transaction (``apply(removing:adding:term:to:summaries:in:)``); a block read through the directory is checked
/// against it (a disagreement is damage, reported, never a wrong result used).
enum SearchBlockDirectory {
    /// Blocks per chunk (a chunk is then at most about 300 bytes). A query that opens a chunk decodes all its headers
    /// (most of them for blocks it will not read: its best rows are spread over the list), and finds the chunks to open
    /// in the list's summary (``SearchListSummary``), one value whatever their number: 16, not 64 (format 6, whose
    /// queries read every chunk), so that a prefix query of a 1M-row index decodes a third of the headers.
    static let maximumBlocks = 16

    /// A chunk as a query first reads it: its rows in all and what bounds its blocks' rows, its blocks' headers
    /// decoded only if that bound reaches the best scores (``decode(_:chunkKey:into:)``).
    struct ChunkSummary: Hashable {
        var key: UInt64
        var blocks: Int
        var rows: Int
        /// The most occurrences and the densest row of all its blocks (``SearchBlockHeader/minimumLength`` unused).
        var bound: SearchBlockHeader
    }

    /// What bounds the rows of all of `headers`: their most occurrences and their densest row (the merged front,
    /// ``SearchScoreFront/init(merging:)``, is left out: a chunk's is written with it, and checked against its blocks'
    /// fronts when read).
    static func summary(of headers: ArraySlice<SearchBlockHeader>) -> SearchBlockHeader {
        var result = SearchBlockHeader(block: headers.last?.block ?? 0, count: 0, maximumOccurrences: 0, minimumLength: 0, densestLength: 0, densestOccurrences: 0)
        for header in headers {
            result.count += header.count
            result.maximumOccurrences = max(result.maximumOccurrences, header.maximumOccurrences)
            if result.densestOccurrences == 0
                || SearchBlockHeader.isDenser(
                    length: header.densestLength, occurrences: header.densestOccurrences, than: result.densestLength, result.densestOccurrences) {
                result.densestLength = header.densestLength
                result.densestOccurrences = header.densestOccurrences
            }
        }
        return result
    }

    /// The summary of a chunk of `headers` (ascending keys, at most ``maximumBlocks``), keyed by its last block.
    static func chunkSummary(of headers: ArraySlice<SearchBlockHeader>) -> ChunkSummary {
        var bound = summary(of: headers)
        bound.front = SearchScoreFront(merging: headers)
        bound.minimumLength = 0
        return ChunkSummary(key: bound.block, blocks: headers.count, rows: bound.count, bound: bound)
    }

    /// Appends a chunk's summary as its value starts with it: `varint(blocks)`, `varint(rows)`, its bound (most
    /// occurrences, densest row, front). (A list's summary holds the same, ``SearchListSummary``.)
    static func appendSummary(_ chunk: ChunkSummary, to out: inout ByteWriter) {
        out.append(varint: UInt64(chunk.blocks))
        out.append(varint: UInt64(chunk.rows))
        out.append(varint: UInt64(chunk.bound.maximumOccurrences))
        out.append(varint: UInt64(chunk.bound.densestLength))
        out.append(varint: UInt64(chunk.bound.densestOccurrences))
        chunk.bound.front.encode(into: &out)
    }

    /// The value of a chunk of `headers` (ascending keys, at most ``maximumBlocks``).
    static func encode(_ headers: ArraySlice<SearchBlockHeader>) -> [UInt8] {
        encode(headers, summary: chunkSummary(of: headers))
    }

    /// The value of a chunk of `headers` whose summary is `summary` (``chunkSummary(of:)``).
    static func encode(_ headers: ArraySlice<SearchBlockHeader>, summary: ChunkSummary) -> [UInt8] {
        var out = ByteWriter(capacity: 8 + headers.count * 12)
        appendSummary(summary, to: &out)
        var previous: UInt64 = 0
        for header in headers {
            out.append(varint: header.block - previous)
            previous = header.block
            SearchBytes.append(varint: UInt64(header.count), to: &out)
            SearchBytes.append(varint: UInt64(header.maximumOccurrences), to: &out)
            SearchBytes.append(varint: UInt64(header.minimumLength), to: &out)
            SearchBytes.append(varint: UInt64(header.densestLength), to: &out)
            SearchBytes.append(varint: UInt64(header.densestOccurrences), to: &out)
            header.front.encode(into: &out)
        }
        return out.bytes
    }

    /// Appends the headers of the chunk keyed `chunkKey` to `headers`;
    /// returns its rows in all.
    /// - Parameter previousChunkKey: the key of the list's chunk before this one (0 for its first): every block of
    ///   this chunk comes after it, so that no block is listed by two chunks (read twice, its rows counted twice).
    /// - Throws: ``SearchBytes/Malformed`` when the chunk is damaged: keys that do not ascend past the previous
    ///   chunk's, a last key other than the chunk's, rows that do not add up to its total.
    @discardableResult
    static func decode(
        _ raw: UnsafeRawBufferPointer, chunkKey: UInt64, after previousChunkKey: UInt64 = 0, into headers: inout [SearchBlockHeader]
    ) throws -> Int {
        var reader = SearchBytes.Reader(raw)
        let chunk = try readSummary(&reader, chunkKey: chunkKey)
        let count = chunk.blocks
        let total = chunk.rows
        let first = headers.count
        var previous = previousChunkKey
        var key: UInt64 = 0
        var sum = 0
        for _ in 0..<count {
            let (next, overflow) = key.addingReportingOverflow(try reader.varint())
            guard !overflow, next > previous else {
                throw SearchBytes.Malformed("the blocks of a directory chunk are out of order")
            }
            key = next
            previous = next
            var header = SearchBlockHeader(
                block: key, count: try reader.int(), maximumOccurrences: try reader.int(), minimumLength: try reader.int(),
                densestLength: try reader.int(), densestOccurrences: try reader.int())
            header.front = try SearchScoreFront.decode(&reader)
            guard header.count > 0 else { throw SearchBytes.Malformed("a directory entry of an empty block") }
            sum += header.count
            headers.append(header)
        }
        var counts = chunk.bound
        counts.front = SearchScoreFront()
        // The chunk's front must bound every block's (a query skips the chunk's blocks by it).
        guard reader.isAtEnd, key == chunkKey, sum == total, summary(of: headers[first...]) == counts,
              headers[first...].allSatisfy({ chunk.bound.front.bounds($0.front) }) else {
            throw SearchBytes.Malformed("a directory chunk does not add up (its key, its last block, its rows, its bound or its length)")
        }
        return total
    }

    /// Reads a chunk's start: its blocks and rows in all and its bound; then `reader` is at its first block.
    static func readSummary(_ reader: inout SearchBytes.Reader, chunkKey: UInt64) throws -> ChunkSummary {
        let count = try reader.int()
        guard count > 0, count <= maximumBlocks else { throw SearchBytes.Malformed("a directory chunk of \(count) blocks") }
        let rows = try reader.int()
        var bound = SearchBlockHeader(
            block: chunkKey, count: rows, maximumOccurrences: try reader.int(), minimumLength: 0, densestLength: try reader.int(),
            densestOccurrences: try reader.int())
        bound.front = try SearchScoreFront.decode(&reader)
        return ChunkSummary(key: chunkKey, blocks: count, rows: rows, bound: bound)
    }

    /// The summary of a chunk's value (``ChunkSummary``), without its blocks.
    static func summary(_ raw: UnsafeRawBufferPointer, chunkKey: UInt64) throws -> ChunkSummary {
        var reader = SearchBytes.Reader(raw)
        return try readSummary(&reader, chunkKey: chunkKey)
    }

    /// The headers of `term`'s blocks, by key, from `directory`.
    static func headers(of term: [UInt8], in directory: ExtensionTable<BytesCoding, BytesCoding>, _ transaction: ReadTransaction) throws -> [SearchBlockHeader] {
        var headers: [SearchBlockHeader] = []
        try directory.forEachBytes(in: transaction, prefix: term + [0]) { key, value in
            try decode(value, chunkKey: try SearchPostingBlock.block(ofKey: key), after: headers.last?.block ?? 0, into: &headers)
            return true
        }
        return headers
    }

    /// Applies a write of `term`'s blocks to its directory: the blocks keyed `removed` are gone or rewritten, those of
    /// `added` are written (a key in both: rewritten). The chunks from the one naming the lowest key to the one naming
    /// the highest are read, merged with the changes and written again, cut into chunks of ``maximumBlocks``; the
    /// list's summary (``SearchListSummary``) is written with them.
    static func apply(
        removing removed: [UInt64], adding added: [SearchBlockHeader], term: [UInt8],
        to directory: ExtensionTable<BytesCoding, BytesCoding>, summaries: ExtensionTable<BytesCoding, BytesCoding>,
        in transaction: ReadWriteTransaction
    ) throws {
        guard let low = (removed + added.map(\.block)).min(), let high = (removed + added.map(\.block)).max() else { return }
        // A list with a summary: the chunks from the one naming `low` to the one naming `high` are read, the others
        // known from the summary. A list without (one chunk at most: most words) is read whole, so that a list of
        // several chunks that lost its summary is found here (a summary written from part of it would hide the rest).
        let summarized = try summaries.withValue(forKey: term, in: transaction) { raw in try raw.map(SearchListSummary.decode) }
        let readFrom = summarized == nil ? 0 : low
        var loadedKeys: [UInt64] = []
        var loaded: [ChunkSummary] = []
        var entries: [SearchBlockHeader] = []
        try directory.forEachBytes(in: transaction, from: SearchPostingBlock.key(term: term, block: readFrom)) { key, value in
            guard key.count == term.count + 9, key.starts(with: term), key[term.count] == 0 else { return false }
            let chunkKey = try SearchPostingBlock.block(ofKey: key)
            // (The chunk before the first one read is not read: its blocks are not checked against it.)
            try decode(value, chunkKey: chunkKey, after: loadedKeys.last ?? 0, into: &entries)
            loaded.append(try summary(value, chunkKey: chunkKey))
            loadedKeys.append(chunkKey)
            return summarized == nil || chunkKey < high
        }
        guard summarized != nil || loaded.count < 2 else {
            throw SearchBytes.Malformed("a list of \(loaded.count) directory chunks has no summary")
        }
        let gone = Set(removed).union(added.map(\.block))
        var merged = entries.filter { !gone.contains($0.block) } + added
        merged.sort { $0.block < $1.block }
        var written = Set<UInt64>()
        var writtenChunks: [ChunkSummary] = []
        for start in stride(from: 0, to: merged.count, by: maximumBlocks) {
            let chunk = merged[start..<min(merged.count, start + maximumBlocks)]
            guard let last = chunk.last?.block else { continue }
            let summary = chunkSummary(of: chunk)
            try directory.put(encode(chunk, summary: summary), forKey: SearchPostingBlock.key(term: term, block: last), in: transaction)
            written.insert(last)
            writtenChunks.append(summary)
        }
        for key in loadedKeys where !written.contains(key) {
            try directory.remove(SearchPostingBlock.key(term: term, block: key), in: transaction)
        }
        // (A list of one chunk that stays one, most words: no summary before or after, nothing to write.)
        guard summarized != nil || writtenChunks.count >= 2 else { return }
        try SearchListSummary.update(
            term: term, before: summarized ?? loaded, read: loaded, written: writtenChunks, lowestChanged: readFrom, summaries: summaries,
            in: transaction)
    }

    /// Appends the directory of a list written whole (population) to `directory`, whose keys all precede `term`'s,
    /// and its summary to `summaries` (a list of several chunks).
    static func append(
        _ headers: [SearchBlockHeader], term: [UInt8], to directory: ExtensionTable<BytesCoding, BytesCoding>,
        summaries: ExtensionTable<BytesCoding, BytesCoding>, in transaction: ReadWriteTransaction
    ) throws {
        var chunks: [ChunkSummary] = []
        for start in stride(from: 0, to: headers.count, by: maximumBlocks) {
            let chunk = headers[start..<min(headers.count, start + maximumBlocks)]
            guard chunk.last != nil else { continue }
            let summary = chunkSummary(of: chunk)
            try directory.put(encode(chunk, summary: summary), forKey: SearchPostingBlock.key(term: term, block: summary.key), in: transaction, appending: true)
            chunks.append(summary)
        }
        if chunks.count >= 2 { try summaries.put(SearchListSummary.encode(chunks), forKey: term, in: transaction, appending: true) }
    }
}
