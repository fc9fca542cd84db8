/// What a list UI must do to go from one snapshot of a view to a later one, under one ``ViewMappings``: section
/// inserts and deletes, and row inserts, deletes, moves and updates as index paths.
///
/// The UI contract: starting from the rendering of the mappings before (``ViewChangeset/compute(notifications:from:reader:)``'s
/// `from`), delete the sections in ``sectionChanges`` that are deletes (at their index before) and the rows that are
/// deletes or move sources (at their original index paths), then insert the sections that are inserts (at their index
/// after) and the rows that are inserts or move destinations (at their final index paths); rows in inserted sections
/// come from the new state, and rows not mentioned keep their relative order. The result is exactly the rendering of
/// ``mappings`` — the order in which UIKit's `performBatchUpdates` applies a batch, and what the randomized tests of
/// Canopy check for thousands of operation sequences. Updates name the original index path (reload the cell there)
/// and, for convenience, the final one.
///
/// Rows of a deleted section are covered by the section delete and not reported one by one, and likewise rows of an
/// inserted section; a row that moves out of a deleted section into a surviving one is an insert, and one that moves
/// from a surviving section into an inserted one is a delete. Crossing a consolidation threshold
/// (``ViewMappings/setConsolidation(threshold:sectionName:)``) deletes the sections before and inserts those after.
public struct ViewChangeset: Sendable {
    /// A section that appeared or disappeared.
    public struct SectionChange: Hashable, Sendable, CustomStringConvertible {
        /// Whether the section was inserted or deleted.
        public enum Kind: Hashable, Sendable {
            /// The section is new: ``index`` is its index after the change.
            case insert
            /// The section is gone: ``index`` is its index before the change.
            case delete
        }
        /// Insert or delete.
        public var kind: Kind
        /// The group the section shows.
        public var group: String
        /// The section's index: after the change for an insert, before it for a delete.
        public var index: Int

        /// Creates a section change.
        public init(kind: Kind, group: String, index: Int) {
            self.kind = kind
            self.group = group
            self.index = index
        }

        /// Such as `insert section 2 (later)`.
        public var description: String { "\(kind) section \(index) (\(group))" }
    }

    /// A row that was inserted, deleted, moved or updated, as index paths of the mappings before and after.
    public struct RowChange: Hashable, Sendable, CustomStringConvertible {
        /// What happened to the row, as the UI sees it.
        public enum Kind: Hashable, Sendable {
            /// The row is new in the UI: only ``finalIndexPath`` is set.
            case insert
            /// The row left the UI: only ``originalIndexPath`` is set.
            case delete
            /// The row moved (or left and came back): both index paths are set, possibly equal.
            case move
            /// The row stayed in place relative to its neighbours and its object or metadata changed, or a neighbour
            /// its cell is drawn from changed (``ViewMappings/GroupOptions/drawingDependencies``; both flags are false
            /// then): both index paths are set; reload the cell at ``originalIndexPath``.
            case update
        }
        /// Insert, delete, move or update.
        public var kind: Kind
        /// The row.
        public var id: RowID
        /// Where the row was shown before (deletes, moves, updates).
        public var originalIndexPath: ViewIndexPath?
        /// Where the row is shown after (inserts, moves, updates).
        public var finalIndexPath: ViewIndexPath?
        /// Whether the row's object changed in the span (set, replaced or touched).
        public var objectChanged: Bool
        /// Whether the row's metadata changed in the span.
        public var metadataChanged: Bool

        /// Creates a row change.
        public init(kind: Kind, id: RowID, originalIndexPath: ViewIndexPath?, finalIndexPath: ViewIndexPath?,
                    objectChanged: Bool = false, metadataChanged: Bool = false) {
            self.kind = kind
            self.id = id
            self.originalIndexPath = originalIndexPath
            self.finalIndexPath = finalIndexPath
            self.objectChanged = objectChanged
            self.metadataChanged = metadataChanged
        }

        /// Such as `move notes/a [0, 3] -> [1, 0]`.
        public var description: String {
            let from = originalIndexPath.map { "\($0)" } ?? ""
            let to = finalIndexPath.map { "\($0)" } ?? ""
            let arrow = originalIndexPath != nil && finalIndexPath != nil ? " -> " : ""
            return "\(kind) \(id.collection)/\(id.key) \(from)\(arrow)\(to)"
        }
    }

    /// Section inserts and deletes: deletes first (by index before, ascending), then inserts (by index after).
    public var sectionChanges: [SectionChange]
    /// Row changes: deletes, inserts, moves, updates, each ordered by index path.
    public var rowChanges: [RowChange]
    /// The mappings after the changes, at ``toSnapshot``.
    public var mappings: ViewMappings
    /// The snapshot the changes start from.
    public var fromSnapshot: UInt64
    /// The snapshot the changes lead to.
    public var toSnapshot: UInt64
    /// Whether a changeset lists changes or says "reload everything".
    public enum Kind: Hashable, Sendable {
        /// Section and row changes (possibly none: nothing the mappings show changed).
        case changes
        /// The changes cannot be expressed row by row (the view was rebuilt in the span, or the commit log no longer
        /// held the span): the UI must reload everything from ``ViewChangeset/mappings``. Both change lists are empty.
        case reload
    }

