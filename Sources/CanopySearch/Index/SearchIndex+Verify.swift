import CanopyCore
import Foundation

/// What a check of a stored search index found (``CanopyCore/ReadTransaction/checkSearchIndex(named:limit:)``).
public struct SearchIndexCheck: Sendable, Equatable {
    /// The index's name.
    public var name: String
    /// The rows the index holds (rows that carry its per-row record), as checked.
    public var rows: Int
    /// The rows it left out because its text closure could not decode them (they carry its skipped mark).
    public var skippedRows: Int
    /// Its words (posting lists of `postings`).
    public var words: Int
    /// Why the index was not checked, or `nil` when it was: it is stale (rows were written by a process that did not
    /// register it, so its lists lag the rows until the app brings it up to date), or it is stored in a format this
    /// build does not read (the app rebuilds it at its next registration). Neither is damage.
    public var notChecked: String?
    /// The problems found, at most the check's limit; empty when the index is intact.
    public var problems: [String]
}

extension SearchIndex {
    /// The kind search indexes are recorded with (``/CanopyCore/ExtensionRecord/kind``): tools find them by it.
    public static let recordedKind = "search-index"
}

extension ReadTransaction {
    /// Checks the search index named `name` as stored, without its text closure (a tool such as `canopy verify`, or
    /// an app that registered it), against the rows and itself:
    ///
    /// - every row of the indexed collections that carries the index's per-row record is in the posting list of
    ///   each of its words (a lost block, or a block the directory does not list, leaves rows out of one-word
    ///   searches) and in no other list; with prefix lengths, the same for the prefix lists;
    /// - every posting is a row that carries a record, with that row's length (BM25's length norm), counts that
    ///   queries accept (at least one occurrence, at most the row's length), and a row's words count at most its
    ///   length in occurrences (a prefix query sums them);
    /// - each list's blocks partition its rows in order, each block's header (rows, most occurrences, shortest and
    ///   densest row) is what its rows give, and the list's directory lists exactly its blocks with those headers
    ///   (the directory gives BM25 its rows per word and bounds the best rows);
    /// - the state record's row count and total length (BM25's document count and average length) are the sums of
    ///   the rows' records, and every document number is below the next one to give;
    /// - the `documents` table maps each row's document number to that row, and nothing else;
    /// - no row outside the indexed collections carries a record.
    ///
    /// In a process that registered the index, each row of the indexed collections is also compared with its text
    /// closure: its record holds the words and length the closure gives, and a row the closure indexes has a record
    /// (what the stored tables alone cannot show).
    ///
    /// A stale index (rows written since by a process that did not register it), or one stored in another format,
    /// is not checked (``SearchIndexCheck/notChecked``): it lags the rows by design until the app brings it up to
    /// date. Call it in a read transaction (in a read-write transaction, the index's pending postings are written to
    /// its tables first). It reads every row once and every list once (and the lists once more when
    /// some row's postings differ from its record), and keeps a few tens of bytes per indexed row.
    ///
    /// - Parameters:
    ///   - name: the index's name.
    ///   - limit: the most problems to report.
    /// - Throws: ``/CanopyCore/CanopyError/Code/extensionNotRegistered`` when no search index of that name is recorded
    ///   in the database (the message lists those that are); what reading the store throws (a damaged row's record,
    ///   a page that does not match its checksum).
    public func checkSearchIndex(named name: String, limit: Int = 100) throws -> SearchIndexCheck {
        let records = try extensionRecords()
        guard let record = records.first(where: { $0.name == name && $0.kind == SearchIndex.recordedKind }) else {
            let known = records.filter { $0.kind == SearchIndex.recordedKind }.map(\.name).sorted()
            throw CanopyError(
                .extensionNotRegistered,
                "no search index named '\(name)' is recorded in the database; its search indexes are: \(known.isEmpty ? "none" : known.joined(separator: ", "))",
                path: databasePath, extensionName: name)
        }
        var verifier = SearchIndexVerifier(name: name, limit: max(limit, 1), transaction: self)
        verifier.closures = registeredExtension(named: name, as: SearchIndex.self)
        if let registered = verifier.closures, let writer = writer(of: registered) {
            try writer.flushPostings()  // this transaction's postings, before the tables are read
            verifier.pendingState = try writer.currentState()  // and its counters, written to the state record at commit
        }
        return try verifier.run(record)
    }
}

