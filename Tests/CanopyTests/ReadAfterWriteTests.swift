import Canopy
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// Read objects made in a write transaction before that transaction's writes read those writes, or throw: a view
/// reader (of a closures view, a manual view), and mappings queried with a reader whose transaction changed the view.
@Suite("Views: a reader made before writes in its transaction reads them")
struct ReadAfterWriteTests {
    static func fill(_ database: Database) throws {
        try database.register(makeTaskView())
        try database.newConnection().readWrite { txn throws in
            for number in 0..<200 {
                try txn.set(TodoItem(title: String(format: "t%03d", number), list: number % 2 == 0 ? "home" : "work", priority: 1),
                            forKey: String(format: "k%03d", number), in: tasks)
            }
        }
    }

    @Test("A ViewReader made before inserts, moves and removals in its transaction answers with them")
    func viewReader() throws {
        try withDatabase { database, _ in
            try Self.fill(database)
            try database.newConnection().readWrite { txn throws in
                let early = try txn.view("by-list")
                #expect(try early.count(inGroup: "home") == 100)
                // A row entering at the top of "home", one in a new group, one moved, and most of "work" removed
                // (its pages emptied and deleted).
                try txn.set(TodoItem(title: "first", list: "home", priority: 9), forKey: "new", in: tasks)
                try txn.set(TodoItem(title: "x", list: "errands", priority: 1), forKey: "errand", in: tasks)
                try txn.set(TodoItem(title: "t000", list: "work", priority: 1), forKey: "k000", in: tasks)
                for number in stride(from: 1, to: 190, by: 2) { _ = try txn.remove(key: String(format: "k%03d", number), in: tasks) }
                let fresh = try txn.view("by-list")
                for reader in [early, fresh] {
                    #expect(try reader.groups() == ["errands", "home", "work"])
                    #expect(try reader.count(inGroup: "home") == 100)
                    #expect(try reader.count(inGroup: "work") == 6)
                    #expect(try reader.count() == 107)
                    #expect(try reader.rowID(at: 0, inGroup: "home")?.key == "new")
                    #expect(try reader.position(ofKey: "k000", inCollection: "tasks")! == ("work", 0))
                    #expect(try reader.position(ofKey: "k002", inCollection: "tasks")! == ("home", 1))
                    #expect(try reader.rowIDs(inGroup: "work", range: 0..<10).map(\.key) == ["k000", "k191", "k193", "k195", "k197", "k199"])
                    #expect(try reader.first(inGroup: "errands")?.key == "errand")
                    #expect(try reader.checkInvariants() == [])
                }
            }
        }
    }

    @Test("A manual list's reader made before the editor's inserts and moves reads the list as they left it")
    func manualList() throws {
        try withDatabase { database, _ in
            try database.register(ManualView.make(name: "queue", collections: ["tasks"]))
            let connection = database.newConnection()
            try connection.readWrite { txn throws in
                for number in 0..<5 { try txn.set(TodoItem(title: "\(number)", list: "l", priority: 0), forKey: "q\(number)", in: tasks) }
            }
            try connection.readWrite { txn throws in
                let reader = try txn.view("queue")
                #expect(try reader.count(inGroup: "queue") == 0)
                let list = try txn.manualList("queue")
                for number in 0..<5 { try list.append(key: "q\(number)", inCollection: "tasks") }
                try list.move(from: 4, to: 0)
                #expect(try reader.count(inGroup: "queue") == 5)
                #expect(try reader.rowIDs(inGroup: "queue", range: 0..<5).map(\.key) == ["q4", "q0", "q1", "q2", "q3"])
            }
        }
    }

