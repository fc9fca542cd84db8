import Canopy

/// Selected rows by identity (TaylorSource's selection manager), so that a selection survives inserts, deletes and
/// moves: it never holds index paths, and asks where its rows are now when it is drawn.
///
/// ```swift
/// var selection = RowSelection<RowID>(allowsMultiple: true)
/// selection.toggle(try source.rowID(at: path)!)
/// // ... commits move rows around ...
/// let shown = try selection.indexPaths { try source.indexPath(of: $0) }   // where the selected rows are now
/// ```
public struct RowSelection<ID: Hashable & Sendable>: Sendable, Equatable {
    /// The selected rows, in the order they were selected.
    public private(set) var ids: [ID] = []
    /// Whether several rows can be selected; when false, selecting a row deselects the others.
    public var allowsMultiple: Bool

    /// An empty selection.
    public init(allowsMultiple: Bool = false) { self.allowsMultiple = allowsMultiple }

    /// Whether `id` is selected.
    public func contains(_ id: ID) -> Bool { ids.contains(id) }

    /// Whether nothing is selected.
    public var isEmpty: Bool { ids.isEmpty }

    /// Selects `id` (alone, unless ``allowsMultiple``).
    public mutating func select(_ id: ID) {
        if !allowsMultiple { ids = [id]; return }
        if !ids.contains(id) { ids.append(id) }
    }

    /// Deselects `id`.
    public mutating func deselect(_ id: ID) { ids.removeAll { $0 == id } }

    /// Selects `id` when it is not selected, else deselects it.
    public mutating func toggle(_ id: ID) {
        if contains(id) { deselect(id) } else { select(id) }
    }

    /// Deselects everything.
    public mutating func removeAll() { ids.removeAll() }

    /// Where the selected rows are now, sorted; rows that are no longer shown (`indexPath` gives `nil`) are left out.
    /// - Throws: what `indexPath` throws (a view-backed source reads the store: the error is not taken for "gone").
    public func indexPaths(_ indexPath: (ID) throws -> ViewIndexPath?) rethrows -> [ViewIndexPath] {
        try ids.compactMap(indexPath).sorted()
    }

    /// Deselects the rows that are no longer shown (`indexPath` gives `nil`).
    /// - Throws: what `indexPath` throws; the selection is unchanged then.
    public mutating func removeRowsNotShown(_ indexPath: (ID) throws -> ViewIndexPath?) rethrows {
        var kept: [ID] = []
        for id in ids where try indexPath(id) != nil { kept.append(id) }
        ids = kept
    }
}
