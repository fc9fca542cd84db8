import Canopy

/// What a list UI shows: sections, each a group name and its rows top to bottom.
public struct Rendering: Equatable, Sendable, CustomStringConvertible {
    /// The sections in order.
    public var sections: [(group: String, rows: [RowID])]

    /// Creates a rendering.
    public init(sections: [(group: String, rows: [RowID])]) {
        self.sections = sections
    }

    /// What `mappings` show, read with `reader` (which must read the mappings' snapshot).
    public init(mappings: ViewMappings, reader: ViewReader) throws {
        sections = try (0..<mappings.numberOfSections).map { section in
            (mappings.group(forSection: section) ?? "?", try mappings.rowIDs(inSection: section, reader: reader))
        }
    }

    /// Compares group names and rows.
    public static func == (lhs: Rendering, rhs: Rendering) -> Bool {
        lhs.sections.count == rhs.sections.count
            && zip(lhs.sections, rhs.sections).allSatisfy { $0.group == $1.group && $0.rows == $1.rows }
    }

    /// One line per section: `group: c/k, c/k, …`.
    public var description: String {
        sections.map { section in
            "\(section.group): " + section.rows.map { "\($0.collection)/\($0.key)" }.joined(separator: ", ")
        }.joined(separator: "\n")
    }
}

/// A changeset that breaks the UI contract, as UIKit would complain about it.
public struct ChangesetViolation: Error, CustomStringConvertible {
    /// What is wrong.
    public var description: String
}

