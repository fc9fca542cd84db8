extension ReadTransaction {
    /// A reader of the view named `name` at this transaction's snapshot (in a read-write transaction: including its
    /// own changes so far).
    /// In a process that did not register the view, a read transaction reads it from its stored tables, as
    /// ``persistedView(_:allowingStale:)`` does.
    /// - Throws: ``/CanopyCore/CanopyError/Code/extensionNotRegistered`` when no view of that name is registered in this process
    ///   (in a read-write transaction) or recorded in the database; ``/CanopyCore/CanopyError/Code/staleView`` when the view's
    ///   stored state lags the store (another process wrote rows without registering it): registered here, it is
    ///   brought up to date by this process's next write transaction or ``/CanopyCore/Database/catchUpExtensions()``.
    public func view(_ name: String) throws -> ViewReader {
        guard let view = registeredExtension(named: name, as: View.self) else {
            // Without the closures: the view as stored, when it is up to date (a tool, another process's view).
            // (A read-write transaction refuses: the view would miss its writes.)
            return try persistedView(name)
        }
        if let writer = writer(of: view) {
            return ViewReader(view: view, index: nil, transaction: self, tables: try view.tables, writer: writer)
        }
        try requireCurrentExtension(named: name)
        return ViewReader(view: view, index: try view.index(in: self), transaction: self, tables: try view.tables)
    }
}

/// Reads one view inside one transaction: groups, counts, rows by position, positions of rows.
///
/// Valid only inside the transaction it came from: once that transaction's closure has returned, every call throws
/// ``/CanopyCore/CanopyError/Code/transactionEnded``. Position queries don't scan groups: they use the view's counted
/// page directory and read one page.
///
/// In a read-write transaction, every call reads the view as the transaction has made it at that moment: a reader made
/// before the transaction's writes reads them (its groups, counts, rows and positions follow every write).
public struct ViewReader {
    let view: View
    /// The directory of the snapshot read (a read transaction's, fixed); `nil` in a read-write transaction, where
    /// the writer's directory is read at every call (see ``index``).
    private let fixedIndex: ViewIndex?
    let transaction: ReadTransaction
    let tables: ViewTables
    /// In a read-write transaction, the view's writer, which holds the pages and directory the transaction changed.
    let writer: ViewWriter?

    init(view: View, index: ViewIndex?, transaction: ReadTransaction, tables: ViewTables, writer: ViewWriter? = nil) {
        self.view = view
        self.fixedIndex = index
        self.transaction = transaction
        self.tables = tables
        self.writer = writer
    }

    /// The view's page directory as this reader's transaction has it now: the snapshot's, or, in a read-write
    /// transaction, the writer's current one (a copy kept at the reader's making would miss the writes made since,
    /// while pages are read as written: stale counts and positions, or rows of the wrong place).
    var index: ViewIndex {
        get throws {
            if let writer { return try writer.currentIndex() }
            guard let fixedIndex else { throw corrupt(view.name, "internal: a reader without a directory or a writer") }
            return fixedIndex
        }
    }

    /// Which state of the view the reader reads now: its snapshot, and in a read-write transaction the changes the
    /// transaction has made to the view so far (``ViewWriter/changeStamp``). Mappings remember it when updated and
    /// refuse a reader at another.
    var readPoint: ReadPoint {
        ReadPoint(snapshot: transaction.snapshot, uncommitted: writer?.changeStamp ?? .none)
    }

    /// A state of a view: a snapshot, and the uncommitted changes of one write transaction on it.
    struct ReadPoint: Hashable, Sendable {
        var snapshot: UInt64
        var uncommitted: ViewWriter.ChangeStamp
    }

    /// The view's name.
    public var name: String { view.name }
    /// The snapshot of the transaction the reader reads in.
    public var snapshot: UInt64 { transaction.snapshot }

