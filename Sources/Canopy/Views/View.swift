import Foundation
import Synchronization

/// A persistent, grouped and sorted index over rows, maintained inside every write transaction.
///
/// A view puts each row in a group (or leaves it out) with its ``ViewGrouping`` and orders the rows of a group by
/// the ``SortKey`` of its ``ViewSorting``; ties break by collection (in the order collections were first written), then
/// key. Its state lives in LMDB tables written in the same transaction as the rows, so a reopened database has its
/// views without recomputing them. Register it with ``/CanopyCore/Database/register(_:)``; read it with
/// ``CanopyCore/ReadTransaction/view(_:)``.
///
/// ```swift
/// let reminders = TypedCollection<Reminder, NoMetadata>("reminders")
/// let agenda = View(
///     name: "agenda",
///     grouping: .byObject(reminders) { _, reminder in reminder.done ? nil : reminder.day },
///     sorting: .byObject(reminders) { _, _, reminder in SortKey(.ascending(reminder.due), .ascending(reminder.title)) },
///     versionTag: "1")
/// try database.register(agenda)
/// ```
///
/// The typed forms of grouping and sorting take a ``/CanopyCore/TypedCollection``: the view then holds only that collection's rows
/// (its ``viewOptions`` allow only it), so a write to another collection never reaches a closure that would fail to
/// decode it. A view over several collections groups and sorts with ``ViewGrouping/byRow(_:)`` and
/// ``ViewSorting/byRow(_:)``. The `many…` forms of grouping (``ViewGrouping/manyByObject(_:_:)`` and its siblings) put a
/// row in a set of groups, with an entry, a position and changes per group: see <doc:ManyGroups>.
///
/// Changing the closures' behaviour needs a new `versionTag`: the view is then rebuilt at registration. A changed
/// ``options`` (allowed collections, parent, what the closures read) rebuilds it too, and registration spot-checks the
/// closures against a sample of stored entries, so a changed closure without a new tag is rebuilt rather than kept.
/// A view that missed writes (the database was written by a process that did not register it) is caught up from the
/// commit log — at registration, or at the start of this process's next write — or rebuilt; a read through it
/// meanwhile throws ``/CanopyCore/CanopyError/Code/staleView`` rather than show rows in the wrong place.
public final class View: StoreExtension {
    enum Source: Sendable {
        case closures(ViewGrouping, ViewSorting)
        case filtered(parent: String, filter: @Sendable (_ group: String, _ row: ViewRow) throws -> Bool)
        /// A manual list (``ManualView``): one group, rows in the order the app gave them, kept in the view's `order`
        /// table (row key → order key).
        case manual(group: String)
    }

    /// The view's name, unique among the database's extensions.
    public let name: String
    /// ``plainKind``, ``filteredKind``, ``manualKind``, ``manyGroupsKind`` or ``filteredManyGroupsKind``.
    public let kind: String
    /// Changing the tag rebuilds the view at registration.
    public let versionTag: String
    /// The view's options. The typed forms of grouping and sorting limit ``ViewOptions/allowedCollections`` to their
    /// collection.
    public let viewOptions: ViewOptions
    let source: Source
    /// The grouping and sorting in one closure that reads each row's object once, when both are `byObject` forms of
    /// one collection (``TypedPlacement``); `nil` otherwise.
    let typedPlacement: TypedPlacement?
    /// What ``source`` is, and what its closures read, told without reading ``source``: a row's write asks several
    /// times, and each read of ``source`` copied its closures and strings (retained and released: several hundred
    /// instructions a row and view).
    let sourceShape: SourceShape

    /// See ``sourceShape``.
    struct SourceShape {
        enum Kind { case closures, filtered, manual }
        var kind: Kind
        /// Whether a change of the object / of the metadata can move a row (``placeDepends(onObject:metadata:)``).
        var dependsOnObject: Bool
        var dependsOnMetadata: Bool
    }
    /// Why the definition can hold no row (a grouping and a sorting typed for different collections, a typed form
    /// for a collection the options don't allow): registration refuses it.
    let definitionError: String?
    let progress: (@Sendable (_ done: Int, _ total: Int) -> Void)?

