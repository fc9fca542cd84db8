import CanopyCore

/// Keeps a search index up to date in one write transaction: the index's ``/CanopyCore/StoreExtension/Writer``.
/// Reads of the index inside a write transaction include its pending postings; the store alone calls its methods.
public final class SearchIndexWriter: ExtensionTransaction {
    let index: SearchIndex
    let tables: SearchIndexTables
    let transaction: ReadWriteTransaction
    // The state below is unchecked for exclusivity (as the store's transaction and row change are): a writer lives in
    // one write transaction, on its thread, and no method passes a property inout to code that reaches it again (the
    // log is appended to, then flushed, never flushed from inside an append). The checks cost two calls of about 40
    // instructions each per property access, several per indexed row.
    @exclusivity(unchecked) private var state: SearchIndexState?
    @exclusivity(unchecked) private var stateChanged = false
    /// Rows skipped (`error` set) or taken back (`nil`) in this transaction, applied to the record at commit.
    @exclusivity(unchecked) private var skippedChanges: [(row: RowID, error: String?)] = []
    /// Postings written or removed in this transaction and not yet in the table, by word, in the order of the
    /// changes: at commit (or before a search in this transaction reads the table) each word's blocks that they
    /// touch are read, merged and written once — a bulk write puts a few blocks per word instead of a value per row
    /// and word, as SQLite FTS5 writes a transaction's postings as segments.
    @exclusivity(unchecked) private var pendingPostings = SearchPendingPostings()
    /// The same for the prefix lists (``SearchIndex/prefixLengths``), by prefix.
    @exclusivity(unchecked) private var pendingPrefixPostings = SearchPendingPostings()
    /// The analysis of the row being indexed (its buffers reused from row to row).
    @exclusivity(unchecked) private var analysis = SearchDocumentAnalysis()
    /// The rows numbered in this transaction and not yet in the `documents` table: row `firstPendingDocument + i` is
    /// `pendingDocuments[i]` (`nil`: removed again). Numbers only ascend, so they are appended after the table's last
    /// key at commit (or before a search in this transaction reads the table), in one pass.
    @exclusivity(unchecked) private var pendingDocuments: [StoredRowKey?] = []
    @exclusivity(unchecked) private var firstPendingDocument: UInt64 = 0
    @exclusivity(unchecked) private var slotStorage: AttachmentSlot?
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

    /// Counts `rows` more rows of `length` more words in all (negative: fewer). The counters come from disk: a total
    /// that would pass what it holds or fall below zero (fewer rows or words than the index removes) is damage,
    /// `corruptStore`, never a trap here or when the record is encoded at commit.
    private func addToTotals(rows: Int, length: Int) throws {
        var current = try currentState()
        let (documents, documentsOverflow) = current.documentCount.addingReportingOverflow(rows)
        let (total, totalOverflow) = current.totalLength.addingReportingOverflow(length)
        guard !documentsOverflow, !totalOverflow, documents >= 0, total >= 0 else {
            throw index.corrupt("its totals (\(current.documentCount) rows, \(current.totalLength) words) cannot count \(rows) rows of \(length) words more")
        }
        current.documentCount = documents
        current.totalLength = total
        state = current
        stateChanged = true
    }

    /// The index's attachment slot, or `nil` while it has none (no row carries its record).
    private var slot: AttachmentSlot? {
        get throws {
            if let slotStorage { return slotStorage }
            slotStorage = try transaction.attachmentSlot(for: index.name)
            return slotStorage
        }
    }

    /// The last collection asked about and whether the index indexes it (rows mostly come in runs of one collection).
    @exclusivity(unchecked) private var lastCollection: (name: String, indexed: Bool)?

    /// Whether the index indexes the rows of `collection`.
    private func indexes(_ collection: String) -> Bool {
        if let lastCollection, lastCollection.name == collection { return lastCollection.indexed }
        let indexed = index.indexes(collection)
        lastCollection = (collection, indexed)
        return indexed
    }

    /// The row's record as its attachment held it before `change` (a new row has none).
    private func previousRecordBytes(_ change: RowChange) throws -> [UInt8]? {
        guard change.kind != .insert, let slot = try slot else { return nil }
        return try change.previousAttachment(at: slot)
    }

