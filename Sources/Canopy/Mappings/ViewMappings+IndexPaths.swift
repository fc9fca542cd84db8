extension ViewMappings {
    /// The indexes of `group` (in the view's order) that its section shows, or `nil` when the group is not visible.
    /// Empty for a static section of an empty group.
    public func visibleRange(inGroup group: String) -> Range<Int>? {
        guard sectionsByGroup[group] != nil else { return nil }
        return windowRange(inGroup: group)
    }

    /// The indexes of `group` its range shows at its count now, whether or not the group is visible.
    func windowRange(inGroup group: String) -> Range<Int> {
        let count = counts[group] ?? 0
        let range = options(forGroup: group).range
        if case .flexible(let definition)? = range {
            let state = flexibleStates[group]
                ?? FlexibleWindowState(offset: definition.offset, length: definition.length).normalized(count: count, definition: definition)
            return state.range(count: count, edge: definition.edge)
        }
        return Self.window(count: count, range: range)
    }

    /// The indexes a fixed range shows of a group of `count` rows (a flexible range shows its initial window).
    static func window(count: Int, range: ItemRange?) -> Range<Int> {
        let count = max(0, count)
        switch range {
        case nil:
            return 0..<count
        case .first(let length):
            return 0..<min(max(0, length), count)
        case .last(let length):
            return (count - min(max(0, length), count))..<count
        case .fixed(let length, let offset, .start):
            let lower = min(max(0, offset), count)
            return lower..<(lower + min(max(0, length), count - lower))
        case .fixed(let length, let offset, .end):
            let upper = count - min(max(0, offset), count)
            return (upper - min(max(0, length), upper))..<upper
        case .flexible(let definition):
            return FlexibleWindowState(offset: definition.offset, length: definition.length)
                .normalized(count: count, definition: definition).range(count: count, edge: definition.edge)
        }
    }

    /// The index path showing the row at `index` of `group` in the view, or `nil` when the group is not visible or the
    /// row is outside its range.
    ///
    /// - Parameters:
    ///   - index: the row's index in the group, in the view's order.
    ///   - group: the group.
    public func indexPath(forIndex index: Int, inGroup group: String) -> ViewIndexPath? {
        guard let section = sectionsByGroup[group], let window = visibleRange(inGroup: group), window.contains(index) else {
            return nil
        }
        let offset = index - window.lowerBound
        let row = options(forGroup: group).isReversed ? window.count - 1 - offset : offset
        return ViewIndexPath(section: section, row: (rowOffsetsByGroup[group] ?? 0) + row)
    }

    /// The group and the index in the view's group of the row shown at `indexPath`, or `nil` when there is no such
    /// section or row.
    public func position(at indexPath: ViewIndexPath) -> (group: String, index: Int)? {
        guard indexPath.row >= 0 else { return nil }
        var row = indexPath.row
        for group in groups(inSection: indexPath.section) {
            guard let window = visibleRange(inGroup: group) else { return nil }
            if row < window.count {
                let offset = options(forGroup: group).isReversed ? window.count - 1 - row : row
                return (group, window.lowerBound + offset)
            }
            row -= window.count
        }
        return nil
    }
}
