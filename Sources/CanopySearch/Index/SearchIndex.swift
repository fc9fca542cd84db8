import CanopyCore
import Synchronization

/// A full-text search index over chosen text of rows: words (``SearchTokenizer``), prefixes, phrases, AND of terms,
/// BM25 ranking (as SQLite FTS5 ranks), and the ranges of the matched words for highlighting.
///
/// It is an extension built only on CanopyCore's public extension interface, as views and `SecondaryIndex` are: its
/// inverted index lives in its own typed tables (listed in the article "Full-text search"), written in the same transaction as the rows,
/// rebuilt from the row scan, and it follows the rules views follow — a changed definition (version tag, fields,
/// collections) rebuilds it, a registration spot-checks the stored words against the text closure, a state that
/// lags (rows written by a process that did not register it) is caught up from the commit log or rebuilt and
/// refused meanwhile (``/CanopyCore/CanopyError/Code/staleView``), and rows the closure cannot decode are skipped
/// and recorded (``/CanopyCore/SkippedRows``).
///
/// ```swift
/// let notes = TypedCollection<Note, NoMetadata>("notes")
/// let search = SearchIndex.byObject(name: "notes-search", notes, fields: [
///     ObjectSearchField("title", weight: 2, \.title),
///     ObjectSearchField("body", \.body),
/// ])
/// try database.register(search)
/// let hits = try database.read { txn in try search.search("milk* \"oat milk\"", in: txn, limit: 20) }
/// ```
public final class SearchIndex: StoreExtension, Sendable {
    /// The texts of a row, one per field in the order of ``fields`` (`nil`: the field is empty), or `nil` to leave
    /// the row out of the index.
    public typealias TextReader = @Sendable (_ row: SearchRow) throws -> [String?]?

    /// The index's name, unique among the database's extensions.
    public let name: String
    /// `"search-index"` (``recordedKind``).
    public let kind = SearchIndex.recordedKind
    /// Change it whenever the text closure gives other texts for the same rows: the index is rebuilt at registration.
    public let versionTag: String
    /// The collections indexed, or `nil` for all.
    public let collections: Set<String>?
    /// The fields, in the order the text closure returns them.
    public let fields: [SearchField]
    /// The prefix lengths (in Unicode scalars of the folded word) whose rows the index keeps merged, sorted: a
    /// query's prefix of one of these lengths (`bri*` for 3) reads one list instead of every word it covers, and its
    /// best rows are found without scoring every match. Empty by default (as SQLite FTS5's `prefix` option).
    public let prefixLengths: [Int]
    let textReader: TextReader
    /// The row's texts handed to `visit` one by one, with their fields' indexes in ascending order (a field without
    /// text is not visited), instead of in an array; `false` leaves the row out. What ``textReader`` gives, read
    /// without an array per row: the index reads every written row's texts this way when it has one (``byObject(name:versionTag:_:fields:prefixLengths:)``
    /// makes one).
    @usableFromInline typealias TextVisitor = @Sendable (_ row: SearchRow, _ visit: (_ field: Int, _ text: String) -> Void) throws -> Bool
    let textVisitor: TextVisitor?
    let dependsOnObject: Bool
    let dependsOnMetadata: Bool
    let tablesState = Mutex<SearchIndexTables?>(nil)
    /// The results views bound to this index, by name: their queries are loaded from the `queries` table at every
    /// write. Held weakly (``SearchResultsView/Binding``): a results view holds its index, so a strong reference back
    /// made a cycle, and an index, its results views and every view directory they cached outlived the database and
    /// the app.
    let resultsViews = Mutex<[String: SearchResultsView.Binding]>([:])
    /// The room an intersection of several terms reads its rarest list's rows into, kept for the next query
    /// (``SearchIntersectionScratch``); `nil` while a query uses it (another at the same time makes its own).
    let intersectionScratch = Mutex<SearchIntersectionScratch?>(nil)