/// Applies a ``ViewChangeset`` to a rendering exactly as UIKit's batch updates do, checking every rule UIKit enforces
/// (and a few more: that the row a change names is the row at its original index path).
///
/// The order is UIKit's: deletes (sections and rows, at indexes before) happen first, then inserts (at indexes after);
/// moves take a row from its original index path and put it at its final one; rows nobody mentions keep their relative
/// order and fill the places left. Rows of an inserted section come from `newSection` — the data source UIKit asks.
public enum ChangesetApplier {
    /// The rendering after `changeset`, or the first violation of the contract.
    ///
    /// Besides UIKit's rules, checks that every update names the row at its original index path and where that row
    /// ends up as its final one; that every row of `changedRows` shown before and after (outside deleted and inserted
    /// sections) is reported as an update or a move; and that every row shown before and after whose neighbour at one
    /// of its group's drawing offsets (``ViewMappings/GroupOptions/drawingDependencies``) is another row, or a row of
    /// `changedRows`, is reported as an update or a move.
    ///
    /// - Parameters:
    ///   - changeset: the changes.
    ///   - old: what the UI showed before.
    ///   - changedRows: the rows whose object or metadata changed over the changeset's span (empty: not checked).
    ///   - rowsInManyGroups: the view's rows can be in several groups (a `many…` grouping): a row may be shown in
    ///     several sections and have a change in each, and the checks above hold per row and section (by the group the
    ///     section shows). Without it, a row has at most one change.
    ///   - newSection: the rows of a section after the change, asked only for inserted sections (as UIKit asks its
    ///     data source); `group(forSection:)` of the changeset's mappings names it.
    public static func apply(_ changeset: ViewChangeset, to old: Rendering, changedRows: Set<RowID> = [], rowsInManyGroups: Bool = false,
                             newSection: (Int) throws -> [RowID]) throws -> Rendering {
        let mappings = changeset.mappings
        let newSectionCount = mappings.numberOfSections
        var deletedSections = Set<Int>()
        var insertedSections = Set<Int>()
        for change in changeset.sectionChanges {
            switch change.kind {
            case .delete:
                guard old.sections.indices.contains(change.index) else { throw violation("section delete \(change.index) out of range (\(old.sections.count) sections before)") }
                guard old.sections[change.index].group == change.group else { throw violation("\(change) names the wrong group; section \(change.index) showed \(old.sections[change.index].group)") }
                guard deletedSections.insert(change.index).inserted else { throw violation("section \(change.index) deleted twice") }
            case .insert:
                guard (0..<newSectionCount).contains(change.index) else { throw violation("section insert \(change.index) out of range (\(newSectionCount) sections after)") }
                guard mappings.group(forSection: change.index) == change.group else { throw violation("\(change) names the wrong group") }
                guard insertedSections.insert(change.index).inserted else { throw violation("section \(change.index) inserted twice") }
            }
        }
        let survivingOld = old.sections.indices.filter { !deletedSections.contains($0) }
        let survivingNew = (0..<newSectionCount).filter { !insertedSections.contains($0) }
        guard survivingOld.count == survivingNew.count else {
            throw violation("invalid number of sections: \(old.sections.count) before, \(deletedSections.count) deleted, \(insertedSections.count) inserted, but \(newSectionCount) after")
        }
        // Surviving sections keep their order: the k-th surviving old section is the k-th surviving new one.
        var newIndexOfOld: [Int: Int] = [:]
        for (oldIndex, newIndex) in zip(survivingOld, survivingNew) {
            guard old.sections[oldIndex].group == mappings.group(forSection: newIndex) else {
                throw violation("surviving section \(oldIndex) (\(old.sections[oldIndex].group)) lands at \(newIndex), which shows \(mappings.group(forSection: newIndex) ?? "nothing")")
            }
            newIndexOfOld[oldIndex] = newIndex
        }

        var removed = Set<ViewIndexPath>()  // original index paths vacated (deletes and move sources)
        var placed: [ViewIndexPath: RowID] = [:]  // final index paths filled (inserts and move destinations)
        var updated = Set<ViewIndexPath>()
        var mentioned = Set<Occurrence>()
        var kinds: [Occurrence: ViewChangeset.RowChange.Kind] = [:]
        /// The row of `change` and, for rows in many groups, the group of the section it is shown in.
        func occurrence(_ change: ViewChangeset.RowChange) -> Occurrence {
            guard rowsInManyGroups else { return Occurrence(id: change.id, group: nil) }
            if let path = change.finalIndexPath, let group = mappings.group(forSection: path.section) { return Occurrence(id: change.id, group: group) }
            if let path = change.originalIndexPath, old.sections.indices.contains(path.section) {
                return Occurrence(id: change.id, group: old.sections[path.section].group)
            }
            return Occurrence(id: change.id, group: "?")
        }
        func checkOriginal(_ path: ViewIndexPath?, _ change: ViewChangeset.RowChange) throws -> ViewIndexPath {
            guard let path else { throw violation("\(change) lacks its original index path") }
            guard old.sections.indices.contains(path.section), old.sections[path.section].rows.indices.contains(path.row) else {
                throw violation("\(change): original index path out of range")
            }
            guard !deletedSections.contains(path.section) else { throw violation("\(change) refers to a row of deleted section \(path.section)") }
            guard old.sections[path.section].rows[path.row] == change.id else {
                throw violation("\(change): the row at \(path) was \(old.sections[path.section].rows[path.row])")
            }
            return path
        }
        func checkFinal(_ path: ViewIndexPath?, _ change: ViewChangeset.RowChange) throws -> ViewIndexPath {
            guard let path else { throw violation("\(change) lacks its final index path") }
            guard (0..<newSectionCount).contains(path.section) else { throw violation("\(change): final section out of range") }
            guard !insertedSections.contains(path.section) else { throw violation("\(change) refers to a row of inserted section \(path.section)") }
            guard placed[path] == nil else { throw violation("two rows inserted or moved to \(path)") }
            return path
        }
        for change in changeset.rowChanges {
            let shown = occurrence(change)
            guard mentioned.insert(shown).inserted else {
                throw violation("row \(change.id) has two changes\(shown.group.map { " in group '\($0)'" } ?? "")")
            }
            kinds[shown] = change.kind
            switch change.kind {
            case .delete:
                guard removed.insert(try checkOriginal(change.originalIndexPath, change)).inserted else { throw violation("\(change): deleted twice") }
            case .insert:
                placed[try checkFinal(change.finalIndexPath, change)] = change.id
            case .move:
                let from = try checkOriginal(change.originalIndexPath, change)
                let to = try checkFinal(change.finalIndexPath, change)
                guard removed.insert(from).inserted else { throw violation("\(change): moved from a row already deleted") }
                placed[to] = change.id
            case .update:
                let at = try checkOriginal(change.originalIndexPath, change)
                guard !removed.contains(at) else { throw violation("\(change): updates a deleted row") }
                updated.insert(at)
            }
        }
        guard updated.isDisjoint(with: removed) else { throw violation("a row is both updated and deleted or moved") }

        var result: [(group: String, rows: [RowID])] = []
        var keptFrom: [ViewIndexPath: ViewIndexPath] = [:]  // rows no change mentions, or updated: new path -> old path
        for newIndex in 0..<newSectionCount {
            let group = mappings.group(forSection: newIndex) ?? "?"
            if insertedSections.contains(newIndex) {
                result.append((group, try newSection(newIndex)))
                continue
            }
            guard let oldIndex = newIndexOfOld.first(where: { $0.value == newIndex })?.key else {
                throw violation("section \(newIndex) is neither inserted nor a surviving section")
            }
            let kept = old.sections[oldIndex].rows.enumerated()
                .filter { !removed.contains(ViewIndexPath(section: oldIndex, row: $0.offset)) }
            let arriving = placed.filter { $0.key.section == newIndex }
            let count = kept.count + arriving.count
            guard count == mappings.numberOfItems(inSection: newIndex) else {
                throw violation("invalid number of rows in section \(newIndex) (\(group)): \(old.sections[oldIndex].rows.count) before, \(old.sections[oldIndex].rows.count - kept.count) deleted or moved out, \(arriving.count) inserted or moved in, but \(mappings.numberOfItems(inSection: newIndex)) after")
            }
            var rows: [RowID] = []
            rows.reserveCapacity(count)
            var remaining = kept.makeIterator()
            for row in 0..<count {
                if let id = arriving[ViewIndexPath(section: newIndex, row: row)] {
                    rows.append(id)
                } else if let (oldRow, id) = remaining.next() {
                    rows.append(id)
                    keptFrom[ViewIndexPath(section: newIndex, row: row)] = ViewIndexPath(section: oldIndex, row: oldRow)
                } else {
                    throw violation("section \(newIndex): a row inserted past the end")
                }
            }
            result.append((group, rows))
        }
        let rendering = Rendering(sections: result)
        try checkUpdates(changeset, old: old, new: rendering, keptFrom: keptFrom, kinds: kinds, deletedSections: deletedSections,
                         insertedSections: insertedSections, changedRows: changedRows, rowsInManyGroups: rowsInManyGroups)
        return rendering
    }

