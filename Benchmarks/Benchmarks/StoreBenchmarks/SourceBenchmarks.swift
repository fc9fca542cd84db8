import Benchmark
import Canopy
import CanopySource
import CanopyTerminal
import Foundation

// The data source layer's workloads (issue "Data source layer, terminal list view, and the reminders tool"): a
// view-backed data source over one group of 1M rows and of 1k rows, shown in a 50-row terminal list. `ratios.py`
// divides the 1M benchmark by the 1k one: both should cost about the same, since the list renders and reads only the
// rows of its viewport, and a changeset costs O(log n).

/// A view-backed data source over the "single" view (one group, sorted by id) of `rows` records, in a terminal list
/// of 50 rows.
final class ListStore {
    typealias Source = ViewDatasource<BenchRecord, TerminalCell, TerminalSupplementaryView, TerminalListView>
    let store: ViewStore
    let list: TerminalListView
    let source: Source
    var generator = XorShift()
    let rows: Int

    init(label: String, rows: Int) {
        self.rows = rows
        store = ViewStore(label: label, rows: 0..<rows, views: [ViewWorkload.single()], durability: .none, observe: false)
        list = TerminalListView(width: 100, height: 50)
        let factory = Source.SourceFactory()
        factory.registerCell(.type(TerminalCell.self), in: list) { cell, record, _ in
            cell.columns = [TerminalColumn(record.title), TerminalColumn("\(record.priority)", width: .fixed(3)),
                            TerminalColumn(record.done ? "done" : "open", width: .fixed(5))]
        }
        do {
            source = try Source(database: store.store.database, mappings: ViewWorkload.allGroups(of: "single"), factory: factory,
                                container: list, collection: store.store.collection)
        } catch {
            fatalError("cannot set up the data source: \(error)")
        }
        list.dataSource = source
    }

    /// A random row of the list.
    func randomRow() -> Int { Int(generator.next() % UInt64(rows)) }
}

/// Viewport renders per iteration of the rendering workload.
let viewportRendersPerIteration = 20

func sourceBenchmarks() {
    let renders = Benchmark.Configuration(metrics: [.wallClock, .throughput], warmupIterations: 2,
                                          maxDuration: .seconds(3), maxIterations: 300)
    let applies = Benchmark.Configuration(metrics: [.wallClock, .throughput], warmupIterations: 5,
                                          maxDuration: .seconds(3), maxIterations: 1_000)

    for (label, count) in [("1m", ViewWorkload.largeRowCount), ("1k", 1_000)] {
        // Rendering a 50-row viewport scrolled to a random place: reads ~50 rows whatever the view's size.
        let viewport = Fixture<ListStore>()
        Benchmark("viewport-\(label) canopy", configuration: renders) { benchmark in
            let store = viewport.value!
            let targets = (0..<viewportRendersPerIteration).map { _ in store.randomRow() }
            benchmark.startMeasurement()
            for row in targets {
                store.list.select(ViewIndexPath(section: 0, row: row))
                blackHole(try store.list.render())
            }
            benchmark.stopMeasurement()
        } setup: {
            viewport.value = ListStore(label: "viewport-\(label)", rows: count)
        } teardown: {
            viewport.value = nil
        }

        // Applying a one-row changeset (a row moving to another place) to the terminal list: the data source's
        // advance computes the changeset, checks the batch and applies it to the list's layout. The write is outside
        // the measurement.
        let apply = Fixture<ListStore>()
        Benchmark("terminal-apply-\(label) canopy", configuration: applies) { benchmark in
            let store = apply.value!
            let index = store.randomRow()
            var record = Workload.record(index % Workload.rowCount)
            record.id = store.randomRow()
            let collection = store.store.store.collection
            try store.store.store.connection.readWrite { txn in try txn.set(record, forKey: Workload.key(index), in: collection) }
            benchmark.startMeasurement()
            let changes = try store.source.advance()
            benchmark.stopMeasurement()
            precondition(!changes.isReload, "a one-row write became a reload")
            blackHole(changes)
        } setup: {
            apply.value = ListStore(label: "apply-\(label)", rows: count)
        } teardown: {
            apply.value = nil
        }
    }
}

/// A row of the array-diff workload.
struct DiffItem: Identifiable, Equatable {
    let id: Int
    var value: Int
}

/// 10,000 items and the same after about 1% of edits (50 inserts, 50 deletes, 20 moves, 30 value changes), from a
/// fixed seed.
func arrayDiffPair() -> (old: [DiffItem], new: [DiffItem]) {
    var generator = XorShift()
    func random(_ bound: Int) -> Int { Int(generator.next() % UInt64(max(1, bound))) }
    let old = (0..<10_000).map { DiffItem(id: $0, value: 0) }
    var new = old
    for step in 0..<50 { new.insert(DiffItem(id: 10_000 + step, value: 0), at: random(new.count + 1)) }
    for _ in 0..<50 { new.remove(at: random(new.count)) }
    for _ in 0..<20 { let item = new.remove(at: random(new.count)); new.insert(item, at: random(new.count + 1)) }
    for _ in 0..<30 { new[random(new.count)].value += 1 }
    return (old, new)
}

/// Diffing arrays for an animated list (issue 17): the batch a ``StaticDatasource`` computes when its items change,
/// against Swift's own `CollectionDifference` (Myers, by equality) on the same arrays. `ratios.py`: ≤ 2×.
func arrayDiffBenchmarks() {
    let configuration = Benchmark.Configuration(metrics: [.wallClock, .throughput], warmupIterations: 3,
                                                maxDuration: .seconds(3), maxIterations: 500)
    let pair = arrayDiffPair()
    let identity = ItemIdentity<DiffItem>.identifiable
    Benchmark("array-diff-10k canopy", configuration: configuration) { benchmark in
        blackHole(identity.changes(from: pair.old, to: pair.new))
    }
    Benchmark("array-diff-10k swift", configuration: configuration) { benchmark in
        blackHole(pair.new.difference(from: pair.old))
    }
}