    /// The format of the stored index; part of ``options``, so an index written by another format is rebuilt.
    /// (3: block headers name their densest row, which bounds the scores of their rows. 4: each row's record is its
    /// attachment, no longer a value of a `rows` table. 5: each posting table has a directory of its blocks' headers,
    /// ``SearchBlockDirectory``, and a block gives each row's posting size. 6: a block's row numbers are fixed-width,
    /// apart from its postings, ``SearchPostingBlock/RowNumbers``. 7: a list of several directory chunks has a summary
    /// of them, ``SearchListSummary``.)
    static let formatVersion = 7

    /// Creates an index whose texts `text` reads from each row.
    /// - Parameters:
    ///   - name: the index's name, unique among the database's extensions.
    ///   - versionTag: change it whenever `text`'s results change for the same rows.
    ///   - collections: the collections indexed, or `nil` for all.
    ///   - fields: the fields, in the order `text` returns their texts.
    ///   - dependsOnObject: whether the texts depend on the object (an update of it re-indexes the row).
    ///   - dependsOnMetadata: whether they depend on the metadata.
    ///   - prefixLengths: the prefix lengths, in Unicode scalars, to keep merged lists for (``prefixLengths``);
    ///     each from 1 to ``maximumPrefixLength`` (registration throws `invalidArgument` otherwise).
    ///   - text: the row's texts, one per field, or `nil` to leave the row out.
    public convenience init(
        name: String, versionTag: String = "1", collections: Set<String>? = nil, fields: [SearchField],
        dependsOnObject: Bool = true, dependsOnMetadata: Bool = false, prefixLengths: Set<Int> = [], text: @escaping TextReader
    ) {
        self.init(
            name: name, versionTag: versionTag, collections: collections, fields: fields, dependsOnObject: dependsOnObject,
            dependsOnMetadata: dependsOnMetadata, prefixLengths: prefixLengths, text: text, visitor: nil)
    }

    /// An index whose texts `visitor` also reads without an array (``TextVisitor``: the same texts as `text`).
    @usableFromInline
    init(
        name: String, versionTag: String, collections: Set<String>?, fields: [SearchField], dependsOnObject: Bool, dependsOnMetadata: Bool,
        prefixLengths: Set<Int>, text: @escaping TextReader, visitor: TextVisitor?
    ) {
        self.prefixLengths = prefixLengths.sorted()
        self.name = name
        self.versionTag = versionTag
        self.collections = collections
        self.fields = fields
        self.textReader = text
        self.textVisitor = visitor
        self.dependsOnObject = dependsOnObject
        self.dependsOnMetadata = dependsOnMetadata
    }

    /// An index of the objects of `collection` (and only of them), with the fields `fields` read from each object
    /// (and merged lists for the prefixes of `prefixLengths`: ``prefixLengths``).
    ///
    /// (Inlinable, so that the text closure is specialized for `Object` in the caller's module: it runs for every
    /// row written.)
    @inlinable
    public static func byObject<Object, Metadata>(
        name: String, versionTag: String = "1", _ collection: TypedCollection<Object, Metadata>, fields: [ObjectSearchField<Object>],
        prefixLengths: Set<Int> = []
    ) -> SearchIndex where Object: SendableMetatype {
        SearchIndex(
            name: name, versionTag: versionTag, collections: [collection.name], fields: fields.map(\.field), dependsOnObject: true,
            dependsOnMetadata: false, prefixLengths: prefixLengths,
            text: { row in
                let object = try row.object(in: collection)
                var texts: [String?] = []
                texts.reserveCapacity(fields.count)
                for field in fields { texts.append(field.text(object)) }
                return texts
            },
            visitor: { row, visit in
                let object = try row.object(in: collection)
                for index in fields.indices {
                    if let text = fields[index].text(object) { visit(index, text) }
                }
                return true
            })
    }

    /// Everything the index declares besides its text closure — collections, fields and weights, what the texts read,
    /// the storage format — recorded as JSON with sorted keys (``/CanopyCore/StoreExtension/recordedOptions()``); a
    /// difference at registration rebuilds the index.
    public var options: Definition {
        Definition(
            collections: collections?.sorted(), fields: fields, dependsOnObject: dependsOnObject, dependsOnMetadata: dependsOnMetadata,
            format: Self.formatVersion, prefixLengths: prefixLengths.isEmpty ? nil : prefixLengths)
    }