    /// Changes, or a reload: a reload is its own kind, so it can't be taken for an empty changeset.
    public var kind: Kind

    /// Whether the changeset is a reload (``Kind/reload``).
    public var isReload: Bool {
        get { kind == .reload }
        set { kind = newValue ? .reload : .changes }
    }

    /// Creates a changeset.
    public init(sectionChanges: [SectionChange], rowChanges: [RowChange], mappings: ViewMappings,
                fromSnapshot: UInt64, toSnapshot: UInt64, isReload: Bool) {
        self.sectionChanges = sectionChanges
        self.rowChanges = rowChanges
        self.mappings = mappings
        self.fromSnapshot = fromSnapshot
        self.toSnapshot = toSnapshot
        self.kind = isReload ? .reload : .changes
    }

    /// Whether there is nothing to do: no reload and no change.
    public var isEmpty: Bool { kind == .changes && sectionChanges.isEmpty && rowChanges.isEmpty }

    /// A changeset that tells the UI to reload from `mappings`.
    public static func reload(from fromSnapshot: UInt64, mappings: ViewMappings) -> ViewChangeset {
        ViewChangeset(sectionChanges: [], rowChanges: [], mappings: mappings, fromSnapshot: fromSnapshot,
                      toSnapshot: mappings.snapshot ?? fromSnapshot, isReload: true)
    }
}

extension ViewChangeset {
    /// The changes of the view of `mappings` over a span of commits, consolidated per row, as index paths.
    ///
    /// - Parameters:
    ///   - notifications: the notifications of every commit after `mappings.snapshot` up to `reader.snapshot`, in order
    ///     (what ``/CanopyCore/Connection/advance()`` returns for a connection pinned at `mappings.snapshot`).
    ///   - mappings: the mappings as the UI shows them now, updated at the snapshot the span starts from.
    ///   - reader: a reader of the view at the snapshot the span ends with.
    /// - Returns: the changes, with the mappings updated to `reader`'s snapshot.
    /// - Throws: ``/CanopyCore/CanopyError/Code/snapshotMismatch`` when the notifications don't run without a gap from
    ///   `mappings.snapshot` to `reader.snapshot` (or the mappings were never updated), or when the mappings were
    ///   updated in a write transaction after it changed the view, or `reader`'s write transaction changed the view
    ///   (the commit log holds only committed changes: unless both are at the same such state, with no commit between);
    ///   ``/CanopyCore/CanopyError/Code/invalidArgument`` when `reader` reads another view; ``/CanopyCore/CanopyError/Code/corruptStore`` when a
    ///   notification's view payload is malformed; ``/CanopyCore/CanopyError/Code/staleView`` when another process wrote
    ///   rows without registering the view (its stored state lags the store); what reading the view throws.
    public static func compute(notifications: [CommitNotification], from mappings: ViewMappings, reader: ViewReader) throws -> ViewChangeset {
        guard reader.name == mappings.view else {
            throw CanopyError(.invalidArgument, "these mappings are for view '\(mappings.view)', not '\(reader.name)'", extensionName: reader.name)
        }
        guard let from = mappings.snapshot else {
            throw CanopyError(.snapshotMismatch, "the mappings were never updated; call update(with:) at the snapshot the changes start from",
                              extensionName: mappings.view)
        }
        let to = reader.snapshot
        try checkSpan(notifications, from: from, to: to, view: mappings.view)
        try checkCommittedStates(mappings, reader, spanIsEmpty: notifications.isEmpty)
        try reader.checkUpToDate()

        // No commit of the span changed the view: its writer adds changes to every commit that changes its state
        // (pages, a reset), in any process that registers it, and a process that does not register it leaves it stale,
        // which `checkUpToDate` refused. Same groups, same counts: only the snapshot moves.
        if !notifications.contains(where: { $0.extensionPayloads[mappings.view] != nil }) {
            var after = mappings
            after.moveUnchanged(to: reader)
            return ViewChangeset(sectionChanges: [], rowChanges: [], mappings: after, fromSnapshot: from, toSnapshot: to, isReload: false)
        }

        var after = mappings
        var records: [ViewChangeKey: ViewRowChange] = [:]
        // Every group a row came to or left in the span (some twice): the only groups whose counts changed, since the
        // view's writer records every entry it inserts or removes.
        var changedGroups: [String] = []
        for notification in notifications {
            // This process's commits carry the view's changes as values; other processes' are decoded from the log.
            guard let changes = try notification.extensionChange(named: mappings.view, coding: ViewCommitChanges.PayloadCoding.self) else {
                continue
            }
            if changes.isReset {
                try after.update(with: reader)
                return .reload(from: from, mappings: after)
            }
            for row in changes.rows {
                // A row in several groups has a record per group: each consolidates on its own.
                let key = ViewChangeKey(row, perGroup: changes.recordsPerGroup)
                records[key] = records[key].map { $0.followed(by: row) } ?? row
                if let group = row.original?.group { changedGroups.append(group) }
                if let group = row.final?.group, group != row.original?.group { changedGroups.append(group) }
            }
        }
        try after.update(with: reader, changedGroups: changedGroups)
        records = records.filter { $0.value.original != nil || $0.value.final != nil }
        var computation = ChangesetComputation(before: mappings, after: after, reader: reader, records: records)
        try computation.moveFlexibleWindows()
        let (sections, rows) = try computation.run()
        return ViewChangeset(sectionChanges: sections, rowChanges: rows, mappings: computation.after, fromSnapshot: from, toSnapshot: to,
                             isReload: false)
    }

