import Canopy
/// What a container asks its data source: sections, rows, configured cells, supplementary views and texts, and the
/// editing rules. Every index-path entry point is total: out of range gives `nil`, 0, `false` or a typed error.
public protocol DataSource<Cell, SupplementaryView>: AnyObject {
    /// The model shown by one row.
    associatedtype Item
    /// The container's cell type.
    associatedtype Cell
    /// The container's supplementary view type.
    associatedtype SupplementaryView

    /// An optional title for the whole list.
    var title: String? { get }
    /// The number of sections.
    var numberOfSections: Int { get }
    /// The number of rows of `section`, 0 when there is no such section.
    func numberOfItems(inSection section: Int) -> Int
    /// The item at `indexPath`, or `nil` when there is none.
    /// - Throws: what reading the item throws (view-backed sources read the store).
    func item(at indexPath: ViewIndexPath) throws -> Item?
    /// The configured cell for `indexPath`.
    /// - Throws: ``SourceError/Code/indexOutOfRange`` for an index path with no item; the factory's errors.
    func cell(at indexPath: ViewIndexPath) throws -> Cell
    /// The configured supplementary view of `kind` for `section`, or `nil` when none is registered.
    func supplementaryView(kind: SupplementaryKind, inSection section: Int) throws -> SupplementaryView?
    /// The text of `kind` (header or footer) for `section`, or `nil`.
    func supplementaryText(kind: SupplementaryKind, inSection section: Int) -> String?
    /// Runs `body`, during which every cell and supplementary view is configured from one consistent state (a
    /// view-backed source opens its pinned read once for the whole body).
    func withConsistentReads<R>(_ body: () throws -> R) throws -> R

    /// Whether the row at `indexPath` can be edited (deleted or inserted); `false` out of range.
    func canEdit(at indexPath: ViewIndexPath) -> Bool
    /// The edit the row at `indexPath` offers (UIKit's editing style): none, delete or insert; ``EditingStyle/none``
    /// out of range or when ``canEdit(at:)`` says no.
    func editingStyle(at indexPath: ViewIndexPath) -> EditingStyle
    /// Commits a delete or insert at `indexPath`.
    /// - Throws: ``SourceError/Code/editingNotAllowed`` when the row can't be edited or offers another edit than
    ///   `action` (``editingStyle(at:)``); what the closure throws.
    func commitEdit(_ action: EditAction, at indexPath: ViewIndexPath) throws
    /// Whether the row at `indexPath` can be moved; `false` out of range.
    func canMove(at indexPath: ViewIndexPath) -> Bool
    /// Commits a move from `source` to `destination`.
    /// - Throws: ``SourceError/Code/editingNotAllowed`` when the row can't be moved; what the closure throws.
    func commitMove(from source: ViewIndexPath, to destination: ViewIndexPath) throws
}

extension DataSource {
    /// No title.
    public var title: String? { nil }
    /// Runs `body` as is.
    public func withConsistentReads<R>(_ body: () throws -> R) throws -> R { try body() }

    /// The number of rows in all sections.
    public var numberOfItems: Int { (0..<max(0, numberOfSections)).reduce(0) { $0 + numberOfItems(inSection: $1) } }

    /// Whether `indexPath` names a row of the data source.
    public func contains(_ indexPath: ViewIndexPath) -> Bool {
        indexPath.section >= 0 && indexPath.section < numberOfSections && indexPath.row >= 0
            && indexPath.row < numberOfItems(inSection: indexPath.section)
    }
}

/// An edit a list UI commits: delete the row, or insert one.
public enum EditAction: Hashable, Sendable {
    /// Delete the row.
    case delete
    /// Insert a row.
    case insert
}

/// The edit a row offers (TaylorSource's `editActionForItemAtIndexPath`, UIKit's editing style).
public enum EditingStyle: Hashable, Sendable {
    /// The row can't be edited.
    case none
    /// The row can be deleted.
    case delete
    /// A row can be inserted at the row.
    case insert

    /// The action this style allows, or `nil` for ``none``.
    public var action: EditAction? {
        switch self {
        case .none: nil
        case .delete: .delete
        case .insert: .insert
        }
    }
}

