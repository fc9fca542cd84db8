import Canopy
/// One section of a ``SectionedDatasource``: an identifier, its items and optional header and footer text.
public struct DatasourceSection<Item> {
    /// What identifies the section across changes (sections are matched by it when the sections change); `nil`: the
    /// header text, or else the section's position.
    public var id: String?
    /// The items, top to bottom.
    public var items: [Item]
    /// The header text, or `nil`.
    public var header: String?
    /// The footer text, or `nil`.
    public var footer: String?
    /// A model of the section's own (a title and an icon, a calendar…) for the configuration of its header and
    /// footer views (TaylorSource's and SimpleSource's section models); read it with ``model(as:)``.
    public var model: Any?

    /// Creates a section.
    public init(id: String? = nil, items: [Item], header: String? = nil, footer: String? = nil, model: Any? = nil) {
        self.id = id
        self.items = items
        self.header = header
        self.footer = footer
        self.model = model
    }

    /// The section's model as `type`, or `nil` when it has none or one of another type.
    public func model<Model>(as type: Model.Type) -> Model? { model as? Model }

    /// The identifier the section is matched by when sections change: ``id``, else its header, else its position.
    func matchingID(at index: Int) -> String {
        id.map { "id:" + $0 } ?? header.map { "header:" + $0 } ?? "position:\(index)"
    }
}

/// A data source over an array of sections held in memory, each with header and footer text.
///
/// The section texts take precedence over the factory's registered header and footer texts. With an
/// ``ItemIdentity``, assigning or mutating ``sections`` applies the changes to the container as one checked batch
/// (sections matched by ``DatasourceSection/id``, rows by identity across sections, reloads for rows that changed);
/// without one, the container reloads.
public final class SectionedDatasource<Item, Cell, SupplementaryView, Container: ContainerView>: EditableDataSource
where Container.Cell == Cell, Container.SupplementaryView == SupplementaryView {
    /// The factory type of this data source.
    public typealias SourceFactory = Factory<Item, Cell, SupplementaryView, Container, IndexPathIndex, IndexPathIndex>

    /// The sections. Assigning or mutating them updates the container (a batch with an ``identity``, else a reload).
    public var sections: [DatasourceSection<Item>] {
        didSet { sectionsChanged(from: oldValue) }
    }
    /// How rows are told apart across changes; `nil`: every change reloads the container.
    public var identity: ItemIdentity<Item>?
    /// The factory that vends the cells.
    public let factory: SourceFactory
    /// The container the cells are dequeued from and the batches go to (held weakly: the container keeps its data
    /// source, not the other way round).
    public private(set) weak var container: Container?
    /// The list's title.
    public var title: String?
    /// The editing closures, or `nil` when nothing can be edited.
    public var editing: Editing<Item>?
    /// The error of the last change the container rejected (it reloaded, so it shows the sections anyway), or `nil`.
    public private(set) var lastUpdateError: SourceError?

    /// Creates a data source.
    ///
    /// - Parameters:
    ///   - sections: the sections.
    ///   - factory: vends the cells.
    ///   - container: receives the changes.
    ///   - title: the list's title.
    ///   - identity: how rows are told apart, so that changes animate; `nil`: changes reload the container.
    public init(sections: [DatasourceSection<Item>], factory: SourceFactory, container: Container, title: String? = nil,
                identity: ItemIdentity<Item>? = nil) {
        self.sections = sections
        self.factory = factory
        self.container = container
        self.title = title
        self.identity = identity
    }

    private func sectionsChanged(from old: [DatasourceSection<Item>]) {
        guard let container else { return }
        lastUpdateError = applyChanges(to: container, identity: identity,
                                       old: old.map(\.items), oldSections: old.enumerated().map { $1.matchingID(at: $0) },
                                       new: sections.map(\.items), newSections: sections.enumerated().map { $1.matchingID(at: $0) })
    }

    /// The number of sections.
    public var numberOfSections: Int { sections.count }

    /// The section at `index` (its items, texts and model), or `nil`: what a header configuration reads.
    public func section(at index: Int) -> DatasourceSection<Item>? {
        sections.indices.contains(index) ? sections[index] : nil
    }

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
        return try factory.cell(for: item, in: requireContainer(container, indexPath), at: IndexPathIndex(indexPath: indexPath))
    }

    /// The supplementary view of `kind` for `section`, or `nil`.
    public func supplementaryView(kind: SupplementaryKind, inSection section: Int) throws -> SupplementaryView? {
        guard sections.indices.contains(section) else { return nil }
        let indexPath = ViewIndexPath(section: section, row: 0)
        return try factory.supplementaryView(kind: kind, in: requireContainer(container, indexPath), at: IndexPathIndex(indexPath: indexPath))
    }

    /// The section's own header or footer text, else the factory's.
    public func supplementaryText(kind: SupplementaryKind, inSection section: Int) -> String? {
        guard sections.indices.contains(section) else { return nil }
        if kind == .header, let header = sections[section].header { return header }
        if kind == .footer, let footer = sections[section].footer { return footer }
        return factory.supplementaryText(kind: kind, at: IndexPathIndex(indexPath: ViewIndexPath(section: section, row: 0)))
    }
}