    /// The changes from `old` to `new`, two mappings of one view at one snapshot that differ only in their groups'
    /// ranges, flexible windows and consolidation — "load more": rows entering and leaving windows as inserts and
    /// deletes, sections as inserts and deletes.
    ///
    /// ```swift
    /// var more = observer.mappings
    /// if let window = more.flexibleWindow(forGroup: "chat") {
    ///     more.setFlexibleWindow(offset: window.offset, length: window.length + 50, forGroup: "chat")
    /// }
    /// let changes = try observer.read { txn in try ViewChangeset.compute(from: observer.mappings, to: more, reader: txn.view("messages")) }
    /// ```
    ///
    /// - Parameters:
    ///   - old: the mappings the UI shows.
    ///   - new: the mappings to show, at the same snapshot.
    ///   - reader: a reader of the view at that snapshot.
    /// - Returns: the changes, with ``mappings`` = `new`.
    /// - Throws: ``/CanopyCore/CanopyError/Code/invalidArgument`` when the mappings are of another view than `reader`, or differ in
    ///   their groups, section kinds, reversal or drawing dependencies; ``/CanopyCore/CanopyError/Code/snapshotMismatch`` when
    ///   either mappings or `reader` is at another snapshot; what reading the view throws.
    public static func compute(from old: ViewMappings, to new: ViewMappings, reader: ViewReader) throws -> ViewChangeset {
        try old.checkReader(reader)
        try new.checkReader(reader)
        guard old.allGroups == new.allGroups else {
            throw CanopyError(.invalidArgument, "the mappings show different groups; only ranges, windows and consolidation may differ",
                              extensionName: old.view)
        }
        for group in old.allGroups {
            var oldOptions = old.options(forGroup: group)
            var newOptions = new.options(forGroup: group)
            oldOptions.range = nil
            newOptions.range = nil
            guard oldOptions == newOptions else {
                throw CanopyError(.invalidArgument, "group '\(group)' has other options in the new mappings; only ranges, windows and consolidation may differ",
                                  extensionName: old.view)
            }
        }
        let snapshot = reader.snapshot
        var computation = ChangesetComputation(before: old, after: new, reader: reader, records: [:])
        let (sections, rows) = try computation.run()
        return ViewChangeset(sectionChanges: sections, rowChanges: rows, mappings: new, fromSnapshot: snapshot, toSnapshot: snapshot,
                             isReload: false)
    }

    /// Checks that the span runs between the states the commit log describes: notifications hold committed changes
    /// only, so mappings updated in a write transaction after it changed the view (counts of no committed snapshot),
    /// or a reader whose write transaction changed the view (changes in no notification), would give index paths
    /// that point at the wrong rows. Allowed: both at one such state, with no commit between (nothing to change).
    static func checkCommittedStates(_ mappings: ViewMappings, _ reader: ViewReader, spanIsEmpty: Bool) throws {
        let readerState = reader.readPoint.uncommitted
        if mappings.uncommitted == readerState && (readerState == .none || spanIsEmpty) { return }
        if mappings.uncommitted != .none {
            throw CanopyError(
                .snapshotMismatch,
                "the mappings were updated in a write transaction after it changed the view: they describe its uncommitted state, not snapshot \(mappings.snapshot.map(String.init) ?? "none"), so no commit's changes apply to them; update them with a read transaction's reader (at the snapshot the changes start from) or reload",
                extensionName: mappings.view)
        }
        throw CanopyError(
            .snapshotMismatch,
            "the reader's write transaction changed the view, and its changes are in no notification until it commits; compute the changes with a read transaction's reader after the commit, or update the mappings with this reader",
            extensionName: mappings.view)
    }

