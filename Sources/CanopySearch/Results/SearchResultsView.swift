import Canopy
import CanopyCore
import Synchronization

/// A live view of the rows that match a query of a ``SearchIndex``: a Canopy ``/Canopy/View`` whose rows are the
/// matches, in one group ordered by rank (``ranked(name:index:group:versionTag:)``) or in the groups and order of a
/// parent view (``grouped(name:index:parentView:versionTag:)``).
///
/// Register ``view`` after the index, and read it as any view: `ReadTransaction.view(_:)`,
/// ``/Canopy/ViewMappings``, ``/Canopy/ViewObserver`` and `ViewDatasource` work on it unchanged. Set the query with
/// ``setQuery(_:in:)`` in a write transaction: the commit's changeset takes the view from the old results to the new
/// (rows that leave are deleted, rows that enter inserted, rows whose rank changed moved, rows in both updated, since
/// their highlights changed), so a search box animates. Commits that write rows change the results as for any view.
///
/// ```swift
/// let results = SearchResultsView.ranked(name: "note-results", index: search)
/// try database.register(search)
/// try database.register(results.view)
/// try database.readWrite { txn in try results.setQuery("milk*", in: txn) }
/// ```
///
/// Rules:
/// 1. The query is persisted (in the index's `queries` table) with the view's rows, so a reopened database, another
///    process and a tool read the results the rows were placed for; every write transaction reloads it first, so
///    a query set by another process is the one this process's writes use.
/// 2. An empty query (or one of spaces) clears the results. A query that does not parse
///    (``SearchQuery``) throws ``/CanopyCore/CanopyError/Code/invalidArgument`` and changes nothing.
/// 3. Rank is BM25 with the index's statistics (row count, lengths, rows per term) frozen when the query was set:
///    a row written later is ranked against the same statistics, so one write never reorders the other rows. Setting
///    the query again refreshes them. ``SearchIndex/search(_:in:limit:highlights:)-(String,_,_,_)`` ranks with the
///    statistics of the moment.
/// 4. A query change places the rows that enter, leave or stay again in this view only
///    (``/CanopyCore/ReadWriteTransaction/placeAgain(_:inExtension:asUpdated:)``): no row is touched, so other views
///    report nothing for it, and a row's record is rewritten only when it enters or leaves the results. A change of
///    more than 4,096 rows is reported as a reset (observers reload), as any view's large commit.
public final class SearchResultsView: Sendable {
    /// The view to register and read.
    public let view: View
    /// The index whose query this view shows.
    public let index: SearchIndex
    let box: QueryBox

    /// The view's name.
    public var name: String { view.name }

    /// A results view of `view`, whose closures read `box`; `binding`: bound to the index (which then loads the
    /// query at every write; a later view of the same name replaces it), else already bound
    /// (``SearchIndex/resultsView(named:)``).
    init(view: View, index: SearchIndex, box: QueryBox, binding: Bool = true) {
        self.view = view
        self.index = index
        self.box = box
        // (Weakly: this object holds the index.)
        if binding { index.resultsViews.withLock { $0[view.name] = Binding(view: view, box: box) } }
    }

    /// Results in one group, `group`, best first (ties by collection, then key).
    /// - Parameters:
    ///   - name: the view's name.
    ///   - index: the search index (register it before the view).
    ///   - group: the name of the one group.
    ///   - versionTag: change it to rebuild the view; the index's tag and fields are part of the view's tag.
    public static func ranked(name: String, index: SearchIndex, group: String = "results", versionTag: String = "1") -> SearchResultsView {
        let box = QueryBox(index: index, viewName: name)
        let view = View(
            name: name,
            grouping: .byRow { row in try box.score(of: row) == nil ? nil : group },
            sorting: .byRow { _, row in SortKey(.descending(try box.score(of: row) ?? 0)) },
            versionTag: tag(versionTag, index),
            options: ViewOptions(allowedCollections: index.collections, rerunOnTouch: true))
        return SearchResultsView(view: view, index: index, box: box)
    }

