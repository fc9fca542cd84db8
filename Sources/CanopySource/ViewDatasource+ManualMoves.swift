import Canopy

extension ViewDatasource {
    /// Persists a move the user made in the list: moves the row shown at `source` to `destination` in the manual
    /// view (``/Canopy/ManualView``) the data source shows, in a write transaction of its own. Use it as the
    /// ``Editing/commitMove`` closure; the next ``advance()`` brings the move as a changeset, as for any write.
    ///
    /// ```swift
    /// source.editing = Editing(commitEdit: { _, _, _ in }, canMove: { _, _ in true },
    ///                          commitMove: { [unowned source] from, to in try source.commitManualMove(from: from, to: to) })
    /// ```
    ///
    /// Index paths are the data source's (its mappings at its snapshot: reversed groups and ranges are translated).
    /// The move is refused, with nothing changed, when the list changed since that snapshot so that another row is now
    /// at `source`: advance the data source and let the user try again. Don't call it inside
    /// ``withConsistentReads(_:)``.
    /// - Throws: ``SourceError/Code/editingNotAllowed`` when an index path is out of range, the two are in different
    ///   groups, or the list changed since the snapshot; ``/CanopyCore/CanopyError/Code/invalidArgument`` when the view is not a
    ///   manual view.
    public func commitManualMove(from source: ViewIndexPath, to destination: ViewIndexPath) throws {
        let mappings = self.mappings
        guard let from = mappings.position(at: source), let to = mappings.position(at: destination), from.group == to.group else {
            throw SourceError(.editingNotAllowed, "a manual list moves rows within its one group; \(source) → \(destination) is not such a move", indexPath: source)
        }
        let shown = try reading { txn in try txn.view(mappings.view).rowID(at: from.index, inGroup: from.group) }
        try observer.database.newConnection().readWrite { txn throws in
            let current = try txn.view(mappings.view).rowID(at: from.index, inGroup: from.group)
            guard let shown, current == shown else {
                throw SourceError(.editingNotAllowed, "the list changed since the data source's snapshot (another row is at \(source) now); advance and move again",
                                  indexPath: source)
            }
            try txn.manualList(mappings.view).move(from: from.index, to: to.index)
        }
    }
}
