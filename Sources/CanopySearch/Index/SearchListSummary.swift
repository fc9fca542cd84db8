import CanopyCore

/// One value per long posting list: the summaries of its directory chunks (``SearchBlockDirectory/ChunkSummary``:
/// key, blocks, rows, bound), so that a query learns how many rows a list holds and which of its chunks can hold its
/// best rows from one read, however many chunks the list has. That is what lets chunks be small: a query decodes every
/// header of each chunk it opens, and the best rows of a long list are spread over it (a prefix query over 1M rows
/// opened 36 chunks of 64 blocks to read 56 blocks).
///
/// Kept in `postings-summary` (`prefixes-summary`), keyed by the word (prefix) alone, for a list of two chunks or
/// more; a list of one chunk (most words) has none and is read from its one chunk. Value (format 7): `varint(chunks)`,
/// then per chunk, by key: `varint(key − previous key)` (the first from 0) and the chunk's summary as its own value
/// starts (`varint(blocks)`, `varint(rows)`, `varint(most occurrences)`, `varint(length)` and `varint(occurrences)` of
/// its densest row, its front). Every write of a list's chunks rewrites its summary in the same transaction
/// (``SearchBlockDirectory/apply(removing:adding:term:to:summaries:in:)``); a chunk opened through the summary is
/// checked against it, and a list of several chunks without a summary, or a summary of fewer than two chunks, is
/// damage (`corruptStore`), never a list read short.
///
/// What is trusted: the rows and bound of a chunk a query does not open (a too-low bound would skip its rows, a wrong
/// count change BM25). A partial write cannot make them wrong (LMDB commits the summary with its chunks or neither,
/// and a changed byte fails the value's checksum); only a writer's bug could, and every write checks the summary's
/// entries of the chunks it reads before rewriting it (``update(term:before:read:written:lowestChanged:summaries:in:)``).
/// Checking the others would mean opening them, the cost the summary saves: `verify` compares every summary with its
/// chunks, and an intersection checks the count of the list it reads whole (``SearchIndex/listIntersection(of:in:)``).
enum SearchListSummary {
    /// The value of a list's summary (at least two chunks, ascending keys).
    static func encode(_ chunks: [SearchBlockDirectory.ChunkSummary]) -> [UInt8] {
        var out = ByteWriter(capacity: 2 + chunks.count * 16)
        out.append(varint: UInt64(chunks.count))
        var previous: UInt64 = 0
        for chunk in chunks {
            out.append(varint: chunk.key &- previous)
            previous = chunk.key
            SearchBlockDirectory.appendSummary(chunk, to: &out)
        }
        return out.bytes
    }

    /// The chunks of a summary value.
    /// - Throws: ``SearchBytes/Malformed`` when the value is not one: fewer than two chunks, keys that do not ascend,
    ///   a chunk of no block or more than ``SearchBlockDirectory/maximumBlocks``, bytes after the last.
    static func decode(_ raw: UnsafeRawBufferPointer) throws -> [SearchBlockDirectory.ChunkSummary] {
        var reader = SearchBytes.Reader(raw)
        let count = try reader.int()
        guard count >= 2, count <= raw.count else { throw SearchBytes.Malformed("a list summary of \(count) chunks") }
        var chunks: [SearchBlockDirectory.ChunkSummary] = []
        chunks.reserveCapacity(count)
        var key: UInt64 = 0
        for _ in 0..<count {
            let (next, overflow) = key.addingReportingOverflow(try reader.varint())
            guard !overflow, next > key else { throw SearchBytes.Malformed("the chunks of a list summary are out of order") }
            key = next
            chunks.append(try SearchBlockDirectory.readSummary(&reader, chunkKey: key))
        }
        guard reader.isAtEnd else { throw SearchBytes.Malformed("bytes after a list summary's last chunk") }
        return chunks
    }

    /// The summaries of `term`'s chunks, by key: from its summary value, or, for a list without one, from its
    /// directory (with a copy of each chunk's value when `keepingValues`: a list without a summary has one chunk, read
    /// here once).
    /// - Throws: ``SearchBytes/Malformed`` when the summary is malformed, or the list has several chunks and no
    ///   summary (one was lost: its chunks after the first would be read only by scanning them all).
    static func chunks(
        of term: [UInt8], directory: ExtensionTable<BytesCoding, BytesCoding>, summaries: ExtensionTable<BytesCoding, BytesCoding>,
        _ transaction: ReadTransaction, keepingValues: Bool
    ) throws -> [(summary: SearchBlockDirectory.ChunkSummary, value: [UInt8]?)] {
        let summarized = try summaries.withValue(forKey: term, in: transaction) { raw in try raw.map(decode) }
        if let summarized { return summarized.map { ($0, nil) } }
        var chunks: [(summary: SearchBlockDirectory.ChunkSummary, value: [UInt8]?)] = []
        try directory.forEachBytes(in: transaction, prefix: term + [0]) { key, value in
            chunks.append((try SearchBlockDirectory.summary(value, chunkKey: try SearchPostingBlock.block(ofKey: key)), keepingValues ? Array(value) : nil))
            return true
        }
        guard chunks.count < 2 else { throw SearchBytes.Malformed("a list of \(chunks.count) directory chunks has no summary") }
        return chunks
    }

    /// Writes `term`'s summary after a write of its chunks: `before`, the list's chunks before the write; `read`, the
    /// chunks the write read (consecutive, by key; their summaries as stored); `written`, those it wrote in their
    /// place. A list left with fewer than two chunks has no summary.
    /// - Throws: ``SearchBytes/Malformed`` when the summary disagrees with the chunks read (damage: a summary is never
    ///   rewritten over chunks it does not describe).
    static func update(
        term: [UInt8], before: [SearchBlockDirectory.ChunkSummary], read: [SearchBlockDirectory.ChunkSummary],
        written: [SearchBlockDirectory.ChunkSummary], lowestChanged: UInt64, summaries: ExtensionTable<BytesCoding, BytesCoding>,
        in transaction: ReadWriteTransaction
    ) throws {
        // The chunks read are the list's from the first at or after the lowest block changed: what `before` holds from
        // there to the last read must be exactly them.
        let high = read.last?.key ?? UInt64.max
        let inRange = before.filter { $0.key >= lowestChanged && $0.key <= high }
        guard inRange == read else {
            throw SearchBytes.Malformed("the list's summary (\(before.count) chunks) differs from its directory chunks")
        }
        let after = before.filter { $0.key < lowestChanged } + written + (read.isEmpty ? [] : before.filter { $0.key > high })
        for index in after.indices.dropFirst() where after[index - 1].key >= after[index].key {
            throw SearchBytes.Malformed("a write would leave the list's chunks out of order")
        }
        if after.count >= 2 {
            try summaries.put(encode(after), forKey: term, in: transaction)
        } else if before.count >= 2 {
            try summaries.remove(term, in: transaction)
        }
    }
}