    struct State {
        var tables: ViewTables?
        /// Recently used committed indexes by view version.
        var indexes: [(version: UInt64, index: ViewIndex)] = []
        var lastPopulation: PopulationReport?
        /// A manual view's order table (row key → order key), opened at registration.
        var order: ManualOrderTable?
    }
    let state = Mutex(State())
    static let cachedVersions = 8

    /// Creates a view.
    /// - Parameters:
    ///   - name: the view's unique name.
    ///   - grouping: puts rows in groups, or leaves them out.
    ///   - sorting: orders the rows of a group.
    ///   - versionTag: change it whenever the closures' results change for the same rows.
    ///   - options: allowed collections, touch behaviour.
    ///   - progress: called during population (first registration or rebuild) with rows done and total.
    public init(
        name: String, grouping: ViewGrouping, sorting: ViewSorting, versionTag: String = "1", options: ViewOptions = .init(),
        progress: (@Sendable (_ done: Int, _ total: Int) -> Void)? = nil
    ) {
        self.name = name
        self.kind = grouping.isMany ? Self.manyGroupsKind : Self.plainKind
        self.versionTag = versionTag
        var effective = options
        var definitionError: String?
        for typed in [grouping.collection, sorting.collection].compactMap({ $0 }) {
            if let allowed = effective.allowedCollections, !allowed.contains(typed) {
                definitionError = "the view's typed closures read collection '\(typed)', which its other closure or its allowedCollections (\(allowed.sorted())) exclude: it could hold no row; type both closures for one collection, or use byRow for several"
            }
            effective.allowedCollections = [typed]
        }
        self.viewOptions = effective
        self.definitionError = definitionError
        self.source = .closures(grouping, sorting)
        self.typedPlacement = grouping.isMany ? nil : TypedPlacement(grouping: grouping, sorting: sorting)
        self.sourceShape = SourceShape(kind: .closures, dependsOnObject: grouping.dependsOnObject || sorting.dependsOnObject,
                                       dependsOnMetadata: grouping.dependsOnMetadata || sorting.dependsOnMetadata)
        self.progress = progress
    }

    init(name: String, parent: String, versionTag: String, options: ViewOptions, kind: String = View.filteredKind,
         filter: @escaping @Sendable (String, ViewRow) throws -> Bool, progress: (@Sendable (Int, Int) -> Void)?) {
        self.name = name
        self.kind = kind
        self.versionTag = versionTag
        self.viewOptions = options
        self.definitionError = nil
        self.source = .filtered(parent: parent, filter: filter)
        self.typedPlacement = nil
        self.sourceShape = SourceShape(kind: .filtered, dependsOnObject: true, dependsOnMetadata: true)
        self.progress = progress
    }

    init(manualName name: String, group: String, versionTag: String, collections: Set<String>) {
        self.name = name
        self.kind = Self.manualKind
        self.versionTag = versionTag
        // The list places rows itself (its editor, through the view's writer): a touch changes no place.
        self.viewOptions = ViewOptions(allowedCollections: collections, rerunOnTouch: false)
        self.definitionError = collections.isEmpty ? "a manual view needs at least one collection" : nil
        self.source = .manual(group: group)
        self.typedPlacement = nil
        self.sourceShape = SourceShape(kind: .manual, dependsOnObject: false, dependsOnMetadata: false)
        self.progress = nil
    }

    /// The kind a view made with grouping and sorting closures is recorded with (unless its rows can be in many groups:
    /// ``manyGroupsKind``).
    public static let plainKind = "view"

    /// The kind a filtered view (``FilteredView``) is recorded with (unless its parent's rows can be in many groups:
    /// ``filteredManyGroupsKind``).
    public static let filteredKind = "filtered-view"

