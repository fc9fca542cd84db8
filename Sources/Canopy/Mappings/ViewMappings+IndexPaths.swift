extension ViewMappings {
    /// The indexes of `group` (in the view's order) that its section shows, or `nil` when the group is not a visible
    /// section. Empty for a static section of an empty group.
    public func visibleRange(inGroup group: String) -> Range<Int>? {
        guard sectionsByGroup[group] != nil else { return nil }
        return Self.window(count: counts[group] ?? 0, range: options(forGroup: group).range)
    }

    /// The indexes a range shows of a group of `count` rows.
    static func window(count: Int, range: ItemRange?) -> Range<Int> {
        let count = max(0, count)
        switch range {
        case nil:
            return 0..<count
        case .first(let length):
            return 0..<min(max(0, length), count)
        case .last(let length):
            return (count - min(max(0, length), count))..<count
        }
    }

    /// The index path showing the row at `index` of `group` in the view, or `nil` when the group is not a visible
    /// section or the row is outside its range.
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
        return ViewIndexPath(section: section, row: row)
    }

    /// The group and the index in the view's group of the row shown at `indexPath`, or `nil` when there is no such
    /// section or row.
    public func position(at indexPath: ViewIndexPath) -> (group: String, index: Int)? {
        guard let group = group(forSection: indexPath.section), let window = visibleRange(inGroup: group),
              indexPath.row >= 0, indexPath.row < window.count
        else { return nil }
        let offset = options(forGroup: group).isReversed ? window.count - 1 - indexPath.row : indexPath.row
        return (group, window.lowerBound + offset)
    }
}