    /// Results in the groups and order of the view `parentView` (a filtered view of it: register the parent and the
    /// index first).
    public static func grouped(name: String, index: SearchIndex, parentView: String, versionTag: String = "1") -> SearchResultsView {
        filtered(name: name, index: index) { options, filter in
            FilteredView.make(name: name, parentView: parentView, versionTag: tag(versionTag, index), options: options, filter: filter)
        }
    }

    /// Results in the groups and order of the view `parent`, as ``grouped(name:index:parentView:versionTag:)``, made
    /// from the parent view itself: needed when the parent's rows can be in many groups (a `many…` grouping), so that
    /// the results view is recorded with the kind older builds refuse (``/Canopy/View/filteredManyGroupsKind``).
    public static func grouped(name: String, index: SearchIndex, parent: View, versionTag: String = "1") -> SearchResultsView {
        filtered(name: name, index: index) { options, filter in
            FilteredView.make(name: name, parent: parent, versionTag: tag(versionTag, index), options: options, filter: filter)
        }
    }

    /// A results view filtering a parent view to the query's matches: `make` builds the filtered view from the options
    /// and the filter every such view has.
    private static func filtered(
        name: String, index: SearchIndex, _ make: (ViewOptions, @escaping @Sendable (_ group: String, _ row: ViewRow) throws -> Bool) -> View
    ) -> SearchResultsView {
        let box = QueryBox(index: index, viewName: name)
        let view = make(ViewOptions(allowedCollections: index.collections, rerunOnTouch: true)) { _, row in
            try box.score(of: row) != nil
        }
        return SearchResultsView(view: view, index: index, box: box)
    }

