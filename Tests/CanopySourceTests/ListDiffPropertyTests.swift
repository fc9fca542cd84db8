import Canopy
import CanopySource
import CanopyTerminal
import CanopyTestSupport
import Testing

/// A row of the randomized arrays: an identity and a value that edits change.
struct Tagged: Identifiable, Equatable, Sendable, CustomStringConvertible {
    let id: Int
    var value: Int
    var description: String { "\(id):\(value)" }
}

/// Applies `batch` to `old` as UIKit's `performBatchUpdates` does (deletes and reloads at old index paths, inserts
/// and move destinations at new ones, untouched rows keep their order), taking the content of inserted, reloaded and
/// changed rows from `new`. Returns nil and records an issue when the batch breaks UIKit's rules.
func applyBatch(_ batch: BatchUpdates, to old: [[Tagged]], new: [[Tagged]], seed: UInt64) -> [[Tagged]]? {
    func fail(_ message: String) -> [[Tagged]]? {
        Issue.record("seed \(seed): \(message); batch \(batch)")
        return nil
    }
    let deleted = Set(batch.deletedSections)
    let inserted = Set(batch.insertedSections)
    let survivingOld = old.indices.filter { !deleted.contains($0) }
    let survivingNew = new.indices.filter { !inserted.contains($0) }
    guard survivingOld.count == survivingNew.count else { return fail("section counts don't add up") }
    let reloaded = Set(batch.reloadedRows)
    var vacated = Set(batch.deletedRows)
    for move in batch.movedRows {
        guard vacated.insert(move.from).inserted else { return fail("\(move.from) leaves twice") }
    }
    guard vacated.isDisjoint(with: reloaded) else { return fail("a row is both reloaded and deleted or moved") }
    for path in vacated.union(reloaded) {
        guard old.indices.contains(path.section), old[path.section].indices.contains(path.row), !deleted.contains(path.section) else {
            return fail("\(path) is not a row of a surviving old section")
        }
    }
    var result: [[Tagged]] = []
    for section in new.indices {
        if inserted.contains(section) {
            result.append(new[section])
            continue
        }
        guard let position = survivingNew.firstIndex(of: section) else { return fail("section \(section) neither survives nor is inserted") }
        let oldSection = survivingOld[position]
        var slots = [Tagged?](repeating: nil, count: new[section].count)
        for path in batch.insertedRows where path.section == section {
            guard slots.indices.contains(path.row), slots[path.row] == nil else { return fail("insert at \(path) out of range or taken") }
            slots[path.row] = new[section][path.row]
        }
        for move in batch.movedRows where move.to.section == section {
            guard slots.indices.contains(move.to.row), slots[move.to.row] == nil else { return fail("move to \(move.to) out of range or taken") }
            let item = old[move.from.section][move.from.row]
            slots[move.to.row] = move.changed ? Tagged(id: item.id, value: new[section][move.to.row].value) : item
        }
        var remaining = old[oldSection].indices.filter { !vacated.contains(ViewIndexPath(section: oldSection, row: $0)) }.makeIterator()
        for slot in slots.indices where slots[slot] == nil {
            guard let row = remaining.next() else { return fail("section \(section) has fewer rows than the data source") }
            let item = old[oldSection][row]
            slots[slot] = reloaded.contains(ViewIndexPath(section: oldSection, row: row)) ? Tagged(id: item.id, value: new[section][slot].value) : item
        }
        guard remaining.next() == nil else { return fail("section \(section) has more rows than the data source") }
        result.append(slots.compactMap { $0 })
    }
    return result
}

/// Random edits of sections of rows: inserts, deletes, moves within and across sections, value changes, new,
/// removed and reordered sections.
func randomEdit(_ sections: inout [DatasourceSection<Tagged>], nextID: inout Int, random: inout SeededRandom) {
    let sectionCount = sections.count
    switch Int.random(in: 0..<12, using: &random) {
    case 0...2 where sectionCount > 0:
        let s = Int.random(in: 0..<sectionCount, using: &random)
        sections[s].items.insert(Tagged(id: nextID, value: 0), at: Int.random(in: 0...sections[s].items.count, using: &random))
        nextID += 1
    case 3...4 where sectionCount > 0:
        let s = Int.random(in: 0..<sectionCount, using: &random)
        if !sections[s].items.isEmpty { sections[s].items.remove(at: Int.random(in: 0..<sections[s].items.count, using: &random)) }
    case 5...6 where sectionCount > 0:
        let from = Int.random(in: 0..<sectionCount, using: &random)
        let to = Int.random(in: 0..<sectionCount, using: &random)
        guard !sections[from].items.isEmpty else { return }
        let item = sections[from].items.remove(at: Int.random(in: 0..<sections[from].items.count, using: &random))
        sections[to].items.insert(item, at: Int.random(in: 0...sections[to].items.count, using: &random))
    case 7...8 where sectionCount > 0:
        let s = Int.random(in: 0..<sectionCount, using: &random)
        if !sections[s].items.isEmpty { sections[s].items[Int.random(in: 0..<sections[s].items.count, using: &random)].value += 1 }
    case 9:
        let items = (0..<Int.random(in: 0...3, using: &random)).map { _ in defer { nextID += 1 }; return Tagged(id: nextID, value: 0) }
        sections.insert(DatasourceSection(id: "s\(nextID)", items: items, header: "S"), at: Int.random(in: 0...sectionCount, using: &random))
        nextID += 1
    case 10 where sectionCount > 0:
        sections.remove(at: Int.random(in: 0..<sectionCount, using: &random))
    case 11 where sectionCount > 1:
        let section = sections.remove(at: Int.random(in: 0..<sectionCount, using: &random))
        sections.insert(section, at: Int.random(in: 0..<sectionCount, using: &random))
    default:
        break
    }
}

