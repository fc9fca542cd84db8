extension ReadWriteTransaction {
    /// The editor of the manual view named `name` (see ``ManualView``) in this transaction.
    ///
    /// Valid only inside this transaction's closure. Read the list as any view, with ``CanopyCore/ReadTransaction/view(_:)``.
    /// - Throws: ``/CanopyCore/CanopyError/Code/extensionNotRegistered`` when no view of that name is registered in this process;
    ///   ``/CanopyCore/CanopyError/Code/invalidArgument`` when the view is not a manual view.
    public func manualList(_ name: String) throws -> ManualListEditor {
        guard let view = registeredExtension(named: name, as: View.self) else {
            throw CanopyError(.extensionNotRegistered, "no manual view named '\(name)' is registered; register ManualView.make(name:collections:) first",
                              path: databasePath, extensionName: name)
        }
        guard case .manual(let group) = view.source else {
            throw CanopyError(.invalidArgument, "the view orders its rows by its sorting closure; only a manual view (ManualView.make) takes positions",
                              path: databasePath, extensionName: name)
        }
        return ManualListEditor(view: view, group: group, transaction: self)
    }
}

/// Inserts, moves and removes the rows of one manual view (``ManualView``) in one write transaction.
///
/// Positions are indexes in the list as it is when the call is made (the view's one group, as
/// ``CanopyCore/ReadTransaction/view(_:)`` reads it). Every call checks its input first: a position out of range, a row that is
/// not in the store or not in the view's collections, or a row already in the list is a
/// ``/CanopyCore/CanopyError/Code/invalidArgument`` and changes nothing.
public struct ManualListEditor {
    let view: View
    /// The list's one group.
    public let group: String
    let transaction: ReadWriteTransaction

    /// The gap left between neighbouring order keys when the list is numbered or grows at an end.
    static let step: UInt64 = 1 << 32

    /// The number of rows in the list.
    public func count() throws -> Int {
        try reader().count(inGroup: group)
    }

    /// Inserts the row (`key`, `collection`) at `index` (`0...count()`): the rows from `index` on move down by one.
    /// - Throws: ``/CanopyCore/CanopyError/Code/invalidArgument`` when the row is not in the store or not in the view's
    ///   collections, is already in the list, or `index` is out of range; nothing is changed.
    public func insert(key: String, inCollection collection: String, at index: Int) throws {
        let rowKey = try checkedNewRow(key: key, collection: collection)
        let reader = try reader()
        let count = try reader.count(inGroup: group)
        guard (0...count).contains(index) else {
            throw invalid("position \(index) is out of range: the list has \(count) rows, so a row can be inserted at 0...\(count)", collection, key)
        }
        try place(RowID(collection: collection, key: key), rowKey: rowKey, at: index, excluding: nil, reader)
    }

    /// Adds the row (`key`, `collection`) at the end of the list.
    /// - Throws: as ``insert(key:inCollection:at:)``.
    public func append(key: String, inCollection collection: String) throws {
        try insert(key: key, inCollection: collection, at: try count())
    }

    /// Moves the row at `source` to `destination` (both in `0..<count()`), as a list UI's move does: the row is taken
    /// out, then inserted at `destination` of the remaining rows.
    /// - Throws: ``/CanopyCore/CanopyError/Code/invalidArgument`` when a position is out of range; nothing is changed.
    public func move(from source: Int, to destination: Int) throws {
        // One reader for the checks and the lookups: each call reads the list as it is before this move writes.
        let reader = try reader()
        let count = try reader.count(inGroup: group)
        guard (0..<count).contains(source), (0..<count).contains(destination) else {
            throw invalid("a move from \(source) to \(destination) is out of range: the list has \(count) rows (positions 0..<\(count))", nil, nil)
        }
        guard source != destination else { return }
        guard let id = try reader.rowID(at: source, inGroup: group), let rowKey = try transaction.storedRowKey(for: id) else {
            throw corrupt(view.name, "position \(source) of the list has no row")
        }
        try place(id, rowKey: rowKey, at: destination, excluding: source, reader)
    }

    /// Removes the row at `index` (`0..<count()`) from the list (not from the store) and returns its id.
    /// - Throws: ``/CanopyCore/CanopyError/Code/invalidArgument`` when `index` is out of range; nothing is changed.
    @discardableResult
    public func remove(at index: Int) throws -> RowID {
        let count = try count()
        guard (0..<count).contains(index) else {
            throw invalid("position \(index) is out of range: the list has \(count) rows (positions 0..<\(count))", nil, nil)
        }
        guard let id = try reader().rowID(at: index, inGroup: group) else { throw corrupt(view.name, "position \(index) of the list has no row") }
        _ = try remove(key: id.key, inCollection: id.collection)
        return id
    }

    /// Removes the row (`key`, `collection`) from the list (not from the store); `false` when it was not in it.
    public func remove(key: String, inCollection collection: String) throws -> Bool {
        let id = RowID(collection: collection, key: key)
        guard view.viewOptions.allows(collection), let rowKey = try transaction.storedRowKey(for: id),
              try writer().leaveList(id, rowKey: rowKey, group: group) else { return false }
        // The row's record loses the list's mark; no other extension hears of it.
        try transaction.placeAgain([id], inExtension: view.name)
        return true
    }

    // MARK: Placing

    private func reader() throws -> ViewReader { try transaction.view(view.name) }

    /// The view's writer in this transaction, which moves the list's entries.
    private func writer() throws -> ViewWriter {
        guard let writer = transaction.writer(of: view) else {
            throw CanopyError(.extensionNotRegistered, "the manual view is not registered in this transaction; register it with Database.register(_:)",
                              path: transaction.databasePath, extensionName: view.name)
        }
        return writer
    }

