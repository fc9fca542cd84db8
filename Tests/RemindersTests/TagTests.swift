import Canopy
import CanopyTestSupport
import Foundation
import RemindersKit
import Testing

@Suite("reminders: tags and the by-tag view", .serialized)
struct TagTests {
    @Test("--tag (several): list --by-tag shows a reminder under each tag, with its day (the sections are not days), --tag one tag (golden output)")
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
            Mon 23 Nov 17:00        [ ] Buy milk #shop #home                Personal      #1
                                    [ ] Paint fence #home #weekend          Personal      #2
            #shop
            Mon 23 Nov 17:00        [ ] Buy milk #shop #home                Personal      #1
            #weekend
                                    [ ] Paint fence #home #weekend          Personal      #2

            """)
            let home = reminders(["list", "--tag", "home", "--db", path])
            #expect(home.out.hasPrefix("#home\n") && home.out.contains("Buy milk") && !home.out.contains("#shop\n"), "\(home.out)")
            #expect(reminders(["list", "--tag", "garden", "--db", path]).out == "No event or open reminder is tagged #garden.\n")
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
            #expect(reminders(["list", "--by-tag", "--db", path]).out == "No event or open reminder has a tag.\n")
            #expect(reminders(["done", "1", "--undo", "--db", path]).status == 0)
            #expect(reminders(["edit", "1", "--clear-tags", "--db", path]).status == 0)
            list = reminders(["list", "--by-tag", "--db", path]).out
            #expect(list == "No event or open reminder has a tag.\n")
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
                ["edit", "1", "--tag", ""], ["edit", "1", "--tag", "a", "--clear-tags"], ["edit", "2", "--tag", "\u{7}"],
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
                #expect(try txn.appliedMigrations().map(\.name) == ["reminders-flagged", "reminders-tags", "events-tags"])
                #expect(try txn.object(forKey: "1", in: Schema.reminders)
                        == Reminder(title: "Buy milk", due: nil, priority: 1, calendar: "personal", flagged: true, tags: ["shop"]))
                #expect(try txn.skippedRows(ofExtension: "by-tag") == nil)
            }
        }
    }
}

/// Tags on events (issue 20): an event is an item of the agenda too, so `by-tag` shows it under each of its tags, with
/// the reminders, and it moves between groups as its tags change.
@Suite("reminders: tags on events", .serialized)
struct EventTagTests {
    @Test("add event --tag (several): list --by-tag shows the event under each tag, sorted with the reminders by date (golden output)")
    func eventUnderEachTag() throws {
        try withDatabasePath { path, _ in
            #expect(reminders(["add", "reminder", "Send the slides", "--due", "tomorrow 09:00", "--tag", "work", "--db", path]).status == 0)
            let added = reminders(["add", "event", "Customer call", "--start", "tomorrow 10:00", "--tag", "work", "--tag", "#clients",
                                   "--tag", "work", "--location", "Zoom", "--db", path])
            #expect(added.status == 0 && added.err.isEmpty, "\(added)")
            #expect(reminders(["add", "reminder", "Book a room", "--due", "today 17:00", "--tag", "clients", "--db", path]).status == 0)
            #expect(reminders(["add", "event", "Dentist", "--start", "tomorrow 12:00", "--db", path]).status == 0)
            #expect(reminders(["add", "reminder", "Write the minutes", "--due", "tomorrow 17:00", "--tag", "work", "--db", path]).status == 0)
            #expect(reminders(["add", "reminder", "Plan the offsite", "--tag", "work", "--db", path]).status == 0)
            let list = reminders(["list", "--by-tag", "--db", path])
            #expect(list.status == 0 && list.err.isEmpty, "\(list.err)")
            #expect(list.out == """
            #clients
            Mon 23 Nov 17:00        [ ] Book a room #clients                Personal      #3
            Tue 24 Nov 10:00–11:00  Customer call @ Zoom #work #clients     Personal      #2
            #work
            Tue 24 Nov 09:00        [ ] Send the slides #work               Personal      #1
            Tue 24 Nov 10:00–11:00  Customer call @ Zoom #work #clients     Personal      #2
            Tue 24 Nov 17:00        [ ] Write the minutes #work             Personal      #5
                                    [ ] Plan the offsite #work              Personal      #6