@Suite("Arrays that animate")
struct ListDiffPropertyTests {
    typealias Source = SectionedDatasource<Tagged, TerminalCell, TerminalSupplementaryView, TerminalListView>

    static func makeSource(_ sections: [DatasourceSection<Tagged>]) -> (TerminalListView, Source) {
        let list = TerminalListView(width: 30, height: 1_000)
        let factory = Source.SourceFactory()
        factory.registerCell(.type(TerminalCell.self), in: list) { cell, item, _ in cell.columns = [TerminalColumn("\(item)")] }
        let source = Source(sections: sections, factory: factory, container: list, identity: .identifiable)
        list.dataSource = source
        return (list, source)
    }

    @Test("Randomized: every batch of an array edit follows UIKit's rules and reproduces the new sections exactly",
          arguments: 0..<40)
    func randomEdits(run: Int) throws {
        let seed = 0x5EED_0000 + UInt64(run)
        var random = SeededRandom(seed: seed)
        var nextID = 0
        var sections: [DatasourceSection<Tagged>] = (0..<3).map { s in
            DatasourceSection(id: "s\(s)", items: (0..<5).map { _ in defer { nextID += 1 }; return Tagged(id: nextID, value: 0) })
        }
        let (list, source) = Self.makeSource(sections)
        _ = try list.render()
        for step in 0..<60 {
            let old = sections
            for _ in 0..<Int.random(in: 1...6, using: &random) { randomEdit(&sections, nextID: &nextID, random: &random) }
            let identity = ItemIdentity<Tagged>.identifiable
            let batch = try #require(identity.changes(from: old, to: sections),
                                     "seed \(seed) step \(step): unique identities must give a batch")
            let applied = applyBatch(batch, to: old.map(\.items), new: sections.map(\.items), seed: seed)
            #expect(applied == sections.map(\.items), "seed \(seed) step \(step): batch \(batch)")
            // The same change through the data source: one checked batch, accepted, and the rows shown are the new ones.
            source.sections = sections
            #expect(source.lastUpdateError == nil, "seed \(seed) step \(step): \(String(describing: source.lastUpdateError))")
            let shown = try list.render().map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(shown == sections.flatMap { ($0.header.map { [$0] } ?? []) + $0.items.map(\.description) }, "seed \(seed) step \(step)")
        }
    }

    @Test("Assigning items animates: one insert, one delete, one move and one reload, each a batch of its own kind")
    func staticSourceBatches() throws {
        final class Recorder: ContainerView {
            var batches: [BatchUpdates] = []
            var reloads = 0
            func registerCell(_ descriptor: ReuseDescriptor<TerminalCell>) {}
            func registerSupplementaryView(_ descriptor: ReuseDescriptor<TerminalSupplementaryView>, kind: SupplementaryKind) {}
            func dequeueCell(withIdentifier identifier: String, for indexPath: ViewIndexPath) throws -> TerminalCell { TerminalCell() }
            func dequeueSupplementaryView(kind: SupplementaryKind, identifier: String, for indexPath: ViewIndexPath) throws -> TerminalSupplementaryView {
                TerminalSupplementaryView()
            }
            func reloadData() { reloads += 1 }
            func performBatchUpdates(_ updates: BatchUpdates) throws { batches.append(updates) }
        }
        let container = Recorder()
        let factory = Factory<Tagged, TerminalCell, TerminalSupplementaryView, Recorder, IndexPathIndex, IndexPathIndex>()
        let source = StaticDatasource(items: (0..<4).map { Tagged(id: $0, value: 0) }, factory: factory, container: container,
                                      identity: .identifiable)
        source.items.append(Tagged(id: 9, value: 0))
        source.items.remove(at: 0)
        source.items.swapAt(0, 2)
        source.items[1].value = 7
        let path = { (row: Int) in ViewIndexPath(section: 0, row: row) }
        #expect(container.batches.count == 4)
        #expect(container.batches.first == BatchUpdates(insertedRows: [path(4)]))
        #expect(container.batches.dropFirst().first == BatchUpdates(deletedRows: [path(0)]))
        let swap = container.batches.dropFirst(2).first
        #expect(swap?.movedRows.count == 2 && swap?.insertedRows == [] && swap?.deletedRows == [] && swap?.reloadedRows == [])
        #expect(container.batches.last == BatchUpdates(reloadedRows: [path(1)]))
        #expect(container.reloads == 0)
        // Without an identity (or with duplicate identities), a change reloads rather than guessing.
        source.identity = nil
        source.items.removeLast()
        source.identity = .identifiable
        source.items.append(source.items[0])
        #expect(container.reloads == 2 && container.batches.count == 4)
    }
}