    /// The names of the groups that hold at least one row, sorted by their UTF-8 bytes.
    public func groups() throws -> [String] {
        try transaction.checkActive()
        return try index.groups.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// The number of non-empty groups.
    public func numberOfGroups() throws -> Int {
        try transaction.checkActive()
        return try index.groups.count
    }

    /// The number of rows in `group` (0 for a group that is empty or unknown).
    public func count(inGroup group: String) throws -> Int {
        try transaction.checkActive()
        return try index.groups[group]?.count ?? 0
    }

    /// The number of rows in the whole view: of entries, for a view whose rows can be in many groups (a row counts
    /// once per group it is in).
    public func count() throws -> Int {
        try transaction.checkActive()
        return try index.totalCount
    }

    func page(_ id: UInt64) throws -> ViewPage {
        try transaction.checkActive()
        if let writer { return try writer.page(id) }
        if let page = fixedIndex?.committedPages[id] { return page }
        return try tables.readPage(id, transaction)
    }

    /// The row at `index` of `group`, or `nil` when out of range.
    public func rowID(at index: Int, inGroup group: String) throws -> RowID? {
        let directory = try self.index
        guard let groupIndex = directory.groups[group], let (location, offset) = directory.location(ofIndex: index, in: groupIndex) else {
            return nil
        }
        let page = try page(directory.page(at: location, in: groupIndex).id)
        guard offset < page.count else { throw corrupt(view.name, "a page holds fewer rows than its count") }
        return try rowID(ofEntryAt: offset, in: page)
    }

    /// The rows of `group` in `range` (clamped to the group), in order.
    public func rowIDs(inGroup group: String, range: Range<Int>) throws -> [RowID] {
        var result: [RowID] = []
        try walkEntries(inGroup: group, range: range) { page, offset in
            if let id = try rowID(ofEntryAt: offset, in: page) { result.append(id) }
        }
        return result
    }

    /// The rows of `group` from `offset`, at most `limit`, in order or reversed (then `offset` counts from the end).
    /// A negative `offset` counts as 0 and a negative `limit` as 0.
    public func rowIDs(inGroup group: String, offset: Int = 0, limit: Int = .max, reversed: Bool = false) throws -> [RowID] {
        let count = try count(inGroup: group)
        // A negative offset counts as 0 in both directions.
        let start = max(0, offset)
        let length = min(max(0, limit), max(0, count - start))
        guard length > 0 else { return [] }
        if reversed {
            let end = count - start
            return try rowIDs(inGroup: group, range: (end - length)..<end).reversed()
        }
        return try rowIDs(inGroup: group, range: start..<(start + length))
    }

    /// The first row of `group`.
    public func first(inGroup group: String) throws -> RowID? { try rowID(at: 0, inGroup: group) }

    /// The last row of `group`.
    public func last(inGroup group: String) throws -> RowID? { try rowID(at: count(inGroup: group) - 1, inGroup: group) }

    /// The object at `index` of `group`, decoded through `collection`'s handle (and the connection's cache); `nil` when
    /// out of range or when the row is of another collection.
    public func object<Object, Metadata>(at index: Int, inGroup group: String, in collection: TypedCollection<Object, Metadata>) throws -> Object? {
        guard let id = try rowID(at: index, inGroup: group), id.collection == collection.name else { return nil }
        return try transaction.object(forKey: id.key, in: collection)
    }

    /// The stored entry (group and order bytes) of a row, or `nil` when the row is not in the view. A row in several
    /// groups (a view with a `many…` grouping) has an entry in each: this is the one of its first group by name, and
    /// ``entries(of:)`` has them all.
    public func entry(of id: RowID) throws -> ViewEntry? {
        try entries(of: id).first
    }

    /// The stored entries of a row, one per group it is in, by group name (UTF-8 order): empty when the row is not in
    /// the view, one entry in a view whose rows are each in one group.
    public func entries(of id: RowID) throws -> [ViewEntry] {
        guard let rowKey = try transaction.storedRowKey(for: id), let slot = try attachmentSlot() else { return [] }
        let index = try self.index
        let stored = try view.storedEntries(try transaction.attachment(at: slot, forRow: rowKey), rowKey: rowKey, tables: tables, index: index,
                                            in: transaction)
        return stored.compactMap { entry in
            index.groupNames[entry.groupID].map { ViewEntry(group: $0, orderBytes: entry.order(rowKey: rowKey)) }
        }.sorted { $0.group.utf8.lexicographicallyPrecedes($1.group.utf8) }
    }

    /// Whether a row can be in several groups of this view (a `many…` grouping, or a filtered view over such a view).
    public var rowsInManyGroups: Bool { view.rowsInManyGroups(in: transaction) }

    /// The view's attachment slot, or `nil` when no row carries an entry yet.
    func attachmentSlot() throws -> AttachmentSlot? {
        try transaction.attachmentSlot(for: view.name)
    }

    /// The row id of entry `offset` of `page`.
    func rowID(ofEntryAt offset: Int, in page: ViewPage) throws -> RowID? {
        // (Through an array made here: CanopyCore's initializer over any collection is generic, unspecialized across
        // the module boundary, and cost ten times the copy.)
        guard let key = StoredRowKey(bytes: Array(page.rowKey(at: offset))) else { throw corrupt(view.name, "an entry's row key is malformed") }
        return try transaction.rowID(for: key)
    }

    /// The group and index of a row, or `nil` when it is not in the view. A row in several groups (a view with a
    /// `many…` grouping) has a position in each: this is the one in its first group by name; ``positions(of:)`` has
    /// them all and ``position(of:inGroup:)`` the one in a given group.
    public func position(of id: RowID) throws -> (group: String, index: Int)? {
        guard let entry = try entry(of: id) else { return nil }
        return (entry.group, try lowerBound(of: entry))
    }

    /// The positions of a row, one per group it is in, by group name; empty when it is not in the view.
    public func positions(of id: RowID) throws -> [(group: String, index: Int)] {
        try entries(of: id).map { ($0.group, try lowerBound(of: $0)) }
    }

    /// The index of a row in `group`, or `nil` when the row is not in that group.
    public func position(of id: RowID, inGroup group: String) throws -> Int? {
        guard let entry = try entries(of: id).first(where: { $0.group == group }) else { return nil }
        return try lowerBound(of: entry)
    }

    /// The position of (`collection`, `key`), or `nil`.
    public func position(ofKey key: String, inCollection collection: String) throws -> (group: String, index: Int)? {
        try position(of: RowID(collection: collection, key: key))
    }

    /// The number of rows of `entry.group` whose order bytes sort strictly before `entry.orderBytes` (the entry need
    /// not be in the view): the index it has, or would have.
    public func lowerBound(of entry: ViewEntry) throws -> Int {
        let index = try self.index
        guard let group = index.groups[entry.group], let location = index.locate(entry.orderBytes, in: group) else { return 0 }
        let page = try page(index.page(at: location, in: group).id)
        return index.rank(of: location, in: group) + page.lowerBound(entry.orderBytes)
    }

    /// The range of indexes of `group` whose rows `compare` places at the target (`.orderedSame`); rows before the
    /// target must compare `.orderedAscending` and rows after `.orderedDescending` (a binary search, as YapDatabase's
    /// findRangeInGroup). Empty when no row matches.
    public func findRange(inGroup group: String, _ compare: (RowID) throws -> Comparison) throws -> Range<Int> {
        let count = try count(inGroup: group)
        func search(_ isBefore: (Comparison) -> Bool) throws -> Int {
            var low = 0
            var high = count
            while low < high {
                let mid = (low + high) / 2
                guard let id = try rowID(at: mid, inGroup: group) else { break }
                if isBefore(try compare(id)) { low = mid + 1 } else { high = mid }
            }
            return low
        }
        let start = try search { $0 == .before }
        let end = try search { $0 != .after }
        return start..<max(start, end)
    }

    /// Where a row stands relative to the target of ``findRange(inGroup:_:)``.
    public enum Comparison: Sendable {
        /// The row sorts before the target.
        case before
        /// The row matches the target.
        case matching
        /// The row sorts after the target.
        case after
    }
}