    /// The longest prefix length ``prefixLengths`` may hold.
    public static let maximumPrefixLength = 16

    /// What a search index records about its definition besides its text closure (``options``).
    public struct Definition: Codable, Equatable, Sendable {
        /// The collections indexed, sorted; `nil` for all.
        public var collections: [String]?
        /// The fields and their weights.
        public var fields: [SearchField]
        /// Whether the texts read the object.
        public var dependsOnObject: Bool
        /// Whether the texts read the metadata.
        public var dependsOnMetadata: Bool
        /// The index's storage format.
        public var format: Int
        /// The prefix lengths with merged lists (``SearchIndex/prefixLengths``); absent when there are none, so an
        /// index without them records what it recorded before they existed.
        public var prefixLengths: [Int]?
    }

    /// How many rows of the indexed collections the registration's check recomputes.
    static let spotCheckRows = 256

    func tables() throws -> SearchIndexTables {
        guard let tables = tablesState.withLock({ $0 }) else {
            throw CanopyError(.extensionNotRegistered, "the search index is not registered; register it with Database.register(_:)", extensionName: name)
        }
        return tables
    }

    func indexes(_ collection: String) -> Bool { collections?.contains(collection) ?? true }

    // MARK: StoreExtension

    /// Opens the tables, loads the queries of bound results views, and rebuilds from the row scan when the context
    /// asks.
    public func prepare(in transaction: ReadWriteTransaction, context: ExtensionRegistrationContext) throws {
        if let wrong = prefixLengths.first(where: { !(1...Self.maximumPrefixLength).contains($0) }) {
            throw CanopyError(.invalidArgument, "a prefix length of \(wrong) was given; give lengths from 1 to \(Self.maximumPrefixLength) (Unicode scalars)", extensionName: name)
        }
        let opened = try SearchIndexTables.open(in: transaction, index: name, withPrefixes: !prefixLengths.isEmpty)
        tablesState.withLock { $0 = opened }
        try loadQueries(in: transaction, tables: opened)
        guard context.needsRebuild else { return }
        try populate(in: transaction, tables: opened)
    }

    /// Empties the tables and indexes every row of the indexed collections.
    func populate(in transaction: ReadWriteTransaction, tables: SearchIndexTables) throws {
        try tables.postings.removeAll(in: transaction)
        try tables.documents.table.removeAll(in: transaction)
        try tables.prefixes?.removeAll(in: transaction)
        try tables.postingsDirectory.removeAll(in: transaction)
        try tables.prefixesDirectory?.removeAll(in: transaction)
        try tables.postingsSummaries.removeAll(in: transaction)
        try tables.prefixesSummaries?.removeAll(in: transaction)
        // Format 3's table of row records (the records are the rows' attachments now).
        try Self.dropFormat3Rows(of: name, in: transaction)
        // The store gave the index a new slot for this rebuild: no row carries an attachment there yet.
        let slot = try transaction.writableAttachmentSlot(for: name)
        var state = SearchIndexState()
        var skipped = SkippedRows()
        // By word; each word's rows come in document order (numbers are given in scan order).
        var postings = SearchPendingPostings()
        var prefixPostings = SearchPendingPostings()
        var analysis = SearchDocumentAnalysis()
        // The rows numbered and not yet in `documents` (written 64k at a time).
        var documents: [StoredRowKey?] = []
        var firstDocument = state.nextDocument
        try transaction.scanRows(inCollections: collections) { stored in
            let row = SearchRow(stored)
            let included: Bool
            do {
                included = try self.analyse(row, into: &analysis)
            } catch let error as CanopyError where error.code == .decodingFailed {
                skipped.add(stored.id, error: error.message)
                try stored.setAttachment(SearchRowRecord.skippedMarker, at: slot)
                return true
            }
            guard included else { return true }
            let document = state.nextDocument
            state.nextDocument += 1
            state.documentCount += 1
            state.totalLength += analysis.length
            postings.append(wordsOf: analysis, document: document)
            analysis.forEachPrefix(ofLengths: prefixLengths) { prefix, encode in
                prefix.withUnsafeBufferPointer { prefixPostings.append(term: $0, document: document, encode) }
            }
            documents.append(stored.storedKey)
            if documents.count == 1 << 16 {
                try tables.documents.append(documents, first: firstDocument, in: transaction)
                documents.removeAll(keepingCapacity: true)
                firstDocument = state.nextDocument
            }
            // Last: the row's bytes lent by the scan are invalid once its record is rewritten.
            try stored.setAttachment(analysis.record(document: document), at: slot)
            return true
        }
        try tables.documents.append(documents, first: firstDocument, in: transaction)
        do {
            try Self.append(&postings, to: tables.postings, directory: tables.postingsDirectory, summaries: tables.postingsSummaries, in: transaction)
            if let prefixes = tables.prefixes, let directory = tables.prefixesDirectory, let summaries = tables.prefixesSummaries {
                try Self.append(&prefixPostings, to: prefixes, directory: directory, summaries: summaries, in: transaction)
            }
        } catch let error as SearchBytes.Malformed {
            // (The bodies were just written from the rows' text: a typed error, should one ever not be a posting.)
            throw corrupt("a posting written at population is malformed (\(error))")
        }
        try transaction.setExtensionState(state.encoded, of: name)
        try transaction.setSkippedRows(skipped, ofExtension: name)
        transaction.markWritten()
    }