/// The check of one stored index (``CanopyCore/ReadTransaction/checkSearchIndex(named:limit:)``).
struct SearchIndexVerifier {
    let name: String
    let limit: Int
    let transaction: ReadTransaction
    /// The counters of the index's writer in a read-write transaction (not in the state record until it commits).
    var pendingState: SearchIndexState?
    /// The index registered in this process, whose text closure each row's record is compared with.
    var closures: SearchIndex?
    /// The index's attachment slot (`nil`: no row carries its record).
    var slot: AttachmentSlot?
    var prefixLengths: [Int] = []
    var problems: [String] = []

    /// What the rows' records say about one indexed row, kept small (a verify of millions of rows holds one per row):
    /// its words (and prefixes) as a count and a sum of their digests, matched against the postings found for it. A row
    /// whose postings do not match is read again (``checkCompleteness(_:tables:)``) to name what is missing or extra.
    struct IndexedRow {
        var key: [UInt8]
        var length: Int
        var words = Digest()
        var prefixes = Digest()
        /// The postings (and prefix postings) found for it.
        var foundWords = Digest()
        var foundPrefixes = Digest()
        /// The occurrences its words' postings count, summed (each is one of its words: at most its length).
        var foundOccurrences = 0
        var inDocuments = false

        var matches: Bool { words == foundWords && prefixes == foundPrefixes }
    }

    /// A set of words as a count and a wrapping sum of their 64-bit digests: equal for equal sets; two different sets
    /// of a row (a word missing, another listed instead) agree only with a probability of about 2^-64.
    struct Digest: Equatable {
        var count = 0
        var sum: UInt64 = 0

        mutating func add(_ word: some Collection<UInt8>) {
            count += 1
            sum &+= Self.digest(word)
        }

        /// FNV-1a over the bytes, then SplitMix64's finalizer (sums of raw FNV values of similar words are close).
        static func digest(_ word: some Collection<UInt8>) -> UInt64 {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in word { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            hash = (hash ^ (hash >> 30)) &* 0xbf58_476d_1ce4_e5b9
            hash = (hash ^ (hash >> 27)) &* 0x94d0_49bb_1331_11eb
            return hash ^ (hash >> 31)
        }
    }

    init(name: String, limit: Int, transaction: ReadTransaction) {
        self.name = name
        self.limit = limit
        self.transaction = transaction
    }

    mutating func report(_ problem: String) {
        if problems.count < limit { problems.append(problem) }
    }

    var full: Bool { problems.count >= limit }

    mutating func run(_ record: ExtensionRecord) throws -> SearchIndexCheck {
        var check = SearchIndexCheck(name: name, rows: 0, skippedRows: 0, words: 0, notChecked: nil, problems: [])
        let definition: SearchIndex.Definition
        do {
            definition = try JSONDecoder().decode(SearchIndex.Definition.self, from: Data(record.options.utf8))
        } catch {
            check.problems = ["its recorded definition cannot be read (\(error)); drop it (`canopy drop-view`) and let the app register it again"]
            return check
        }
        guard definition.format == SearchIndex.formatVersion else {
            check.notChecked = "it is stored in format \(definition.format) and this build checks format \(SearchIndex.formatVersion); the app rebuilds it in this format when it next registers it"
            return check
        }
        let snapshots = try transaction.extensionSnapshots()
        let snapshot = snapshots.extensions[name]
        guard let snapshot, snapshot >= snapshots.store else {
            check.notChecked = "it is stale (consistent with snapshot \(snapshot.map(String.init) ?? "none"), the store is at \(snapshots.store): rows were written by a process that did not register it); the app brings it up to date when it next registers it or writes"
            return check
        }
        prefixLengths = definition.prefixLengths ?? []
        guard let tables = try SearchIndexTables.existing(in: transaction, index: name, withPrefixes: !prefixLengths.isEmpty) else {
            check.problems = ["its tables are missing"]
            return check
        }
        let state = try readState()
        var rows = try readRows(collections: definition.collections.map(Set.init), state: state, skipped: &check.skippedRows)
        check.rows = rows.count
        checkTotals(rows, state: state)
        try checkDocuments(tables.documents, &rows)
        check.words = try checkLists(
            tables.postings, directory: tables.postingsDirectory, summaries: tables.postingsSummaries, what: "word", &rows, prefixes: false)
        checkOccurrences(rows)
        if let prefixes = tables.prefixes, let directory = tables.prefixesDirectory, let summaries = tables.prefixesSummaries {
            _ = try checkLists(prefixes, directory: directory, summaries: summaries, what: "prefix", &rows, prefixes: true)
        }
        try checkCompleteness(rows, tables: tables)
        check.problems = problems
        return check
    }