    /// The view's version tag: the caller's, with the index's name, tag and a hash of its options (fields, weights,
    /// collections): a changed index definition changes which rows match, so the view is rebuilt with it.
    static func tag(_ versionTag: String, _ index: SearchIndex) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        // (Options that cannot be encoded hash as empty here; registering the index then fails with a typed error.)
        for byte in ((try? index.recordedOptions()) ?? "").utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return "\(versionTag) search:\(index.name):\(index.versionTag):\(String(hash, radix: 16))"
    }

    /// Sets the query (`""` clears the results) and re-places the rows that leave, enter or stay.
    /// - Throws: ``/CanopyCore/CanopyError/Code/invalidArgument`` when the query does not parse (nothing is
    ///   changed); ``/CanopyCore/CanopyError/Code/extensionNotRegistered`` when the view or the index is not
    ///   registered in this process; ``/CanopyCore/CanopyError/Code/staleView`` as index reads do.
    public func setQuery(_ text: String, in transaction: ReadWriteTransaction) throws {
        let query = text.allSatisfy(\.isWhitespace) ? nil : try SearchQuery(text)
        guard transaction.registeredExtension(named: view.name) != nil, transaction.registeredExtension(named: index.name) != nil else {
            throw CanopyError(.extensionNotRegistered, "register the search index '\(index.name)' and then the results view before setting its query",
                              path: transaction.databasePath, extensionName: view.name)
        }
        let tables = try index.tables()
        var touched: [StoredRowKey: RowID] = [:]
        let reader = try transaction.view(view.name)
        for group in try reader.groups() {
            for id in try reader.rowIDs(inGroup: group) {
                if let key = try transaction.storedRowKey(for: id) { touched[key] = id }
            }
        }
        var record = QueryRecord(query: nil, statistics: nil)
        if let query {
            let matched = try index.matches(of: query, in: transaction)
            record = QueryRecord(query: query.text, statistics: matched.statistics)
            for document in matched.documents {
                guard let key = try tables.documents.rowKey(of: document, in: transaction), let id = try transaction.rowID(for: key) else {
                    throw index.corrupt("document \(document) has postings but no row")
                }
                touched[key] = id
            }
        }
        let encoded = try record.encoded()
        try tables.queries.put(encoded, forKey: view.name, in: transaction)
        try box.load(encoded, view: view.name)
        // Placed again in this view (and views filtered from it) only: no row is touched, so other views, caches and
        // the change feed see nothing; rows that stay are reported as updated here (their highlights changed).
        let ids = touched.keys.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }.compactMap { touched[$0] }
        try transaction.placeAgain(ids, inExtension: view.name, asUpdated: true)
        transaction.markWritten()
    }

    /// The query the view shows, as stored, or `nil` when it has none.
    public func query(in transaction: ReadTransaction) throws -> SearchQuery? {
        let tables: SearchIndexTables
        if let opened = try? index.tables() {
            tables = opened
        } else if let existing = try SearchIndexTables.existing(in: transaction, index: index.name, withPrefixes: false) {
            tables = existing
        } else {
            return nil
        }
        guard let bytes = try tables.queries.value(forKey: view.name, in: transaction) else { return nil }
        return try QueryBox.decode(bytes, view: view.name, index: index.name).query.map { try SearchQuery($0) }
    }

    /// A results view as its index holds it, weakly: its view (alive while it is registered or the app holds it) and
    /// the query box its view's closures read (which the view holds).
    struct Binding {
        weak var view: View?
        weak var box: QueryBox?
    }

    /// The query and statistics of a results view, as stored.
    struct QueryRecord: Codable, Hashable {
        var query: String?
        var statistics: SearchStatistics?

        func encoded() throws -> [UInt8] {
            Array(try ExtensionOptionsCoding.encode(self).utf8)
        }
    }

    /// The query a results view's closures use, loaded from the index's `queries` table by every write transaction
    /// (the index's ``SearchIndex/beginWrite(_:)``) before any row is placed.
    final class QueryBox: Sendable {
        struct Loaded {
            var query: SearchQuery?
            var statistics: SearchStatistics
        }
        let index: SearchIndex
        let viewName: String
        let loaded = Mutex<Loaded?>(nil)

        init(index: SearchIndex, viewName: String) {
            self.index = index
            self.viewName = viewName
        }

        static func decode(_ bytes: [UInt8], view: String, index: String) throws -> QueryRecord {
            do {
                return try ExtensionOptionsCoding.decode(QueryRecord.self, from: String(decoding: bytes, as: UTF8.self))
            } catch {
                throw CanopyError(.corruptStore, "the stored query of results view '\(view)' is malformed; set the query again",
                                  extensionName: index, underlying: error)
            }
        }

        /// Loads the stored record (`nil`: no query).
        func load(_ bytes: [UInt8]?, view: String) throws {
            var next = Loaded(query: nil, statistics: SearchStatistics(documentCount: 0, totalLength: 0, termDocumentCounts: []))
            if let bytes {
                let record = try Self.decode(bytes, view: view, index: index.name)
                if let text = record.query, let statistics = record.statistics {
                    next = Loaded(query: try SearchQuery(text), statistics: statistics)
                }
            }
            loaded.withLock { $0 = next }
        }

        /// The row's rank under the query, or `nil` when it does not match (or there is no query).
        func score(of row: ViewRow) throws -> Double? {
            guard let current = loaded.withLock({ $0 }) else {
                throw CanopyError(.extensionDependencyMissing, "the results view '\(viewName)' needs its search index '\(index.name)' registered first",
                                  extensionName: viewName)
            }
            guard let query = current.query, index.indexes(row.collection),
                  let texts = try index.texts(of: row) else { return nil }
            let words = texts.map { $0.map { SearchTokenizer.terms(of: $0) } ?? [] }
            guard let occurrences = SearchMatcher.occurrences(of: query, in: words) else { return nil }
            return SearchRanking.score(occurrences: occurrences, length: words.reduce(0) { $0 + $1.count },
                                       weights: index.fields.map(\.weight), statistics: current.statistics)
        }
    }
}
