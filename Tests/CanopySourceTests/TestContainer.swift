import Canopy
import CanopySource
import CanopyTestSupport
import Foundation

/// A cell that records what it was configured with.
final class TextCell: ReusableView {
    var text = ""
    var reused = 0
    required init() {}
    func prepareForReuse() { text = ""; reused += 1 }
}

/// Another cell type, to check registration by full type identity.
final class BadgeCell: ReusableView {
    required init() {}
}

/// A supplementary view that records its text.
final class TextHeader: ReusableView {
    var text = ""
    required init() {}
}

/// A container that makes views from its registrations and records reloads and batches.
final class TestContainer: ContainerView {
    typealias Cell = TextCell
    typealias SupplementaryView = TextHeader
    var cellDescriptors: [String: ReuseDescriptor<TextCell>] = [:]
    var supplementaryDescriptors: [String: ReuseDescriptor<TextHeader>] = [:]
    var reloads = 0
    var batches: [BatchUpdates] = []

    func registerCell(_ descriptor: ReuseDescriptor<TextCell>) { cellDescriptors[descriptor.identifier] = descriptor }
    func registerSupplementaryView(_ descriptor: ReuseDescriptor<TextHeader>, kind: SupplementaryKind) {
        supplementaryDescriptors["\(kind)/\(descriptor.identifier)"] = descriptor
    }
    func dequeueCell(withIdentifier identifier: String, for indexPath: ViewIndexPath) throws -> TextCell {
        guard let descriptor = cellDescriptors[identifier] else {
            throw SourceError(.unregisteredIdentifier, "no cell for \(identifier)", indexPath: indexPath)
        }
        return try descriptor.make?() ?? TextCell()
    }
    func dequeueSupplementaryView(kind: SupplementaryKind, identifier: String, for indexPath: ViewIndexPath) throws -> TextHeader {
        guard let descriptor = supplementaryDescriptors["\(kind)/\(identifier)"] else {
            throw SourceError(.unregisteredIdentifier, "no \(kind) for \(identifier)", indexPath: indexPath)
        }
        return try descriptor.make?() ?? TextHeader()
    }
    func reloadData() { reloads += 1 }
    func performBatchUpdates(_ updates: BatchUpdates) throws { batches.append(updates) }
}

/// An agenda entry stored by the view-backed tests.
struct Entry: Codable, Sendable, Equatable {
    var title: String
    var day: String
    var time: Int
    var calendar: String = "home"
}

/// A calendar the entries' cells read through the pinned transaction.
struct Cal: Codable, Sendable, Equatable {
    var name: String
}

let entries = TypedCollection<Entry, NoMetadata>("entries")
let calendars = TypedCollection<Cal, NoMetadata>("calendars")

/// A fresh database with the `by-day` view registered.
func withAgenda<R>(_ body: (Database, Connection) throws -> R) throws -> R {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
    try database.register(View(
        name: "by-day",
        grouping: .byObject(entries) { _, entry in entry.day },
        sorting: .byObject(entries) { _, _, entry in SortKey(.ascending(entry.time), .ascending(entry.title)) },
        options: ViewOptions(allowedCollections: ["entries"])))
    return try body(database, database.newConnection())
}

typealias ViewFactory = Factory<Entry, TextCell, TextHeader, TestContainer, ViewCellIndex, ViewSupplementaryIndex>

/// A view-backed source over every day of `by-day`, with cells showing `title @ calendar name`.
func makeAgendaSource(_ database: Database, _ container: TestContainer) throws -> ViewDatasource<Entry, TextCell, TextHeader, TestContainer> {
    let factory = ViewFactory()
    factory.registerCell(.type(TextCell.self), in: container) { cell, entry, index in
        let calendar = try index.transaction().object(forKey: entry.calendar, in: calendars)
        cell.text = "\(entry.title) @ \(calendar?.name ?? "?")"
    }
    factory.registerHeaderText { index in index.group }
    return try ViewDatasource(database: database, mappings: ViewMappings(view: "by-day", groupFilter: { _ in true }),
                              factory: factory, container: container, collection: entries)
}