    // MARK: The state and the rows' records

    mutating func readState() throws -> SearchIndexState? {
        if let pendingState { return pendingState }
        return try transaction.withExtensionState(of: name) { bytes -> SearchIndexState? in
            guard let bytes else {
                report("its state record (row count, total length, next row number) is missing")
                return nil
            }
            do { return try SearchIndexState(decoding: bytes) } catch {
                report("its state record is malformed (\(error))")
                return nil
            }
        }
    }

    /// The rows that carry the index's record, by document number; reports malformed records, numbers given twice or
    /// not below the next one, and records on rows outside the indexed collections.
    mutating func readRows(collections: Set<String>?, state: SearchIndexState?, skipped: inout Int) throws -> [UInt64: IndexedRow] {
        var rows: [UInt64: IndexedRow] = [:]
        slot = try transaction.attachmentSlot(for: name)
        guard let slot else { return rows }
        let prefixLengths = self.prefixLengths
        let closures = self.closures
        var problems: [String] = []
        var skippedCount = 0
        let limit = self.limit
        try transaction.scanRows { stored in
            let label = "\(stored.id.collection)/\(stored.id.key)"
            let bytes: [UInt8]?
            do { bytes = try stored.attachment(at: slot) } catch let error as CanopyError where error.code == .corruptStore {
                problems.append("row \(label): its attachments are malformed")
                return problems.count < limit
            }
            if let index = closures, collections?.contains(stored.id.collection) ?? true, let problem = Self.compare(stored, bytes, with: index) {
                problems.append(problem)
            }
            guard let bytes else { return true }
            guard collections?.contains(stored.id.collection) ?? true else {
                problems.append("row \(label) carries the index's record, but the index does not cover collection '\(stored.id.collection)'")
                return problems.count < limit
            }
            let record: SearchRowRecord?
            do { record = try SearchRowRecord.decode(bytes) } catch {
                problems.append("row \(label): its record is malformed (\(error))")
                return problems.count < limit
            }
            guard let record else {
                skippedCount += 1
                return true
            }
            if let state, record.document >= state.nextDocument {
                problems.append("row \(label) is numbered \(record.document), not below the next number to give (\(state.nextDocument)): a new row would share its number")
            }
            if let other = rows[record.document] {
                problems.append("rows \(rowLabel(other.key)) and \(label) are both numbered \(record.document)")
            }
            if zip(record.terms, record.terms.dropFirst()).contains(where: { !$0.0.lexicographicallyPrecedes($0.1) }) {
                problems.append("row \(label): the words of its record are not sorted and distinct")
            }
            var row = IndexedRow(key: stored.storedKey.bytes, length: record.length)
            for term in record.terms { row.words.add(term) }
            for prefix in Self.prefixes(of: record.terms, lengths: prefixLengths) { row.prefixes.add(prefix) }
            rows[record.document] = row
            return problems.count < limit
        }
        for problem in problems { report(problem) }
        skipped = skippedCount
        return rows
    }

    /// With the text closure (the index is registered in this process): the row's record holds the words and length
    /// the closure gives now, and a row the closure indexes has one. A row whose closure throws is not compared (the
    /// index skips a row it cannot decode, and says so in its skipped rows).
    static func compare(_ stored: StoredRow, _ bytes: [UInt8]?, with index: SearchIndex) -> String? {
        let label = "\(stored.id.collection)/\(stored.id.key)"
        let texts: [String?]?
        do { texts = try index.texts(of: SearchRow(stored)) } catch { return nil }
        guard let bytes, bytes != SearchRowRecord.skippedMarker else {
            return texts == nil ? nil : "row \(label) is not indexed, but the text closure gives it text: no search finds it"
        }
        guard let texts else { return "row \(label) is indexed, but the text closure leaves it out" }
        guard let record = try? SearchRowRecord.decode(bytes) else { return nil }  // reported by the caller
        let analysis = SearchDocumentAnalysis(texts)
        if analysis.sortedTerms != record.terms || analysis.length != record.length {
            return "row \(label)'s record holds other words than the text closure gives (\(record.terms.count) words stored, \(analysis.sortedTerms.count) now): the closure changed without a new version tag, or the record is damaged"
        }
        return nil
    }

