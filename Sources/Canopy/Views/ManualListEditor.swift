extension ReadWriteTransaction {
    /// The editor of the manual view named `name` (see ``ManualView``) in this transaction.
    ///
    /// Valid only inside this transaction's closure. Read the list as any view, with ``ReadTransaction/view(_:)``.
    /// - Throws: ``CanopyError/Code/extensionNotRegistered`` when no view of that name is registered in this process;
    ///   ``CanopyError/Code/invalidArgument`` when the view is not a manual view.
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
/// ``ReadTransaction/view(_:)`` reads it). Every call checks its input first: a position out of range, a row that is
/// not in the store or not in the view's collections, or a row already in the list is a
/// ``CanopyError/Code/invalidArgument`` and changes nothing.
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
    /// - Throws: ``CanopyError/Code/invalidArgument`` when the row is not in the store or not in the view's
    ///   collections, is already in the list, or `index` is out of range; nothing is changed.
    public func insert(key: String, inCollection collection: String, at index: Int) throws {
        let rowKey = try checkedNewRow(key: key, collection: collection)
        let count = try count()
        guard (0...count).contains(index) else {
            throw invalid("position \(index) is out of range: the list has \(count) rows, so a row can be inserted at 0...\(count)", collection, key)
        }
        try place(RowID(collection: collection, key: key), rowKey: rowKey, at: index, excluding: nil)
    }

    /// Adds the row (`key`, `collection`) at the end of the list.
    /// - Throws: as ``insert(key:inCollection:at:)``.
    public func append(key: String, inCollection collection: String) throws {
        try insert(key: key, inCollection: collection, at: try count())
    }

    /// Moves the row at `source` to `destination` (both in `0..<count()`), as a list UI's move does: the row is taken
    /// out, then inserted at `destination` of the remaining rows.
    /// - Throws: ``CanopyError/Code/invalidArgument`` when a position is out of range; nothing is changed.
    public func move(from source: Int, to destination: Int) throws {
        let count = try count()
        guard (0..<count).contains(source), (0..<count).contains(destination) else {
            throw invalid("a move from \(source) to \(destination) is out of range: the list has \(count) rows (positions 0..<\(count))", nil, nil)
        }
        guard source != destination else { return }
        let reader = try reader()
        guard let id = try reader.rowID(at: source, inGroup: group), let rowKey = try transaction.storedRowKey(for: id) else {
            throw corrupt(view.name, "position \(source) of the list has no row")
        }
        try place(id, rowKey: rowKey, at: destination, excluding: source)
    }

    /// Removes the row at `index` (`0..<count()`) from the list (not from the store) and returns its id.
    /// - Throws: ``CanopyError/Code/invalidArgument`` when `index` is out of range; nothing is changed.
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
        guard view.viewOptions.allows(collection), let rowKey = try transaction.storedRowKey(for: RowID(collection: collection, key: key)),
              try view.manualOrder.table.remove(rowKey, in: transaction) else { return false }
        _ = try transaction.touchRow(forKey: key, inCollection: collection)
        return true
    }

    // MARK: Placing

    private func reader() throws -> ViewReader { try transaction.view(view.name) }

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
    /// own place when it is moved), renumbering the list first when its neighbours leave no gap.
    private func place(_ id: RowID, rowKey: StoredRowKey, at position: Int, excluding: Int?) throws {
        var order = try orderKey(at: position, excluding: excluding)
        if order == nil {
            try renumber()
            order = try orderKey(at: position, excluding: excluding)
        }
        guard let order else { throw corrupt(view.name, "no order key is free after renumbering the list") }
        try view.manualOrder.table.put(order, forKey: rowKey, in: transaction)
        _ = try transaction.touchRow(forKey: id.key, inCollection: id.collection)
    }

    /// An order key between the neighbours of `position` (in the list without the row at `excluding`), or `nil`
    /// when they leave no gap.
    private func orderKey(at position: Int, excluding: Int?) throws -> UInt64? {
        let reader = try reader()
        func key(at reduced: Int) throws -> UInt64? {
            guard reduced >= 0 else { return nil }
            let full = excluding.map { reduced < $0 ? reduced : reduced + 1 } ?? reduced
            guard let id = try reader.rowID(at: full, inGroup: group) else { return nil }
            guard let entry = try reader.entry(of: id) else { throw corrupt(view.name, "a row of the list has no entry") }
            return try ManualOrderTable.order(fromOrderBytes: entry.orderBytes, view: view.name)
        }
        let before = try key(at: position - 1)
        let after = try key(at: position)
        return Self.orderKey(between: before, and: after)
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

    /// Gives the rows of the list evenly spaced order keys, in their current order (every row is re-placed: O(n)).
    private func renumber() throws {
        let ids = try reader().rowIDs(inGroup: group)
        let spacing = min(Self.step, UInt64.max / UInt64(ids.count + 2))
        for (offset, id) in ids.enumerated() {
            guard let rowKey = try transaction.storedRowKey(for: id) else { throw corrupt(view.name, "a row of the list has no stored key") }
            try view.manualOrder.table.put(UInt64(offset + 1) * spacing, forKey: rowKey, in: transaction)
            _ = try transaction.touchRow(forKey: id.key, inCollection: id.collection)
        }
    }
}