    /// The kind a manual view (``ManualView``) is recorded with. Its rows' records carry only a mark that they are in
    /// the list (`ViewTables.listedMarker`), their order lives in the view's `order` table, so a move writes no row:
    /// a build that reads entries from the rows' records (before this kind existed, manual views were recorded as
    /// `"view"`) does not know this kind and refuses to read the view rather than misplace its rows. A list recorded
    /// as `"view"` by such a build is rebuilt in this format when it is registered (the kind changed).
    public static let manualKind = "manual-view"

    /// The kind a view whose grouping puts rows in many groups (a `many…` form) is recorded with. Its rows' records
    /// can hold an entry per group, which a build from before such views read as no entry: such a build does not know
    /// this kind and refuses to read the view (`canopy` says no such view is recorded) rather than report rows in
    /// several groups as outside the view. A many-group view recorded as `"view"` (by the first builds that had them)
    /// is rebuilt when it is registered (the kind changed). See <doc:ManyGroups>.
    public static let manyGroupsKind = "many-groups-view"

    /// The kind a filtered view over a view whose rows can be in many groups (a ``manyGroupsKind`` view, or a filtered
    /// view of this kind) is recorded with: its rows' records can hold an entry per group too, so builds that read
    /// such entries as one (before many-group views) or that do not know the kind refuse it rather than answer no
    /// position for a row in several groups. Make such a view with
    /// ``FilteredView/make(name:parent:versionTag:options:progress:filter:)``, which knows the parent's kind; a filtered
    /// view over a many-group view recorded as `"filtered-view"` (by the builds before this kind) is rebuilt when it
    /// is registered (the kind changed). See <doc:ManyGroups>.
    public static let filteredManyGroupsKind = "filtered-many-groups-view"

    /// The kinds views are recorded with (``/CanopyCore/StoreExtension/kind``): tools list and read the extensions of these kinds
    /// as views.
    public static let recordedKinds: Set<String> = [plainKind, filteredKind, manualKind, manyGroupsKind, filteredManyGroupsKind]

    /// Whether the kind says that a row can be in several groups of the view (``manyGroupsKind``,
    /// ``filteredManyGroupsKind``).
    var kindHasManyGroups: Bool { kind == Self.manyGroupsKind || kind == Self.filteredManyGroupsKind }

    /// A filtered view depends on its parent view: registered after it, told of each change after it, rebuilt with it.
    public var dependencies: [String] {
        if case .filtered(let parent, _) = source { return [parent] }
        return []
    }

    /// Everything the view declares besides its closures, as recorded and compared at registration: allowed
    /// collections, touch behaviour, parent view, and what the grouping and sorting read (object, metadata). Recorded
    /// as JSON with sorted keys, through `Codable` (``/CanopyCore/StoreExtension/recordedOptions()``). A difference at
    /// registration rebuilds the view, as a new version tag does.
    public var options: Definition { definition }

    /// What a view records about its definition besides its closures (``options``). Every field is optional so that
    /// the records of earlier versions, which had fewer of them, still read: a field they lack reads as `nil`, which
    /// differs from the current definition's value and so rebuilds the view.
    public struct Definition: Codable, Equatable, Sendable {
        /// What a closure reads.
        public struct Reads: Codable, Equatable, Sendable {
            /// Whether it reads the object.
            public var object: Bool
            /// Whether it reads the metadata.
            public var metadata: Bool
        }
        /// The collections the view admits, sorted; `nil` for all.
        public var allowedCollections: [String]?
        /// Whether touching a row re-runs its grouping and sorting.
        public var rerunOnTouch: Bool?
        /// A filtered view's parent view.
        public var parent: String?
        /// What the grouping reads.
        public var grouping: Reads?
        /// What the sorting reads.
        public var sorting: Reads?
        /// Set only when true, so that the options of views registered before it existed stay the same.
        public var strictDecoding: Bool?
        /// A manual view's one group.
        public var manualGroup: String?
        /// Set only when true (a `many…` grouping): a row can be in several groups.
        public var manyGroups: Bool?
    }