/// The editing closures of a data source (TaylorSource's `canEditItemAtIndexPath`, `commitEditActionForItemAtIndexPath`,
/// `canMoveItemAtIndexPath`, `commitMoveItemAtIndexPathToIndexPath`). Every closure is asked only for index paths in
/// range.
public struct Editing<Item> {
    /// Whether the item at the index path can be deleted or inserted.
    public var canEdit: (Item?, ViewIndexPath) -> Bool
    /// The edit the item offers when it can be edited; by default ``EditingStyle/delete``.
    public var editingStyle: (Item?, ViewIndexPath) -> EditingStyle
    /// Commits a delete or insert.
    public var commitEdit: (EditAction, Item?, ViewIndexPath) throws -> Void
    /// Whether the item can be moved.
    public var canMove: (Item?, ViewIndexPath) -> Bool
    /// Commits a move.
    public var commitMove: (ViewIndexPath, ViewIndexPath) throws -> Void

    /// Creates editing closures; by default every row can be deleted (not inserted at) and nothing can be moved.
    public init(canEdit: @escaping (Item?, ViewIndexPath) -> Bool = { _, _ in true },
                editingStyle: @escaping (Item?, ViewIndexPath) -> EditingStyle = { _, _ in .delete },
                commitEdit: @escaping (EditAction, Item?, ViewIndexPath) throws -> Void,
                canMove: @escaping (Item?, ViewIndexPath) -> Bool = { _, _ in false },
                commitMove: @escaping (ViewIndexPath, ViewIndexPath) throws -> Void = { _, _ in }) {
        self.canEdit = canEdit
        self.editingStyle = editingStyle
        self.commitEdit = commitEdit
        self.canMove = canMove
        self.commitMove = commitMove
    }
}

/// Shared implementation of the editing entry points for the data sources of this package.
protocol EditableDataSource: DataSource {
    var editing: Editing<Item>? { get }
}

extension EditableDataSource {
    /// The item at `indexPath` for an editing question: `.some(item)` (possibly nil: a row without an item), or
    /// `nil` when the row is out of range or its item can't be read — a row that can't be read can't be edited.
    private func itemForEditing(at indexPath: ViewIndexPath) -> Item?? {
        guard contains(indexPath) else { return nil }
        do { return .some(try item(at: indexPath)) } catch { return nil }
    }

    /// Whether the row can be edited: in range, readable, and ``Editing/canEdit`` says yes.
    public func canEdit(at indexPath: ViewIndexPath) -> Bool {
        guard let editing, let item = itemForEditing(at: indexPath) else { return false }
        return editing.canEdit(item, indexPath)
    }

    /// The row's ``Editing/editingStyle`` when it can be edited, else ``EditingStyle/none``.
    public func editingStyle(at indexPath: ViewIndexPath) -> EditingStyle {
        guard let editing, let item = itemForEditing(at: indexPath), editing.canEdit(item, indexPath) else { return .none }
        return editing.editingStyle(item, indexPath)
    }

    /// Commits `action` when the row can be edited and offers it (its editing style).
    /// - Throws: ``SourceError/Code/editingNotAllowed`` otherwise; what reading the item or the closure throws.
    public func commitEdit(_ action: EditAction, at indexPath: ViewIndexPath) throws {
        guard canEdit(at: indexPath), let editing else {
            throw SourceError(.editingNotAllowed, "the row can't be edited (out of range, no editing closures, or canEdit said no)", indexPath: indexPath)
        }
        let item = try item(at: indexPath)
        let style = editing.editingStyle(item, indexPath)
        guard style.action == action else {
            throw SourceError(.editingNotAllowed, "the row offers \(style == .none ? "no edit" : "\(style)"), not \(action)", indexPath: indexPath)
        }
        try editing.commitEdit(action, item, indexPath)
    }

    /// Whether the row can be moved: in range, readable, and ``Editing/canMove`` says yes.
    public func canMove(at indexPath: ViewIndexPath) -> Bool {
        guard let editing, let item = itemForEditing(at: indexPath) else { return false }
        return editing.canMove(item, indexPath)
    }

    /// Commits a move when the row can be moved and `destination` is a place in range.
    /// - Throws: ``SourceError/Code/editingNotAllowed`` otherwise; what the closure throws.
    public func commitMove(from source: ViewIndexPath, to destination: ViewIndexPath) throws {
        guard canMove(at: source), destination.section >= 0, destination.section < numberOfSections, destination.row >= 0,
              destination.row <= numberOfItems(inSection: destination.section), let editing else {
            throw SourceError(.editingNotAllowed, "the row can't be moved to \(destination)", indexPath: source)
        }
        try editing.commitMove(source, destination)
    }
}

/// A type that composes a data source inside itself, as TaylorSource recommends: a bespoke type (a screen, a command)
/// owns the factory and data source and exposes it through ``dataSource``, so that the container sees only the data
/// source and the rest of the app sees only the bespoke type.
public protocol DataSourceProvider {
    /// The data source type.
    associatedtype Source: DataSource
    /// The data source the provider composes.
    var dataSource: Source { get }
}