            """)
            #expect(reminders(["list", "--tag", "clients", "--db", path]).out.hasPrefix("#clients\nMon 23 Nov 17:00"))
            // The agenda shows an event's tags on its row, and JSON carries them.
            #expect(reminders(["list", "--db", path]).out.contains("10:00–11:00 Customer call @ Zoom #work #clients"))
            let json = reminders(["list", "--json", "--tag", "work", "--db", path]).out
            #expect(json.contains("\"kind\" : \"event\"") && json.contains("\"tags\" : [\n            \"work\",\n            \"clients\"\n"), "\(json)")
            let database = try Database(path: path)
            try database.newConnection().read { txn throws in
                #expect(try txn.object(forKey: "2", in: Schema.events)?.tags == ["work", "clients"])
                #expect(try txn.object(forKey: "4", in: Schema.events)?.tags == [])
                #expect(try txn.view("by-tag").checkStructure() == [])
            }
        }
    }

    /// The rows of the `by-tag` list of `path` as shown, each section's header then its rows' IDs.
    static func byTagRows(_ list: AgendaList) throws -> [String] {
        try list.allLines().map { line in String((line.hasPrefix("#") ? line.split(separator: " ").first : line.split(separator: " ").last) ?? "") }
    }

    @Test("edit --tag moves an event between tags: one changeset, per group (section insert, delete, update), applied as one checked batch")
    func eventMovesBetweenTags() throws {
        try withDatabasePath { path, _ in
            #expect(reminders(["add", "reminder", "Send the slides", "--due", "today 17:00", "--tag", "work", "--db", path]).status == 0)
            #expect(reminders(["add", "event", "Customer call", "--start", "tomorrow 10:00", "--tag", "work", "--tag", "clients", "--db", path]).status == 0)
            let store = try RemindersStore(path: path, timeZone: TimeZone(identifier: "UTC") ?? .current, create: false)
            let list = try AgendaList(store: store, mappings: ViewMappings(view: "by-tag", groupFilter: { _ in true }), now: fixedNow,
                                      width: 80, height: 20, colour: false)
            #expect(try Self.byTagRows(list) == ["#clients", "#2", "#work", "#1", "#2"])

            try store.setTags("2", ["clients", "travel"])
            let changeset = try list.dataSource.advance()
            let event = RowID(collection: Schema.events.name, key: "2")
            #expect(changeset.kind == .changes)
            #expect(changeset.sectionChanges == [.init(kind: .insert, group: "travel", index: 1)])
            // (The new section's rows come with it: UIKit's batches list no row insert in an inserted section.)
            #expect(changeset.rowChanges.map { "\($0)" } == ["delete \(event.collection)/2 [1, 1]", "update \(event.collection)/2 [0, 0] -> [0, 0]"],
                    "\(changeset.rowChanges)")
            #expect(try Self.byTagRows(list) == ["#clients", "#2", "#travel", "#2", "#work", "#1"])

            // Its last tag in a group gone, the group goes: one section delete.
            try store.setTags("2", ["travel"])
            let second = try list.dataSource.advance()
            #expect(second.sectionChanges == [.init(kind: .delete, group: "clients", index: 0)])
            #expect(second.rowChanges.map { "\($0)" } == ["update \(event.collection)/2 [1, 0] -> [0, 0]"], "\(second.rowChanges)")
            #expect(try Self.byTagRows(list) == ["#travel", "#2", "#work", "#1"])
            // What the list shows after the batches is what a fresh list over the view shows.
            let fresh = try AgendaList(store: store, mappings: ViewMappings(view: "by-tag", groupFilter: { _ in true }), now: fixedNow,
                                       width: 80, height: 20, colour: false)
            #expect(try list.allLines() == fresh.allLines())
        }
    }

    @Test("bad tags on events are refused with the reminders' message, nothing written")
    func badTagsOnEvents() throws {
        try withDatabasePath { path, _ in
            #expect(reminders(["add", "event", "Dentist", "--start", "tomorrow 10:00", "--tag", "health", "--db", path]).status == 0)
            // The store refuses them too (the commands check before they open it).
            do {
                let store = try RemindersStore(path: path, timeZone: TimeZone(identifier: "UTC") ?? .current, create: false)
                #expect(throws: RemindersError.self) {
                    try store.addEvent("x", start: fixedNow, end: fixedNow, calendar: "Personal", tags: ["ok", "\n"])
                }
                #expect(throws: RemindersError.self) { try store.setTags("1", ["ok", " "]) }
            }
            let before = try contents(of: path)
            for tag in ["  ", "#", "a\u{1B}[2Jb", ""] {
                let reminder = reminders(["add", "reminder", "x", "--tag", tag, "--db", path])
                for arguments in [["add", "event", "x", "--start", "tomorrow 11:00", "--tag", tag], ["edit", "1", "--tag", "ok", "--tag", tag]] {
                    let result = reminders(arguments + ["--db", path])
                    #expect(result.status == 1, "\(arguments): \(result)")
                    #expect(result.err == reminder.err && result.err.hasPrefix("error: the tag '") && !result.err.contains("\u{1B}"), "\(arguments): \(result.err)")
                }
            }
            #expect(try contents(of: path) == before)
            #expect(before[Schema.events.name]?.count == 1)
        }
    }

    /// A database of the tool's third model (events without `tags`), as the tool before this one wrote it: its two
    /// migration steps applied, its `by-tag` view (version 1, reminders only) registered. The tool's `events-tags` step
    /// adds the key; without it, registering the views failed to decode every event.
    @Test("a database whose events have no tags is migrated at open; its events show with no tags and can then be tagged")
    func migratesEventsWithoutTags() throws {
        try withDatabasePath { path, _ in
            struct EventV3: Codable, Sendable {
                var title: String
                var start: Date
                var end: Date
                var calendar: String
                var location: String?
                var notes: String?
            }
            do {
                let database = try Database(path: path)
                var migrator = Migrator()
                for step in Schema.migrator().steps where step.name != "events-tags" { migrator.append(step) }
                try migrator.migrate(database)
                try database.register(View(
                    name: "by-tag", grouping: .manyByObject(Schema.reminders) { _, reminder in reminder.done ? [] : Set(reminder.tags) },
                    sorting: .byObject(Schema.reminders) { _, _, reminder in
                        SortKey(.ascending(reminder.due == nil), .ascending(reminder.due?.timeIntervalSince1970 ?? 0), .ascending(reminder.title))
                    }, versionTag: "1"))
                let previous = TypedCollection<EventV3, NoMetadata>("events")
                try database.newConnection().readWrite { txn in
                    try txn.set(Schema.format, forKey: "format", in: Schema.meta)
                    try txn.set("3", forKey: "next-id", in: Schema.meta)
                    try txn.set(EventCalendar(name: "Personal", colour: .blue), forKey: "personal", in: Schema.calendars)
                    try txn.set(EventV3(title: "Dentist", start: fixedNow + 26 * 3600, end: fixedNow + 27 * 3600, calendar: "personal"),
                                forKey: "1", in: previous)
                    try txn.set(Reminder(title: "Buy milk", due: nil, calendar: "personal", tags: ["shop"]), forKey: "2", in: Schema.reminders)
                }
            }
            let list = reminders(["list", "--db", path])
            #expect(list.status == 0 && list.out.contains("10:00–11:00 Dentist ") && !list.out.contains("Dentist #"), "\(list)")
            #expect(reminders(["list", "--by-tag", "--db", path]).out.split(separator: "\n").first == "#shop")
            #expect(reminders(["edit", "1", "--tag", "health", "--db", path]).status == 0)
            #expect(reminders(["list", "--tag", "health", "--db", path]).out.hasPrefix("#health\nTue 24 Nov 10:00–11:00  Dentist #health"))
            let database = try Database(path: path)
            try database.newConnection().read { txn throws in
                #expect(try txn.appliedMigrations().map(\.name) == ["reminders-flagged", "reminders-tags", "events-tags"])
                #expect(try txn.appliedMigrations().last?.rows == 1)
                #expect(try txn.object(forKey: "1", in: Schema.events)
                        == Event(title: "Dentist", start: fixedNow + 26 * 3600, end: fixedNow + 27 * 3600, calendar: "personal", tags: ["health"]))
                #expect(try txn.skippedRows(ofExtension: "by-tag") == nil)
                #expect(try txn.skippedRows(ofExtension: "agenda") == nil)
                #expect(try txn.view("by-tag").checkStructure() == [])
            }
        }
    }
}