    /// Writes `postings` into the empty `table`, as blocks, and their headers into its empty `directory`: words in
    /// key order, each word's blocks in row order and its open block last, so every key comes after the table's last.
    private static func append(
        _ postings: inout SearchPendingPostings, to table: ExtensionTable<BytesCoding, BytesCoding>,
        directory: ExtensionTable<BytesCoding, BytesCoding>, summaries: ExtensionTable<BytesCoding, BytesCoding>,
        in transaction: ReadWriteTransaction
    ) throws {
        var headers: [SearchBlockHeader] = []
        try postings.forEachTerm { term, run in
            let chunks = SearchPostingBlock.chunks(of: run)
            headers.removeAll(keepingCapacity: true)
            for (position, chunk) in chunks.enumerated() {
                let block = position == chunks.count - 1 ? SearchPostingBlock.openBlock : run.documents[chunk.upperBound - 1]
                let encoded = try SearchPostingBlock.encode(run, chunk, key: block)
                try table.put(encoded.value, forKey: SearchPostingBlock.key(term: term, block: block), in: transaction, appending: true)
                headers.append(encoded.header)
            }
            try SearchBlockDirectory.append(headers, term: term, to: directory, summaries: summaries, in: transaction)
        }
    }

    /// Opens the stored tables without writing and recomputes the words of the first rows of the indexed collections
    /// (in stored-key order): a row whose stored words (their fields and positions) differ from what the text
    /// closure gives now, or that is
    /// indexed when the closure now leaves it out (or the reverse), means the closure changed without a new version
    /// tag, and the registration rebuilds the index. Rows whose closure throws are skipped.
    public func checkStoredState(in transaction: ReadTransaction) throws -> StoredStateCheck {
        let opened: SearchIndexTables
        if let writer = transaction.writer(of: self), let existing = tablesState.withLock({ $0 }) {
            opened = existing
            // After a catch-up in this transaction: its postings, before the check reads them.
            try writer.flushPostings()
        } else {
            guard let existing = try SearchIndexTables.existing(in: transaction, index: name, withPrefixes: !prefixLengths.isEmpty) else { return .rebuild(because: "its tables are missing") }
            opened = existing
            tablesState.withLock { $0 = existing }
        }
        try loadQueries(in: transaction, tables: opened)
        let slot = try transaction.attachmentSlot(for: name)
        var checked = 0
        var problem: String?
        try transaction.scanRows(inCollections: collections) { stored in
            checked += 1
            let storedBytes = try slot.flatMap { try stored.attachment(at: $0) }
            let row = SearchRow(stored)
            let texts: [String?]?
            do { texts = try self.texts(of: row) } catch { return checked < Self.spotCheckRows }
            let record = try storedBytes.flatMap { try decodeRecord($0) }
            switch (texts, record) {
            case (nil, nil): break
            case (nil, .some): problem = "row \(stored.id) is indexed but the text closure now leaves it out"
            case (.some, nil): problem = "row \(stored.id) is not indexed but the text closure now gives it text"
            case (.some(let texts), .some(let record)):
                let analysis = SearchDocumentAnalysis(texts)
                if analysis.sortedTerms != record.terms || analysis.length != record.length {
                    problem = "row \(stored.id) has other words than the text closure gives"
                } else {
                    for (term, word) in analysis.sortedTerms.enumerated() {
                        let storedPosting = try storedPostingBody(of: word, document: record.document, in: opened, transaction)
                        if storedPosting != analysis.posting(term) {
                            problem = "row \(stored.id) has its words in other fields or places than the text closure gives"
                            break
                        }
                    }
                }
            }
            return problem == nil && checked < Self.spotCheckRows
        }
        return problem.map { .rebuild(because: $0) } ?? .usable
    }

