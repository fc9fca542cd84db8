import Canopy
import CanopyTestSupport
import Foundation
import RemindersKit
import Testing

@Suite("reminders: tags and the by-tag view", .serialized)
struct TagTests {
    @Test("--tag (several): list --by-tag shows a reminder under each tag, --tag one tag (golden output)")
    func byTag() throws {
        try withDatabasePath { path, _ in
            #expect(reminders(["add", "reminder", "Buy milk", "--due", "today 17:00", "--tag", "shop", "--tag", "home", "--db", path]).status == 0)
            #expect(reminders(["add", "reminder", "Paint fence", "--tag", "#home", "--tag", "weekend", "--tag", "home", "--db", path]).status == 0)
            #expect(reminders(["add", "reminder", "Call Ann", "--db", path]).status == 0)
            #expect(reminders(["add", "event", "Dentist", "--start", "tomorrow 10:00", "--db", path]).status == 0)
            let list = reminders(["list", "--by-tag", "--db", path])
            #expect(list.status == 0 && list.err.isEmpty, "\(list.err)")
            #expect(list.out == """
            #home
               17:00    [ ] Buy milk #shop #home                            Personal      #1
                        [ ] Paint fence #home #weekend                      Personal      #2
            #shop
               17:00    [ ] Buy milk #shop #home                            Personal      #1
            #weekend
                        [ ] Paint fence #home #weekend                      Personal      #2

            """)
            let home = reminders(["list", "--tag", "home", "--db", path])
            #expect(home.out.hasPrefix("#home\n") && home.out.contains("Buy milk") && !home.out.contains("#shop\n"), "\(home.out)")
            #expect(reminders(["list", "--tag", "garden", "--db", path]).out == "No open reminder is tagged #garden.\n")
            // The agenda shows the tags on the rows.
            #expect(reminders(["list", "--db", path]).out.contains("[ ] Paint fence #home #weekend"))
            // JSON carries them.
            #expect(reminders(["list", "--json", "--by-tag", "--db", path]).out.contains("\"tags\" : [\n"))
        }
    }

    @Test("edit --tag replaces the tags, --clear-tags removes them; done reminders leave every tag")
    func editTags() throws {
        try withDatabasePath { path, _ in
            #expect(reminders(["add", "reminder", "Buy milk", "--tag", "shop", "--tag", "home", "--db", path]).status == 0)
            #expect(reminders(["edit", "1", "--tag", "errands", "--tag", "shop", "--db", path]).status == 0)
            var list = reminders(["list", "--by-tag", "--db", path]).out
            #expect(list.contains("#errands\n") && list.contains("#shop\n") && !list.contains("#home\n"), "\(list)")
            #expect(reminders(["done", "1", "--db", path]).status == 0)
            #expect(reminders(["list", "--by-tag", "--db", path]).out == "No open reminder has a tag.\n")
            #expect(reminders(["done", "1", "--undo", "--db", path]).status == 0)
            #expect(reminders(["edit", "1", "--clear-tags", "--db", path]).status == 0)
            list = reminders(["list", "--by-tag", "--db", path]).out
            #expect(list == "No open reminder has a tag.\n")
            let database = try Database(path: path)
            try database.newConnection().read { txn throws in
                #expect(try txn.object(forKey: "1", in: Schema.reminders)?.tags == [])
                #expect(try txn.view("by-tag").checkStructure() == [])
            }
        }
    }

    @Test("bad tags and combinations: a clear error, nothing written")
    func badInput() throws {
        try withDatabasePath { path, _ in
            #expect(reminders(["add", "reminder", "Buy milk", "--tag", "shop", "--db", path]).status == 0)
            #expect(reminders(["add", "event", "Dentist", "--start", "tomorrow 10:00", "--db", path]).status == 0)
            for arguments in [
                ["add", "reminder", "x", "--tag", "  "], ["add", "reminder", "x", "--tag", "#"], ["add", "reminder", "x", "--tag", "a\u{1B}[2Jb"],
                ["edit", "1", "--tag", ""], ["edit", "1", "--tag", "a", "--clear-tags"], ["edit", "2", "--tag", "work"],
                ["list", "--by-tag", "--overdue"], ["list", "--tag", "shop", "--day", "today"], ["list", "--tag", " "],
            ] {
                let result = reminders(arguments + ["--db", path])
                #expect(result.status == 1, "\(arguments): \(result)")
                #expect(result.err.hasPrefix("error: ") && !result.err.contains("\u{1B}"), "\(arguments): \(result.err)")
            }
            let database = try Database(path: path)
            try database.newConnection().read { txn throws in
                #expect(try txn.count(inCollection: Schema.reminders.name) == 1)
                #expect(try txn.object(forKey: "1", in: Schema.reminders)?.tags == ["shop"])
            }
        }
    }

    /// A database of the second model (reminders with `flagged`, without `tags`): the tool's migration step adds the
    /// key; without it, registering the views failed to decode every reminder.
    @Test("a database of the previous model (no tags) is migrated at open; its reminders can then be tagged")
    func migratesThePreviousModel() throws {
        try withDatabasePath { path, _ in
            struct ReminderV2: Codable, Sendable {
                var title: String
                var due: Date?
                var done: Bool
                var priority: Int
                var calendar: String
                var flagged: Bool
            }
            do {
                let database = try Database(path: path)
                var migrator = Migrator()
                migrator.append(.typed("reminders-flagged", collection: "reminders", from: ReminderV1.self, to: ReminderV2.self) { _, old in
                    ReminderV2(title: old.title, due: old.due, done: old.done, priority: old.priority, calendar: old.calendar, flagged: false)
                })
                try migrator.migrate(database)
                let previous = TypedCollection<ReminderV2, NoMetadata>("reminders")
                try database.newConnection().readWrite { txn in
                    try txn.set(Schema.format, forKey: "format", in: Schema.meta)
                    try txn.set("2", forKey: "next-id", in: Schema.meta)
                    try txn.set(EventCalendar(name: "Personal", colour: .blue), forKey: "personal", in: Schema.calendars)
                    try txn.set(ReminderV2(title: "Buy milk", due: nil, done: false, priority: 1, calendar: "personal", flagged: true), forKey: "1", in: previous)
                }
            }
            let list = reminders(["list", "--db", path])
            #expect(list.status == 0 && list.out.contains("[ ] ⚑ Buy milk !"), "\(list)")
            #expect(reminders(["edit", "1", "--tag", "shop", "--db", path]).status == 0)
            #expect(reminders(["list", "--by-tag", "--db", path]).out.hasPrefix("#shop\n"))
            let database = try Database(path: path)
            try database.newConnection().read { txn throws in
                #expect(try txn.appliedMigrations().map(\.name) == ["reminders-flagged", "reminders-tags"])
                #expect(try txn.object(forKey: "1", in: Schema.reminders)
                        == Reminder(title: "Buy milk", due: nil, priority: 1, calendar: "personal", flagged: true, tags: ["shop"]))
                #expect(try txn.skippedRows(ofExtension: "by-tag") == nil)
            }
        }
    }
}