    /// Checks that `notifications` are exactly the commits `from + 1 ... to`.
    static func checkSpan(_ notifications: [CommitNotification], from: UInt64, to: UInt64, view: String) throws {
        guard to >= from else {
            throw CanopyError(.snapshotMismatch, "the reader reads snapshot \(to), before the mappings' snapshot \(from)", extensionName: view)
        }
        guard notifications.count == Int(to - from) else {
            throw CanopyError(
                .snapshotMismatch,
                "\(notifications.count) notifications cannot lead from snapshot \(from) to snapshot \(to): pass every commit in between",
                extensionName: view)
        }
        for (offset, notification) in notifications.enumerated() where notification.snapshot != from + 1 + UInt64(offset) {
            throw CanopyError(
                .snapshotMismatch,
                "notification \(offset) is of snapshot \(notification.snapshot), expected \(from + 1 + UInt64(offset)) (the span runs from \(from) to \(to))",
                extensionName: view)
        }
    }
}

/// Turns consolidated per-row records into index-path changes.
///
/// Indexes before the span are never read from the old state (the reader sees only the new one). They follow from the
/// records: a row's index in its group before the span is the number of rows of the group before it then, which is the
/// number of rows before it now (a binary search over the view's counted pages), minus the changed rows now before it,
/// plus the changed rows that were before it then. So one change costs a few logarithmic lookups however large the
/// group. Groups shown through a range also need the unchanged rows that slid into or out of the window: only the rows
/// near the window's ends are read. Flexible windows are moved from the same records first, and drawing dependencies
/// are found last, from the row changes, around the places that changed.
struct ChangesetComputation {
    let before: ViewMappings
    var after: ViewMappings
    let reader: ViewReader
    let records: [ViewChangeKey: ViewRowChange]
    /// Whether records are per row and group (the view's rows can be in many groups): a row may then be shown in
    /// several sections, once per group, and each place is its own row of the changes.
    let perGroup: Bool

    /// Per group: the sorted order bytes of the changed rows in it before the span, and after it.
    var originalOrders: [String: [[UInt8]]] = [:]
    var finalOrders: [String: [[UInt8]]] = [:]
    /// Each record's index in its group before the span and after it, once computed (windows, rows and sliding rows
    /// all need them; each costs a binary search over the view's pages).
    final class IndexCache {
        var original: [ViewChangeKey: Int] = [:]
        var final: [ViewChangeKey: Int] = [:]
    }
    let indexes = IndexCache()
    /// The sections before and after, set by ``run()`` (after the flexible windows moved).
    var beforeKeys: Set<ViewMappings.SectionKey> = []
    var afterKeys: Set<ViewMappings.SectionKey> = []
    /// Whether the sections after are those before, in order (set by ``run()``; the common case, where the key sets
    /// above are left empty: every section before is one after, and none is inserted or deleted).
    var sameSections = false

    init(before: ViewMappings, after: ViewMappings, reader: ViewReader, records: [ViewChangeKey: ViewRowChange]) {
        self.before = before
        self.after = after
        self.reader = reader
        self.records = records
        self.perGroup = reader.rowsInManyGroups || records.keys.contains { $0.group != nil }
        // Reserved only for many records: `reserveCapacity` is not specialized (about 1,600 instructions each, twice
        // per advance), where the one or two groups of a few changes are inserted as they come.
        if records.count > 16 {
            originalOrders.reserveCapacity(records.count)
            finalOrders.reserveCapacity(records.count)
        }
        for record in records.values {
            if let original = record.original { originalOrders[original.group, default: []].append(original.orderBytes) }
            if let final = record.final { finalOrders[final.group, default: []].append(final.orderBytes) }
        }
        // Sorted in place (no lookup per group; a group of one changed row, the common case, is sorted already).
        for slot in originalOrders.indices where originalOrders.values[slot].count > 1 {
            originalOrders.values[slot].sort { $0.lexicographicallyPrecedes($1) }
        }
        for slot in finalOrders.indices where finalOrders.values[slot].count > 1 {
            finalOrders.values[slot].sort { $0.lexicographicallyPrecedes($1) }
        }
    }

