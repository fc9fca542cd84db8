import Canopy

/// Several data sources over one container, one shown at a time (TaylorSource's `SegmentedDatasource`: a segmented
/// control above a table). Switching segments is one checked batch — the old segment's sections deleted, the new
/// one's inserted — so the container animates it; the selection starts at the top of the new segment.
///
/// ```swift
/// let segments = SegmentedDatasource(segments: [("Agenda", agenda), ("Overdue", overdue)], container: list)
/// list.dataSource = segments
/// try segments.selectSegment(1)
/// ```
///
/// With view-backed segments (``LiveDataSource``s), the segmented source is live too: it rings with the selected
/// segment and applies that segment's changes; the segments not shown move along silently (no snapshot stays pinned
/// behind), and a segment shows its rows as they are when it is selected.
public final class SegmentedDatasource<Source: DataSource, Container: ContainerView>: DataSource
where Container.Cell == Source.Cell, Container.SupplementaryView == Source.SupplementaryView {
    /// The segments' item type.
    public typealias Item = Source.Item
    /// The container's cell type.
    public typealias Cell = Source.Cell
    /// The container's supplementary view type.
    public typealias SupplementaryView = Source.SupplementaryView

    /// The segments: a title (for a segmented control, a status line) and a data source each.
    public let segments: [(title: String, source: Source)]
    /// The index of the segment shown.
    public private(set) var selectedIndex: Int
    /// The container (held weakly: the container keeps its data source).
    public private(set) weak var container: Container?

    /// Creates a segmented source showing the segment at `selectedIndex` (clamped to the segments).
    /// - Throws: ``SourceError/Code/indexOutOfRange`` when `segments` is empty.
    public init(segments: [(title: String, source: Source)], container: Container, selectedIndex: Int = 0) throws {
        guard !segments.isEmpty else { throw SourceError(.indexOutOfRange, "a segmented data source needs at least one segment") }
        self.segments = segments
        self.container = container
        self.selectedIndex = max(0, min(selectedIndex, segments.count - 1))
    }

    /// The data source shown.
    public var selected: Source { segments[selectedIndex].source }

    /// The title of the segment shown.
    public var title: String? { segments[selectedIndex].title }

    /// Shows the segment at `index`: one batch deleting the shown sections and inserting the new segment's.
    ///
    /// - Throws: ``SourceError/Code/indexOutOfRange`` for an index with no segment; what the container's batch throws
    ///   (it reloads first, so it shows the new segment anyway).
    public func selectSegment(_ index: Int) throws {
        try switchSegment(to: index)
    }

    /// Shows the segment at `index` (one batch).
    func switchSegment(to index: Int) throws {
        guard segments.indices.contains(index) else {
            throw SourceError(.indexOutOfRange, "no segment \(index) (\(segments.count) segments: \(segments.map(\.title).joined(separator: ", ")))")
        }
        guard index != selectedIndex else { return }
        let before = numberOfSections
        selectedIndex = index
        try container?.performBatchUpdates(BatchUpdates(deletedSections: Array(0..<before), insertedSections: Array(0..<numberOfSections)))
    }

    // MARK: DataSource, forwarded to the segment shown

    /// The sections of the segment shown.
    public var numberOfSections: Int { selected.numberOfSections }
    /// The rows of `section` in the segment shown.
    public func numberOfItems(inSection section: Int) -> Int { selected.numberOfItems(inSection: section) }
    /// The item at `indexPath` in the segment shown.
    public func item(at indexPath: ViewIndexPath) throws -> Item? { try selected.item(at: indexPath) }
    /// The cell at `indexPath` in the segment shown.
    public func cell(at indexPath: ViewIndexPath) throws -> Cell { try selected.cell(at: indexPath) }
    /// The supplementary view of the segment shown.
    public func supplementaryView(kind: SupplementaryKind, inSection section: Int) throws -> SupplementaryView? {
        try selected.supplementaryView(kind: kind, inSection: section)
    }
    /// The header or footer text of the segment shown.
    public func supplementaryText(kind: SupplementaryKind, inSection section: Int) -> String? {
        selected.supplementaryText(kind: kind, inSection: section)
    }
    /// Consistent reads of the segment shown.
    public func withConsistentReads<R>(_ body: () throws -> R) throws -> R { try selected.withConsistentReads(body) }
    /// Whether the row can be edited, in the segment shown.
    public func canEdit(at indexPath: ViewIndexPath) -> Bool { selected.canEdit(at: indexPath) }
    /// The row's editing style, in the segment shown.
    public func editingStyle(at indexPath: ViewIndexPath) -> EditingStyle { selected.editingStyle(at: indexPath) }
    /// Commits an edit in the segment shown.
    public func commitEdit(_ action: EditAction, at indexPath: ViewIndexPath) throws { try selected.commitEdit(action, at: indexPath) }
    /// Whether the row can be moved, in the segment shown.
    public func canMove(at indexPath: ViewIndexPath) -> Bool { selected.canMove(at: indexPath) }
    /// Commits a move in the segment shown.
    public func commitMove(from source: ViewIndexPath, to destination: ViewIndexPath) throws {
        try selected.commitMove(from: source, to: destination)
    }
}

extension SegmentedDatasource: LiveDataSource where Source: LiveDataSource {
    /// The wake-up of the segment shown.
    public var wakeup: CommitWakeup { selected.wakeup }

    /// Applies the changes of the segment shown; the others move to the latest commit without telling the container.
    @discardableResult
    public func applyPendingChanges() throws -> Bool {
        for (index, segment) in segments.enumerated() where index != selectedIndex { try segment.source.skipPendingChanges() }
        return try selected.applyPendingChanges()
    }

    /// Moves every segment to the latest commit without telling the container.
    public func skipPendingChanges() throws {
        for segment in segments { try segment.source.skipPendingChanges() }
    }

    /// Shows the segment at `index` (one batch), then brings it to the latest commit (one more batch: the changes
    /// made while it was not shown).
    ///
    /// - Throws: ``SourceError/Code/indexOutOfRange`` for an index with no segment; what the batches throw.
    public func selectSegment(_ index: Int) throws {
        try switchSegment(to: index)
        try applyPendingChanges()
    }
}
