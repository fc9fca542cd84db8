extension ViewReader {
    /// The rows of `group` in `range` (clamped to the group), in order, each with its order bytes — what the changeset
    /// computation needs to place rows of the state before a commit among the rows after it.
    ///
    /// - Throws: ``CanopyError/Code/corrupt`` when an entry names a collection the store doesn't know.
    func entries(inGroup group: String, range: Range<Int>) throws -> [(id: RowID, order: [UInt8])] {
        guard let groupIndex = index.groups[group] else { return [] }
        let lower = max(0, range.lowerBound)
        let upper = min(groupIndex.count, range.upperBound)
        guard lower < upper, let (start, startOffset) = index.location(ofIndex: lower, in: groupIndex) else { return [] }
        var result: [(id: RowID, order: [UInt8])] = []
        result.reserveCapacity(upper - lower)
        var location: ViewIndex.Location? = start
        var offset = startOffset
        while let current = location, result.count < upper - lower {
            let page = try tables.readPage(index.page(at: current, in: groupIndex).id, transaction.storage, viewName: view.name)
            while offset < page.count && result.count < upper - lower {
                guard let id = try transaction.rowID(forRowKey: page.rowKey(at: offset)) else {
                    throw corrupt(view.name, "an entry of group '\(group)' names an unknown collection")
                }
                result.append((id, page.orderBytes(at: offset)))
                offset += 1
            }
            offset = 0
            location = index.next(after: current, in: groupIndex)
        }
        return result
    }
}