extension SectionedDatasource: RandomAccessCollection {
    /// A position over all rows, section by section.
    public typealias Index = Int

    /// 0.
    public var startIndex: Int { 0 }
    /// The number of rows.
    public var endIndex: Int { numberOfItems }

    /// The item at the `position`-th row, counting section by section (a position in `startIndex..<endIndex`).
    public subscript(position: Int) -> Item {
        var remaining = position
        for section in sections {
            if remaining < section.items.count { return section.items[remaining] }
            remaining -= section.items.count
        }
        preconditionFailure("position \(position) is out of range (\(numberOfItems) items)")
    }
}

/// A data source of one section of items held in memory.
///
/// With an ``ItemIdentity``, assigning or mutating ``items`` applies the changes to the container as one checked
/// batch (inserts, deletes, moves, reloads of rows that changed); without one, the container reloads.
public final class StaticDatasource<Item, Cell, SupplementaryView, Container: ContainerView>: EditableDataSource
where Container.Cell == Cell, Container.SupplementaryView == SupplementaryView {
    /// The factory type of this data source.
    public typealias SourceFactory = Factory<Item, Cell, SupplementaryView, Container, IndexPathIndex, IndexPathIndex>

    /// The items. Assigning or mutating them updates the container (a batch with an ``identity``, else a reload).
    public var items: [Item] {
        didSet { itemsChanged(from: oldValue) }
    }
    /// How rows are told apart across changes; `nil`: every change reloads the container.
    public var identity: ItemIdentity<Item>?
    /// The factory that vends the cells.
    public let factory: SourceFactory
    /// The container the cells are dequeued from and the batches go to (held weakly: the container keeps its data
    /// source, not the other way round).
    public private(set) weak var container: Container?
    /// The list's title.
    public var title: String?
    /// The editing closures, or `nil` when nothing can be edited.
    public var editing: Editing<Item>?
    /// The error of the last change the container rejected (it reloaded, so it shows the items anyway), or `nil`.
    public private(set) var lastUpdateError: SourceError?

    /// Creates a data source.
    ///
    /// - Parameters:
    ///   - items: the items.
    ///   - factory: vends the cells.
    ///   - container: receives the changes.
    ///   - title: the list's title.
    ///   - identity: how rows are told apart, so that changes animate; `nil`: changes reload the container.
    public init(items: [Item], factory: SourceFactory, container: Container, title: String? = nil, identity: ItemIdentity<Item>? = nil) {
        self.items = items
        self.factory = factory
        self.container = container
        self.title = title
        self.identity = identity
    }

    private func itemsChanged(from old: [Item]) {
        guard let container else { return }
        lastUpdateError = applyChanges(to: container, identity: identity, old: [old], oldSections: [""], new: [items], newSections: [""])
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
        return try factory.cell(for: item, in: requireContainer(container, indexPath), at: IndexPathIndex(indexPath: indexPath))
    }

    /// The supplementary view of `kind` for section 0, or `nil`.
    public func supplementaryView(kind: SupplementaryKind, inSection section: Int) throws -> SupplementaryView? {
        guard section == 0 else { return nil }
        let indexPath = ViewIndexPath(section: 0, row: 0)
        return try factory.supplementaryView(kind: kind, in: requireContainer(container, indexPath), at: IndexPathIndex(indexPath: indexPath))
    }

    /// The factory's header or footer text for section 0.
    public func supplementaryText(kind: SupplementaryKind, inSection section: Int) -> String? {
        guard section == 0 else { return nil }
        return factory.supplementaryText(kind: kind, at: IndexPathIndex(indexPath: ViewIndexPath(section: 0, row: 0)))
    }
}

extension StaticDatasource: RandomAccessCollection {
    /// A row's position.
    public typealias Index = Int

    /// 0.
    public var startIndex: Int { 0 }
    /// The number of items.
    public var endIndex: Int { items.count }

    /// The item at `position` (in `startIndex..<endIndex`).
    public subscript(position: Int) -> Item { items[position] }
}

/// The container, or a typed error when it was released (the data source holds it weakly).
func requireContainer<Container>(_ container: Container?, _ indexPath: ViewIndexPath) throws -> Container {
    guard let container else {
        throw SourceError(.containerReleased, "the container of this data source was released; keep the container (it keeps its data source)",
                          indexPath: indexPath)
    }
    return container
}

/// Applies the change from `old` to `new` sections to `container`: one checked batch when `identity` can match the
/// rows, else a reload. Returns the container's rejection (after which it reloaded), or `nil`.
func applyChanges<Item, Container: ContainerView>(to container: Container, identity: ItemIdentity<Item>?,
                                                  old: [[Item]], oldSections: [String], new: [[Item]], newSections: [String]) -> SourceError? {
    guard let identity, let batch = identity.batch(old, oldSections, new, newSections) else {
        container.reloadData()
        return nil
    }
    guard !batch.isEmpty else { return nil }
    do {
        try container.performBatchUpdates(batch)
        return nil
    } catch let error as SourceError {
        return error
    } catch {
        container.reloadData()
        return SourceError(.invalidBatch, "the container rejected a batch: \(error)", underlying: error)
    }
}
