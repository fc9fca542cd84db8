import Canopy
import CanopySource
import CanopyTerminal
import CanopyTestSupport
import Testing

@Suite("Segments and selections")
struct SegmentsAndSelectionTests {
    typealias Source = ViewDatasource<Entry, TerminalCell, TerminalSupplementaryView, TerminalListView>

    func makeSource(_ database: Database, _ list: TerminalListView, groups: [String]) throws -> Source {
        let factory = Source.SourceFactory()
        factory.registerCell(.type(TerminalCell.self), in: list) { cell, entry, _ in cell.columns = [TerminalColumn(entry.title)] }
        factory.registerHeaderText { $0.group }
        return try Source(database: database, mappings: ViewMappings(groups: groups, view: "by-day"), factory: factory, container: list,
                          collection: entries)
    }

    @Test("A segmented source shows one segment; switching is one checked batch, and the new segment catches up with commits made meanwhile")
    func segments() throws {
        try withAgenda { database, connection in
            try connection.readWrite { txn in
                try txn.set(Entry(title: "Mon 1", day: "mon", time: 1), forKey: "1", in: entries)
                try txn.set(Entry(title: "Tue 1", day: "tue", time: 1), forKey: "2", in: entries)
            }
            let list = TerminalListView(width: 20, height: 10)
            let segmented = try SegmentedDatasource(segments: [("Monday", try makeSource(database, list, groups: ["mon"])),
                                                               ("Tuesday", try makeSource(database, list, groups: ["tue"]))],
                                                    container: list)
            list.dataSource = segmented
            #expect(try list.render().map { $0.trimmingCharacters(in: .whitespaces) } == ["mon", "Mon 1"])
            // A commit to the segment not shown, then a switch: the batch is accepted and the commit shows.
            try connection.readWrite { try $0.set(Entry(title: "Tue 2", day: "tue", time: 2), forKey: "3", in: entries) }
            try segmented.applyPendingChanges()
            // The hidden segment moved along too (it doesn't pin the old snapshot), without a batch to the list.
            #expect(segmented.segments[1].source.snapshot == (try database.currentSnapshot()))
            #expect(list.lastBatchError == nil)
            try segmented.selectSegment(1)
            #expect(list.lastBatchError == nil)
            #expect(segmented.title == "Tuesday")
            #expect(try list.render().map { $0.trimmingCharacters(in: .whitespaces) } == ["tue", "Tue 1", "Tue 2"])
            #expect(throws: SourceError.self) { try segmented.selectSegment(5) }
            #expect(throws: SourceError.self) { try SegmentedDatasource<Source, TerminalListView>(segments: [], container: list) }
        }
    }

    @Test("A selection by identity survives moves and deletes; a read error is not taken for a row that went")
    func selectionSurvivesChanges() throws {
        try withAgenda { database, connection in
            try connection.readWrite { txn in
                for (key, time) in [("a", 1), ("b", 2), ("c", 3)] { try txn.set(Entry(title: key, day: "mon", time: time), forKey: key, in: entries) }
            }
            let list = TerminalListView(width: 20, height: 10)
            let source = try makeSource(database, list, groups: ["mon"])
            list.dataSource = source
            var selection = RowSelection<RowID>(allowsMultiple: true)
            for row in [0, 2] { selection.toggle(try #require(try source.rowID(at: ViewIndexPath(section: 0, row: row)))) }
            // "c" moves to the top, "a" goes.
            try connection.readWrite { txn in
                try txn.set(Entry(title: "c", day: "mon", time: 0), forKey: "c", in: entries)
                _ = try txn.remove(key: "a", in: entries)
            }
            try source.advance()
            #expect(try selection.indexPaths { try source.indexPath(of: $0) } == [ViewIndexPath(section: 0, row: 0)])
            try selection.removeRowsNotShown { try source.indexPath(of: $0) }
            #expect(selection.ids == [RowID(collection: "entries", key: "c")])
            struct Unreadable: Error {}
            #expect(throws: Unreadable.self) { try selection.removeRowsNotShown { _ in throw Unreadable() } }
            #expect(selection.ids.count == 1)
        }
    }
}

@Suite("Sources that push", .ownThread)
struct PushTests {
    /// Not `@MainActor`: in a test run the main actor's jobs wait for Swift's cooperative pool like any other, which
    /// synchronous tests hold while they wait; on its own thread (`.ownThread`) the loop resumes at each wake-up.
    @Test("changes() delivers each commit's applied changeset through the wake-up (a one-hour poll interval never fires)",
          .timeLimit(.minutes(1)))
    func changesArePushed() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        try database.register(View(
            name: "by-day",
            grouping: .byObject(entries) { _, entry in entry.day },
            sorting: .byObject(entries) { _, _, entry in SortKey(.ascending(entry.time), .ascending(entry.title)) },
            options: ViewOptions(allowedCollections: ["entries"])))
        let container = TestContainer()
        let factory = Factory<Entry, TextCell, TextHeader, TestContainer, ViewCellIndex, ViewSupplementaryIndex>()
        let source = try ViewDatasource(database: database, mappings: ViewMappings(groups: ["mon"], view: "by-day"), factory: factory,
                                        container: container, collection: entries)
        var applied: [UInt64] = []
        source.didApply = { applied.append($0.toSnapshot) }
        let writer = Task.detached {
            for time in 1...3 {
                try database.newConnection().readWrite { try $0.set(Entry(title: "e\(time)", day: "mon", time: time), forKey: "\(time)", in: entries) }
            }
        }
        var rows = 0
        for try await changeset in source.changes(pollInterval: .seconds(3_600)) {
            #expect(!changeset.isEmpty)
            rows = source.numberOfItems(inSection: 0)
            if rows == 3 { break }
        }
        try await writer.value
        #expect(rows == 3 && container.batches.count == applied.count && !applied.isEmpty)
    }
}