    /// The row of `rendering` at `path` moved by `offset` rows within its section, or `nil` past either end.
    static func row(_ rendering: Rendering, _ path: ViewIndexPath, offset: Int) -> RowID? {
        let (row, overflow) = path.row.addingReportingOverflow(offset)
        guard !overflow, rendering.sections.indices.contains(path.section), rendering.sections[path.section].rows.indices.contains(row) else {
            return nil
        }
        return rendering.sections[path.section].rows[row]
    }

    /// Updates' final index paths, changed rows reported, drawing dependencies honoured.
    static func checkUpdates(
        _ changeset: ViewChangeset, old: Rendering, new: Rendering, keptFrom: [ViewIndexPath: ViewIndexPath],
        kinds: [Occurrence: ViewChangeset.RowChange.Kind], deletedSections: Set<Int>, insertedSections: Set<Int>, changedRows: Set<RowID>,
        rowsInManyGroups: Bool
    ) throws {
        for change in changeset.rowChanges where change.kind == .update {
            guard let final = change.finalIndexPath, row(new, final, offset: 0) == change.id else {
                throw violation("\(change): its final index path doesn't show the row after the changes")
            }
            guard keptFrom[final] == change.originalIndexPath else {
                throw violation("\(change): the row at its original index path doesn't end up at its final one")
            }
        }
        func paths(_ rendering: Rendering, skipping skipped: Set<Int>) -> [Occurrence: ViewIndexPath] {
            var result: [Occurrence: ViewIndexPath] = [:]
            for (section, content) in rendering.sections.enumerated() where !skipped.contains(section) {
                for (row, id) in content.rows.enumerated() {
                    result[Occurrence(id: id, group: rowsInManyGroups ? content.group : nil)] = ViewIndexPath(section: section, row: row)
                }
            }
            return result
        }
        if !changedRows.isEmpty {
            let oldPaths = paths(old, skipping: deletedSections)
            let newPaths = paths(new, skipping: insertedSections)
            for (shown, from) in oldPaths where changedRows.contains(shown.id) {
                guard let to = newPaths[shown] else { continue }
                guard kinds[shown] == .update || kinds[shown] == .move else {
                    throw violation("row \(shown.id) changed and stays shown (\(from) -> \(to)) but is reported as \(kinds[shown].map { "\($0)" } ?? "nothing")")
                }
            }
        }
        let mappings = changeset.mappings
        for (newPath, oldPath) in keptFrom {
            guard let (group, _) = mappings.position(at: newPath) else { continue }
            let id = new.sections[newPath.section].rows[newPath.row]
            let shown = Occurrence(id: id, group: rowsInManyGroups ? new.sections[newPath.section].group : nil)
            for offset in mappings.options(forGroup: group).drawingDependencies where offset != 0 {
                let then = row(old, oldPath, offset: offset)
                let now = row(new, newPath, offset: offset)
                guard then != now || (now.map { changedRows.contains($0) } ?? false) else { continue }
                guard kinds[shown] == .update else {
                    throw violation("row \(id) (\(oldPath) -> \(newPath)) depends on its neighbour at \(offset), which was \(then.map { "\($0)" } ?? "none") and is \(now.map { "\($0)" } ?? "none")\(then == now ? " (changed)" : ""), but it is not reloaded")
                }
            }
        }
    }

    static func violation(_ message: String) -> ChangesetViolation { ChangesetViolation(description: message) }

    /// A row as shown: the row, and for rows in many groups the group of its section.
    struct Occurrence: Hashable {
        var id: RowID
        var group: String?
    }
}