    /// BM25's document count and average length come from the state record: they must be the rows' sums.
    mutating func checkTotals(_ rows: [UInt64: IndexedRow], state: SearchIndexState?) {
        guard let state else { return }
        if state.documentCount != rows.count {
            report("its state counts \(state.documentCount) rows (the row count BM25 ranks with), but \(rows.count) rows carry its record")
        }
        let total = rows.values.reduce(0) { $0 + $1.length }
        if state.totalLength != total {
            report("its state's total length is \(state.totalLength) words (BM25's average row length), but its rows' records add up to \(total)")
        }
    }

    // MARK: The documents table

    mutating func checkDocuments(_ documents: SearchDocumentTable, _ rows: inout [UInt64: IndexedRow]) throws {
        var problems: [String] = []
        do {
            try documents.forEachDocument(in: transaction) { document, key in
                guard var row = rows[document] else {
                    problems.append("the documents table names row \(rowLabel(Array(key))) as number \(document), which no row's record holds")
                    return problems.count < limit
                }
                if row.key.elementsEqual(key) {
                    row.inDocuments = true
                    rows[document] = row
                } else {
                    problems.append("number \(document) is row \(rowLabel(row.key)), but the documents table names row \(rowLabel(Array(key))): a search that finds it would return the other row")
                }
                return problems.count < limit
            }
        } catch let error as CanopyError where error.code == .corruptStore {
            problems.append("its documents table is malformed (\(error.message))")
        }
        for problem in problems { report(problem) }
        for (document, row) in rows.sorted(by: { $0.key < $1.key }) where !row.inDocuments && !full {
            report("row \(rowLabel(row.key)) (number \(document)) is missing from the documents table: a search that matches it cannot name its row")
        }
    }

    func rowLabel(_ key: [UInt8]) -> String {
        if let stored = StoredRowKey(bytes: key), let id = try? transaction.rowID(for: stored) { return "\(id.collection)/\(id.key)" }
        return "of stored key \(key)"
    }

    // MARK: The posting lists and their directories

    /// Checks every block of `table` against the rows' records and its list's directory and summary; returns the lists.
    mutating func checkLists(
        _ table: ExtensionTable<BytesCoding, BytesCoding>, directory: ExtensionTable<BytesCoding, BytesCoding>,
        summaries: ExtensionTable<BytesCoding, BytesCoding>, what: String, _ rows: inout [UInt64: IndexedRow], prefixes: Bool
    ) throws -> Int {
        var blockHeaders: [[UInt8]: [SearchBlockHeader]] = [:]
        var lists = 0
        var currentTerm: [UInt8]?
        var previousKey: UInt64 = 0
        var problems: [String] = []
        let limit = self.limit
        try table.forEachBytes(in: transaction) { key, value in
            guard key.count >= 9, key[key.count - 9] == 0 else {
                problems.append("the \(what) lists hold a key without a block number (\(Array(key)))")
                return problems.count < limit
            }
            let term = Array(key[..<(key.count - 9)])
            let block = UInt64(bigEndian: key.loadUnaligned(fromByteOffset: key.count - 8, as: UInt64.self))
            if term != currentTerm {
                currentTerm = term
                previousKey = 0
                lists += 1
            }
            defer { previousKey = block }
            let place = "block \(Self.blockName(block)) of \(what) '\(Self.text(term))'"
            do {
                let run = try SearchPostingBlock.decode(value)
                guard run.count > 0 else {
                    problems.append("\(place) is empty")
                    return problems.count < limit
                }
                let stored = try SearchPostingBlock.Reader(value)
                let header = try SearchPostingBlock.encode(run, 0..<run.count, key: block).header
                blockHeaders[term, default: []].append(header)
                if (stored.count, stored.maximumOccurrences, stored.minimumLength, stored.densestLength, stored.densestOccurrences)
                    != (header.count, header.maximumOccurrences, header.minimumLength, header.densestLength, header.densestOccurrences) {
                    problems.append("\(place): its header (\(stored.count) rows, most occurrences \(stored.maximumOccurrences), shortest \(stored.minimumLength), densest \(stored.densestLength)/\(stored.densestOccurrences)) is not what its rows give (\(header.count), \(header.maximumOccurrences), \(header.minimumLength), \(header.densestLength)/\(header.densestOccurrences))")
                } else if stored.front != header.front {
                    problems.append("\(place): its score front \(Self.describe(stored.front)) is not what its rows give (\(Self.describe(header.front)))")
                }
                for entry in 0..<run.count {
                    let document = run.documents[entry]
                    if document <= previousKey || document > block {
                        problems.append("\(place) holds row number \(document), outside its range (after \(previousKey), up to \(block))")
                    }
                    let posting = try run.body(entry).withUnsafeBytes { try SearchPosting.decode($0, positions: true) }
                    let length = posting.length
                    guard var row = rows[document] else {
                        problems.append("\(place) lists row number \(document), which no row carries: a search for it would match a row that is gone")
                        continue
                    }
                    if prefixes {
                        row.foundPrefixes.add(term)
                    } else {
                        row.foundWords.add(term)
                        // (Each count at most the length, checked by the decode: the sum of a row's words fits.)
                        row.foundOccurrences += posting.counts.reduce(0) { $0 + $1.count }
                    }
                    rows[document] = row
                    if length != row.length {
                        problems.append("\(place): row \(rowLabel(row.key))'s posting gives it \(length) words, its record \(row.length)")
                    }
                }
            } catch let error as SearchBytes.Malformed {
                problems.append("\(place) is malformed (\(error))")
            }
            return problems.count < limit
        }
        for problem in problems { report(problem) }
        let chunks = try checkDirectory(directory, against: blockHeaders, what: what)
        try checkSummaries(summaries, against: chunks, what: what)
        return lists
    }

