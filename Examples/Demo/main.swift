import Canopy
import Foundation

// A small tour of the store: open a fresh database in a temporary folder, write typed objects with metadata,
// read them back, observe a commit, and print where the database lives (so `mdb_stat -a` can read it).

struct Reminder: Codable, Sendable {
    var title: String
    var due: Date
    var done: Bool
}

struct Tags: Codable, Sendable {
    var labels: [String]
}

let folder = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-demo-\(UUID().uuidString)").path
do {
    let database = try Database(path: folder)
    let reminders = TypedCollection<Reminder, Tags>("reminders")
    let connection = database.newConnection()

    let observed = database.commits()
    try connection.readWrite { txn in
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        for day in 0..<5 {
            let reminder = Reminder(title: "Reminder \(day)", due: start.addingTimeInterval(Double(day) * 86_400), done: day % 2 == 0)
            try txn.set(reminder, forKey: "r\(day)", in: reminders, metadata: Tags(labels: day % 2 == 0 ? ["home"] : ["work"]))
        }
        txn.customPayload = Array("demo: initial load".utf8)
    }
    var iterator = observed.makeAsyncIterator()
    if let notification = await iterator.next() {
        let keys = notification.changedObjects["reminders"]?.sorted() ?? []
        print("commit \(notification.snapshot) changed \(keys.count) reminders: \(keys.joined(separator: ", "))")
    }

    try connection.read { txn in
        for key in try txn.keys(inCollection: "reminders") {
            guard let (reminder, tags) = try txn.row(forKey: key, in: reminders) else { continue }
            print("\(key): \(reminder.title) due \(reminder.due) done=\(reminder.done) tags=\(tags?.labels ?? [])")
        }
        print("collections: \(try txn.collectionNames()), rows: \(try txn.count(inCollection: "reminders")), snapshot \(txn.snapshot)")
    }
    print("database folder: \(folder)")
    print("inspect it with: mdb_stat -a \(folder)")
} catch {
    print("demo failed: \(error)")
    exit(1)
}
