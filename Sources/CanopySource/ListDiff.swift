import Canopy

/// The batch that leads a container from one array of sections to another, rows matched by identity (SimpleSource's
/// and DataSource's animated arrays).
///
/// Sections are matched by their identifiers and rows by their items' identities, across sections. Sections that keep
/// their relative order survive; the others are deleted and inserted (a batch has no section moves). In each surviving
/// section, the longest run of rows that keep their relative order stays put; every other row that stays is a move.
/// A row that stays put but is no longer equal is reloaded; a moved row that is no longer equal is a changed move.
/// Rows of deleted and inserted sections go with their section. The result satisfies UIKit's batch rules (what
/// `BatchPlan` in CanopyTerminal checks), and applying it reproduces `new` exactly (the property test in
/// Tests/CanopySourceTests/ListDiffPropertyTests.swift).
///
/// Inlinable, so that it is specialized for the app's item and identity types (hashing through generic witnesses is
/// several times slower): `array-diff-10k` in Benchmarks/ compares it with Swift's `CollectionDifference`.
@usableFromInline
enum ListDiff {
    /// The batch from `old` to `new`; `nil` when a section identifier or a row identity is not unique on one side
    /// (the caller reloads: a batch could not say which of two equal identities went where).
    @inlinable
    static func batch<Item, ID: Hashable, SectionID: Hashable>(
        from old: [[Item]], sections oldSections: [SectionID], to new: [[Item]], sections newSections: [SectionID],
        id: (Item) -> ID, isEqual: (Item, Item) -> Bool
    ) -> BatchUpdates? {
        guard old.count == oldSections.count, new.count == newSections.count else { return nil }
        // Sections: the longest run of new sections whose old positions increase survives.
        var oldSectionIndex: [SectionID: Int] = [:]
        oldSectionIndex.reserveCapacity(oldSections.count)
        for (index, section) in oldSections.enumerated() where oldSectionIndex.updateValue(index, forKey: section) != nil { return nil }
        var newSectionSeen = Set<SectionID>()
        var matched: [(old: Int, new: Int)] = []
        for (index, section) in newSections.enumerated() {
            guard newSectionSeen.insert(section).inserted else { return nil }
            if let oldIndex = oldSectionIndex[section] { matched.append((oldIndex, index)) }
        }
        var newSectionOf = [Int](repeating: -1, count: old.count)   // -1: deleted
        var oldSectionOf = [Int](repeating: -1, count: new.count)   // -1: inserted
        for position in longestIncreasingRun(matched.map(\.old)) {
            newSectionOf[matched[position].old] = matched[position].new
            oldSectionOf[matched[position].new] = matched[position].old
        }
        var updates = BatchUpdates()
        updates.deletedSections = old.indices.filter { newSectionOf[$0] < 0 }
        updates.insertedSections = new.indices.filter { oldSectionOf[$0] < 0 }

        // Rows: where each identity was, as a position over all old rows (one hash table; the rest are arrays).
        let oldCount = old.reduce(0) { $0 + $1.count }
        var oldPosition: [ID: Int] = [:]
        oldPosition.reserveCapacity(oldCount)
        var oldSectionAt = [Int](repeating: 0, count: oldCount)
        var oldRowAt = [Int](repeating: 0, count: oldCount)
        var position = 0
        for (section, items) in old.enumerated() {
            for (row, item) in items.enumerated() {
                guard oldPosition.updateValue(position, forKey: id(item)) == nil else { return nil }
                oldSectionAt[position] = section
                oldRowAt[position] = row
                position += 1
            }
        }
        var stayed = [Bool](repeating: false, count: oldCount)
        var newcomers = Set<ID>()   // identities not in `old`, to catch duplicates among them
        for (section, items) in new.enumerated() {
            // Rows that stay in their (surviving) section: candidates to stay put.
            var stayingOldRows: [Int] = []
            var stayingNewRows: [Int] = []
            for (row, item) in items.enumerated() {
                let identity = id(item)
                let to = ViewIndexPath(section: section, row: row)
                guard let was = oldPosition[identity] else {
                    guard newcomers.insert(identity).inserted else { return nil }
                    if oldSectionOf[section] >= 0 { updates.insertedRows.append(to) }
                    continue
                }
                guard !stayed[was] else { return nil }
                stayed[was] = true
                let wasSection = oldSectionAt[was]
                let wasRow = oldRowAt[was]
                let sectionSurvived = newSectionOf[wasSection] >= 0
                if oldSectionOf[section] < 0 {
                    if sectionSurvived { updates.deletedRows.append(ViewIndexPath(section: wasSection, row: wasRow)) }
                } else if !sectionSurvived {
                    updates.insertedRows.append(to)
                } else if newSectionOf[wasSection] == section {
                    stayingOldRows.append(wasRow)
                    stayingNewRows.append(row)
                } else {
                    updates.movedRows.append(.init(from: ViewIndexPath(section: wasSection, row: wasRow), to: to,
                                                   changed: !isEqual(old[wasSection][wasRow], item)))
                }
            }
            guard oldSectionOf[section] >= 0, !stayingOldRows.isEmpty else { continue }
            let oldSection = oldSectionOf[section]
            var stays = [Bool](repeating: false, count: stayingOldRows.count)
            for position in longestIncreasingRun(stayingOldRows) { stays[position] = true }
            for position in stayingOldRows.indices {
                let from = ViewIndexPath(section: oldSection, row: stayingOldRows[position])
                let changed = !isEqual(old[oldSection][stayingOldRows[position]], items[stayingNewRows[position]])
                if stays[position] {
                    if changed { updates.reloadedRows.append(from) }
                } else {
                    updates.movedRows.append(.init(from: from, to: ViewIndexPath(section: section, row: stayingNewRows[position]), changed: changed))
                }
            }
        }
        for position in 0..<oldCount where !stayed[position] && newSectionOf[oldSectionAt[position]] >= 0 {
            updates.deletedRows.append(ViewIndexPath(section: oldSectionAt[position], row: oldRowAt[position]))
        }
        updates.deletedRows.sort()
        updates.reloadedRows.sort()
        updates.movedRows.sort { $0.to < $1.to }
        return updates
    }

    /// The positions of one longest strictly increasing subsequence of `values` (patience sorting, O(n log n)).
    @inlinable
    static func longestIncreasingRun(_ values: [Int]) -> [Int] {
        guard !values.isEmpty else { return [] }
        var tails: [Int] = []          // positions: tails[k] ends the best run of length k + 1
        var previous = [Int](repeating: -1, count: values.count)
        for (position, value) in values.enumerated() {
            var low = 0
            var high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if values[tails[middle]] < value { low = middle + 1 } else { high = middle }
            }
            if low > 0 { previous[position] = tails[low - 1] }
            if low == tails.count { tails.append(position) } else { tails[low] = position }
        }
        var run: [Int] = []
        run.reserveCapacity(tails.count)
        var position = tails.last ?? -1
        while position >= 0 {
            run.append(position)
            position = previous[position]
        }
        return run.reversed()
    }
}
