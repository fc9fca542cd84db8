import Canopy

/// A batch of section and row changes for a container, in UIKit's terms: deletes and reloads at index paths before
/// the batch, inserts at index paths after it, moves from before to after.
public struct BatchUpdates: Hashable, Sendable, CustomStringConvertible {
    /// A row moved from an index path before the batch to one after it.
    public struct Move: Hashable, Sendable {
        /// Where the row was.
        public var from: ViewIndexPath
        /// Where the row goes.
        public var to: ViewIndexPath
        /// Whether the row's content changed too (the container reconfigures it at `to`).
        public var changed: Bool

        /// Creates a move.
        public init(from: ViewIndexPath, to: ViewIndexPath, changed: Bool = false) {
            self.from = from
            self.to = to
            self.changed = changed
        }
    }

    /// Sections deleted, by index before the batch.
    public var deletedSections: [Int]
    /// Sections inserted, by index after the batch.
    public var insertedSections: [Int]
    /// Rows deleted, at index paths before the batch.
    public var deletedRows: [ViewIndexPath]
    /// Rows inserted, at index paths after the batch.
    public var insertedRows: [ViewIndexPath]
    /// Rows moved.
    public var movedRows: [Move]
    /// Rows whose content changed in place, at index paths before the batch.
    public var reloadedRows: [ViewIndexPath]

    /// Creates a batch.
    public init(deletedSections: [Int] = [], insertedSections: [Int] = [], deletedRows: [ViewIndexPath] = [],
                insertedRows: [ViewIndexPath] = [], movedRows: [Move] = [], reloadedRows: [ViewIndexPath] = []) {
        self.deletedSections = deletedSections
        self.insertedSections = insertedSections
        self.deletedRows = deletedRows
        self.insertedRows = insertedRows
        self.movedRows = movedRows
        self.reloadedRows = reloadedRows
    }

    /// The batch of the row and section changes of a changeset (its updates become reloads at their original index
    /// paths). A reload changeset has none: use ``ContainerUpdate/init(_:)``, which says "reload" for it.
    init(changesOf changeset: ViewChangeset) {
        self.init()
        for change in changeset.sectionChanges {
            switch change.kind {
            case .insert: insertedSections.append(change.index)
            case .delete: deletedSections.append(change.index)
            }
        }
        for change in changeset.rowChanges {
            switch (change.kind, change.originalIndexPath, change.finalIndexPath) {
            case (.insert, _, let to?): insertedRows.append(to)
            case (.delete, let from?, _): deletedRows.append(from)
            case (.move, let from?, let to?):
                movedRows.append(Move(from: from, to: to, changed: change.objectChanged || change.metadataChanged))
            case (.update, let from?, _): reloadedRows.append(from)
            default: break
            }
        }
    }

    /// Whether the batch changes nothing.
    public var isEmpty: Bool {
        deletedSections.isEmpty && insertedSections.isEmpty && deletedRows.isEmpty && insertedRows.isEmpty
            && movedRows.isEmpty && reloadedRows.isEmpty
    }

    /// Such as `-s[1] +s[2] -[0, 1] +[0, 3] [1, 0]->[0, 0] ~[0, 2]`.
    public var description: String {
        var parts: [String] = []
        parts += deletedSections.map { "-s[\($0)]" }
        parts += insertedSections.map { "+s[\($0)]" }
        parts += deletedRows.map { "-\($0)" }
        parts += insertedRows.map { "+\($0)" }
        parts += movedRows.map { "\($0.from)->\($0.to)" }
        parts += reloadedRows.map { "~\($0)" }
        return parts.isEmpty ? "(no changes)" : parts.joined(separator: " ")
    }
}

/// What a container does for a changeset: reload everything, or apply one batch.
///
/// A reload is its own case, never an empty batch, so it can't be taken for "nothing changed".
public enum ContainerUpdate: Hashable, Sendable {
    /// Forget the rows shown and ask the data source again (the changeset is a reload).
    case reload
    /// Apply the batch (possibly empty: nothing the container shows changed).
    case batch(BatchUpdates)

    /// The update for `changeset`: ``reload`` for a reload changeset, else the batch of its changes.
    public init(_ changeset: ViewChangeset) {
        switch changeset.kind {
        case .reload: self = .reload
        case .changes: self = .batch(BatchUpdates(changesOf: changeset))
        }
    }
}