    // MARK: ExtensionTransaction

    /// Re-indexes a row whose text may have changed, or removes it, and answers with the row's new record (its
    /// attachment); a touch changes no text: nothing to do (a results view re-places touched rows itself).
    public func handle(_ change: RowChange) throws -> AttachmentEdit {
        switch change.kind {
        case .insert: return try reindex(change, previous: nil)
        case .update:
            guard (change.objectChanged && index.dependsOnObject) || (change.metadataChanged && index.dependsOnMetadata) else { return .keep }
            return try reindex(change, previous: try previousRecordBytes(change))
        case .touch: return .keep
        case .remove:
            if index.indexes(change.collection) { try remove(try previousRecordBytes(change), id: change.id) }
            return .keep
        }
    }

    /// Re-indexes each missed row from its current values, its old words read from its attachment; whole collections
    /// removed in the gap: a rebuild.
    ///
    /// A row removed in the gap, or removed and written again, has lost its attachment (the record went): when such a
    /// row was indexed (its stored key is in `documents`), its old postings can no longer be found by word, and the
    /// index is rebuilt (`nil`). A row without an attachment that is not in `documents` was never indexed (new in the
    /// gap, or left out by the text closure): it is indexed now. Finding out reads the `documents` table once. Such a
    /// row no longer says either whether the index had skipped it: with skipped rows recorded, a rebuild counts them
    /// again exactly.
    public func catchUp(_ missed: MissedWrites) throws -> [StoredRowKey: AttachmentEdit]? {
        if missed.removedEverything || missed.removedCollections.contains(where: { index.indexes($0) }) { return nil }
        let rows = missed.rows.filter { index.indexes($0.id.collection) }
        let slot = try slot
        var records: [[UInt8]?] = []
        var unattached: Set<[UInt8]> = []
        for row in rows {
            let record = try slot.flatMap { slot in try row.current.flatMap { try $0.previousAttachment(at: slot) } }
            records.append(record)
            if record == nil { unattached.insert(row.storedKey.bytes) }
        }
        if !unattached.isEmpty {
            if (try transaction.skippedRows(ofExtension: index.name)?.count ?? 0) > 0 { return nil }
            try flushDocuments()
            var indexedBefore = false
            try tables.documents.forEachRowKey(in: transaction) { rowKey in
                indexedBefore = unattached.contains(Array(rowKey))
                return !indexedBefore
            }
            if indexedBefore { return nil }
        }
        var edits: [StoredRowKey: AttachmentEdit] = [:]
        for (row, record) in zip(rows, records) {
            // Without an attachment a row was neither indexed nor skipped (checked above): a removed one leaves
            // nothing to undo.
            if let current = row.current { edits[row.storedKey] = try reindex(current, previous: record) }
        }
        return edits
    }

    /// Writes the pending postings and row numbers to the tables, word by word in key order (for a word and row
    /// changed twice, the last change).
    func flushPostings() throws {
        try flushDocuments()
        guard pendingPostings.count + pendingPrefixPostings.count > 0 else { return }
        try pendingPostings.forEachTerm { term, changes in
            try write(changes, term: term, to: tables.postings, directory: tables.postingsDirectory, summaries: tables.postingsSummaries)
        }
        if let prefixes = tables.prefixes, let directory = tables.prefixesDirectory, let summaries = tables.prefixesSummaries {
            try pendingPrefixPostings.forEachTerm { prefix, changes in
                try write(changes, term: prefix, to: prefixes, directory: directory, summaries: summaries)
            }
        }
        pendingPostings.removeAll()
        pendingPrefixPostings.removeAll()
    }