    var definition: Definition {
        var definition = Definition(allowedCollections: viewOptions.allowedCollections?.sorted(), rerunOnTouch: viewOptions.rerunOnTouch)
        definition.strictDecoding = viewOptions.strictDecoding ? true : nil
        switch source {
        case .closures(let grouping, let sorting):
            definition.grouping = .init(object: grouping.dependsOnObject, metadata: grouping.dependsOnMetadata)
            definition.sorting = .init(object: sorting.dependsOnObject, metadata: sorting.dependsOnMetadata)
            definition.manyGroups = grouping.isMany ? true : nil
        case .filtered(let parent, _):
            definition.parent = parent
        case .manual(let group):
            definition.manualGroup = group
        }
        return definition
    }

    /// A manual view's order table.
    var manualOrder: ManualOrderTable {
        get throws {
            guard let order = state.withLock({ $0.order }) else {
                throw CanopyError(.extensionNotRegistered, "the manual view is not registered; register it with Database.register(_:)", extensionName: name)
            }
            return order
        }
    }

    /// What the last population (first registration or rebuild) did, if one ran in this process.
    public var lastPopulation: PopulationReport? { state.withLock { $0.lastPopulation } }

    var tables: ViewTables {
        get throws {
            guard let tables = state.withLock({ $0.tables }) else {
                throw CanopyError(.extensionNotRegistered, "the view is not registered; register it with Database.register(_:)", extensionName: name)
            }
            return tables
        }
    }

    // MARK: StoreExtension

    /// Opens the view's tables and populates them when needed (see ``/CanopyCore/ExtensionRegistrationContext``). The store
    /// prepares a filtered view again, with a rebuild, whenever its parent is rebuilt (``dependencies``).
    public func prepare(in transaction: ReadWriteTransaction, context: ExtensionRegistrationContext) throws {
        if let definitionError {
            throw CanopyError(.invalidArgument, definitionError, path: transaction.databasePath, extensionName: name)
        }
        try checkParent(in: transaction)
        let tables = try ViewTables.open(in: transaction, view: name)
        // Versions are commits' snapshots, which another database repeats: an object registered before in a database
        // since closed must not answer this one's versions from that one's directories.
        state.withLock { $0.tables = tables; $0.indexes = [] }
        if case .manual = source {
            let order = try ManualOrderTable.open(in: transaction, view: name)
            state.withLock { $0.order = order }
            // Rows removed while the list was not maintained (a rebuild after missed writes) leave the list for good,
            // and so do rows removed and written again then (their records lost the entry of the retired slot).
            if context.rebuildReason != nil { try order.removeMissingRows(in: transaction, previousSlot: context.retiredAttachmentSlot) }
        }
        if let reason = context.rebuildReason {
            let index = try populate(in: transaction, tables: tables, reason: reason)
            remember(index)
        }
    }

    /// Opens the view's stored tables without writing and spot-checks them against the closures: the group and sort
    /// key of a sample of stored entries (spread over the groups: the first, the last and a few between of each
    /// sampled group, a few hundred rows), and whether the first rows outside the view stay out, are recomputed and
    /// compared byte for byte. A difference means the closures changed without a new version tag: the registration
    /// rebuilds the view, saying so. Rows whose closures throw are skipped.
    public func checkStoredState(in transaction: ReadTransaction) throws -> StoredStateCheck {
        if let definitionError {
            throw CanopyError(.invalidArgument, definitionError, path: transaction.databasePath, extensionName: name)
        }
        try checkParent(in: transaction)
        // (As in `prepare`: the cached directories may be another database's.)
        if transaction.writer(of: self) == nil { state.withLock { $0.indexes = [] } }
        if case .manual = source {
            guard let order = try ManualOrderTable.existing(in: transaction, view: name) else { return .needsWrite }
            state.withLock { $0.order = order }
        }
        let writer = transaction.writer(of: self)
        let tables: ViewTables
        if let writer {
            tables = writer.tables
        } else {
            guard let existing = try ViewTables.existing(in: transaction, view: name) else { return .rebuild(because: "its tables are missing") }
            tables = existing
            state.withLock { $0.tables = existing }

        }
        let reader = ViewReader(view: self, index: writer == nil ? try index(in: transaction) : nil, transaction: transaction,
                                tables: tables, writer: writer)
        if let mismatch = try spotCheck(reader) { return .rebuild(because: mismatch) }
        return .usable
    }

