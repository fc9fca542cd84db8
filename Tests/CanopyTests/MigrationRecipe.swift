import Canopy

// Version 1 stored reminders without `done`; version 2 adds it, non-optional.
struct ReminderV1: Codable, Sendable {
    var title: String
    var list: String
}
struct ListedReminder: Codable, Sendable {
    var title: String
    var list: String
    var done: Bool
}

func migrationRecipe(folder: String) throws {
    let database = try Database(path: folder)

    // Steps run once each, in order, recorded in the database: append new ones, never edit shipped ones.
    var migrator = Migrator()
    migrator.append(.typed("reminder-done", collection: "reminders", from: ReminderV1.self, to: ListedReminder.self) { _, old in
        ListedReminder(title: old.title, list: old.list, done: false)
    })
    // Untyped steps need no old type: .renameKey, .addKey, .removeKey, .changeValue, .transform,
    // and .renameCollection, .deleteCollection, .changeCodec.
    try migrator.migrate(database)  // before registering views: they are rebuilt once, over migrated rows

    let reminders = TypedCollection<ListedReminder, NoMetadata>("reminders")

    try database.register(View(
        name: "open-by-list",
        grouping: .byObject(reminders) { _, reminder in reminder.done ? nil : reminder.list },
        sorting: .byObject(reminders) { _, _, reminder in SortKey(reminder.title) }))
}