    /// Applies `changes` (by row, each row once) to `term`'s blocks: each block they fall in is read, merged and
    /// written back, cut again when it outgrows a block; a block left empty is removed. The blocks' headers are
    /// written to `directory` (``SearchBlockDirectory``) once for all of them.
    /// - Throws: `corruptStore` naming the word and the block when a block read back, a posting in it or the word's
    ///   directory is malformed: a block is never rewritten with a header built from damaged bytes (the transaction
    ///   then fails and writes nothing).
    private func write(
        _ changes: SearchPostingRun, term: [UInt8], to table: ExtensionTable<BytesCoding, BytesCoding>,
        directory: ExtensionTable<BytesCoding, BytesCoding>, summaries: ExtensionTable<BytesCoding, BytesCoding>
    ) throws {
        var removedBlocks: [UInt64] = []
        var writtenBlocks: [SearchBlockHeader] = []
        var next = 0
        while next < changes.count {
            var blockKey = SearchPostingBlock.openBlock
            var stored = SearchPostingRun()
            var found = false
            // Whether no key of the table is at or after `start`: every block written here then sorts after the
            // table's last key (they are keyed at or after `start`, in ascending order), and is appended (LMDB fills
            // pages instead of splitting them in half, and skips the search).
            var pastTheEnd = false
            let start = SearchPostingBlock.key(term: term, block: changes.documents[next])
            do {
                // The first block at or after the row, if it is the word's, and the key of the block before it.
                try table.withEntry(atOrAfter: start, in: transaction) { entry, previousKey in
                    pastTheEnd = entry == nil
                    guard let (key, value) = entry, isBlock(key, of: term) else { return }
                    blockKey = try SearchPostingBlock.block(ofKey: key)
                    stored = try SearchPostingBlock.decode(value)
                    found = true
                    // Rows ascend (checked by the decode) up to the block's key (one past it would be written back
                    // under it), after the block before it: a row at or below that block's key may be in it too (a
                    // search would count it twice), and would be written back here. (The queries' own check.)
                    let previous = try previousKey.map { isBlock($0, of: term) ? try SearchPostingBlock.block(ofKey: $0) : 0 } ?? 0
                    try SearchPostingBlock.Layout(value).rows.check(previousKey: previous, blockKey: blockKey)
                }
            } catch let error as SearchBytes.Malformed {
                throw malformed(error, term: term, table: table, block: blockKey)
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
                do {
                    // (Measured, checked, then written in place in the map.)
                    writtenBlocks.append(try SearchPostingBlock.put(merged, chunk, key: key, term: term, in: table, transaction, appending: pastTheEnd))
                } catch let error as SearchBytes.Malformed {
                    // (Rows of the stored block, or of this transaction's changes: a damaged body read back.)
                    throw malformed(error, term: term, table: table, block: blockKey)
                }
            }
            next = end
        }
        do {
            try SearchBlockDirectory.apply(
                removing: removedBlocks, adding: writtenBlocks, term: term, to: directory, summaries: summaries, in: transaction)
        } catch let error as SearchBytes.Malformed {
            throw index.corrupt("the block directory of \(listName(table)) '\(SearchIndexVerifier.text(term))' is malformed (\(error))")
        }
    }

    /// Whether `key` is a block key of `term`'s list (the term, a zero byte, the 8-byte block number).
    private func isBlock(_ key: UnsafeRawBufferPointer, of term: [UInt8]) -> Bool {
        key.count == term.count + 9 && key.starts(with: term) && key[term.count] == 0
    }

    /// What `table` lists: words, or prefixes.
    private func listName(_ table: ExtensionTable<BytesCoding, BytesCoding>) -> String {
        table.name == tables.postings.name ? "word" : "prefix"
    }

    /// `corruptStore` for the damaged block `block` of `term`'s list in `table`.
    private func malformed(_ error: SearchBytes.Malformed, term: [UInt8], table: ExtensionTable<BytesCoding, BytesCoding>, block: UInt64) -> CanopyError {
        index.corrupt("block \(SearchIndexVerifier.blockName(block)) of \(listName(table)) '\(SearchIndexVerifier.text(term))' is malformed (\(error))")
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
        pendingDocuments = []
    }

    /// Appends the rows numbered in this transaction to `documents` (their numbers come after every key there).
    private func flushDocuments() throws {
        guard !pendingDocuments.isEmpty else { return }
        // Numbers are given in ascending order (the counter is written with the table, in the same transactions):
        // they are appended. Were that ever not so (a damaged counter), the table refuses them and nothing is
        // overwritten.
        try tables.documents.append(pendingDocuments, first: firstPendingDocument, in: transaction)
        pendingDocuments.removeAll(keepingCapacity: true)
    }