    /// A row's words occur at most as many times as it has words: a prefix query sums its words' counts in a row and
    /// refuses more than its length (`corruptStore`), though each posting alone is possible.
    mutating func checkOccurrences(_ rows: [UInt64: IndexedRow]) {
        let over = rows.filter { $0.value.foundOccurrences > $0.value.length }
        for (_, row) in over.sorted(by: { $0.key < $1.key }) where !full {
            report("row \(rowLabel(row.key))'s postings count \(row.foundOccurrences) occurrences of its words in its \(row.length) words: a prefix search over them is refused as damaged")
        }
    }

    /// Each list's directory must list exactly its blocks, with the headers their rows give. Returns each list's
    /// chunks (those that decode).
    mutating func checkDirectory(
        _ directory: ExtensionTable<BytesCoding, BytesCoding>, against blocks: [[UInt8]: [SearchBlockHeader]], what: String
    ) throws -> [[UInt8]: [SearchBlockDirectory.ChunkSummary]] {
        var listed: [[UInt8]: [SearchBlockHeader]] = [:]
        var chunks: [[UInt8]: [SearchBlockDirectory.ChunkSummary]] = [:]
        var problems: [String] = []
        let limit = self.limit
        try directory.forEachBytes(in: transaction) { key, value in
            guard key.count >= 9, key[key.count - 9] == 0 else {
                problems.append("the \(what) directory holds a key without a block number (\(Array(key)))")
                return problems.count < limit
            }
            let term = Array(key[..<(key.count - 9)])
            let chunkKey = UInt64(bigEndian: key.loadUnaligned(fromByteOffset: key.count - 8, as: UInt64.self))
            var headers = listed[term] ?? []
            let count = headers.count
            do {
                try SearchBlockDirectory.decode(value, chunkKey: chunkKey, after: headers.last?.block ?? 0, into: &headers)
                chunks[term, default: []].append(try SearchBlockDirectory.summary(value, chunkKey: chunkKey))
            } catch let error as SearchBytes.Malformed {
                headers.removeSubrange(count...)
                problems.append("the directory chunk \(Self.blockName(chunkKey)) of \(what) '\(Self.text(term))' is malformed (\(error))")
            }
            listed[term] = headers
            return problems.count < limit
        }
        for problem in problems { report(problem) }
        for term in Set(blocks.keys).union(listed.keys).sorted(by: { $0.lexicographicallyPrecedes($1) }) where !full {
            let stored = blocks[term] ?? []
            let inDirectory = listed[term] ?? []
            guard stored != inDirectory else { continue }
            let word = Self.text(term)
            let byKey = Dictionary(inDirectory.map { ($0.block, $0) }, uniquingKeysWith: { first, _ in first })
            let storedKeys = Set(stored.map(\.block))
            for header in stored {
                guard let listedHeader = byKey[header.block] else {
                    report("block \(Self.blockName(header.block)) of \(what) '\(word)' is missing from its directory: a search for '\(word)' reads none of its \(header.count) rows")
                    continue
                }
                if listedHeader != header {
                    report("the directory's header of block \(Self.blockName(header.block)) of \(what) '\(word)' (\(listedHeader.count) rows) is not the block's (\(header.count) rows): BM25 and the best rows are computed from it")
                }
            }
            for header in inDirectory where !storedKeys.contains(header.block) {
                report("the directory of \(what) '\(word)' lists block \(Self.blockName(header.block)) (\(header.count) rows), which is not stored: its rows are missing from '\(word)'")
            }
        }
        return chunks
    }