    /// Creates the per-transaction writer that keeps the view up to date.
    public func beginWrite(_ transaction: ReadWriteTransaction) throws -> ViewWriter {
        ViewWriter(view: self, transaction: transaction, tables: try tables)
    }

    /// Drops the view's tables.
    public func dropStorage(in transaction: ReadWriteTransaction) throws {
        let tables = try ViewTables.open(in: transaction, view: name)
        try tables.dropAll(in: transaction)
        if case .manual = source { try ManualOrderTable.open(in: transaction, view: name).table.drop(in: transaction) }
        state.withLock { $0.tables = nil; $0.indexes = []; $0.order = nil }
    }

    /// Checks a filtered view's parent as registered in this process. A manual list is refused: the list moves rows
    /// without telling other extensions (a move writes no row), so the filtered view's places would fall behind its
    /// parent's. A parent whose rows can be in many groups needs the kind ``filteredManyGroupsKind`` (older builds
    /// refuse it), and only that parent: a filtered view made from the parent's name has the kind `"filtered-view"`,
    /// which those builds would read wrongly, so it is refused with what to do.
    func checkParent(in transaction: ReadTransaction) throws {
        guard case .filtered(let parent, _) = source, let parentView = transaction.registeredExtension(named: parent, as: View.self) else { return }
        if case .manual = parentView.source {
            throw CanopyError(.invalidArgument, "the filtered view's parent '\(parent)' is a manual list, which cannot be filtered: its moves reach no other view; filter the rows when you read the list, or keep a second manual list",
                              path: transaction.databasePath, extensionName: name)
        }
        let parentHasManyGroups = parentView.rowsInManyGroups(in: transaction)
        guard parentHasManyGroups != kindHasManyGroups else { return }
        if parentHasManyGroups {
            throw CanopyError(.invalidArgument, "the filtered view's parent '\(parent)' puts rows in many groups, and a filtered view made from the parent's name cannot say so in its recorded kind (builds before many-group views would read its rows wrongly); make it with FilteredView.make(name:parent:…), passing the parent view, so that it is recorded as '\(Self.filteredManyGroupsKind)'",
                              path: transaction.databasePath, extensionName: name)
        }
        throw CanopyError(.invalidArgument, "the filtered view was made from a parent view whose rows can be in many groups, but the view registered as '\(parent)' puts each row in one group; pass the view registered under that name",
                          path: transaction.databasePath, extensionName: name)
    }

    // MARK: Indexes

    func remember(_ index: ViewIndex) {
        state.withLock { state in
            state.indexes.removeAll { $0.version == index.version }
            state.indexes.append((index.version, index))
            if state.indexes.count > Self.cachedVersions { state.indexes.removeFirst() }
        }
    }

    /// The index of the view as seen by `txn`: from the cache when its version is known, otherwise loaded.
    func index(in txn: ReadTransaction) throws -> ViewIndex {
        let tables = try tables
        let version = try tables.readVersion(txn)
        if let cached = state.withLock({ $0.indexes.last { $0.version == version }?.index }) { return cached }
        let index = try tables.loadIndex(txn)
        remember(index)
        return index
    }

