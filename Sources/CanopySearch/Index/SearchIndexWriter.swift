import CanopyCore

/// Keeps a search index up to date in one write transaction: the index's ``/CanopyCore/StoreExtension/Writer``.
/// Reads of the index inside a write transaction include its pending postings; the store alone calls its methods.
public final class SearchIndexWriter: ExtensionTransaction {
    let index: SearchIndex
    let tables: SearchIndexTables
    let transaction: ReadWriteTransaction
    private var state: SearchIndexState?
    private var stateChanged = false
    /// Rows skipped (`error` set) or taken back (`nil`) in this transaction, applied to the record at commit.
    private var skippedChanges: [(row: RowID, error: String?)] = []
    /// Postings written or removed in this transaction and not yet in the table, by word, in the order of the
    /// changes: at commit (or before a search in this transaction reads the table) each word's blocks that they
    /// touch are read, merged and written once — a bulk write puts a few blocks per word instead of a value per row
    /// and word, as SQLite FTS5 writes a transaction's postings as segments.
    private var pendingPostings = SearchPendingPostings()
    /// The same for the prefix lists (``SearchIndex/prefixLengths``), by prefix.
    private var pendingPrefixPostings = SearchPendingPostings()
    /// The analysis of the row being indexed (its buffers reused from row to row).
    private var analysis = SearchDocumentAnalysis()
    /// Past this many pending postings, they are written (memory stays bounded in a huge transaction).
    static let pendingPostingsLimit = 1 << 20

    init(index: SearchIndex, tables: SearchIndexTables, transaction: ReadWriteTransaction) {
        self.index = index
        self.tables = tables
        self.transaction = transaction
    }

    /// The counters as this transaction has made them.
    func currentState() throws -> SearchIndexState {
        if let state { return state }
        let loaded = try index.storedState(in: transaction)
        state = loaded
        return loaded
    }

    private func changeState(_ body: (inout SearchIndexState) -> Void) throws {
        var current = try currentState()
        body(&current)
        state = current
        stateChanged = true
    }

    // MARK: ExtensionTransaction

    /// Re-indexes a row whose text may have changed, or removes it; a touch changes no text: nothing to do (a results
    /// view re-places touched rows itself).
    public func handle(_ change: RowChange) throws -> AttachmentEdit {
        switch change.kind {
        case .insert: try reindex(change)
        case .update:
            if (change.objectChanged && index.dependsOnObject) || (change.metadataChanged && index.dependsOnMetadata) { try reindex(change) }
        case .touch: break
        case .remove: if index.indexes(change.collection) { try remove(change.storedKey, id: change.id) }
        }
        return .keep
    }

    /// Re-indexes each missed row from its current values (the `rows` table holds its old words); whole collections
    /// removed in the gap: a rebuild.
    public func catchUp(_ missed: MissedWrites) throws -> [StoredRowKey: AttachmentEdit]? {
        if missed.removedEverything || missed.removedCollections.contains(where: { index.indexes($0) }) { return nil }
        for row in missed.rows where index.indexes(row.id.collection) {
            if let current = row.current { try reindex(current) } else { try remove(row.storedKey, id: row.id) }
        }
        return [:]
    }

    /// Writes the pending postings to the table, word by word in key order (for a word and row changed twice, the
    /// last change).
    func flushPostings() throws {
        guard pendingPostings.count + pendingPrefixPostings.count > 0 else { return }
        try pendingPostings.forEachTerm { term, changes in
            try write(changes, term: term, to: tables.postings, directory: tables.postingsDirectory)
        }
        if let prefixes = tables.prefixes, let directory = tables.prefixesDirectory {
            try pendingPrefixPostings.forEachTerm { prefix, changes in try write(changes, term: prefix, to: prefixes, directory: directory) }
        }
        pendingPostings.removeAll()
        pendingPrefixPostings.removeAll()
    }

    /// Applies `changes` (by row, each row once) to `term`'s blocks: each block they fall in is read, merged and
    /// written back, cut again when it outgrows a block; a block left empty is removed. The blocks' headers are
    /// written to `directory` (``SearchBlockDirectory``) once for all of them.
    private func write(
        _ changes: SearchPostingRun, term: [UInt8], to table: ExtensionTable<BytesCoding, BytesCoding>,
        directory: ExtensionTable<BytesCoding, BytesCoding>
    ) throws {
        var removedBlocks: [UInt64] = []
        var writtenBlocks: [SearchBlockHeader] = []
        var next = 0
        while next < changes.count {
            var blockKey = SearchPostingBlock.openBlock
            var stored = SearchPostingRun()
            var found = false
            let start = SearchPostingBlock.key(term: term, block: changes.documents[next])
            do {
                try table.forEachBytes(in: transaction, from: start) { key, value in
                    // The first block at or after the row, if it is the word's.
                    guard key.count == term.count + 9, key.starts(with: term), key[term.count] == 0 else { return false }
                    blockKey = try SearchPostingBlock.block(ofKey: key)
                    stored = try SearchPostingBlock.decode(value)
                    found = true
                    return false
                }
            } catch let error as SearchBytes.Malformed {
                throw index.corrupt("a posting block is malformed (\(error))")
            }
            var end = next
            while end < changes.count, changes.documents[end] <= blockKey { end += 1 }
            // A word without a block yet (every word of a new index): its changes, when none is a removal, are the
            // block's entries.
            let merged = !found && next == 0 && end == changes.count && !(0..<changes.count).contains(where: changes.isRemoval)
                ? changes : SearchPostingBlock.merge(stored, changes, next..<end)
            let chunks = SearchPostingBlock.chunks(of: merged)
            if found { removedBlocks.append(blockKey) }
            if chunks.isEmpty, found {
                try table.remove(SearchPostingBlock.key(term: term, block: blockKey), in: transaction)
            }
            for (position, chunk) in chunks.enumerated() {
                // Full blocks are keyed by their last row; the last keeps the block's key (the open block's, say).
                let key = position == chunks.count - 1 ? blockKey : merged.documents[chunk.upperBound - 1]
                let encoded = SearchPostingBlock.encode(merged, chunk, key: key)
                try table.put(encoded.value, forKey: SearchPostingBlock.key(term: term, block: key), in: transaction)
                writtenBlocks.append(encoded.header)
            }
            next = end
        }
        try SearchBlockDirectory.apply(removing: removedBlocks, adding: writtenBlocks, term: term, to: directory, in: transaction)
    }

