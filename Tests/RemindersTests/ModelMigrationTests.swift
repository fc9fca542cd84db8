import Canopy
import CanopyTestSupport
import Foundation
import RemindersKit
import Testing

@Suite("reminders: a database written by the previous model")
struct ModelMigrationTests {
    /// Writes what the first model of the tool wrote: its marker, a calendar, reminders without `flagged`, and its
    /// agenda view (with that model's closures and the same version tag as today's).
    static func writePreviousVersion(at path: String) throws {
        let database = try Database(path: path)
        let oldReminders = TypedCollection<ReminderV1, NoMetadata>("reminders")
        try database.register(View(
            name: "agenda",
            grouping: .byObject(oldReminders) { _, reminder in
                reminder.done ? nil : reminder.due.map { Schema.day(of: $0, in: TimeZone(identifier: "UTC") ?? .current) } ?? Schema.someday
            },
            sorting: .byObject(oldReminders) { _, _, reminder in
                SortKey(.ascending(reminder.due?.timeIntervalSince1970 ?? 0), .ascending(reminder.title))
            },
            versionTag: "1-UTC", options: ViewOptions(allowedCollections: ["events", "reminders"])))
        try database.newConnection().readWrite { txn in
            try txn.set(Schema.format, forKey: "format", in: Schema.meta)
            try txn.set("3", forKey: "next-id", in: Schema.meta)
            try txn.set(EventCalendar(name: "Personal", colour: .blue), forKey: "personal", in: Schema.calendars)
            try txn.set(ReminderV1(title: "Buy milk", due: fixedNow + 9 * 3600, priority: 2, calendar: "personal"), forKey: "1", in: oldReminders)
            try txn.set(ReminderV1(title: "Plan holiday", due: nil, calendar: "personal"), forKey: "2", in: oldReminders)
        }
    }

    /// Without the migration, opening such a database failed: registering the agenda decoded every reminder as the new
    /// model and threw "no value for 'flagged'".
    @Test("the tool migrates the old reminders at open, then lists them; a new one can be flagged")
    func opensThePreviousModel() throws {
        try withDatabasePath { path, _ in
            try Self.writePreviousVersion(at: path)
            let list = reminders(["list", "--db", path])
            #expect(list.status == 0, "\(list.err)")
            #expect(list.out.contains("[ ] Buy milk !!") && list.out.contains("[ ] Plan holiday"), "\(list.out)")
            #expect(reminders(["add", "reminder", "Call Ann", "--flag", "--due", "today 18:00", "--db", path]).status == 0)
            #expect(reminders(["list", "--db", path]).out.contains("[ ] ⚑ Call Ann"))
            let database = try Database(path: path)
            try database.newConnection().read { txn throws in
                #expect(try txn.appliedMigrations().map(\.name) == ["reminders-flagged", "reminders-tags", "events-tags"])
                #expect(try txn.object(forKey: "1", in: Schema.reminders)
                        == Reminder(title: "Buy milk", due: fixedNow + 9 * 3600, priority: 2, calendar: "personal", flagged: false))
                #expect(try txn.skippedRows(ofExtension: "agenda") == nil)
            }
        }
    }

    @Test("a new database records the step as applied, so it never runs on the new model's rows")
    func newDatabase() throws {
        try withDatabasePath { path, _ in
            #expect(reminders(["add", "reminder", "Water plants", "--db", path]).status == 0)
            #expect(reminders(["list", "--db", path]).status == 0)
            let applied = try Database(path: path).newConnection().read { txn in try txn.appliedMigrations() }
            #expect(applied.map(\.name) == ["reminders-flagged", "reminders-tags", "events-tags"])
            #expect(applied.first?.rows == 0)
        }
    }
}