    /// A row's group and order bytes (the sort key, `sortKeyLength` bytes, then the row's stored key).
    typealias Place = (group: String, sortKeyLength: Int, order: [UInt8])

    /// The grouping and order of `row`, or `nil` when the row is not in the view, for a view whose rows are each in
    /// one group (``places(of:rowKey:in:)`` answers for every view). For filtered views, reads the parent view's entry
    /// for the row (maintained earlier in the same transaction).
    func place(of row: ViewRow, rowKey: StoredRowKey, in transaction: ReadTransaction) throws -> Place? {
        if sourceShape.kind != .filtered {
            guard let (group, sortKey) = try groupAndSortKey(of: row, rowKey: rowKey, in: transaction) else { return nil }
            return (group, sortKey.count, sortKey + rowKey.bytes)
        }
        switch source {
        case .closures, .manual:
            guard let (group, sortKey) = try groupAndSortKey(of: row, rowKey: rowKey, in: transaction) else { return nil }
            return (group, sortKey.count, sortKey + rowKey.bytes)
        case .filtered(let parentName, let filter):
            guard viewOptions.allows(row.collection) else { return nil }
            guard let parent = transaction.registeredExtension(named: parentName, as: View.self) else { return nil }
            let parentTables = try parent.tables
            // The parent's entry for the row: set earlier in this write (the parent hears of it first), or stored.
            guard let parentSlot = try transaction.attachmentSlot(for: parentName),
                  let entry = try parentTables.rowEntry(try row.attachment(at: parentSlot)) else { return nil }
            // The group's name only: the parent's pages may still wait for this transaction's new entries.
            let group = try transaction.writer(of: parent).map { try $0.groupName(forID: entry.groupID) }
                ?? parent.index(in: transaction).groupNames[entry.groupID]
            guard let group else { return nil }
            guard try filter(group, row) else { return nil }
            return (group, entry.sortKey.count, entry.order(rowKey: rowKey))
        }
    }

    /// The group and sort key of `row` (without its row key), or `nil` when the row is not in the view, for a view of
    /// closures or a manual list: ``place(of:rowKey:in:)``'s parts, which population copies into its batch as they
    /// are (an order array made per row, then copied and freed, cost it about 500 instructions a row).
    /// - Throws: ``/CanopyCore/CanopyError/Code/extensionFailed`` for a filtered view or one whose rows can be in
    ///   many groups; what the closures throw; ``/CanopyCore/CanopyError/Code/sortKeyTooLong``.
    func groupAndSortKey(of row: ViewRow, rowKey: StoredRowKey, in transaction: ReadTransaction) throws -> (group: String, sortKey: [UInt8])? {
        guard viewOptions.allows(row.collection) else { return nil }
        // Before `source` is read (see ``sourceShape``).
        if let typedPlacement {
            guard let (group, sortKey) = try typedPlacement.place(row) else { return nil }
            return (group, try checked(sortKey, of: row).bytes)
        }
        switch source {
        case .closures(let grouping, let sorting):
            guard !grouping.isMany else {
                throw CanopyError(.extensionFailed, "internal: a row of a view whose rows can be in many groups was placed in one", extensionName: name)
            }
            guard let group = try grouping.closure(row) else { return nil }
            let sortKey = try checked(try sorting.closure(group, row), of: row)
            return (group, sortKey.bytes)
        case .manual(let group):
            guard let order = try manualOrder.table.value(forKey: rowKey, in: transaction) else { return nil }
            return (group, ManualOrderTable.sortKey(order))
        case .filtered:
            throw CanopyError(.extensionFailed, "internal: a filtered view's row was placed by its own closures", extensionName: name)
        }
    }

