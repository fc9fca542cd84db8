/// A view writer's new entries, kept out of the pages until something needs the pages: a bulk write places every
/// row as it is written (its attachment holds its group and sort key, and the row log its entry), but inserts the
/// entries of rows that had none all at once, sorted — into a group that had no pages, as full pages appended in
/// order (as population writes them); into a group that has pages, one by one in order, each next to the last.
///
/// One entry at a time, each insert located its page in the directory, decoded and spliced it, and split it when
/// full (leaving pages half full): about 3,500 instructions a row per view in a bulk insert. The pending entries are
/// inserted before anything reads or changes the view's pages or directory in this transaction — a read through the
/// view (``currentIndex()``, ``page(_:)``), a removal or a move of an entry, a filtered view's population, the
/// invariant check — and at commit, so nothing ever sees the view without them. Group names and ids are assigned when
/// an entry is deferred (a filtered view reads its parent's group names while the parent's entries wait).
extension ViewWriter {
    /// Gives the entry of `group` whose order bytes are `sortKey` then `rowKey` its group id (a new group is recorded
    /// in the groups table, as ``insertEntry(_:sortKeyLength:)`` does) and keeps it for ``insertPendingEntries()``,
    /// its two parts copied into the batch as they are. Returns the group id.
    func deferInsert(group: String, sortKey: [UInt8], rowKey: StoredRowKey) throws -> UInt32 {
        noteChange()
        let groupID = try recentGroups.id(of: group) { group in
            try withLoadedIndex { index -> UInt32 in
                if let known = index.groupIDs[group] { return known }
                let id = index.groupID(for: group)
                try tables.groups.put(group, forKey: id, in: transaction)
                return id
            }
        }
        pendingInserts.add(groupID: groupID, sortKey: sortKey, rowKey: rowKey.bytes)
        return groupID
    }

    /// Inserts the pending entries into the pages and the directory, group by group in order.
    /// - Throws: ``/CanopyCore/CanopyError/Code/corruptStore`` when an entry's group has no name, or a page read fails;
    ///   after such a failure part way, the same error on every later call (the app may have caught the first one: the
    ///   commit must still refuse pages that lack entries their rows' records name).
    func insertPendingEntries() throws {
        if let pendingInsertFailure { throw pendingInsertFailure }
        var pending = pendingInserts
        pendingInserts = ViewEntryBatch()
        do {
            try insertAll(&pending)
        } catch {
            pendingInsertFailure = error
            pendingInserts = pending  // not empty: every read of the pages, and the commit, come back here
            throw error
        }
    }

    /// Sorts `pending` and inserts its entries, group by group.
    private func insertAll(_ pending: inout ViewEntryBatch) throws {
        pending.sort()
        let entries = pending.entries
        var start = entries.startIndex
        while start < entries.endIndex {
            let groupID = entries[start].groupID
            var end = start + 1
            while end < entries.endIndex, entries[end].groupID == groupID { end += 1 }
            // (The directory is read in a closure, so that no copy of it is held while the inserts change it.)
            let (name, hasPages) = try { () throws -> (String, Bool) in
                let index = try loadedIndex()
                guard let name = index.groupNames[groupID] else { throw corrupt(view.name, "new entries name group \(groupID), which has no name") }
                return (name, index.groups[name] != nil)
            }()
            if !hasPages {
                try appendPages(of: entries[start..<end], from: pending, toEmptyGroup: name, groupID: groupID)
            } else {
                for entry in entries[start..<end] {
                    try insertEntry(ViewEntry(group: name, orderBytes: Array(pending.order(of: entry))), sortKeyLength: Int(entry.sortKeyLength))
                }
            }
            start = end
        }
    }

    /// Writes `entries` (sorted, one group's, from `batch`) as the pages of that group, which has none: full pages, in
    /// order.
    private func appendPages(
        of entries: ArraySlice<ViewEntryBatch.Entry>, from batch: ViewEntryBatch, toEmptyGroup group: String, groupID: UInt32
    ) throws {
        var filler = ViewPageFiller()
        func write(_ page: ViewPage) throws {
            let first = page.orderBytes(at: 0)
            let id = try withLoadedIndex { $0.newPageID() }
            try store(page, id: id)
            try withLoadedIndex { $0.appendPage(ViewIndex.PageRef(id: id, count: page.count, first: first), to: group, groupID: groupID) }
        }
        var previous: ViewEntryBatch.Entry?
        for entry in entries {
            // One row has one entry in a view of one group per row: two equal entries would be two rows under one key.
            if let previous, batch.isEqual(previous, entry) {
                throw corrupt(view.name, "a transaction placed the same entry twice in group '\(group)'")
            }
            previous = entry
            if let page = filler.append(groupID: groupID, order: batch.order(of: entry), sortKeyLength: Int(entry.sortKeyLength)) {
                try write(page)
            }
        }
        if let page = filler.finish() { try write(page) }
    }
}
