/// Vends configured cells and supplementary views for a container, choosing among registrations by key
/// (TaylorSource's `Factory`).
///
/// Register a cell kind per key with a configuration closure `(cell, item, index)`; a cell-key closure picks the key
/// for each item, so one list can mix several models (an enum of models):
///
/// ```swift
/// enum Row { case event(Event), reminder(Reminder) }
/// let factory = Factory<Row, TerminalCell, TerminalSupplementaryView, TerminalListView, IndexPathIndex, IndexPathIndex>(
///     cellKey: { row, _ in if case .event = row { "event" } else { "reminder" } })
/// factory.registerCell(.type(EventCell.self), in: list, key: "event") { cell, row, index in ... }
/// factory.registerCell(.type(ReminderCell.self), in: list, key: "reminder") { cell, row, index in ... }
/// factory.registerHeaderText { index in "Section \(index.indexPath.section)" }
/// ```
///
/// A key with no registration is a ``SourceError/Code/unregisteredKey`` error that lists the registered keys, never
/// a crash.
public final class Factory<Item, Cell, SupplementaryView, Container: ContainerView, CellIndex: CellIndexing, SupplementaryIndex: SupplementaryIndexing>
where Container.Cell == Cell, Container.SupplementaryView == SupplementaryView {
    /// Configures a cell for an item.
    public typealias CellConfiguration = (_ cell: Cell, _ item: Item, _ index: CellIndex) throws -> Void
    /// Configures a supplementary view for a section.
    public typealias SupplementaryConfiguration = (_ view: SupplementaryView, _ index: SupplementaryIndex) throws -> Void

    /// The key of the registrations used when no key is given.
    public static var defaultKey: String { "default" }

    private let cellKey: (Item, CellIndex) -> String
    private let supplementaryKey: (SupplementaryKind, SupplementaryIndex) -> String
    private var cells: [String: (identifier: String, configure: CellConfiguration)] = [:]
    private var supplementaries: [SupplementaryKind: [String: (identifier: String, configure: SupplementaryConfiguration)]] = [:]
    private var texts: [SupplementaryKind: [String: (SupplementaryIndex) -> String?]] = [:]

    /// Creates a factory.
    ///
    /// - Parameters:
    ///   - cellKey: chooses the registration of an item's cell; by default ``defaultKey``.
    ///   - supplementaryKey: chooses the registration of a section's supplementary view of a kind; by default
    ///     ``defaultKey``.
    public init(cellKey: @escaping (Item, CellIndex) -> String = { _, _ in Factory.defaultKey },
                supplementaryKey: @escaping (SupplementaryKind, SupplementaryIndex) -> String = { _, _ in Factory.defaultKey }) {
        self.cellKey = cellKey
        self.supplementaryKey = supplementaryKey
    }

    // MARK: Registration

    /// Registers a cell kind in `container` under `key`, with the closure that configures it for an item.
    ///
    /// The reuse identifier is the descriptor's; the container learns how to make it. Registering a key again
    /// replaces the registration.
    public func registerCell(_ descriptor: ReuseDescriptor<Cell>, in container: Container, key: String = Factory.defaultKey,
                             configuration: @escaping CellConfiguration) {
        container.registerCell(descriptor)
        cells[key] = (descriptor.identifier, configuration)
    }

    /// Registers a supplementary view of `kind` (header, footer or your own) in `container` under `key`.
    public func registerSupplementaryView(kind: SupplementaryKind, _ descriptor: ReuseDescriptor<SupplementaryView>, in container: Container,
                                          key: String = Factory.defaultKey, configuration: @escaping SupplementaryConfiguration) {
        container.registerSupplementaryView(descriptor, kind: kind)
        supplementaries[kind, default: [:]][key] = (descriptor.identifier, configuration)
    }

    /// Registers the header text of the sections whose supplementary key (the factory's `supplementaryKey` closure,
    /// asked with ``SupplementaryKind/header``) is `key` (`nil`: no header for that section).
    public func registerHeaderText(key: String = Factory.defaultKey, _ text: @escaping (SupplementaryIndex) -> String?) {
        texts[.header, default: [:]][key] = text
    }

    /// Registers the footer text of the sections whose supplementary key (asked with ``SupplementaryKind/footer``)
    /// is `key` (`nil`: no footer for that section).
    public func registerFooterText(key: String = Factory.defaultKey, _ text: @escaping (SupplementaryIndex) -> String?) {
        texts[.footer, default: [:]][key] = text
    }

    /// The keys with a cell registration, sorted.
    public var registeredCellKeys: [String] { cells.keys.sorted() }

    /// The keys with a supplementary registration of `kind`, sorted.
    public func registeredSupplementaryKeys(kind: SupplementaryKind) -> [String] {
        (supplementaries[kind] ?? [:]).keys.sorted()
    }

    // MARK: Vending

    /// A cell for `item` at `index`, dequeued from `container` and configured.
    ///
    /// - Throws: ``SourceError/Code/unregisteredKey`` (listing the registered keys) when the item's key has no
    ///   registration; what the container's dequeue and the configuration closure throw.
    public func cell(for item: Item, in container: Container, at index: CellIndex) throws -> Cell {
        let key = cellKey(item, index)
        guard let registration = cells[key] else {
            let known = registeredCellKeys.isEmpty ? "none" : registeredCellKeys.joined(separator: ", ")
            throw SourceError(.unregisteredKey, "no cell is registered for key '\(key)'; registered keys: \(known)", indexPath: index.indexPath,
                              key: key)
        }
        do {
            let cell = try container.dequeueCell(withIdentifier: registration.identifier, for: index.indexPath)
            try registration.configure(cell, item, index)
            return cell
        } catch let error as SourceError {
            throw error.adding(indexPath: index.indexPath, reuseIdentifier: registration.identifier, key: key)
        }
    }

    /// The supplementary view of `kind` for a section, dequeued and configured; `nil` when no view of that kind is
    /// registered at all.
    ///
    /// - Throws: ``SourceError/Code/unregisteredKey`` when views of `kind` are registered but not for the chosen key;
    ///   what the dequeue and the configuration throw.
    public func supplementaryView(kind: SupplementaryKind, in container: Container, at index: SupplementaryIndex) throws -> SupplementaryView? {
        guard let registrations = supplementaries[kind], !registrations.isEmpty else { return nil }
        let key = supplementaryKey(kind, index)
        guard let registration = registrations[key] else {
            throw SourceError(.unregisteredKey,
                              "no \(kind) view is registered for key '\(key)'; registered keys: \(registrations.keys.sorted().joined(separator: ", "))",
                              indexPath: index.indexPath, key: key)
        }
        do {
            let view = try container.dequeueSupplementaryView(kind: kind, identifier: registration.identifier, for: index.indexPath)
            try registration.configure(view, index)
            return view
        } catch let error as SourceError {
            throw error.adding(indexPath: index.indexPath, reuseIdentifier: registration.identifier, key: key)
        }
    }

    /// The registered text of `kind` (header or footer) for a section, chosen by the section's supplementary key;
    /// `nil` when no text is registered for that key.
    public func supplementaryText(kind: SupplementaryKind, at index: SupplementaryIndex) -> String? {
        guard let registrations = texts[kind], !registrations.isEmpty else { return nil }
        return registrations[supplementaryKey(kind, index)]?(index)
    }

    /// The keys with a text registration of `kind`, sorted.
    public func registeredTextKeys(kind: SupplementaryKind) -> [String] { (texts[kind] ?? [:]).keys.sorted() }

    /// Whether any supplementary view or text of `kind` is registered.
    public func hasSupplementary(kind: SupplementaryKind) -> Bool {
        !(texts[kind] ?? [:]).isEmpty || !(supplementaries[kind] ?? [:]).isEmpty
    }
}
