extension ViewReader {
    /// Calls `body` with the page and offset of each entry of `group` in `range` (clamped to the group), in order,
    /// reading each page once.
    func walkEntries(inGroup group: String, range: Range<Int>, _ body: (ViewPage, Int) throws -> Void) throws {
        let index = try self.index
        guard let groupIndex = index.groups[group] else { return }
        let lower = max(0, range.lowerBound)
        let upper = min(groupIndex.count, range.upperBound)
        guard lower < upper, let (start, startOffset) = index.location(ofIndex: lower, in: groupIndex) else { return }
        var remaining = upper - lower
        var location: ViewIndex.Location? = start
        var offset = startOffset
        while let current = location, remaining > 0 {
            let page = try page(index.page(at: current, in: groupIndex).id)
            while offset < page.count && remaining > 0 {
                try body(page, offset)
                offset += 1
                remaining -= 1
            }
            offset = 0
            location = index.next(after: current, in: groupIndex)
        }
    }

    /// The rows of `group` in `range` (clamped to the group), in order, each with its order bytes — what the changeset
    /// computation needs to place rows of the state before a commit among the rows after it.
    ///
    /// - Throws: ``CanopyError/Code/corruptStore`` when an entry names a collection the store doesn't know.
    func entries(inGroup group: String, range: Range<Int>) throws -> [(id: RowID, order: [UInt8])] {
        var result: [(id: RowID, order: [UInt8])] = []
        try walkEntries(inGroup: group, range: range) { page, offset in
            guard let id = try rowID(ofEntryAt: offset, in: page) else {
                throw corrupt(view.name, "an entry of group '\(group)' names an unknown collection")
            }
            result.append((id, page.orderBytes(at: offset)))
        }
        return result
    }
}

extension ViewReader {
    /// Throws when the view's stored state is behind the store at this snapshot: another process wrote rows without
    /// registering the view, so the view's tables lack those writes until it is rebuilt.
    ///
    /// - Throws: ``CanopyError/Code/staleView``, naming the snapshots.
    func checkUpToDate() throws {
        if try transaction.isExtensionCurrent(named: view.name) { return }
        let snapshots = try transaction.extensionSnapshots()
        guard (snapshots.extensions[view.name] ?? 0) < snapshots.store else { return }
        throw PersistedView.staleError(view.name, viewSnapshot: snapshots.extensions[view.name], storeSnapshot: snapshots.store,
                                       path: transaction.databasePath)
    }
}
