import Canopy
/// What UITableView is to TaylorSource: a list that registers how to make cells and supplementary views, vends them
/// for index paths, reloads, and applies batches of section and row changes.
///
/// `CanopyTerminal`'s `TerminalListView` is the container of this package's apps; tests use small containers of
/// their own.
public protocol ContainerView<Cell, SupplementaryView>: AnyObject {
    /// The type of the rows' views.
    associatedtype Cell
    /// The type of headers, footers and other supplementary views.
    associatedtype SupplementaryView

    /// Registers how to make cells for `descriptor.identifier`.
    func registerCell(_ descriptor: ReuseDescriptor<Cell>)
    /// Registers how to make supplementary views of `kind` for `descriptor.identifier`.
    func registerSupplementaryView(_ descriptor: ReuseDescriptor<SupplementaryView>, kind: SupplementaryKind)
    /// A cell for `identifier` (reused when one is free), to be configured for `indexPath`.
    /// - Throws: ``SourceError/Code/unregisteredIdentifier`` when nothing is registered for `identifier`.
    func dequeueCell(withIdentifier identifier: String, for indexPath: ViewIndexPath) throws -> Cell
    /// A supplementary view of `kind` for `identifier`, to be configured for the section of `indexPath`.
    /// - Throws: ``SourceError/Code/unregisteredIdentifier`` when nothing is registered for (`kind`, `identifier`).
    func dequeueSupplementaryView(kind: SupplementaryKind, identifier: String, for indexPath: ViewIndexPath) throws -> SupplementaryView
    /// Forgets every row shown and asks the data source again.
    func reloadData()
    /// Applies section and row changes, as UIKit's `performBatchUpdates`.
    /// - Throws: ``SourceError/Code/invalidBatch`` when the batch doesn't lead from the rows shown to the data
    ///   source's rows (the container reloads before throwing, so it never shows a garbled list).
    func performBatchUpdates(_ updates: BatchUpdates) throws
}
