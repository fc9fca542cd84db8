import Canopy
import CanopySource

/// A batch checked against the rows before and after, as UIKit checks `performBatchUpdates`, and the mapping it
/// implies from a surviving row's index path before to its index path after.
struct BatchPlan {
    let before: [Int]
    let after: [Int]
    /// Old section → new section, for sections that survive.
    var newSection: [Int: Int] = [:]
    /// Per old section, the sorted rows that leave (deletes and move sources).
    var removed: [Int: [Int]] = [:]
    /// Per new section, the sorted rows that arrive (inserts and move destinations).
    var placed: [Int: [Int]] = [:]
    var reloaded: Set<ViewIndexPath> = []
    var vacated: Set<ViewIndexPath> = []

    init(_ updates: BatchUpdates, before: [Int], after: [Int]) throws {
        self.before = before
        self.after = after
        func fail(_ message: String, _ path: ViewIndexPath? = nil) -> SourceError {
            SourceError(.invalidBatch, message + " (batch: \(updates))", indexPath: path)
        }
        let deletedSections = Set(updates.deletedSections)
        let insertedSections = Set(updates.insertedSections)
        guard deletedSections.count == updates.deletedSections.count else { throw fail("a section is deleted twice") }
        guard insertedSections.count == updates.insertedSections.count else { throw fail("a section is inserted twice") }
        for section in deletedSections where !before.indices.contains(section) {
            throw fail("section \(section) is deleted but only \(before.count) sections were shown")
        }
        for section in insertedSections where !after.indices.contains(section) {
            throw fail("section \(section) is inserted but the data source has \(after.count) sections")
        }
        guard before.count - deletedSections.count + insertedSections.count == after.count else {
            throw fail("invalid number of sections: \(before.count) before, \(deletedSections.count) deleted, \(insertedSections.count) inserted, but \(after.count) after")
        }
        let survivingOld = before.indices.filter { !deletedSections.contains($0) }
        let survivingNew = after.indices.filter { !insertedSections.contains($0) }
        for (old, new) in zip(survivingOld, survivingNew) { newSection[old] = new }

        func checkOld(_ path: ViewIndexPath, _ what: String) throws {
            guard before.indices.contains(path.section), path.row >= 0, path.row < before[path.section] else {
                throw fail("\(what) \(path) is out of range of the rows shown (\(before))", path)
            }
            guard !deletedSections.contains(path.section) else { throw fail("\(what) \(path) is in a deleted section", path) }
        }
        func checkNew(_ path: ViewIndexPath, _ what: String) throws {
            guard after.indices.contains(path.section), path.row >= 0, path.row < after[path.section] else {
                throw fail("\(what) \(path) is out of range of the data source's rows (\(after))", path)
            }
            guard !insertedSections.contains(path.section) else { throw fail("\(what) \(path) is in an inserted section", path) }
        }
        var arrived = Set<ViewIndexPath>()
        for path in updates.deletedRows {
            try checkOld(path, "deleted row")
            guard vacated.insert(path).inserted else { throw fail("row \(path) is deleted twice", path) }
        }
        for move in updates.movedRows {
            try checkOld(move.from, "moved row")
            try checkNew(move.to, "move destination")
            guard vacated.insert(move.from).inserted else { throw fail("row \(move.from) is both deleted and moved, or moved twice", move.from) }
            guard arrived.insert(move.to).inserted else { throw fail("two rows arrive at \(move.to)", move.to) }
        }
        for path in updates.insertedRows {
            try checkNew(path, "inserted row")
            guard arrived.insert(path).inserted else { throw fail("two rows arrive at \(path)", path) }
        }
        for path in updates.reloadedRows {
            try checkOld(path, "reloaded row")
            guard !vacated.contains(path) else { throw fail("row \(path) is both deleted (or moved) and reloaded", path) }
            guard reloaded.insert(path).inserted else { throw fail("row \(path) is reloaded twice", path) }
        }
        for path in vacated { removed[path.section, default: []].append(path.row) }
        for path in arrived { placed[path.section, default: []].append(path.row) }
        for key in removed.keys { removed[key]?.sort() }
        for key in placed.keys { placed[key]?.sort() }
        for (old, new) in newSection {
            let expected = before[old] - (removed[old]?.count ?? 0) + (placed[new]?.count ?? 0)
            guard expected == after[new] else {
                throw fail("invalid number of rows in section \(new): \(before[old]) before (section \(old)), \(removed[old]?.count ?? 0) deleted or moved out, \(placed[new]?.count ?? 0) inserted or moved in, but \(after[new]) after")
            }
        }
    }

    /// Where an untouched row at `path` (before) is after the batch; `nil` when it left, was reloaded, or its
    /// section was deleted.
    func finalPath(of path: ViewIndexPath) -> ViewIndexPath? {
        guard !vacated.contains(path), !reloaded.contains(path) else { return nil }
        return shifted(path)
    }

    /// Where a reloaded row at `path` (before) is after the batch.
    func finalPathOfReloaded(_ path: ViewIndexPath) -> ViewIndexPath? {
        guard reloaded.contains(path) else { return nil }
        return shifted(path)
    }

    private func shifted(_ path: ViewIndexPath) -> ViewIndexPath? {
        guard let section = newSection[path.section], before.indices.contains(path.section), path.row >= 0, path.row < before[path.section] else {
            return nil
        }
        let gone = removed[path.section].map { rows in rows.prefix { $0 < path.row }.count } ?? 0
        var row = path.row - gone
        for arrival in placed[section] ?? [] where arrival <= row { row += 1 }
        return ViewIndexPath(section: section, row: row)
    }
}
