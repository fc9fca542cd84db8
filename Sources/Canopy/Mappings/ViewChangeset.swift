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
/// from a surviving section into an inserted one is a delete.
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
            /// The row stayed in place relative to its neighbours and its object or metadata changed: both index paths
            /// are set; reload the cell at ``originalIndexPath``.
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
    /// Whether the changes cannot be expressed row by row (the view was rebuilt in the span, or the commit log no
    /// longer held the span): the UI must reload everything from ``mappings``. Both change lists are empty then.
    public var isReload: Bool

    /// Creates a changeset.
    public init(sectionChanges: [SectionChange], rowChanges: [RowChange], mappings: ViewMappings,
                fromSnapshot: UInt64, toSnapshot: UInt64, isReload: Bool) {
        self.sectionChanges = sectionChanges
        self.rowChanges = rowChanges
        self.mappings = mappings
        self.fromSnapshot = fromSnapshot
        self.toSnapshot = toSnapshot
        self.isReload = isReload
    }

    /// Whether there is nothing to do: no reload and no change.
    public var isEmpty: Bool { !isReload && sectionChanges.isEmpty && rowChanges.isEmpty }

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
    ///     (what ``Connection/advance()`` returns for a connection pinned at `mappings.snapshot`).
    ///   - mappings: the mappings as the UI shows them now, updated at the snapshot the span starts from.
    ///   - reader: a reader of the view at the snapshot the span ends with.
    /// - Returns: the changes, with the mappings updated to `reader`'s snapshot.
    /// - Throws: ``CanopyError/Code/snapshotMismatch`` when the notifications don't run without a gap from
    ///   `mappings.snapshot` to `reader.snapshot` (or the mappings were never updated);
    ///   ``CanopyError/Code/invalidArgument`` when `reader` reads another view; ``CanopyError/Code/corruptStore`` when a
    ///   notification's view payload is malformed; ``CanopyError/Code/staleView`` when another process wrote
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
        try reader.checkUpToDate()

        var after = mappings
        try after.update(with: reader)

        var records: [RowID: ViewRowChange] = [:]
        for notification in notifications {
            guard let payload = notification.extensionPayloads[mappings.view] else { continue }
            let changes = try ViewCommitChanges.decode(payload)
            if changes.isReset { return .reload(from: from, mappings: after) }
            for row in changes.rows {
                records[row.id] = records[row.id].map { $0.followed(by: row) } ?? row
            }
        }
        records = records.filter { $0.value.original != nil || $0.value.final != nil }
        var computation = ChangesetComputation(before: mappings, after: after, reader: reader, records: records)
        let (sections, rows) = try computation.run()
        return ViewChangeset(sectionChanges: sections, rowChanges: rows, mappings: after, fromSnapshot: from, toSnapshot: to, isReload: false)
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
/// group. Groups shown through a range (first or last N) also need the unchanged rows that slid into or out of the
/// window: only the rows near the window are read.
struct ChangesetComputation {
    let before: ViewMappings
    let after: ViewMappings
    let reader: ViewReader
    let records: [RowID: ViewRowChange]

    /// Per group: the sorted order bytes of the changed rows in it before the span, and after it.
    var originalOrders: [String: [[UInt8]]] = [:]
    var finalOrders: [String: [[UInt8]]] = [:]

    init(before: ViewMappings, after: ViewMappings, reader: ViewReader, records: [RowID: ViewRowChange]) {
        self.before = before
        self.after = after
        self.reader = reader
        self.records = records
        for record in records.values {
            if let original = record.original { originalOrders[original.group, default: []].append(original.orderBytes) }
            if let final = record.final { finalOrders[final.group, default: []].append(final.orderBytes) }
        }
        for key in originalOrders.keys { originalOrders[key]?.sort { $0.lexicographicallyPrecedes($1) } }
        for key in finalOrders.keys { finalOrders[key]?.sort { $0.lexicographicallyPrecedes($1) } }
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

    /// The index a row at `index` now (with order `order` in `group`) had before the span, were it unchanged.
    func originalIndex(ofCurrentIndex index: Int, order: [UInt8], group: String) -> Int {
        index - Self.countBefore(order, in: finalOrders[group]) + Self.countBefore(order, in: originalOrders[group])
    }

    /// The index in its group, before the span, of a row whose entry then was `entry`.
    func originalIndex(of entry: ViewEntry) throws -> Int {
        let now = try reader.lowerBound(of: entry)
        return originalIndex(ofCurrentIndex: now, order: entry.orderBytes, group: entry.group)
    }

    /// Whether `group` is a section both before and after (its rows are reported one by one).
    func survives(_ group: String) -> Bool {
        before.section(forGroup: group) != nil && after.section(forGroup: group) != nil
    }

    mutating func run() throws -> ([ViewChangeset.SectionChange], [ViewChangeset.RowChange]) {
        var sections: [ViewChangeset.SectionChange] = []
        for (index, group) in before.visibleGroups.enumerated() where after.section(forGroup: group) == nil {
            sections.append(.init(kind: .delete, group: group, index: index))
        }
        for (index, group) in after.visibleGroups.enumerated() where before.section(forGroup: group) == nil {
            sections.append(.init(kind: .insert, group: group, index: index))
        }

        var rows: [ViewChangeset.RowChange] = []
        for record in records.values {
            var originalPath: ViewIndexPath?
            var finalPath: ViewIndexPath?
            if let original = record.original, survives(original.group) {
                originalPath = before.indexPath(forIndex: try originalIndex(of: original), inGroup: original.group)
            }
            if let final = record.final, survives(final.group) {
                finalPath = after.indexPath(forIndex: try reader.lowerBound(of: final), inGroup: final.group)
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
        for group in after.visibleGroups where survives(group) && after.options(forGroup: group).range != nil {
            rows += try slidingRows(inGroup: group)
        }
        return (sections, rows.sorted(by: Self.precedes))
    }

    /// Unchanged rows of a ranged group that slid into or out of its window.
    func slidingRows(inGroup group: String) throws -> [ViewChangeset.RowChange] {
        guard let range = after.options(forGroup: group).range else { return [] }
        let oldCount = before.count(inGroup: group)
        let newCount = after.count(inGroup: group)
        let oldWindow = ViewMappings.window(count: oldCount, range: range)
        let newWindow = ViewMappings.window(count: newCount, range: range)
        let changedBefore = originalOrders[group]?.count ?? 0
        let changedAfter = finalOrders[group]?.count ?? 0
        // The rows now that can be in either window: an unchanged row's index moves by at most the number of changed
        // rows (an index before = index now − changed rows before it now + changed rows before it then).
        let scan: Range<Int>
        switch range {
        case .first:
            scan = 0..<max(newWindow.upperBound, oldWindow.upperBound + changedAfter)
        case .last:
            scan = max(0, min(newWindow.lowerBound, oldWindow.lowerBound - changedBefore))..<newCount
        }
        var result: [ViewChangeset.RowChange] = []
        for (offset, entry) in try reader.entries(inGroup: group, range: scan).enumerated() where records[entry.id] == nil {
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
