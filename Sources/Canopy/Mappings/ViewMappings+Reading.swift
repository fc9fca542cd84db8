extension ViewMappings {
    /// Checks that `reader` reads the view and the state of it these mappings describe: its snapshot, and in a
    /// read-write transaction the transaction's changes to the view so far.
    func checkReader(_ reader: ViewReader) throws {
        guard reader.name == view else {
            throw CanopyError(.invalidArgument, "these mappings are for view '\(view)', not '\(reader.name)'", extensionName: reader.name)
        }
        guard let snapshot, snapshot == reader.snapshot else {
            throw CanopyError(
                .snapshotMismatch,
                "the mappings describe snapshot \(snapshot.map(String.init) ?? "none") but the reader reads snapshot \(reader.snapshot); update the mappings with this reader first",
                extensionName: view)
        }
        guard reader.readPoint.uncommitted == uncommitted else {
            throw CanopyError(
                .snapshotMismatch,
                "the reader's write transaction changed the view since the mappings were updated (at snapshot \(snapshot), before those changes), so index paths would point at the wrong rows; update the mappings with this reader first",
                extensionName: view)
        }
    }

    /// The row shown at `indexPath`, read with `reader`; `nil` when there is no such row.
    ///
    /// - Throws: ``/CanopyCore/CanopyError/Code/snapshotMismatch`` when `reader` reads another snapshot than the mappings describe
    ///   (index paths would point at the wrong rows); ``/CanopyCore/CanopyError/Code/invalidArgument`` for a reader of another view.
    public func rowID(at indexPath: ViewIndexPath, reader: ViewReader) throws -> RowID? {
        try checkReader(reader)
        guard let (group, index) = position(at: indexPath) else { return nil }
        return try reader.rowID(at: index, inGroup: group)
    }

    /// The rows shown in `section`, top to bottom, read with `reader`; empty when there is no such section.
    ///
    /// - Throws: as ``rowID(at:reader:)``.
    public func rowIDs(inSection section: Int, reader: ViewReader) throws -> [RowID] {
        try checkReader(reader)
        var rows: [RowID] = []
        for group in groups(inSection: section) {
            guard let window = visibleRange(inGroup: group), !window.isEmpty else { continue }
            let ids = try reader.rowIDs(inGroup: group, range: window)
            rows += options(forGroup: group).isReversed ? ids.reversed() : ids
        }
        return rows
    }

    /// The object shown at `indexPath`, decoded through `collection`; `nil` when there is no such row or it belongs to
    /// another collection.
    ///
    /// - Throws: as ``rowID(at:reader:)``, and what decoding throws.
    public func object<Object, Metadata>(
        at indexPath: ViewIndexPath, reader: ViewReader, in collection: TypedCollection<Object, Metadata>
    ) throws -> Object? {
        try checkReader(reader)
        guard let (group, index) = position(at: indexPath) else { return nil }
        return try reader.object(at: index, inGroup: group, in: collection)
    }

    /// The index path showing `id`, or `nil` when the row is not in the view or not shown. A row shown in several
    /// sections (a view with a `many…` grouping) gives the first, in section order; ``indexPaths(of:reader:)`` gives all.
    ///
    /// - Throws: as ``rowID(at:reader:)``.
    public func indexPath(of id: RowID, reader: ViewReader) throws -> ViewIndexPath? {
        try indexPaths(of: id, reader: reader).first
    }

    /// Every index path showing `id`, in order: one per group it is in that the mappings show; empty when none.
    ///
    /// - Throws: as ``rowID(at:reader:)``.
    public func indexPaths(of id: RowID, reader: ViewReader) throws -> [ViewIndexPath] {
        try checkReader(reader)
        return try reader.positions(of: id).compactMap { indexPath(forIndex: $0.index, inGroup: $0.group) }.sorted()
    }
}