    /// The per-transaction writer.
    public func beginWrite(_ transaction: ReadWriteTransaction) throws -> SearchIndexWriter {
        let tables = try tables()
        // Another process may have changed the query of a results view since this process last looked.
        try loadQueries(in: transaction, tables: tables)
        return SearchIndexWriter(index: self, tables: tables, transaction: transaction)
    }

    /// Drops the tables and the state record.
    public func dropStorage(in transaction: ReadWriteTransaction) throws {
        let opened = try SearchIndexTables.open(in: transaction, index: name, withPrefixes: false)
        try opened.postings.drop(in: transaction)
        try opened.documents.table.drop(in: transaction)
        try Self.dropFormat3Rows(of: name, in: transaction)
        try opened.queries.drop(in: transaction)
        try opened.postingsDirectory.drop(in: transaction)
        try opened.postingsSummaries.drop(in: transaction)
        // Whatever the definition says now, an earlier one may have made them.
        try transaction.existingTable("prefixes", of: name, keys: BytesCoding.self, values: BytesCoding.self)?.drop(in: transaction)
        try transaction.existingTable("prefixes-directory", of: name, keys: BytesCoding.self, values: BytesCoding.self)?.drop(in: transaction)
        try transaction.existingTable("prefixes-summary", of: name, keys: BytesCoding.self, values: BytesCoding.self)?.drop(in: transaction)
        try transaction.setExtensionState(nil, of: name)
        tablesState.withLock { $0 = nil }
    }

    // MARK: Helpers

    /// Drops the `rows` table an index of format 3 or earlier kept (row key → record), if the file has one.
    static func dropFormat3Rows(of name: String, in transaction: ReadWriteTransaction) throws {
        try transaction.existingTable("rows", of: name, keys: BytesCoding.self, values: BytesCoding.self)?.drop(in: transaction)
    }

    /// Analyses the row's texts into `analysis` (through ``textVisitor`` when the index has one, without an array);
    /// `false` when the text closure leaves the row out (`analysis` then holds nothing to use).
    /// - Throws: what the text closure throws; `invalidArgument` when it returns another number of texts than fields.
    func analyse(_ row: SearchRow, into analysis: inout SearchDocumentAnalysis) throws -> Bool {
        if let textVisitor {
            analysis.begin()
            guard try textVisitor(row, { field, text in analysis.add(text, field: field) }) else { return false }
            analysis.finish()
            return true
        }
        guard let texts = try texts(of: row) else { return false }
        analysis.analyse(texts)
        return true
    }

    /// The row's texts, checked against the declared fields.
    func texts(of row: SearchRow) throws -> [String?]? {
        guard let texts = try textReader(row) else { return nil }
        guard texts.count == fields.count else {
            throw CanopyError(.invalidArgument, "the text closure returned \(texts.count) texts for \(fields.count) fields (\(fields.map(\.name))); return one text (or nil) per field, in order",
                              collection: row.id.collection, key: row.id.key, extensionName: name)
        }
        return texts
    }

