import Canopy
import Foundation

struct Reminder: Codable, Sendable {
    var title: String
    var list: String
    var priority: Int
}

func quickStart(folder: String) throws {
    // One database per folder; connections run transactions and cache decoded objects.
    let database = try Database(path: folder)
    let connection = database.newConnection()
    let reminders = TypedCollection<Reminder, NoMetadata>("reminders")

    // A view: reminders grouped by list, most important first.
    try database.register(View(
        name: "by-list",
        grouping: .byObject(reminders) { _, reminder in reminder.list },
        sorting: .byObject(reminders) { _, _, reminder in
            SortKey(.descending(reminder.priority), .ascending(reminder.title))
        }))

    // Writes commit when the closure returns, roll back when it throws.
    try connection.readWrite { txn in
        try txn.set(Reminder(title: "Buy milk", list: "home", priority: 1), forKey: "r1", in: reminders)
        try txn.set(Reminder(title: "Call Ada", list: "work", priority: 2), forKey: "r2", in: reminders)
        try txn.set(Reminder(title: "Water plants", list: "home", priority: 3), forKey: "r3", in: reminders)
    }

    // Reads see a consistent snapshot.
    try connection.read { txn in
        let view = try txn.view("by-list")
        for list in try view.groups() {
            let titles = try (0..<view.count(inGroup: list)).compactMap {
                try view.object(at: $0, inGroup: list, in: reminders)?.title
            }
            print(list, titles)  // home ["Water plants", "Buy milk"], then work ["Call Ada"]
        }
    }

    // An observer shows the view as sections and turns each commit into a changeset a list UI applies.
    let observer = try ViewObserver(database: database, mappings: ViewMappings(groups: ["home", "work"], view: "by-list"))
    try connection.readWrite { txn in
        try txn.set(Reminder(title: "Buy oat milk", list: "work", priority: 4), forKey: "r1", in: reminders)
    }
    let changes = try observer.advance()
    for change in changes.rowChanges {
        print(change)  // move reminders/r1 [0, 1] -> [1, 0]
    }
    print(changes.mappings)  // by-list@3 [home: 1, work: 2]
}
