import Canopy

/// A data source backed by a Canopy view: a ``/Canopy/ViewMappings`` turns the view's groups into sections, its own
/// ``/Canopy/ViewObserver`` pins a snapshot, and every ``advance()`` applies the changeset of the commits since to the
/// container as one batch.
///
/// Cells are configured inside the observer's pinned read: the ``ViewCellIndex`` they receive carries the index path
/// and that transaction, so a configuration closure can read related objects (a reminder's calendar) exactly as of the
/// rows shown. The transaction is lent for the call only (see ``PinnedRead``).
///
/// ```swift
/// let source = try ViewDatasource(database: database, mappings: ViewMappings(view: "agenda", groupFilter: { _ in true }),
///                                 factory: factory, container: list) { id, txn in
///     try txn.object(forKey: id.key, in: reminders)
/// }
/// list.dataSource = source
/// try source.advance()   // after commits: the list gets a batch of updates
/// ```
///
/// Pushes: the data source's ``wakeup`` rings when any process commits; ``applyPendingChanges()`` then applies what
/// arrived. A `TerminalRunner` (CanopyTerminal) follows it without polling; async code iterates ``changes(pollInterval:)``, the
/// applied changesets, and ``didApply`` is called after each one:
///
/// ```swift
/// for try await changeset in source.changes() { status = "\(changeset.rowChanges.count) rows changed" }
/// ```
///
/// Related objects: the view's changesets name only rows of the view. When a row shows something read from another
/// object (a calendar's name), whoever changes that object must also touch the rows that show it
/// (`ReadWriteTransaction.touchObject`) in the same commit: the touch is an update in the next changeset, and the
/// container reconfigures those rows. The `reminders` example does this when a calendar is renamed.
public final class ViewDatasource<Item, Cell, SupplementaryView, Container: ContainerView>: EditableDataSource, LiveDataSource
where Container.Cell == Cell, Container.SupplementaryView == SupplementaryView {
    /// The factory type of this data source.
    public typealias SourceFactory = Factory<Item, Cell, SupplementaryView, Container, ViewCellIndex, ViewSupplementaryIndex>
    /// Turns a row of the view into an item, reading in the pinned transaction; `nil` skips the row's cell (an
    /// `indexOutOfRange` error for it).
    public typealias ItemReader = (RowID, ReadTransaction) throws -> Item?

    /// The observer: its mappings and snapshot are what the container shows.
    public let observer: ViewObserver
    /// The factory that vends the cells.
    public let factory: SourceFactory
    /// The container the cells are dequeued from and the batches go to (held weakly: the container keeps its data
    /// source, not the other way round).
    public private(set) weak var container: Container?
    /// The list's title.
    public var title: String?
    /// The editing closures, or `nil` when nothing can be edited.
    public var editing: Editing<Item>?
    /// Called after each non-empty changeset was applied to the container (or failed to apply: the container reloaded).
    public var didApply: ((ViewChangeset) -> Void)?
    /// Rings when any process commits to the database (see ``LiveDataSource``); made at first use.
    public private(set) lazy var wakeup = CommitWakeup(database: observer.database)
    private let readItem: ItemReader
    /// The transaction of a ``withConsistentReads(_:)`` in progress.
    private var session: ReadTransaction?

    /// Creates a data source with its own observer, pinned to the latest snapshot.
    ///
    /// - Parameters:
    ///   - database: the database.
    ///   - mappings: the view's groups as sections.
    ///   - factory: vends the cells.
    ///   - container: receives the batches.
    ///   - item: reads the item of a row.
    /// - Throws: what ``/Canopy/ViewObserver/init(database:mappings:connectionOptions:)`` throws.
    public init(database: Database, mappings: ViewMappings, factory: SourceFactory, container: Container,
                item: @escaping ItemReader) throws {
        self.observer = try ViewObserver(database: database, mappings: mappings)
        self.factory = factory
        self.container = container
        self.readItem = item
    }

    /// A data source whose items are the objects of `collection` (rows of other collections have no item).
    public convenience init<Metadata>(database: Database, mappings: ViewMappings, factory: SourceFactory, container: Container,
                                      collection: TypedCollection<Item, Metadata>) throws {
        try self.init(database: database, mappings: mappings, factory: factory, container: container) { id, txn in
            id.collection == collection.name ? try txn.object(forKey: id.key, in: collection) : nil
        }
    }

    /// The mappings at ``snapshot``.
    public var mappings: ViewMappings { observer.mappings }
    /// The snapshot the data source shows.
    public var snapshot: UInt64 { observer.snapshot }

    // MARK: Reading

    /// Runs `body` in the pinned read: inside an enclosing ``withConsistentReads(_:)`` its transaction, else a new
    /// read of the observer.
    func reading<R>(_ body: (ReadTransaction) throws -> R) throws -> R {
        if let session { return try body(session) }
        return try observer.read(body)
    }

    /// Opens the pinned read once for all the cells `body` configures.
    public func withConsistentReads<R>(_ body: () throws -> R) throws -> R {
        if session != nil { return try body() }
        return try observer.read { txn in
            session = txn
            defer { session = nil }
            return try body()
        }
    }

    /// The number of sections.
    public var numberOfSections: Int { mappings.numberOfSections }

    /// The number of rows of `section`, 0 when there is no such section.
    public func numberOfItems(inSection section: Int) -> Int { mappings.numberOfItems(inSection: section) }

    /// The group shown as `section`, or `nil`.
    public func group(forSection section: Int) -> String? { mappings.group(forSection: section) }

    /// The row shown at `indexPath`, or `nil`.
    public func rowID(at indexPath: ViewIndexPath) throws -> RowID? {
        guard contains(indexPath) else { return nil }
        let mappings = self.mappings
        return try reading { txn in try mappings.rowID(at: indexPath, reader: txn.view(mappings.view)) }
    }

    /// The item shown at `indexPath`, or `nil`.
    public func item(at indexPath: ViewIndexPath) throws -> Item? {
        guard contains(indexPath) else { return nil }
        let mappings = self.mappings
        return try reading { txn in
            guard let id = try mappings.rowID(at: indexPath, reader: txn.view(mappings.view)) else { return nil }
            return try readItem(id, txn)
        }
    }

    /// The index path showing `id`, or `nil` when the row is not shown.
    public func indexPath(of id: RowID) throws -> ViewIndexPath? {
        let mappings = self.mappings
        return try reading { txn in try mappings.indexPath(of: id, reader: txn.view(mappings.view)) }
    }

    /// The configured cell at `indexPath`, configured inside the pinned read.
    public func cell(at indexPath: ViewIndexPath) throws -> Cell {
        let mappings = self.mappings
        return try reading { txn in
            guard contains(indexPath), let id = try mappings.rowID(at: indexPath, reader: txn.view(mappings.view)) else {
                throw SourceError(.indexOutOfRange, "no row at \(indexPath) in \(mappings)", indexPath: indexPath)
            }
            guard let item = try readItem(id, txn) else {
                throw SourceError(.indexOutOfRange, "the row \(id.collection)/\(id.key) at \(indexPath) has no item", indexPath: indexPath)
            }
            let read = PinnedRead(txn)
            defer { read.invalidate() }
            return try factory.cell(for: item, in: requireContainer(container, indexPath), at: ViewCellIndex(indexPath: indexPath, rowID: id, read: read))
        }
    }

    /// The supplementary view of `kind` for `section`, configured inside the pinned read; `nil` when none is
    /// registered or there is no such section.
    public func supplementaryView(kind: SupplementaryKind, inSection section: Int) throws -> SupplementaryView? {
        guard let group = group(forSection: section) else { return nil }
        return try reading { txn in
            let read = PinnedRead(txn)
            defer { read.invalidate() }
            return try factory.supplementaryView(
                kind: kind, in: requireContainer(container, ViewIndexPath(section: section, row: 0)), at: ViewSupplementaryIndex(group: group, indexPath: ViewIndexPath(section: section, row: 0), read: read))
        }
    }

    /// The factory's text of `kind` for `section`; `nil` when none or no such section (or the read failed).
    public func supplementaryText(kind: SupplementaryKind, inSection section: Int) -> String? {
        guard let group = group(forSection: section), factory.hasSupplementary(kind: kind) else { return nil }
        return try? reading { txn in
            let read = PinnedRead(txn)
            defer { read.invalidate() }
            return factory.supplementaryText(kind: kind, at: ViewSupplementaryIndex(group: group, indexPath: ViewIndexPath(section: section, row: 0), read: read))
        }
    }

    // MARK: Changes

    /// Moves to the latest snapshot and applies the changes to the container: a reload, or one batch.
    ///
    /// - Returns: the changeset applied.
    /// - Throws: what ``/Canopy/ViewObserver/advance()`` throws; ``SourceError/Code/invalidBatch`` when the container rejected
    ///   the batch (it reloaded, so it shows the new state anyway).
    @discardableResult
    public func advance() throws -> ViewChangeset {
        let changeset = try observer.advance()
        try apply(changeset)
        return changeset
    }

    /// Whether commits were made after ``snapshot`` (by any process).
    public func hasNewCommits() throws -> Bool { try observer.hasNewCommits() }

    /// Applies the commits made since ``snapshot`` to the container, if there are any.
    /// - Returns: whether the container changed.
    /// - Throws: what ``advance()`` throws.
    @discardableResult
    public func applyPendingChanges() throws -> Bool {
        guard try hasNewCommits() else { return false }
        return try !advance().isEmpty
    }

    /// Moves to the latest snapshot without telling the container (see ``LiveDataSource/skipPendingChanges()``).
    public func skipPendingChanges() throws {
        guard try hasNewCommits() else { return }
        _ = try observer.advance()
    }

    /// Applies a changeset the observer produced to the container.
    func apply(_ changeset: ViewChangeset) throws {
        guard !changeset.isEmpty else { return }
        defer { didApply?(changeset) }
        guard let container else { return }
        switch ContainerUpdate(changeset) {
        case .reload: container.reloadData()
        case .batch(let batch): try container.performBatchUpdates(batch)
        }
    }

    /// The changesets applied to the container as commits arrive, as an `AsyncSequence`: each element is one
    /// advance (every commit since the previous one, applied as one batch), already applied when it is returned.
    ///
    /// Waiting costs nothing: the data source's ``wakeup`` resumes the loop when any process commits (where the
    /// wake-up is not active, it also looks every `pollInterval`; where it is, every `pollInterval` or 2 s, whichever is
    /// longer, as a safety net). Iterate it where the container lives (the main
    /// actor of a UI); the loop ends when its task is cancelled.
    public func changes(pollInterval: Duration = .milliseconds(200)) -> AppliedChanges {
        AppliedChanges(source: self, pollInterval: pollInterval)
    }

    /// The changesets applied by a ``ViewDatasource``; see ``ViewDatasource/changes(pollInterval:)``.
    public struct AppliedChanges: AsyncSequence {
        /// One applied changeset.
        public typealias Element = ViewChangeset
        /// The data source.
        let source: ViewDatasource
        let pollInterval: Duration

        /// An iterator; iterators of one data source share its state (each element is applied once).
        public func makeAsyncIterator() -> Iterator { Iterator(source: source, pollInterval: pollInterval) }

        /// Waits for a wake-up, applies what arrived, returns it; `nil` when the task is cancelled.
        public struct Iterator: AsyncIteratorProtocol {
            let source: ViewDatasource
            let pollInterval: Duration

            /// The next applied, non-empty changeset, in the caller's isolation.
            public mutating func next(isolation actor: isolated (any Actor)? = #isolation) async throws -> ViewChangeset? {
                let wakeup = source.wakeup
                while !Task.isCancelled {
                    let generation = wakeup.generation
                    if try source.hasNewCommits() {
                        let changeset = try source.advance()
                        if !changeset.isEmpty { return changeset }
                        continue
                    }
                    await wakeup.wait(after: generation, timeout: wakeup.isActive ? Swift.max(pollInterval, .seconds(2)) : pollInterval)
                }
                return nil
            }

            /// The next applied, non-empty changeset.
            public mutating func next() async throws -> ViewChangeset? {
                try await next(isolation: nil)
            }
        }
    }

    /// Changes the mappings; the container reloads.
    public func setMappings(_ mappings: ViewMappings) throws {
        try apply(observer.setMappings(mappings))
    }
}

