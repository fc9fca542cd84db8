import Canopy
import CanopySource
import Testing

@Suite("View-backed data source")
struct ViewDatasourceTests {
    @Test("Empty database: no sections; first write: one section insert; a write to that group: a row insert")
    func firstWrites() throws {
        try withAgenda { database, connection in
            let container = TestContainer()
            let source = try makeAgendaSource(database, container)
            #expect(source.numberOfSections == 0 && source.isEmpty)
            #expect(try source.item(at: ViewIndexPath(section: 0, row: 0)) == nil)

            try connection.readWrite { try $0.set(Entry(title: "Dentist", day: "2026-11-25", time: 900), forKey: "1", in: entries) }
            try source.advance()
            #expect(container.batches.last == BatchUpdates(insertedSections: [0]))
            #expect(source.numberOfSections == 1)

            try connection.readWrite { try $0.set(Entry(title: "Standup", day: "2026-11-25", time: 1000), forKey: "2", in: entries) }
            try source.advance()
            #expect(container.batches.last == BatchUpdates(insertedRows: [ViewIndexPath(section: 0, row: 1)]))
            #expect(try source.item(at: ViewIndexPath(section: 0, row: 1))?.title == "Standup")
            #expect(Array(source).map { try? $0.get().title } == ["Dentist", "Standup"])
        }
    }

    @Test("Writes to two new groups are two section inserts; a move between days is a row move")
    func groupsAndMoves() throws {
        try withAgenda { database, connection in
            try connection.readWrite { try $0.set(Entry(title: "A", day: "2026-11-25", time: 900), forKey: "a", in: entries) }
            let container = TestContainer()
            let source = try makeAgendaSource(database, container)
            try connection.readWrite { txn in
                try txn.set(Entry(title: "B", day: "2026-11-24", time: 900), forKey: "b", in: entries)
                try txn.set(Entry(title: "C", day: "2026-11-26", time: 900), forKey: "c", in: entries)
            }
            try source.advance()
            #expect(container.batches.last == BatchUpdates(insertedSections: [0, 2]))
            #expect(source.supplementaryText(kind: .header, inSection: 2) == "2026-11-26")

            try connection.readWrite { try $0.set(Entry(title: "C", day: "2026-11-25", time: 800), forKey: "c", in: entries) }
            try source.advance()
            #expect(container.batches.last == BatchUpdates(
                deletedSections: [2], movedRows: [.init(from: ViewIndexPath(section: 2, row: 0), to: ViewIndexPath(section: 1, row: 0), changed: false)])
                || container.batches.last?.deletedSections == [2])
            #expect(source.numberOfSections == 2)
            #expect(try source.indexPath(of: RowID(collection: "entries", key: "c")) == ViewIndexPath(section: 1, row: 0))

            try connection.readWrite { try $0.set(Entry(title: "A", day: "2026-11-24", time: 1000), forKey: "a", in: entries) }
            try source.advance()
            let last = try #require(container.batches.last)
            #expect(last.movedRows.map { [$0.from, $0.to] } == [[ViewIndexPath(section: 1, row: 1), ViewIndexPath(section: 0, row: 1)]])
        }
    }

    @Test("Cell configuration reads in the data source's pinned snapshot, not a later write")
    func pinnedTransaction() throws {
        try withAgenda { database, connection in
            try connection.readWrite { txn in
                try txn.set(Cal(name: "Home"), forKey: "home", in: calendars)
                try txn.set(Entry(title: "Dentist", day: "2026-11-25", time: 900), forKey: "1", in: entries)
            }
            let container = TestContainer()
            let source = try makeAgendaSource(database, container)
            let pinned = source.snapshot
            try connection.readWrite { try $0.set(Cal(name: "Family"), forKey: "home", in: calendars) }
            let cell = try source.cell(at: ViewIndexPath(section: 0, row: 0))
            #expect(cell.text == "Dentist @ Home")  // the rename is after the snapshot shown
            #expect(source.snapshot == pinned)
            try source.advance()
            #expect(try source.cell(at: ViewIndexPath(section: 0, row: 0)).text == "Dentist @ Family")
        }
    }

    @Test("The transaction lent to a configuration call is expired afterwards: using it is a typed error")
    func expiredTransaction() throws {
        try withAgenda { database, connection in
            try connection.readWrite { try $0.set(Entry(title: "A", day: "d", time: 1), forKey: "a", in: entries) }
            let container = TestContainer()
            let factory = ViewFactory()
            var kept: ViewCellIndex?
            factory.registerCell(.type(TextCell.self), in: container) { cell, entry, index in
                cell.text = entry.title
                #expect(index.read.isValid)
                kept = index
            }
            let source = try ViewDatasource(database: database, mappings: ViewMappings(groups: ["d"], view: "by-day"),
                                            factory: factory, container: container, collection: entries)
            _ = try source.cell(at: ViewIndexPath(section: 0, row: 0))
            let index = try #require(kept)
            #expect(index.rowID == RowID(collection: "entries", key: "a"))
            let error = try #require(throws: SourceError.self) { try index.transaction() }
            #expect(error.code == .transactionExpired)
        }
    }

    @Test("Touching rows that show a renamed object makes an update, so the container reconfigures them")
    func touchUpdates() throws {
        try withAgenda { database, connection in
            try connection.readWrite { txn in
                try txn.set(Cal(name: "Home"), forKey: "home", in: calendars)
                try txn.set(Entry(title: "A", day: "d", time: 1), forKey: "a", in: entries)
                try txn.set(Entry(title: "B", day: "d", time: 2, calendar: "work"), forKey: "b", in: entries)
            }
            let container = TestContainer()
            let source = try makeAgendaSource(database, container)
            try connection.readWrite { txn in
                try txn.set(Cal(name: "Family"), forKey: "home", in: calendars)
                _ = try txn.touchObject(forKey: "a", inCollection: "entries")
            }
            try source.advance()
            #expect(container.batches.last == BatchUpdates(reloadedRows: [ViewIndexPath(section: 0, row: 0)]))
        }
    }

    @Test("Every index-path entry point is total")
    func totality() throws {
        try withAgenda { database, connection in
            try connection.readWrite { try $0.set(Entry(title: "A", day: "d", time: 1), forKey: "a", in: entries) }
            let source = try makeAgendaSource(database, TestContainer())
            for bad in [ViewIndexPath(section: 0, row: 1), ViewIndexPath(section: 1, row: 0), ViewIndexPath(section: -1, row: -1)] {
                #expect(try source.item(at: bad) == nil)
                #expect(try source.rowID(at: bad) == nil)
                #expect(throws: SourceError.self) { try source.cell(at: bad) }
                #expect(!source.canEdit(at: bad) && !source.canMove(at: bad))
            }
            #expect(try source.supplementaryView(kind: .header, inSection: 7) == nil)
            #expect(source.supplementaryText(kind: .header, inSection: -1) == nil)
            for position in [5, -1] {
                guard case .failure(let error) = source[position] else { Issue.record("a row at \(position)"); continue }
                #expect(error.code == .indexOutOfRange)
            }
            #expect(try source.indexPath(of: RowID(collection: "entries", key: "nope")) == nil)
        }
    }
}