    /// Each list of several directory chunks has a summary that is exactly its chunks' (a query takes the list's rows
    /// and its chunks' bounds from it, ``SearchListSummary``); a list of one chunk, or none, has none.
    mutating func checkSummaries(
        _ summaries: ExtensionTable<BytesCoding, BytesCoding>, against chunks: [[UInt8]: [SearchBlockDirectory.ChunkSummary]], what: String
    ) throws {
        var stored: [[UInt8]: [SearchBlockDirectory.ChunkSummary]?] = [:]
        var problems: [String] = []
        let limit = self.limit
        try summaries.forEachBytes(in: transaction) { key, value in
            let term = Array(key)
            do {
                stored[term] = try SearchListSummary.decode(value)
            } catch let error as SearchBytes.Malformed {
                stored[term] = .some(nil)
                problems.append("the summary of \(what) '\(Self.text(term))' is malformed (\(error))")
            }
            return problems.count < limit
        }
        for problem in problems { report(problem) }
        for term in Set(stored.keys).union(chunks.keys).sorted(by: { $0.lexicographicallyPrecedes($1) }) where !full {
            let word = Self.text(term)
            let listed = chunks[term] ?? []
            switch stored[term] {
            case .some(.some(let summary)):
                if listed.count < 2 {
                    report("\(what) '\(word)' has a summary of \(summary.count) chunks, but its directory holds \(listed.count): a search reads its rows and bounds from the summary")
                } else if summary != listed {
                    report("the summary of \(what) '\(word)' (\(summary.count) chunks, \(summary.reduce(0) { $0 + $1.rows }) rows) is not its directory's (\(listed.count) chunks, \(listed.reduce(0) { $0 + $1.rows }) rows): BM25 and the best rows are computed from it")
                }
            case .some(.none):
                continue  // malformed: reported
            case .none:
                if listed.count >= 2 {
                    report("\(what) '\(word)' has \(listed.count) directory chunks and no summary: a search for it is refused as damaged")
                }
            }
        }
    }

    // MARK: Every word of every row

    /// Each indexed row must be in the list of each of its words (and prefixes), and in no other: the postings found
    /// for it were summed as the lists were read. A row whose sum differs is read again: each of its words missing
    /// from its list is reported once with the rows it misses, and the lists that hold such a row without its record
    /// holding the word are found by reading the lists once more (only when some row differs).
    mutating func checkCompleteness(_ rows: [UInt64: IndexedRow], tables: SearchIndexTables) throws {
        // (What is missing, the search that misses it, its rows.)
        var missing: [(list: String, query: String, rows: [String])] = []
        var places: [String: Int] = [:]
        func add(_ list: String, _ query: String, _ label: String) {
            if let place = places[list] {
                missing[place].rows.append(label)
            } else {
                places[list] = missing.count
                missing.append((list, query, [label]))
            }
        }
        // The words of the first rows that differ, to find their extra postings; the rows examined, bounded (a list
        // lost whole can miss millions of rows: the count then says "at least").
        var differing: [UInt64: (words: [[UInt8]], prefixes: [[UInt8]])] = [:]
        var examined = 0
        for (document, row) in rows.sorted(by: { $0.key < $1.key }) where !row.matches {
            guard examined < Self.examinedRows else { break }
            examined += 1
            let words = try recordedWords(of: row)
            let prefixes = Self.prefixes(of: words, lengths: prefixLengths)
            if differing.count < limit { differing[document] = (words, prefixes) }
            let label = rowLabel(row.key)
            for term in words where !(try hasPosting(term, document: document, in: tables.postings)) {
                add("the postings of word '\(Self.text(term))'", Self.text(term), label)
            }
            if let prefixList = tables.prefixes {
                for prefix in prefixes where !(try hasPosting(prefix, document: document, in: prefixList)) {
                    add("the prefix list of '\(Self.text(prefix))'", Self.text(prefix) + "*", label)
                }
            }
        }
        let atLeast = examined == Self.examinedRows ? "at least " : ""
        for (list, query, labels) in missing {
            let shown = labels.prefix(10).joined(separator: ", ")
            let more = labels.count > 10 ? ", … \(labels.count - 10) more" : ""
            report("\(list) lack\(list.hasPrefix("the postings") ? "" : "s") \(atLeast)\(labels.count) of its rows (\(shown)\(more)): a search for '\(query)' does not find \(labels.count == 1 ? "it" : "them")")
        }
        guard !differing.isEmpty, !full else { return }
        try reportExtraPostings(in: tables.postings, what: "word", differing.mapValues(\.words), rows)
        if let prefixList = tables.prefixes {
            try reportExtraPostings(in: prefixList, what: "prefix", differing.mapValues(\.prefixes), rows)
        }
    }