    /// Records row `document`'s posting of `term`, written by `encode` (nothing written: removed), for
    /// ``flushPostings()``.
    private func setPosting(term: UnsafeBufferPointer<UInt8>, document: UInt64, prefix: Bool = false, _ encode: (inout ByteWriter) -> Void) throws {
        if prefix {
            pendingPrefixPostings.append(term: term, document: document, encode)
        } else {
            pendingPostings.append(term: term, document: document, encode)
        }
        if pendingPostings.count + pendingPrefixPostings.count >= Self.pendingPostingsLimit { try flushPostings() }
    }

    /// Writes the pending postings and the index's counters; no payload.
    public func prepareCommit(_ commit: ExtensionCommit) throws -> ExtensionPayload? {
        try flushPostings()
        if stateChanged, let state {
            try transaction.setExtensionState(state.encoded, of: index.name)
            stateChanged = false
        }
        if !skippedChanges.isEmpty {
            var record = try transaction.skippedRows(ofExtension: index.name) ?? SkippedRows()
            for change in skippedChanges {
                if let error = change.error { record.add(change.row, error: error) } else { record.remove(change.row) }
            }
            try transaction.setSkippedRows(record, ofExtension: index.name)
            skippedChanges = []
        }
        return nil
    }

    /// Drops the pending postings.
    public func didRollback() {
        pendingPostings = SearchPendingPostings()
        pendingPrefixPostings = SearchPendingPostings()
    }

    // MARK: Maintaining

    private func reindex(_ row: RowChange) throws {
        guard index.indexes(row.collection) else { return }
        let rowKey = row.storedKey
        let oldBytes = try tables.rows.value(forKey: rowKey, in: transaction)
        let old = try oldBytes.flatMap { try index.decodeRecord($0) }
        let wasSkipped = oldBytes != nil && old == nil
        let texts: [String?]?
        do {
            texts = try index.texts(of: SearchRow(row))
        } catch let error as CanopyError where error.code == .decodingFailed {
            // Left out and recorded, as at population (a row written as bytes by a tool, say).
            guard !wasSkipped else { return }
            if let old { try removePostings(of: old) }
            try tables.rows.put([], forKey: rowKey, in: transaction)
            skippedChanges.append((row.id, error.message))
            return
        }
        if wasSkipped { skippedChanges.append((row.id, nil)) }
        guard let texts else {
            if let old { try removePostings(of: old); try tables.documents.remove(old.document, in: transaction) }
            if oldBytes != nil { try tables.rows.remove(rowKey, in: transaction) }
            return
        }
        analysis.analyse(texts)
        let analysis = self.analysis
        let document: UInt64
        if let old {
            try removePostings(of: old)
            document = old.document
        } else {
            document = try currentState().nextDocument
            try changeState { $0.nextDocument += 1 }
            // Numbers are given in ascending order (the counter is written with the table, in the same
            // transactions): a new row's number comes after every key of `documents`, so LMDB appends it without a
            // search. Were that ever not so (a damaged counter), LMDB refuses it and nothing is overwritten.
            do {
                try tables.documents.put(rowKey, forKey: document, in: transaction, appending: true)
            } catch let error as CanopyError {
                throw error
            } catch {
                throw index.corrupt("its next row number (\(document)) is not above its last (\(error))")
            }
        }
        try changeState {
            $0.documentCount += 1
            $0.totalLength += analysis.length
        }
        try analysis.forEachTerm { term, word in
            try setPosting(term: word, document: document) { analysis.encodePosting(term, into: &$0) }
        }
        try analysis.forEachPrefix(ofLengths: index.prefixLengths) { prefix, encode in
            try prefix.withUnsafeBufferPointer { try setPosting(term: $0, document: document, prefix: true, encode) }
        }
        try tables.rows.put(analysis.record(document: document), forKey: rowKey, in: transaction)
    }

    /// Removes a row's postings and its share of the counters (its record and document stay for the caller).
    private func removePostings(of record: SearchRowRecord) throws {
        for term in record.terms {
            try term.withUnsafeBufferPointer { try setPosting(term: $0, document: record.document) { _ in } }
        }
        for prefix in SearchDocumentAnalysis.distinctPrefixes(of: record.terms, lengths: index.prefixLengths) {
            try prefix.withUnsafeBufferPointer { try setPosting(term: $0, document: record.document, prefix: true) { _ in } }
        }
        try changeState {
            $0.documentCount -= 1
            $0.totalLength -= record.length
        }
    }

    private func remove(_ rowKey: StoredRowKey, id: RowID) throws {
        guard let bytes = try tables.rows.value(forKey: rowKey, in: transaction) else { return }
        if let record = try index.decodeRecord(bytes) {
            try removePostings(of: record)
            try tables.documents.remove(record.document, in: transaction)
        } else {
            skippedChanges.append((id, nil))
        }
        try tables.rows.remove(rowKey, in: transaction)
    }
}