    /// Forgets the row numbered `document` in `documents` (pending or stored).
    private func removeDocument(_ document: UInt64) throws {
        if !pendingDocuments.isEmpty, document >= firstPendingDocument, document - firstPendingDocument < UInt64(pendingDocuments.count) {
            pendingDocuments[Int(document - firstPendingDocument)] = nil
        } else {
            try tables.documents.remove(document, in: transaction)
        }
    }

    /// Numbers a new row: the next number, its row kept for `documents`.
    private func newDocument(for rowKey: StoredRowKey) throws -> UInt64 {
        var state = try currentState()
        let document = state.nextDocument
        // (From disk: a counter at the end of its range is damage, not a number to wrap or trap on.)
        guard document < UInt64.max else { throw index.corrupt("its next row number is \(document), the last there is") }
        state.nextDocument += 1
        self.state = state
        stateChanged = true
        if pendingDocuments.isEmpty { firstPendingDocument = document }
        pendingDocuments.append(rowKey)
        return document
    }

    // MARK: Maintaining

    /// Indexes `row` (its old record, the attachment, in `previous`) and returns its new attachment.
    private func reindex(_ row: RowChange, previous oldBytes: [UInt8]?) throws -> AttachmentEdit {
        guard indexes(row.collection) else { return .keep }
        let old = try oldBytes.flatMap { try index.decodeRecord($0) }
        let wasSkipped = oldBytes != nil && old == nil
        // The analysis is taken out of the writer while the row is indexed and put back after: used through a
        // local, its arrays are neither retained nor copied at each use (a stored property of a class is).
        var analysis = SearchDocumentAnalysis()
        swap(&analysis, &self.analysis)
        defer { swap(&analysis, &self.analysis) }
        let included: Bool
        do {
            included = try index.analyse(SearchRow(row), into: &analysis)
        } catch let error as CanopyError where error.code == .decodingFailed {
            // Left out and recorded, as at population (a row written as bytes by a tool, say).
            guard !wasSkipped else { return .keep }
            if let old { try removePostings(of: old); try removeDocument(old.document) }
            skippedChanges.append((row.id, error.message))
            return .set(SearchRowRecord.skippedMarker)
        }
        if wasSkipped { skippedChanges.append((row.id, nil)) }
        guard included else {
            if let old { try removePostings(of: old); try removeDocument(old.document) }
            return oldBytes == nil ? .keep : .remove
        }
        let document: UInt64
        if let old {
            try removePostings(of: old)
            document = old.document
        } else {
            document = try newDocument(for: row.storedKey)
        }
        try addToTotals(rows: 1, length: analysis.length)
        // All the row's postings in one call (not one access to the writer's state per word).
        pendingPostings.append(wordsOf: analysis, document: document)
        if !index.prefixLengths.isEmpty {
            try analysis.forEachPrefix(ofLengths: index.prefixLengths) { prefix, encode in
                try prefix.withUnsafeBufferPointer { try setPosting(term: $0, document: document, prefix: true, encode) }
            }
        }
        if pendingPostings.count + pendingPrefixPostings.count >= Self.pendingPostingsLimit { try flushPostings() }
        return .set(analysis.record(document: document))
    }

    /// Removes a row's postings and its share of the counters (its record and document stay for the caller).
    private func removePostings(of record: SearchRowRecord) throws {
        for term in record.terms {
            try term.withUnsafeBufferPointer { try setPosting(term: $0, document: record.document) { _ in } }
        }
        for prefix in SearchDocumentAnalysis.distinctPrefixes(of: record.terms, lengths: index.prefixLengths) {
            try prefix.withUnsafeBufferPointer { try setPosting(term: $0, document: record.document, prefix: true) { _ in } }
        }
        try addToTotals(rows: -1, length: -record.length)
    }

    /// Removes a row whose record was `bytes` (its attachment) from the index.
    private func remove(_ bytes: [UInt8]?, id: RowID) throws {
        guard let bytes else { return }
        if let record = try index.decodeRecord(bytes) {
            try removePostings(of: record)
            try removeDocument(record.document)
        } else {
            skippedChanges.append((id, nil))
        }
    }
}