extension ViewDatasource: RandomAccessCollection {
    /// A position over all rows, section by section.
    public typealias Index = Int
    /// The item of a row, or why it can't be shown: the read failed, or the row has no item.
    public typealias Element = Result<Item, SourceError>

    /// 0.
    public var startIndex: Int { 0 }
    /// The number of rows shown.
    public var endIndex: Int { mappings.numberOfItems }

    /// The item at the `position`-th row (counting section by section), or the error reading it: never a silent
    /// `nil` (``SourceError/Code/rowFailed`` with the store's error underneath, or ``SourceError/Code/indexOutOfRange``).
    public subscript(position: Int) -> Result<Item, SourceError> {
        guard let indexPath = indexPath(forPosition: position) else {
            return .failure(SourceError(.indexOutOfRange, "no row at position \(position) (\(mappings.numberOfItems) rows)"))
        }
        do {
            guard let item = try item(at: indexPath) else {
                return .failure(SourceError(.rowFailed, "the row at \(indexPath) has no item (the item reader returned nil)", indexPath: indexPath))
            }
            return .success(item)
        } catch let error as SourceError {
            return .failure(error)
        } catch {
            return .failure(SourceError(.rowFailed, "the item at \(indexPath) could not be read", indexPath: indexPath, underlying: error))
        }
    }

    /// The index path of the `position`-th row, or `nil` when out of range.
    public func indexPath(forPosition position: Int) -> ViewIndexPath? {
        guard position >= 0 else { return nil }
        var remaining = position
        for section in 0..<numberOfSections {
            let count = numberOfItems(inSection: section)
            if remaining < count { return ViewIndexPath(section: section, row: remaining) }
            remaining -= count
        }
        return nil
    }
}