    /// `sortKey`, the sorting closure's key for `row`.
    /// - Throws: ``/CanopyCore/CanopyError/Code/sortKeyTooLong`` when it is longer than ``SortKey/maximumLength``.
    func checked(_ sortKey: SortKey, of row: ViewRow) throws -> SortKey {
        guard sortKey.bytes.count <= SortKey.maximumLength else {
            throw CanopyError(
                .sortKeyTooLong,
                "the sorting closure's key for the row is \(sortKey.bytes.count) bytes; a view stores sort keys of at most \(SortKey.maximumLength) bytes: sort by a shorter value (a prefix of a long text, say); nothing was written",
                collection: row.collection, key: row.key, extensionName: name)
        }
        return sortKey
    }

    /// Whether a change of the object / metadata can change the row's place.
    func placeDepends(onObject objectChanged: Bool, metadata metadataChanged: Bool) -> Bool {
        (objectChanged && sourceShape.dependsOnObject) || (metadataChanged && sourceShape.dependsOnMetadata)
    }
}

/// Creates filtered views: a parent view plus a filter; same groups and order as the parent, fewer rows.
public enum FilteredView {
    /// A view with the groups and order of `parentView`, keeping the rows for which `filter` returns `true`.
    ///
    /// Register the parent first. Changing the filter's behaviour needs a new `versionTag`; the rebuild then walks the
    /// parent's rows in order and only re-runs the filter (no grouping, sorting or re-sorting).
    ///
    /// A parent whose rows can be in many groups (a `many…` grouping) needs
    /// ``make(name:parent:versionTag:options:progress:filter:)``, which records the filtered view with a kind older
    /// builds refuse: made from the name, registering it throws ``/CanopyCore/CanopyError/Code/invalidArgument``.
    public static func make(
        name: String, parentView: String, versionTag: String = "1", options: ViewOptions = .init(),
        progress: (@Sendable (_ done: Int, _ total: Int) -> Void)? = nil,
        filter: @escaping @Sendable (_ group: String, _ row: ViewRow) throws -> Bool
    ) -> View {
        View(name: name, parent: parentView, versionTag: versionTag, options: options, filter: filter, progress: progress)
    }

    /// A view with the groups and order of `parent`, keeping the rows for which `filter` returns `true`.
    ///
    /// As ``make(name:parentView:versionTag:options:progress:filter:)``, with the parent view itself rather than its
    /// name: the filtered view then knows whether the parent's rows can be in many groups, and is recorded with the
    /// kind that says so (``View/filteredManyGroupsKind``, which older builds refuse). A filtered view over a
    /// many-group view must be made this way (the name-only form is refused at registration). Register `parent`, this
    /// very view, first: a different view registered under its name is refused at registration.
    ///
    /// ```swift
    /// let byTag = View(name: "by-tag", grouping: .manyByObject(notes) { _, note in Set(note.tags) },
    ///                  sorting: .byObject(notes) { _, _, note in SortKey(.ascending(note.title)) })
    /// try database.register(byTag)
    /// try database.register(FilteredView.make(name: "pinned", parent: byTag) { _, row in try row.object(in: notes).pinned })
    /// ```
    public static func make(
        name: String, parent: View, versionTag: String = "1", options: ViewOptions = .init(),
        progress: (@Sendable (_ done: Int, _ total: Int) -> Void)? = nil,
        filter: @escaping @Sendable (_ group: String, _ row: ViewRow) throws -> Bool
    ) -> View {
        View(name: name, parent: parent.name, versionTag: versionTag, options: options,
             kind: parent.kindHasManyGroups ? View.filteredManyGroupsKind : View.filteredKind, filter: filter, progress: progress)
    }
}

/// What a population did: why it ran, how many rows it looked at and how many entered the view.
public struct PopulationReport: Sendable, Hashable {
    /// Why the view was (re)built.
    public var reason: String
    /// Rows examined.
    public var rowsExamined: Int
    /// Rows in the view afterwards.
    public var rowsIndexed: Int
    /// Groups in the view afterwards.
    public var groups: Int
    /// Pages written.
    public var pages: Int
    /// Rows left out because the closures could not decode them (see ``ViewOptions/strictDecoding``).
    public var rowsSkipped: Int = 0
}