    /// The body of row `document`'s posting of `term` as stored (in the block that holds it), or `nil`.
    func storedPostingBody(of term: [UInt8], document: UInt64, in tables: SearchIndexTables, _ transaction: ReadTransaction) throws -> [UInt8]? {
        var body: [UInt8]?
        do {
            try tables.postings.forEachBytes(in: transaction, from: SearchPostingBlock.key(term: term, block: document)) { key, value in
                guard key.count == term.count + 9, key.starts(with: term), key[term.count] == 0 else { return false }
                var reader = try SearchPostingBlock.Reader(value)
                while let next = try reader.next(), next <= document {
                    if next == document { body = Array(UnsafeRawBufferPointer(rebasing: value[reader.bodyStart..<reader.bodyEnd])) }
                    try reader.skipBody()
                }
                return false
            }
        } catch let error as SearchBytes.Malformed {
            throw corrupt("a posting block is malformed (\(error))")
        }
        return body
    }

    func decodeRecord(_ bytes: [UInt8]) throws -> SearchRowRecord? {
        do { return try SearchRowRecord.decode(bytes) } catch { throw corrupt("a row record is malformed (\(error))") }
    }

    func corrupt(_ message: String) -> CanopyError {
        CanopyError(.corruptStore, "the search index is corrupt: \(message); unregister it with dropStorage and register it again to rebuild",
                    extensionName: name)
    }

    /// The index's counters as `transaction` sees them (with this transaction's changes in a write).
    func state(in transaction: ReadTransaction) throws -> SearchIndexState {
        if let writer = transaction.writer(of: self) {
            return try writer.currentState()
        }
        return try storedState(in: transaction)
    }

    /// BM25's statistics for a query of terms matching `termDocumentCounts` rows, from `state`.
    /// - Throws: `corruptStore` when a term matches more rows than the state counts (a damaged count or list: the
    ///   term's idf, the log of a negative ratio, would be NaN, and every score of the query with it: no row would be
    ///   returned, without an error).
    func bm25Statistics(_ state: SearchIndexState, termDocumentCounts: [Int]) throws -> SearchStatistics {
        if let most = termDocumentCounts.max(), most > state.documentCount {
            throw corrupt("a word's postings hold \(most) rows, but its state counts \(state.documentCount) rows")
        }
        return SearchStatistics(documentCount: state.documentCount, totalLength: state.totalLength, termDocumentCounts: termDocumentCounts)
    }

    func storedState(in transaction: ReadTransaction) throws -> SearchIndexState {
        try transaction.withExtensionState(of: name) { bytes in
            guard let bytes else { return SearchIndexState() }
            do { return try SearchIndexState(decoding: bytes) } catch { throw corrupt("its state record is malformed (\(error))") }
        }
    }

    /// Sets each bound results view's query from the `queries` table.
    func loadQueries(in transaction: ReadTransaction, tables: SearchIndexTables) throws {
        let boxes = resultsViews.withLock { views in
            views = views.filter { $0.value.view != nil }  // (views no one holds any more: their closures never run again)
            return views.compactMap { name, bound in bound.box.map { (name, $0) } }
        }
        for (viewName, box) in boxes {
            let record = try tables.queries.value(forKey: viewName, in: transaction)
            try box.load(record, view: viewName)
        }
    }

    /// The results view named `name` made over this index (``SearchResultsView/ranked(name:index:group:versionTag:)``,
    /// ``SearchResultsView/grouped(name:index:parentView:versionTag:)``), or `nil`: while its view is alive (registered
    /// in a database, or held by the app), a results view showing it and its query.
    public func resultsView(named name: String) -> SearchResultsView? {
        guard let bound = resultsViews.withLock({ $0[name] }), let view = bound.view, let box = bound.box else { return nil }
        return SearchResultsView(view: view, index: self, box: box, binding: false)
    }
}
