import Canopy

/// What a cell's configuration closure receives besides the cell and the item: at least the index path.
public protocol CellIndexing {
    /// Where the cell is shown.
    var indexPath: ViewIndexPath { get }
}

/// What a supplementary view's configuration closure receives: the section (as an index path with row 0) and, for
/// view-backed data sources, the group the section shows.
public protocol SupplementaryIndexing {
    /// The group shown by the section, when the data source is backed by a view; `nil` otherwise.
    var group: String? { get }
    /// The section, as `ViewIndexPath(section: s, row: 0)`.
    var indexPath: ViewIndexPath { get }
}

/// The cell and supplementary index of static and sectioned data sources: only an index path.
public struct IndexPathIndex: CellIndexing, SupplementaryIndexing, Hashable, Sendable {
    /// Where the cell or section is.
    public var indexPath: ViewIndexPath
    /// Always `nil`: static data sources have no groups.
    public var group: String? { nil }

    /// Creates an index.
    public init(indexPath: ViewIndexPath) { self.indexPath = indexPath }
}
