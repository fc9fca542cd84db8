extension ViewWriter {
    /// Places `change`'s row in a view whose rows can be in many groups: its entries (`stored`, one per group, read from
    /// its attachment when `attached`, otherwise found in the pages by a catch-up) are compared with its places now,
    /// group by group. A group it keeps with the same order is an update in place (noted only when the object or
    /// metadata changed), one with another order a move, one it leaves a delete, one it joins an insert — each noted
    /// under the row and that group. The row's attachment is rewritten only when its entries changed (or it lacked
    /// them): all of them, in one value, in the row's own record.
    func applyMany(
        _ change: RowChange, rerun: Bool, stored: [ViewTables.RowEntry], attached: Bool, wasSkipped: Bool
    ) throws -> AttachmentEdit {
        let rowKey = change.storedKey
        let index = try currentIndex()
        var existing: [String: (entry: ViewEntry, stored: ViewTables.RowEntry)] = [:]
        for storedEntry in stored {
            guard let entry = entry(storedEntry, rowKey: rowKey, index) else { continue }
            existing[entry.group] = (entry, storedEntry)
        }
        guard rerun || wasSkipped else {
            for (entry, _) in existing.values {
                note(change.id, original: entry, current: entry, object: change.objectChanged, metadata: change.metadataChanged)
            }
            return .keep
        }
        let row = ExtensionRow(change)
        let found: [View.Place]
        do {
            found = try view.places(of: row, rowKey: rowKey, in: transaction)
        } catch {
            guard let undecodable = view.skippable(error) else { throw error }
            // A row the closures cannot decode leaves every group of the view and is recorded (as in a one-group view).
            for (_, storedEntry) in existing.values { try remove(change.id, rowKey: rowKey, stored: storedEntry) }
            if !wasSkipped { skippedChanges.append((change.id, undecodable.message)) }
            return .set(ViewTables.skippedMarker)
        }
        if wasSkipped { skippedChanges.append((change.id, nil)) }
        var changed = !attached || wasSkipped
        var entries: [ViewTables.RowEntry] = []
        entries.reserveCapacity(found.count)
        var kept = Set<String>()
        for place in found {
            kept.insert(place.group)
            let newEntry = ViewEntry(group: place.group, orderBytes: place.order)
            let old = existing[place.group]
            if let old, old.entry == newEntry {
                note(change.id, original: old.entry, current: old.entry, object: change.objectChanged, metadata: change.metadataChanged)
                entries.append(old.stored)
                continue
            }
            if let old { try removeEntry(old.entry, groupID: old.stored.groupID) }
            let groupID = try insertEntry(newEntry, sortKeyLength: place.sortKeyLength)
            entries.append(ViewTables.RowEntry(groupID: groupID, sortKey: Array(place.order[..<place.sortKeyLength])))
            note(change.id, original: old?.entry, current: newEntry, object: change.objectChanged, metadata: change.metadataChanged)
            changed = true
        }
        for (group, old) in existing where !kept.contains(group) {
            try removeEntry(old.entry, groupID: old.stored.groupID)
            note(change.id, original: old.entry, current: nil, object: change.objectChanged, metadata: change.metadataChanged)
            changed = true
        }
        guard changed else { return .keep }
        return ViewTables.attachment(holding: entries).map { .set($0) } ?? .remove
    }
}