    @Test("Mappings refuse a reader whose transaction changed the view since they were updated; updated with it, they answer for it")
    func mappingsInWriteTransaction() throws {
        try withDatabase { database, _ in
            try Self.fill(database)
            let connection = database.newConnection()
            var mappings = ViewMappings(groups: ["home", "work"], view: "by-list")
            try connection.read { txn throws in try mappings.update(with: try txn.view("by-list")) }
            let top = ViewIndexPath(section: 0, row: 0)
            try connection.readWrite { txn throws in
                let reader = try txn.view("by-list")
                // Nothing written yet: the reader reads the state the mappings describe.
                #expect(try mappings.rowID(at: top, reader: reader)?.key == "k000")
                try txn.set(TodoItem(title: "first", list: "home", priority: 9), forKey: "new", in: tasks)
                let error = #expect(throws: CanopyError.self) { try mappings.rowID(at: top, reader: reader) }
                #expect(error?.code == .snapshotMismatch, "\(String(describing: error))")
                #expect(throws: CanopyError.self) { try mappings.indexPath(of: RowID(collection: "tasks", key: "k002"), reader: try txn.view("by-list")) }
                try mappings.update(with: reader)
                #expect(try mappings.rowID(at: top, reader: reader)?.key == "new")
                #expect(mappings.numberOfItems(inSection: 0) == 101)
                // Another write: refused again.
                _ = try txn.remove(key: "new", in: tasks)
                #expect(throws: CanopyError.self) { try mappings.rowID(at: top, reader: reader) }
                try mappings.update(with: reader)
                #expect(try mappings.rowID(at: top, reader: reader)?.key == "k000")
            }
            // Mappings updated in a transaction that rolled back, checked in another that made as many changes.
            var rolledBack = mappings
            struct Rollback: Error {}
            _ = try? connection.readWrite { txn throws in
                try txn.set(TodoItem(title: "a", list: "home", priority: 9), forKey: "gone", in: tasks)
                try rolledBack.update(with: try txn.view("by-list"))
                throw Rollback()
            }
            try connection.readWrite { txn throws in
                try txn.set(TodoItem(title: "b", list: "work", priority: 9), forKey: "other", in: tasks)
                #expect(throws: CanopyError.self) { try rolledBack.rowID(at: top, reader: try txn.view("by-list")) }
            }
        }
    }

    @Test("A changeset is not computed from mappings updated after a transaction's writes, nor with a reader whose transaction changed the view")
    func changesetFromUncommittedState() throws {
        try withDatabase { database, _ in
            try Self.fill(database)
            let recorder = NotificationRecorder()
            let token = database.addCommitObserver { recorder.record($0) }
            defer { database.removeObserver(token) }
            let connection = database.newConnection()
            // Updated in the write transaction after its insert: the mappings hold 101 rows of "home", at the
            // snapshot the transaction began at.
            var afterWrites = ViewMappings(groups: ["home", "work"], view: "by-list")
            try connection.readWrite { txn throws in
                try txn.set(TodoItem(title: "first", list: "home", priority: 9), forKey: "new", in: tasks)
                try afterWrites.update(with: try txn.view("by-list"))
            }
            #expect(afterWrites.numberOfItems(inSection: 0) == 101)
            let notifications = recorder.wait(for: 1)
            // The commit's insert applied to them would show 102 rows: refused, not computed.
            try connection.read { txn throws in
                let error = #expect(throws: CanopyError.self) {
                    try ViewChangeset.compute(notifications: notifications, from: afterWrites, reader: try txn.view("by-list"))
                }
                #expect(error?.code == .snapshotMismatch, "\(String(describing: error))")
            }
            // Mappings of a committed snapshot, and a reader whose transaction changed the view: the notifications
            // cannot hold those changes (an empty span would leave the mappings' counts as they were).
            var committed = ViewMappings(groups: ["home", "work"], view: "by-list")
            try connection.read { txn throws in try committed.update(with: try txn.view("by-list")) }
            try connection.readWrite { txn throws in
                let reader = try txn.view("by-list")
                #expect(try ViewChangeset.compute(notifications: [], from: committed, reader: reader).isEmpty)
                _ = try txn.remove(key: "new", in: tasks)
                let error = #expect(throws: CanopyError.self) { try ViewChangeset.compute(notifications: [], from: committed, reader: reader) }
                #expect(error?.code == .snapshotMismatch, "\(String(describing: error))")
                // Updated with that reader, the mappings and the reader describe one state: nothing to change.
                try committed.update(with: reader)
                #expect(try ViewChangeset.compute(notifications: [], from: committed, reader: reader).isEmpty)
            }
        }
    }
}
