extension ViewWriter {
    /// Places `written` in a view whose rows can be in many groups: its entries (`stored`, one per group, read from
    /// its attachment when `attached`, otherwise found in the pages by a catch-up) are compared with its places now,
    /// group by group. A group it keeps with the same order is an update in place (noted only when the object or
    /// metadata changed), one with another order a move, one it leaves a delete, one it joins an insert — each noted
    /// under the row and that group. The row's attachment is rewritten only when its entries changed (or it lacked
    /// them): all of them, in one value, in the row's own record.
    func applyMany(
        _ written: WrittenRow, rerun: Bool, stored: [ViewTables.RowEntry], attached: Bool, wasSkipped: Bool, slot: AttachmentSlot
    ) throws {
        let rowKey = written.storedKey
        let index = try currentIndex()
        var existing: [String: (entry: ViewEntry, stored: ViewTables.RowEntry)] = [:]
        for storedEntry in stored {
            guard let entry = entry(storedEntry, rowKey: rowKey, index) else { continue }
            existing[entry.group] = (entry, storedEntry)
        }
        guard rerun || wasSkipped else {
            for (entry, _) in existing.values {
                note(written.id, original: entry, current: entry, object: written.objectChanged, metadata: written.metadataChanged)
            }
            return
        }
        let row = ViewRow(written)
        let found: [View.Place]
        do {
            found = try view.places(of: row, rowKey: rowKey, in: transaction)
        } catch {
            guard let undecodable = view.skippable(error) else { throw error }
            // A row the closures cannot decode leaves every group of the view and is recorded (as in a one-group view).
            for (_, storedEntry) in existing.values { try remove(written.id, rowKey: rowKey, stored: storedEntry) }
            if !wasSkipped { skippedChanges.append((written.id, undecodable.message)) }
            written.setAttachment(ViewTables.skippedMarker, at: slot)
            return
        }
        if wasSkipped { skippedChanges.append((written.id, nil)) }
        var changed = !attached || wasSkipped
        var entries: [ViewTables.RowEntry] = []
        entries.reserveCapacity(found.count)
        var kept = Set<String>()
        for place in found {
            kept.insert(place.group)
            let newEntry = ViewEntry(group: place.group, orderBytes: place.order)
            let old = existing[place.group]
            if let old, old.entry == newEntry {
                note(written.id, original: old.entry, current: old.entry, object: written.objectChanged, metadata: written.metadataChanged)
                entries.append(old.stored)
                continue
            }
            if let old { try removeEntry(old.entry, groupID: old.stored.groupID) }
            let groupID = try insertEntry(newEntry, sortKeyLength: place.sortKeyLength)
            entries.append(ViewTables.RowEntry(groupID: groupID, sortKey: Array(place.order[..<place.sortKeyLength])))
            note(written.id, original: old?.entry, current: newEntry, object: written.objectChanged, metadata: written.metadataChanged)
            changed = true
        }
        for (group, old) in existing where !kept.contains(group) {
            try removeEntry(old.entry, groupID: old.stored.groupID)
            note(written.id, original: old.entry, current: nil, object: written.objectChanged, metadata: written.metadataChanged)
            changed = true
        }
        if changed { written.setAttachment(ViewTables.attachment(holding: entries), at: slot) }
    }
}
