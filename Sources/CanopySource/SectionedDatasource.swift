import Canopy
/// One section of a ``SectionedDatasource``: its items and optional header and footer text.
public struct DatasourceSection<Item> {
    /// The items, top to bottom.
    public var items: [Item]
    /// The header text, or `nil`.
    public var header: String?
    /// The footer text, or `nil`.
    public var footer: String?

    /// Creates a section.
    public init(items: [Item], header: String? = nil, footer: String? = nil) {
        self.items = items
        self.header = header
        self.footer = footer
    }
}

/// A data source over an array of sections held in memory, each with header and footer text.
///
/// The section texts take precedence over the factory's registered header and footer texts. Change ``sections`` and
/// call the container's `reloadData()` (or `performBatchUpdates`) yourself.
public final class SectionedDatasource<Item, Cell, SupplementaryView, Container: ContainerView>: EditableDataSource
where Container.Cell == Cell, Container.SupplementaryView == SupplementaryView {
    /// The factory type of this data source.
    public typealias SourceFactory = Factory<Item, Cell, SupplementaryView, Container, IndexPathIndex, IndexPathIndex>

    /// The sections.
    public var sections: [DatasourceSection<Item>]
    /// The factory that vends the cells.
    public let factory: SourceFactory
    /// The container the cells are dequeued from.
    public let container: Container
    /// The list's title.
    public var title: String?
    /// The editing closures, or `nil` when nothing can be edited.
    public var editing: Editing<Item>?

    /// Creates a data source.
    public init(sections: [DatasourceSection<Item>], factory: SourceFactory, container: Container, title: String? = nil) {
        self.sections = sections
        self.factory = factory
        self.container = container
        self.title = title
    }

    /// The number of sections.
    public var numberOfSections: Int { sections.count }

    /// The number of items of `section`, 0 when there is no such section.
    public func numberOfItems(inSection section: Int) -> Int {
        sections.indices.contains(section) ? sections[section].items.count : 0
    }

    /// The item at `indexPath`, or `nil`.
    public func item(at indexPath: ViewIndexPath) -> Item? {
        guard sections.indices.contains(indexPath.section), sections[indexPath.section].items.indices.contains(indexPath.row) else { return nil }
        return sections[indexPath.section].items[indexPath.row]
    }

    /// The configured cell at `indexPath`.
    public func cell(at indexPath: ViewIndexPath) throws -> Cell {
        guard let item = item(at: indexPath) else {
            throw SourceError(.indexOutOfRange, "no item at \(indexPath) (\(sections.count) sections)", indexPath: indexPath)
        }
        return try factory.cell(for: item, in: container, at: IndexPathIndex(indexPath: indexPath))
    }

    /// The supplementary view of `kind` for `section`, or `nil`.
    public func supplementaryView(kind: SupplementaryKind, inSection section: Int) throws -> SupplementaryView? {
        guard sections.indices.contains(section) else { return nil }
        return try factory.supplementaryView(kind: kind, in: container, at: IndexPathIndex(indexPath: ViewIndexPath(section: section, row: 0)))
    }

    /// The section's own header or footer text, else the factory's.
    public func supplementaryText(kind: SupplementaryKind, inSection section: Int) -> String? {
        guard sections.indices.contains(section) else { return nil }
        if kind == .header, let header = sections[section].header { return header }
        if kind == .footer, let footer = sections[section].footer { return footer }
        return factory.supplementaryText(kind: kind, at: IndexPathIndex(indexPath: ViewIndexPath(section: section, row: 0)))
    }
}

/// A data source of one section of items held in memory.
public final class StaticDatasource<Item, Cell, SupplementaryView, Container: ContainerView>: EditableDataSource
where Container.Cell == Cell, Container.SupplementaryView == SupplementaryView {
    /// The factory type of this data source.
    public typealias SourceFactory = Factory<Item, Cell, SupplementaryView, Container, IndexPathIndex, IndexPathIndex>

    /// The items.
    public var items: [Item]
    /// The factory that vends the cells.
    public let factory: SourceFactory
    /// The container the cells are dequeued from.
    public let container: Container
    /// The list's title.
    public var title: String?
    /// The editing closures, or `nil` when nothing can be edited.
    public var editing: Editing<Item>?

    /// Creates a data source.
    public init(items: [Item], factory: SourceFactory, container: Container, title: String? = nil) {
        self.items = items
        self.factory = factory
        self.container = container
        self.title = title
    }

    /// Always 1.
    public var numberOfSections: Int { 1 }

    /// The number of items in section 0; 0 for any other section.
    public func numberOfItems(inSection section: Int) -> Int { section == 0 ? items.count : 0 }

    /// The item at `indexPath`, or `nil`.
    public func item(at indexPath: ViewIndexPath) -> Item? {
        indexPath.section == 0 && items.indices.contains(indexPath.row) ? items[indexPath.row] : nil
    }

    /// The configured cell at `indexPath`.
    public func cell(at indexPath: ViewIndexPath) throws -> Cell {
        guard let item = item(at: indexPath) else {
            throw SourceError(.indexOutOfRange, "no item at \(indexPath) (\(items.count) items)", indexPath: indexPath)
        }
        return try factory.cell(for: item, in: container, at: IndexPathIndex(indexPath: indexPath))
    }

    /// The supplementary view of `kind` for section 0, or `nil`.
    public func supplementaryView(kind: SupplementaryKind, inSection section: Int) throws -> SupplementaryView? {
        guard section == 0 else { return nil }
        return try factory.supplementaryView(kind: kind, in: container, at: IndexPathIndex(indexPath: ViewIndexPath(section: 0, row: 0)))
    }

    /// The factory's header or footer text for section 0.
    public func supplementaryText(kind: SupplementaryKind, inSection section: Int) -> String? {
        guard section == 0 else { return nil }
        return factory.supplementaryText(kind: kind, at: IndexPathIndex(indexPath: ViewIndexPath(section: 0, row: 0)))
    }
}
