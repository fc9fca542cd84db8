extension View {
    /// Every place of `row` in the view: none, one, or — in a view whose rows can be in many groups (a `many…`
    /// grouping, or a filtered view over such a view) — one per group, by group name. For a many-group grouping, the
    /// sorting closure runs once per group with that group. A filtered view reads its parent's entries for the row
    /// (maintained earlier in the same transaction) and filters each.
    func places(of row: ViewRow, rowKey: StoredRowKey, in transaction: ReadTransaction) throws -> [Place] {
        guard viewOptions.allows(row.collection) else { return [] }
        switch source {
        case .closures(let grouping, let sorting):
            guard let groupsClosure = grouping.groupsClosure else {
                return try place(of: row, rowKey: rowKey, in: transaction).map { [($0.group, $0.sortKey.count, $0.sortKey + rowKey.bytes)] } ?? []
            }
            let groups = try groupsClosure(row).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            return try groups.map { group in
                let sortKey = try checked(try sorting.closure(group, row), of: row)
                return (group, sortKey.bytes.count, sortKey.bytes + rowKey.bytes)
            }
        case .filtered(let parentName, let filter):
            guard let parent = transaction.registeredExtension(named: parentName, as: View.self),
                  let parentSlot = try transaction.attachmentSlot(for: parentName) else { return [] }
            let entries = try parent.tables.rowEntries(try row.attachment(at: parentSlot))
            guard !entries.isEmpty else { return [] }
            // Group names only: the parent's pages may still wait for this transaction's new entries.
            let parentIndex = try transaction.writer(of: parent)?.loadedIndex() ?? parent.index(in: transaction)
            var places: [Place] = []
            for entry in entries {
                guard let group = parentIndex.groupNames[entry.groupID], try filter(group, row) else { continue }
                places.append((group, entry.sortKey.count, entry.order(rowKey: rowKey)))
            }
            return places.sorted { $0.group.utf8.lexicographicallyPrecedes($1.group.utf8) }
        case .manual:
            return try place(of: row, rowKey: rowKey, in: transaction).map { [($0.group, $0.sortKey.count, $0.sortKey + rowKey.bytes)] } ?? []
        }
    }

    /// Whether a row can be in several groups of the view: a `many…` grouping, or a filtered view whose parent's rows
    /// can be (the parent as registered in this process, or as recorded in the database for a tool without the
    /// closures). Each place of a row is then its own record in the view's changes (one per group).
    func rowsInManyGroups(in transaction: ReadTransaction, depth: Int = 0) -> Bool {
        switch source {
        case .closures(let grouping, _):
            return grouping.isMany
        case .manual:
            return false
        case .filtered(let parentName, _):
            guard depth < 32 else { return false }  // a chain of filtered views this deep is a cycle in damaged records
            if let parent = transaction.registeredExtension(named: parentName, as: View.self) {
                return parent.rowsInManyGroups(in: transaction, depth: depth + 1)
            }
            guard let record = try? transaction.extensionRecords().first(where: { $0.name == parentName }) else { return false }
            // Unreadable options: reading the parent itself throws corruptStore (PersistedView), so no rows are shown
            // wrongly through this answer.
            guard let options = try? PersistedView.Options(record: record, path: transaction.databasePath) else { return false }
            if options.manyGroups { return true }
            guard let grandparent = options.parent else { return false }
            return View(name: parentName, parent: grandparent, versionTag: record.versionTag, options: options.viewOptions,
                        filter: { _, _ in false }, progress: nil).rowsInManyGroups(in: transaction, depth: depth + 1)
        }
    }
}