    /// The number of elements of sorted `orders` that precede `order`.
    static func countBefore(_ order: [UInt8], in orders: [[UInt8]]?) -> Int {
        guard let orders else { return 0 }
        var low = 0
        var high = orders.count
        while low < high {
            let middle = (low + high) / 2
            if orders[middle].lexicographicallyPrecedes(order) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The number of elements of sorted `values` less than `value`.
    static func countLess(_ value: Int, in values: [Int]) -> Int {
        var low = 0
        var high = values.count
        while low < high {
            let middle = (low + high) / 2
            if values[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The `rank`-th (from 0) non-negative integer that is not in sorted `skipped`.
    static func nth(_ rank: Int, skipping skipped: [Int]) -> Int {
        var value = rank
        for taken in skipped {
            if taken <= value { value += 1 } else { break }
        }
        return value
    }

    /// The index a row at `index` now (with order `order` in `group`) had before the span, were it unchanged.
    func originalIndex(ofCurrentIndex index: Int, order: [UInt8], group: String) -> Int {
        index - Self.countBefore(order, in: finalOrders[group]) + Self.countBefore(order, in: originalOrders[group])
    }

    /// The index in its group, before the span, of a row whose entry then was `entry`.
    func originalIndex(of entry: ViewEntry) throws -> Int {
        let now = try reader.lowerBound(of: entry)
        return originalIndex(ofCurrentIndex: now, order: entry.orderBytes, group: entry.group)
    }

    /// The key of the record of row `id` in `group`: the row alone unless records are per group.
    func recordKey(_ id: RowID, group: String) -> ViewChangeKey {
        ViewChangeKey(id: id, group: perGroup ? group : nil)
    }

    /// The index in its group before the span of the row of `record` (which has an original entry).
    func originalIndex(of record: ViewRowChange) throws -> Int? {
        guard let original = record.original else { return nil }
        let key = ViewChangeKey(record, perGroup: perGroup)
        if let index = indexes.original[key] { return index }
        let index = try originalIndex(of: original)
        indexes.original[key] = index
        return index
    }

    /// The index in its group after the span of the row of `record` (which has a final entry).
    func finalIndex(of record: ViewRowChange) throws -> Int? {
        guard let final = record.final else { return nil }
        let key = ViewChangeKey(record, perGroup: perGroup)
        if let index = indexes.final[key] { return index }
        let index = try reader.lowerBound(of: final)
        indexes.final[key] = index
        return index
    }

    /// Whether a record leaves its row where it was (an update in place): for windows, the row counts as unchanged.
    static func staysInPlace(_ record: ViewRowChange) -> Bool {
        record.original != nil && record.original == record.final && !record.reinserted
    }

    /// Whether a row of `group` before the span is reported row by row: its section is still there after.
    func reportsOriginal(inGroup group: String) -> Bool {
        guard let key = before.sectionKey(forGroup: group) else { return false }
        return sameSections || afterKeys.contains(key)
    }

    /// Whether a row of `group` after the span is reported row by row: its section was there before.
    func reportsFinal(inGroup group: String) -> Bool {
        guard let key = after.sectionKey(forGroup: group) else { return false }
        return sameSections || beforeKeys.contains(key)
    }

    // MARK: Flexible windows

    /// Moves every flexible window of `after` along with its rows (see ``ViewMappings/FlexibleWindow``).
    mutating func moveFlexibleWindows() throws {
        var states = after.flexibleStates
        var moved = false
        for group in after.allGroups {
            guard case .flexible(let definition)? = after.options(forGroup: group).range else { continue }
            moved = true
            guard before.count(inGroup: group) > 0, before.flexibleStates[group] != nil,
                  before.options(forGroup: group).range == after.options(forGroup: group).range
            else {
                states[group] = nil  // an empty group restarts from the definition
                continue
            }
            let window = try followingWindow(inGroup: group, definition: definition)
            let count = after.count(inGroup: group)
            switch definition.edge {
            case .start: states[group] = .init(offset: window.lowerBound, length: window.count)
            case .end: states[group] = .init(offset: count - window.upperBound, length: window.count)
            }
        }
        guard moved else { return }
        after.flexibleStates = states
        after.refreshLayout()  // brings the windows within their limits; the consolidation may change with them
    }

    /// The indexes now of the rows a flexible window follows, before its limits apply.
    ///
    /// Rows that stay in place keep their order, so those that were before, in and after the window then are before, in
    /// and after it now. A row that arrived (inserted, or moved) is placed by how many of those rows precede it: between
    /// two rows of the window it joins it; in the gap at either end it joins if the window grows on that side or it was
    /// in the window before; elsewhere it is outside.
    func followingWindow(inGroup group: String, definition: ViewMappings.FlexibleWindow) throws -> Range<Int> {
        let old = before.windowRange(inGroup: group)
        var departedBefore = 0
        var departedInside = 0
        var arrivals: [(index: Int, wasInside: Bool)] = []
        for record in records.values where !Self.staysInPlace(record) {
            var wasInside = false
            if let original = record.original, original.group == group {
                let index = try originalIndex(of: record) ?? 0
                if index < old.lowerBound {
                    departedBefore += 1
                } else if index < old.upperBound {
                    departedInside += 1
                    wasInside = true
                }
            }
            if let final = record.final, final.group == group {
                arrivals.append((try finalIndex(of: record) ?? 0, wasInside))
            }
        }
        arrivals.sort { $0.index < $1.index }
        // For each arrival, the number of rows in place before it.
        let ranked = arrivals.enumerated().map { rank, arrival in
            (index: arrival.index, inPlaceBefore: arrival.index - rank, wasInside: arrival.wasInside)
        }
        let inPlaceBefore = old.lowerBound - departedBefore
        let inPlaceInside = old.count - departedInside
        let reversed = after.options(forGroup: group).isReversed
        let growsAtStart = definition.growth.contains(reversed ? .bottom : .top)
        let growsAtEnd = definition.growth.contains(reversed ? .top : .bottom)

        guard inPlaceInside > 0 else {
            let gap = ranked.filter { $0.inPlaceBefore == inPlaceBefore }
            let joining = growsAtStart || growsAtEnd ? gap : gap.filter(\.wasInside)
            if let first = joining.first, let last = joining.last { return first.index..<(last.index + 1) }
            let at = inPlaceBefore + ranked.count { $0.inPlaceBefore < inPlaceBefore }
            return at..<at
        }
        // The index now of the in-place row that is the `k`-th (from 0) of all in-place rows.
        func indexOfInPlace(_ k: Int) -> Int { k + ranked.count { $0.inPlaceBefore <= k } }
        let top = ranked.filter { $0.inPlaceBefore == inPlaceBefore }
        let lower = (growsAtStart ? top.first : top.first(where: \.wasInside))?.index ?? indexOfInPlace(inPlaceBefore)
        let bottom = ranked.filter { $0.inPlaceBefore == inPlaceBefore + inPlaceInside }
        let upper = (growsAtEnd ? bottom.last : bottom.last(where: \.wasInside)).map { $0.index + 1 }
            ?? indexOfInPlace(inPlaceBefore + inPlaceInside - 1) + 1
        return lower..<upper
    }

    // MARK: Changes

    mutating func run() throws -> ([ViewChangeset.SectionChange], [ViewChangeset.RowChange]) {
        func name(_ key: ViewMappings.SectionKey, _ mappings: ViewMappings) -> String {
            switch key {
            case .group(let group): group
            case .consolidated: mappings.consolidatedSectionName
            }
        }
        // Unconsolidated sections are the visible groups: compared without making their keys (the common case).
        sameSections = !before.isConsolidated && !after.isConsolidated
            ? before.visibleGroups == after.visibleGroups : before.sectionKeys == after.sectionKeys
        var sections: [ViewChangeset.SectionChange] = []
        if !sameSections {
            let beforeList = before.sectionKeys
            let afterList = after.sectionKeys
            beforeKeys = Set(beforeList)
            afterKeys = Set(afterList)
            for (index, key) in beforeList.enumerated() where !afterKeys.contains(key) {
                sections.append(.init(kind: .delete, group: name(key, before), index: index))
            }
            for (index, key) in afterList.enumerated() where !beforeKeys.contains(key) {
                sections.append(.init(kind: .insert, group: name(key, after), index: index))
            }
        }

        var rows: [ViewChangeset.RowChange] = []
        for record in records.values {
            var originalPath: ViewIndexPath?
            var finalPath: ViewIndexPath?
            if let original = record.original, reportsOriginal(inGroup: original.group) {
                originalPath = try originalIndex(of: record).flatMap { before.indexPath(forIndex: $0, inGroup: original.group) }
            }
            if let final = record.final, reportsFinal(inGroup: final.group) {
                finalPath = try finalIndex(of: record).flatMap { after.indexPath(forIndex: $0, inGroup: final.group) }
            }
            let flags = (record.objectChanged, record.metadataChanged)
            switch (originalPath, finalPath) {
            case (let from?, let to?):
                if record.reinserted || record.original != record.final {
                    rows.append(.init(kind: .move, id: record.id, originalIndexPath: from, finalIndexPath: to,
                                      objectChanged: flags.0, metadataChanged: flags.1))
                } else if record.objectChanged || record.metadataChanged {
                    rows.append(.init(kind: .update, id: record.id, originalIndexPath: from, finalIndexPath: to,
                                      objectChanged: flags.0, metadataChanged: flags.1))
                }
            case (let from?, nil):
                rows.append(.init(kind: .delete, id: record.id, originalIndexPath: from, finalIndexPath: nil,
                                  objectChanged: flags.0, metadataChanged: flags.1))
            case (nil, let to?):
                rows.append(.init(kind: .insert, id: record.id, originalIndexPath: nil, finalIndexPath: to,
                                  objectChanged: flags.0, metadataChanged: flags.1))
            case (nil, nil):
                break
            }
        }
        for group in after.visibleGroups
        where (after.options(forGroup: group).range != nil || before.options(forGroup: group).range != nil)
            && reportsOriginal(inGroup: group) && reportsFinal(inGroup: group) {
            rows += try slidingRows(inGroup: group)
        }
        rows += try dependentRows(of: rows)
        return (sections, rows.sorted(by: Self.precedes))
    }

    /// Unchanged rows of a ranged group that slid into or out of its window.
    ///
    /// An unchanged row now at `i` was at `o` with `i − (changed rows now) ≤ o ≤ i + (changed rows then)`, so a row
    /// that entered or left the window is within that distance of one of its ends: only those two stretches are read.
    func slidingRows(inGroup group: String) throws -> [ViewChangeset.RowChange] {
        let newCount = after.count(inGroup: group)
        let oldWindow = before.windowRange(inGroup: group)
        let newWindow = after.windowRange(inGroup: group)
        let changedBefore = originalOrders[group]?.count ?? 0
        let changedAfter = finalOrders[group]?.count ?? 0
        // Unchanged rows keep their order: when as many of them are before the window and in it as before the span,
        // the window holds the same unchanged rows and none slid (the common case of a change far from the window).
        if try unchangedRows(before: oldWindow, inGroup: group, original: true) == unchangedRows(before: newWindow, inGroup: group, original: false) {
            return []
        }
        let stretches = [
            min(oldWindow.lowerBound - changedBefore, newWindow.lowerBound)..<max(newWindow.lowerBound, oldWindow.lowerBound + changedAfter),
            min(newWindow.upperBound, oldWindow.upperBound - changedBefore)..<max(newWindow.upperBound, oldWindow.upperBound + changedAfter),
        ].map { max(0, $0.lowerBound)..<max(0, min(newCount, $0.upperBound)) }.filter { !$0.isEmpty }
        var scans: [Range<Int>] = []
        for stretch in stretches {
            if let last = scans.last, stretch.lowerBound <= last.upperBound {
                scans[scans.count - 1] = last.lowerBound..<max(last.upperBound, stretch.upperBound)
            } else {
                scans.append(stretch)
            }
        }
        var result: [ViewChangeset.RowChange] = []
        for scan in scans {
            for (offset, entry) in try reader.entries(inGroup: group, range: scan).enumerated() where records[recordKey(entry.id, group: group)] == nil {
                let index = scan.lowerBound + offset
                let oldIndex = originalIndex(ofCurrentIndex: index, order: entry.order, group: group)
                switch (oldWindow.contains(oldIndex), newWindow.contains(index)) {
                case (true, false):
                    if let path = before.indexPath(forIndex: oldIndex, inGroup: group) {
                        result.append(.init(kind: .delete, id: entry.id, originalIndexPath: path, finalIndexPath: nil))
                    }
                case (false, true):
                    if let path = after.indexPath(forIndex: index, inGroup: group) {
                        result.append(.init(kind: .insert, id: entry.id, originalIndexPath: nil, finalIndexPath: path))
                    }
                default:
                    break
                }
            }
        }
        return result
    }

    /// The number of unchanged rows (rows without a record) of `group` before `window` and in it, then (`original`) or
    /// now.
    func unchangedRows(before window: Range<Int>, inGroup group: String, original: Bool) throws -> [Int] {
        var before = window.lowerBound
        var inside = window.count
        for record in records.values {
            let index: Int?
            if original {
                index = record.original?.group == group ? try originalIndex(of: record) : nil
            } else {
                index = record.final?.group == group ? try finalIndex(of: record) : nil
            }
            guard let index else { continue }
            if index < window.lowerBound { before -= 1 } else if index < window.upperBound { inside -= 1 }
        }
        return [before, inside]
    }

    // MARK: Drawing dependencies

    /// The rows not reported yet whose neighbour at one of their group's drawing offsets is another row than before, or
    /// the same row with a changed object or metadata: as updates.
    ///
    /// Works on the sections as shown. In a section that stays, the rows nobody reports keep their order, so the k-th
    /// of them before is the k-th after; the rows before are those plus the deleted and moved-out ones at their
    /// original rows, which gives every row's neighbour before without reading the old state. Only rows near a row
    /// that changed are looked at.
    func dependentRows(of rows: [ViewChangeset.RowChange]) throws -> [ViewChangeset.RowChange] {
        guard !rows.isEmpty else { return [] }  // nothing moved, nothing changed: no neighbour changed
        guard after.hasDrawingDependencies else { return [] }  // no cell is drawn from a neighbour
        let beforeList = before.sectionKeys
        var mentioned: Set<ViewChangeKey>?
        var result: [ViewChangeset.RowChange] = []
        for (newSection, key) in after.sectionKeys.enumerated() {
            guard let oldSection = beforeList.firstIndex(of: key) else { continue }
            let oldCount = before.numberOfItems(inSection: oldSection)
            let newCount = after.numberOfItems(inSection: newSection)
            let reach = max(oldCount, newCount)
            // Offsets beyond the section never find a neighbour, before or after.
            let offsets = Set(after.groups(inSection: newSection).flatMap { after.options(forGroup: $0).drawingDependencies })
                .filter { $0 != 0 && $0.magnitude < UInt(reach) }
            guard !offsets.isEmpty else { continue }
            if mentioned == nil {
                // Per group when rows can be in many groups: a row reported in one section may be unchanged in another.
                mentioned = Set(rows.map { change in
                    let group = change.finalIndexPath.flatMap { after.position(at: $0)?.group }
                        ?? change.originalIndexPath.flatMap { before.position(at: $0)?.group } ?? ""
                    return recordKey(change.id, group: group)
                })
            }

            var removed: [Int: RowID] = [:]
            var arrived: [Int: RowID] = [:]
            var changedInPlace: [Int] = []
            for change in rows {
                switch change.kind {
                case .delete, .move, .insert:
                    if change.kind != .insert, let path = change.originalIndexPath, path.section == oldSection { removed[path.row] = change.id }
                    if change.kind != .delete, let path = change.finalIndexPath, path.section == newSection { arrived[path.row] = change.id }
                case .update:
                    if let path = change.finalIndexPath, path.section == newSection { changedInPlace.append(path.row) }
                }
            }
            let removedRows = removed.keys.sorted()
            let arrivedRows = arrived.keys.sorted()
            func newRow(ofKeptOldRow row: Int) -> Int { Self.nth(row - Self.countLess(row, in: removedRows), skipping: arrivedRows) }
            func oldRow(ofKeptNewRow row: Int) -> Int { Self.nth(row - Self.countLess(row, in: arrivedRows), skipping: removedRows) }
            func rowID(atNewRow row: Int) throws -> RowID? {
                try shown(atNewRow: row)?.id
            }
            /// The row shown at `row` of the new section, with the key of its record.
            func shown(atNewRow row: Int) throws -> (id: RowID, key: ViewChangeKey)? {
                guard row >= 0, row < newCount,
                      let (group, index) = after.position(at: ViewIndexPath(section: newSection, row: row)),
                      let id = try reader.rowID(at: index, inGroup: group) else { return nil }
                return (id, recordKey(id, group: group))
            }

            // A row's neighbour at offset k can change only if something changed between it and that neighbour.
            var candidates = Set<Int>()
            for offset in offsets {
                let step = offset > 0 ? 1 : -1
                for distance in 1...Int(offset.magnitude) {
                    for row in arrivedRows { candidates.insert(row - step * distance) }
                    for row in changedInPlace { candidates.insert(row - step * distance) }
                    for row in removedRows {
                        let old = row - step * distance
                        if old >= 0, old < oldCount, removed[old] == nil { candidates.insert(newRow(ofKeptOldRow: old)) }
                    }
                }
            }
            for row in candidates.sorted() where row >= 0 && row < newCount && arrived[row] == nil {
                guard let (group, _) = after.position(at: ViewIndexPath(section: newSection, row: row)),
                      let (id, rowKey) = try shown(atNewRow: row), mentioned?.contains(rowKey) != true
                else { continue }
                let oldRow = oldRow(ofKeptNewRow: row)
                var redraw = false
                for offset in after.options(forGroup: group).drawingDependencies where offsets.contains(offset) {
                    let neighbour = try shown(atNewRow: row + offset)
                    let now = neighbour?.id
                    let neighbourRow = oldRow + offset
                    let then: RowID?
                    if neighbourRow < 0 || neighbourRow >= oldCount {
                        then = nil
                    } else if let gone = removed[neighbourRow] {
                        then = gone
                    } else {
                        then = try rowID(atNewRow: newRow(ofKeptOldRow: neighbourRow))
                    }
                    let neighbourChanged = neighbour.flatMap { records[$0.key] }.map { $0.objectChanged || $0.metadataChanged } ?? false
                    if now != then || neighbourChanged {
                        redraw = true
                        break
                    }
                }
                if redraw {
                    result.append(.init(kind: .update, id: id, originalIndexPath: ViewIndexPath(section: oldSection, row: oldRow),
                                        finalIndexPath: ViewIndexPath(section: newSection, row: row)))
                }
            }
        }
        return result
    }

    /// Deletes, inserts, moves, updates; within each by index path (original, or final for inserts).
    static func precedes(_ lhs: ViewChangeset.RowChange, _ rhs: ViewChangeset.RowChange) -> Bool {
        func rank(_ kind: ViewChangeset.RowChange.Kind) -> Int {
            switch kind {
            case .delete: 0
            case .insert: 1
            case .move: 2
            case .update: 3
            }
        }
        if lhs.kind != rhs.kind { return rank(lhs.kind) < rank(rhs.kind) }
        let left = lhs.originalIndexPath ?? lhs.finalIndexPath ?? ViewIndexPath(section: 0, row: 0)
        let right = rhs.originalIndexPath ?? rhs.finalIndexPath ?? ViewIndexPath(section: 0, row: 0)
        return left < right
    }
}