    private func invalid(_ message: String, _ collection: String?, _ key: String?) -> CanopyError {
        CanopyError(.invalidArgument, message, path: transaction.databasePath, collection: collection, key: key, extensionName: view.name)
    }

    /// The stored key of a row that may enter the list.
    private func checkedNewRow(key: String, collection: String) throws -> StoredRowKey {
        guard view.viewOptions.allows(collection) else {
            throw invalid("the list holds rows of \((view.viewOptions.allowedCollections ?? []).sorted()), not of '\(collection)'", collection, key)
        }
        guard try transaction.exists(key: key, inCollection: collection), let rowKey = try transaction.storedRowKey(for: RowID(collection: collection, key: key)) else {
            throw invalid("there is no such row in the store; write the row before adding it to the list", collection, key)
        }
        guard try view.manualOrder.table.value(forKey: rowKey, in: transaction) == nil else {
            throw invalid("the row is already in the list; move it instead", collection, key)
        }
        return rowKey
    }

    /// Gives row `id` the order key that puts it at `position` of the list without the row at `excluding` (the row's
    /// own place when it is moved). When its neighbours leave no gap, the rows of the smallest key range around the
    /// place that is sparse enough are renumbered (``OrderRelabeling``): a few rows, not the list. `reader` reads the
    /// list as it is before this call writes.
    private func place(_ id: RowID, rowKey: StoredRowKey, at position: Int, excluding: Int?, _ reader: ViewReader) throws {
        let before = try orderKey(at: position - 1, excluding: excluding, reader)
        let after = try orderKey(at: position, excluding: excluding, reader)
        if let order = Self.orderKey(between: before, and: after) {
            try writer().setListOrder(order, of: id, rowKey: rowKey, group: group)
        } else {
            try relabel(inserting: id, rowKey: rowKey, at: position, after: before ?? 0, excluding: excluding, reader)
        }
        // A row entering the list gets the list's mark on its record (no other extension hears of it); a move writes
        // only the list's order table and pages.
        if excluding == nil { try transaction.placeAgain([id], inExtension: view.name) }
    }

    /// The order key of the row at `reduced` in the list without the row at `excluding`, read from the view's page
    /// (no row record), or `nil` when `reduced` is before the first row or after the last.
    private func orderKey(at reduced: Int, excluding: Int?, _ reader: ViewReader) throws -> UInt64? {
        guard reduced >= 0 else { return nil }
        let full = excluding.map { reduced < $0 ? reduced : reduced + 1 } ?? reduced
        var order: UInt64?
        try reader.walkEntries(inGroup: group, range: full..<(full + 1)) { page, offset in
            order = try ManualOrderTable.order(fromOrderBytes: page.orderBytes(at: offset), view: view.name)
        }
        return order
    }

    /// An order key strictly between `before` (or 0) and `after` (or `UInt64.max`), leaving ``step`` at the ends.
    static func orderKey(between before: UInt64?, and after: UInt64?) -> UInt64? {
        let low = before ?? 0
        let high = after ?? UInt64.max
        guard high > low, high - low >= 2 else { return nil }
        if after == nil, high - low > step { return low + step }
        if before == nil, high - low > step { return high - step }
        return low + (high - low) / 2
    }

    /// Places row `id` at `position` (of the list without the row at `excluding`) by renumbering the rows whose order
    /// keys lie in the smallest aligned key range around `anchor` (the order key before the place, 0 at the start)
    /// that ``OrderRelabeling`` finds sparse enough, the row included; the whole list as a last resort.
    private func relabel(inserting id: RowID, rowKey: StoredRowKey, at position: Int, after anchor: UInt64, excluding: Int?,
                         _ reader: ViewReader) throws {
        let total = try reader.count(inGroup: group)
        func rank(of order: UInt64) throws -> Int {
            try reader.lowerBound(of: ViewEntry(group: group, orderBytes: ManualOrderTable.sortKey(order)))
        }
        for range in OrderRelabeling.ranges(around: anchor) {
            let lower = try rank(of: range.lowerBound)
            let upper = range.upperBound == UInt64.max ? total : try rank(of: range.upperBound)
            let excluded = excluding.map { (lower..<upper).contains($0) ? 1 : 0 } ?? 0
            guard OrderRelabeling.fits(upper - lower - excluded + 1, in: range) else { continue }
            var rows = try reader.entries(inGroup: group, range: lower..<upper).enumerated().compactMap { full, entry -> (id: RowID, old: UInt64?)? in
                if let excluding, lower + full == excluding { return nil }
                return (entry.id, try ManualOrderTable.order(fromOrderBytes: entry.order, view: view.name))
            }
            // The rows of the range before the place are those at reduced positions below `position`.
            let reducedLower = lower - (excluding.map { $0 < lower ? 1 : 0 } ?? 0)
            let offset = position - reducedLower
            guard (0...rows.count).contains(offset) else { throw corrupt(view.name, "the place of a row lies outside the key range that holds its neighbour") }
            rows.insert((id, nil), at: offset)
            let keys = OrderRelabeling.keys(count: rows.count, in: range)
            let writer = try writer()
            for (row, key) in zip(rows, keys) where row.old != key {
                let stored = row.id == id ? rowKey : try transaction.storedRowKey(for: row.id)
                guard let stored else { throw corrupt(view.name, "a row of the list has no stored key") }
                try writer.setListOrder(key, of: row.id, rowKey: stored, group: group)
            }
            return
        }
        throw corrupt(view.name, "no key range has room for another row: the list holds more rows than its 64-bit order keys can space")
    }
}