    /// The most rows whose postings differ from their records that are read again to name what they miss.
    static let examinedRows = 10_000

    /// Reports the postings of `table` of the rows of `expected` whose record does not hold the list's word.
    mutating func reportExtraPostings(
        in table: ExtensionTable<BytesCoding, BytesCoding>, what: String, _ expected: [UInt64: [[UInt8]]], _ rows: [UInt64: IndexedRow]
    ) throws {
        var problems: [String] = []
        let limit = self.limit - self.problems.count
        try table.forEachBytes(in: transaction) { key, value in
            guard key.count >= 9, key[key.count - 9] == 0, let run = try? SearchPostingBlock.decode(value) else { return true }
            let term = Array(key[..<(key.count - 9)])
            let block = UInt64(bigEndian: key.loadUnaligned(fromByteOffset: key.count - 8, as: UInt64.self))
            for document in run.documents {
                guard let words = expected[document], !Self.contains(words, term), let row = rows[document] else { continue }
                problems.append("block \(Self.blockName(block)) of \(what) '\(Self.text(term))' lists row \(rowLabel(row.key)), whose record does not hold that \(what)")
            }
            return problems.count < limit
        }
        for problem in problems { report(problem) }
    }

    /// The words of `row`'s record, read again (sorted, as stored).
    func recordedWords(of row: IndexedRow) throws -> [[UInt8]] {
        guard let slot, let key = StoredRowKey(bytes: row.key), let bytes = try transaction.attachment(at: slot, forRow: key),
              let record = try? SearchRowRecord.decode(bytes) else { return [] }
        return record.terms
    }

    /// The distinct prefixes of `lengths` of `words` (sorted by bytes), sorted by bytes.
    static func prefixes(of words: [[UInt8]], lengths: [Int]) -> [[UInt8]] {
        guard !lengths.isEmpty else { return [] }
        return Set(SearchDocumentAnalysis.distinctPrefixes(of: words, lengths: lengths)).sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// Whether the list of `term` holds row `document` (a damaged block counts as not holding it: reported already).
    func hasPosting(_ term: [UInt8], document: UInt64, in table: ExtensionTable<BytesCoding, BytesCoding>) throws -> Bool {
        var found = false
        try table.forEachBytes(in: transaction, from: SearchPostingBlock.key(term: term, block: document)) { key, value in
            guard key.count == term.count + 9, key.starts(with: term), key[term.count] == 0 else { return false }
            guard let run = try? SearchPostingBlock.decode(value) else { return false }
            found = run.documents.contains(document)
            return false
        }
        return found
    }

    // MARK: Helpers

    static func contains(_ sorted: [[UInt8]], _ term: [UInt8]) -> Bool {
        var low = 0
        var high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if sorted[middle].lexicographicallyPrecedes(term) { low = middle + 1 } else { high = middle }
        }
        return low < sorted.count && sorted[low] == term
    }

    static func text(_ term: [UInt8]) -> String { String(decoding: term, as: UTF8.self) }

    /// A score front as (occurrences, length) pairs.
    static func describe(_ front: SearchScoreFront) -> String {
        "[" + front.points.map { "\($0.occurrences) in \($0.length)" }.joined(separator: ", ") + "]"
    }

    static func blockName(_ block: UInt64) -> String { block == SearchPostingBlock.openBlock ? "open" : String(block) }
}
