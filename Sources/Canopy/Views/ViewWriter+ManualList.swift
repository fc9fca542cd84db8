/// A manual list's side of the view writer: the list's editor (``ManualListEditor``) moves entries here, in the view's
/// `order` table and pages only, and the store's row changes keep the list's mark on the rows in it.
extension ViewWriter {
    /// The list's `order` table.
    private var order: ExtensionTable<StoredRowKeyCoding, UInt64BigEndianCoding> {
        get throws { try view.manualOrder.table }
    }

    /// The entry of the row with stored key `rowKey` at order key `key`.
    private func listEntry(_ key: UInt64, rowKey: StoredRowKey, group: String) -> ViewEntry {
        ViewEntry(group: group, orderBytes: ManualOrderTable.sortKey(key) + rowKey.bytes)
    }

    /// A change of a row told by the store. A row in the list (its order key in the `order` table) carries
    /// ``ViewTables/listedMarker``: an update or touch keeps its place (reported as an update); a removal takes it
    /// out of the list for good (its order key goes, so a row written again under the key is not back in the list);
    /// a new record is never in the list. A placement-only change (``RowChange/isPlacementOnly``, the editor's
    /// ``ReadWriteTransaction/placeAgain(_:inExtension:asUpdated:)`` after an insertion or a removal) sets or clears
    /// the mark to match the `order` table.
    func handleListed(_ change: RowChange, group: String) throws -> AttachmentEdit {
        let attachment = try slot.flatMap { try change.attachment(at: $0) }
        let rowKey = change.storedKey
        switch change.kind {
        case .remove:
            for stored in try view.storedEntries(attachment, rowKey: rowKey, tables: tables, index: try currentIndex(), in: transaction) {
                try remove(change.id, rowKey: rowKey, stored: stored)
            }
            _ = try order.remove(rowKey, in: transaction)
            return .keep
        case .insert:
            // A key left in the order table for a row that did not exist is stale (its removal was not seen): it does
            // not put the new row in the list.
            try leaveList(change.id, rowKey: rowKey, group: group)
            return .keep
        case .update, .touch:
            if change.isPlacementOnly {
                let wanted = try order.value(forKey: rowKey, in: transaction) == nil ? nil : ViewTables.listedMarker
                if attachment == wanted { return .keep }
                return wanted.map { .set($0) } ?? .remove
            }
            let index = try currentIndex()
            for stored in try view.storedEntries(attachment, rowKey: rowKey, tables: tables, index: index, in: transaction) {
                let existing = entry(stored, rowKey: rowKey, index)
                note(change.id, original: existing, current: existing, object: change.objectChanged, metadata: change.metadataChanged)
            }
            return .keep
        }
    }

    /// Gives row `id` (stored key `rowKey`) order key `key` in the list: its entry moves (or enters the pages) and the
    /// change is logged for the commit's changeset. Writes the `order` table and the view's pages, not the row; a row
    /// that enters the list gets its mark from the caller's ``ReadWriteTransaction/placeAgain(_:inExtension:asUpdated:)``.
    func setListOrder(_ key: UInt64, of id: RowID, rowKey: StoredRowKey, group: String) throws {
        let old = try order.value(forKey: rowKey, in: transaction)
        guard old != key else { return }
        try order.put(key, forKey: rowKey, in: transaction)
        let original = old.map { listEntry($0, rowKey: rowKey, group: group) }
        if let original {
            guard let groupID = try currentIndex().groupIDs[group] else { throw corrupt(view.name, "a row of the list has an order key but the list has no group") }
            try removeEntry(original, groupID: groupID)
        }
        let moved = listEntry(key, rowKey: rowKey, group: group)
        try insertEntry(moved, sortKeyLength: 8)
        note(id, original: original, current: moved, object: false, metadata: false)
        transaction.markWritten()
    }

    /// Takes row `id` out of the list (its order key and its entry); `false` when it was not in it. The caller
    /// clears the row's mark with ``ReadWriteTransaction/placeAgain(_:inExtension:asUpdated:)``.
    @discardableResult
    func leaveList(_ id: RowID, rowKey: StoredRowKey, group: String) throws -> Bool {
        guard let key = try order.value(forKey: rowKey, in: transaction) else { return false }
        if let groupID = try currentIndex().groupIDs[group] {
            try remove(id, rowKey: rowKey, stored: ViewTables.RowEntry(groupID: groupID, sortKey: ManualOrderTable.sortKey(key)))
        }
        _ = try order.remove(rowKey, in: transaction)
        transaction.markWritten()
        return true
    }

    /// Catches a manual list up (see ``catchUp(_:)``). A row's entry follows from its order key (no page scan). A row
    /// of the list whose record lost the list's mark was removed in the gap and maybe written again (the log then
    /// records only a change): it leaves the list for good, as a removal in this process does; so do the rows of
    /// collections removed whole in the gap. A row that kept its mark keeps its place (reported as an update).
    func catchUpManualList(_ missed: MissedWrites, group: String) throws -> [StoredRowKey: AttachmentEdit] {
        let slot = try slot
        let order = try order
        if missed.removedEverything || !missed.removedCollections.isEmpty {
            var gone: [(RowID, StoredRowKey)] = []
            try order.forEach(in: transaction) { rowKey, _ in
                if let id = try transaction.rowID(for: rowKey), missed.removedEverything || missed.removedCollections.contains(id.collection) {
                    gone.append((id, rowKey))
                }
                return true
            }
            for (id, rowKey) in gone { try leaveList(id, rowKey: rowKey, group: group) }
        }
        let index = try currentIndex()
        for row in missed.rows where view.viewOptions.allows(row.id.collection) {
            guard let current = row.current, let slot, let attachment = try current.previousAttachment(at: slot) else {
                try leaveList(row.id, rowKey: row.storedKey, group: group)
                continue
            }
            for stored in try view.storedEntries(attachment, rowKey: row.storedKey, tables: tables, index: index, in: transaction) {
                let existing = entry(stored, rowKey: row.storedKey, index)
                note(row.id, original: existing, current: existing, object: row.objectChanged, metadata: row.metadataChanged)
            }
        }
        return [:]
    }
}
