import Canopy
import CanopyTestSupport
import Foundation
import Testing

@Suite("Write map (opt-in)")
struct WriteMapTests {
    /// Rows and a view written through a writable memory map are the same when the database is opened again without
    /// it; the option is part of the options a process must open a path with consistently.
    @Test func writesThroughTheMapReadBackWithoutIt() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        do {
            let database = try Database(path: path, options: .init(durability: .none, writeMap: true))
            try database.register(makeTaskView())
            let connection = database.newConnection()
            for round in 0..<5 {
                try connection.readWrite { txn in
                    for i in 0..<50 {
                        try txn.set(TodoItem(title: "t\(i)", list: i % 2 == 0 ? "a" : "b", priority: (i * 7 + round) % 11), forKey: "k\(i)", in: tasks)
                    }
                    try txn.remove(key: "k\(round)", in: tasks)
                }
            }
            let mismatch = #expect(throws: CanopyError.self) { _ = try Database(path: path, options: .init(durability: .none)) }
            #expect(mismatch?.code == .alreadyOpen)
        }
        let reopened = try Database(path: path, options: .init(durability: .full))
        let view = makeTaskView()
        try reopened.register(view)
        #expect(view.lastPopulation == nil)  // up to date: not rebuilt
        try reopened.newConnection().read { txn in
            #expect(try txn.count(inCollection: "tasks") == 49)
            #expect(try txn.object(forKey: "k49", in: tasks)?.title == "t49")
            let reader = try txn.view("by-list")
            #expect(try reader.count() == 49)
            #expect(try reader.checkInvariants() == [])
        }
    }
}
