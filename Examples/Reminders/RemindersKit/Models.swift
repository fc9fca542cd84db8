import Canopy
import CanopySearch
import CanopyTerminal
import Foundation

/// An event: something that happens from `start` to `end`.
public struct Event: Codable, Sendable, Equatable {
    /// What happens.
    public var title: String
    /// When it starts.
    public var start: Date
    /// When it ends (not before `start`).
    public var end: Date
    /// The key of its calendar.
    public var calendar: String
    /// Where, if said.
    public var location: String?
    /// Free text.
    public var notes: String?
    /// Its tags (`--tag`), in the order given, without duplicates: the `by-tag` view shows it under each, with the
    /// reminders. Added in the tool's fourth model: databases written before get `[]` from the migration step in
    /// ``Schema/migrator()``.
    public var tags: [String]

    /// Creates an event.
    public init(title: String, start: Date, end: Date, calendar: String, location: String? = nil, notes: String? = nil, tags: [String] = []) {
        self.title = title
        self.start = start
        self.end = end
        self.calendar = calendar
        self.location = location
        self.notes = notes
        self.tags = tags
    }
}

/// A reminder: something to do, maybe by a date.
public struct Reminder: Codable, Sendable, Equatable {
    /// What to do.
    public var title: String
    /// When it is due, if ever.
    public var due: Date?
    /// Whether it is done (done reminders leave the agenda).
    public var done: Bool
    /// 0 (none) to 3 (high).
    public var priority: Int
    /// The key of its calendar.
    public var calendar: String
    /// Whether it is flagged (shown with a flag). Added in the tool's second model: databases written before get it
    /// from the migration step in ``Schema/migrator()``.
    public var flagged: Bool
    /// Its tags (`--tag`), in the order given, without duplicates: the `by-tag` view shows it under each. Added in the
    /// tool's third model: databases written before get `[]` from the migration step in ``Schema/migrator()``.
    public var tags: [String]

    /// Creates a reminder.
    public init(title: String, due: Date?, done: Bool = false, priority: Int = 0, calendar: String, flagged: Bool = false, tags: [String] = []) {
        self.title = title
        self.due = due
        self.done = done
        self.priority = priority
        self.calendar = calendar
        self.flagged = flagged
        self.tags = tags
    }
}

/// A reminder as the first model of the tool stored it (without ``Reminder/flagged``): kept, under this name, so that
/// the migration step can read databases written before the change.
public struct ReminderV1: Codable, Sendable, Equatable {
    /// What to do.
    public var title: String
    /// When it is due, if ever.
    public var due: Date?
    /// Whether it is done.
    public var done: Bool
    /// 0 (none) to 3 (high).
    public var priority: Int
    /// The key of its calendar.
    public var calendar: String

    /// Creates a reminder of the first model.
    public init(title: String, due: Date?, done: Bool = false, priority: Int = 0, calendar: String) {
        self.title = title
        self.due = due
        self.done = done
        self.priority = priority
        self.calendar = calendar
    }
}

/// A calendar (a list of events and reminders) with a name and a colour. Called `EventCalendar` so as not to shadow
/// Foundation's `Calendar`, which the tool uses for date arithmetic.
public struct EventCalendar: Codable, Sendable, Equatable {
    /// The name shown.
    public var name: String
    /// The colour its rows show in.
    public var colour: TerminalColor

    /// Creates a calendar.
    public init(name: String, colour: TerminalColor) {
        self.name = name
        self.colour = colour
    }
}

/// One row of the agenda: an event or a reminder, with its key.
public enum AgendaItem: Sendable, Equatable {
    /// An event.
    case event(id: String, Event)
    /// A reminder.
    case reminder(id: String, Reminder)

    /// The item's ID (its key).
    public var id: String {
        switch self {
        case .event(let id, _), .reminder(let id, _): id
        }
    }

    /// The title.
    public var title: String {
        switch self {
        case .event(_, let event): event.title
        case .reminder(_, let reminder): reminder.title
        }
    }

    /// The calendar key.
    public var calendar: String {
        switch self {
        case .event(_, let event): event.calendar
        case .reminder(_, let reminder): reminder.calendar
        }
    }

    /// When it happens or is due.
    public var date: Date? {
        switch self {
        case .event(_, let event): event.start
        case .reminder(_, let reminder): reminder.due
        }
    }

    /// Its tags.
    public var tags: [String] {
        switch self {
        case .event(_, let event): event.tags
        case .reminder(_, let reminder): reminder.tags
        }
    }
}

/// The collections and views of the reminders database.
public enum Schema {
    /// Events by ID.
    public static let events = TypedCollection<Event, NoMetadata>("events")
    /// Reminders by ID.
    public static let reminders = TypedCollection<Reminder, NoMetadata>("reminders")
    /// Calendars by key.
    public static let calendars = TypedCollection<EventCalendar, NoMetadata>("calendars")
    /// The app's marker and counters.
    public static let meta = TypedCollection<String, NoMetadata>("reminders.meta")
    /// The value of the marker that says "this database belongs to `reminders`".
    public static let format = "reminders/1"
    /// The group of reminders without a due date.
    public static let someday = "someday"

    /// The model's migration steps, in the order they shipped; run at every open, before the views register (only the
    /// steps a database lacks do anything). Append new steps; never change or remove one.
    public static func migrator() -> Migrator {
        var migrator = Migrator()
        migrator.append(.typed("reminders-flagged", collection: reminders.name, from: ReminderV1.self, to: Reminder.self) { _, old in
            Reminder(title: old.title, due: old.due, done: old.done, priority: old.priority, calendar: old.calendar, flagged: false)
        })
        // Untyped, so that it needs no copy of the second model: rows that lack `tags` get an empty list (rows the
        // step above just wrote have it already).
        migrator.append(.addKey("reminders-tags", collection: reminders.name, "tags", value: .array([])))
        // Events got tags in the fourth model: the same untyped step, over events.
        migrator.append(.addKey("events-tags", collection: events.name, "tags", value: .array([])))
        return migrator
    }

    /// The day group ("2026-11-25") of `date` in `timeZone`.
    public static func day(of date: Date, in timeZone: TimeZone) -> String {
        var calendar = Foundation.Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
    }

    /// The key under which the database records the time zone its days are in (in ``meta``).
    public static let timeZoneKey = "time-zone"

    /// The agenda: events and open reminders grouped by day (in `timeZone`), sorted by time, then title.
    ///
    /// The zone is the database's (recorded when it was created, see ``RemindersStore``), not the shell's: the
    /// definition does not carry it, so every process registers the same definition whatever its `TZ`.
    public static func agendaView(timeZone: TimeZone) -> View {
        View(name: "agenda", grouping: .custom(dependsOnObject: true, dependsOnMetadata: false) { row in
            try group(of: row, timeZone: timeZone, prefix: nil)
        }, sorting: sorting, versionTag: "2", options: ViewOptions(allowedCollections: ["events", "reminders"]))
    }

    /// By calendar: groups `"<calendar> <day>"`, so one calendar's rows are the groups with its key as prefix.
    public static func byCalendarView(timeZone: TimeZone) -> View {
        View(name: "by-calendar", grouping: .custom(dependsOnObject: true, dependsOnMetadata: false) { row in
            try group(of: row, timeZone: timeZone, prefix: true)
        }, sorting: sorting, versionTag: "2", options: ViewOptions(allowedCollections: ["events", "reminders"]))
    }

    /// Open reminders with a due date, by day and due time: a filtered view of the agenda. Which of them are overdue
    /// depends on "now", which the definition does not carry (it would change every minute): `list --overdue` shows
    /// the days before today and, of today, the rows due before now.
    public static func overdueView() -> View {
        FilteredView.make(name: "overdue", parentView: "agenda", versionTag: "2") { _, row in
            guard row.collection == reminders.name else { return false }
            let reminder = try row.object(in: reminders)
            return !reminder.done && reminder.due != nil
        }
    }

    /// Full-text search over events (title, then location and notes, then tags) and reminders (title, then tags):
    /// `reminders search`. Version 2 added the tags (`search work` finds what is tagged `work`).
    public static func searchIndex() -> SearchIndex {
        SearchIndex(name: "search", versionTag: "2", collections: [events.name, reminders.name],
                    fields: [SearchField("title", weight: 2), SearchField("details"), SearchField(tagsField)]) { row in
            if row.id.collection == events.name {
                let event = try row.object(in: events)
                let details = [event.location, event.notes].compactMap { $0 }.joined(separator: " · ")
                return [event.title, details.isEmpty ? nil : details, tagsText(event.tags)]
            }
            let reminder = try row.object(in: reminders)
            return [reminder.title, nil, tagsText(reminder.tags)]
        }
    }

    /// The search field of an item's tags.
    public static let tagsField = "tags"

    /// "#work #clients" for the tags `work`, `clients` (as the lists show them and the search indexes them), `nil` for
    /// none.
    static func tagsText(_ tags: [String]) -> String? {
        tags.isEmpty ? nil : tags.map { "#\($0)" }.joined(separator: " ")
    }

    /// The live results of the search typed in the TUI (`/`): one group, ``searchGroup``, best first.
    public static func searchResults(_ index: SearchIndex) -> SearchResultsView {
        SearchResultsView.ranked(name: "search-results", index: index, group: searchGroup)
    }

    /// The one group of the search results view.
    public static let searchGroup = "matches"

    static func group(of row: ViewRow, timeZone: TimeZone, prefix: Bool?) throws -> String? {
        let date: Date?
        let calendar: String
        if row.collection == events.name {
            let event = try row.object(in: events)
            (date, calendar) = (event.start, event.calendar)
        } else {
            let reminder = try row.object(in: reminders)
            guard !reminder.done else { return nil }
            (date, calendar) = (reminder.due, reminder.calendar)
        }
        let day = date.map { Self.day(of: $0, in: timeZone) } ?? someday
        return prefix == true ? "\(calendar) \(day)" : day
    }

    /// Events and open reminders under each of their tags (an item with three tags is in three groups), sorted by
    /// date — an event's start, a reminder's due date; reminders without one last — then title. A view whose rows are in
    /// many groups: see Canopy's "A row in many groups". Version 2 added events (version 1 held reminders only).
    public static func byTagView() -> View {
        View(name: "by-tag", grouping: .manyCustom(dependsOnObject: true, dependsOnMetadata: false) { row in
            if row.collection == events.name { return Set(try row.object(in: events).tags) }
            let reminder = try row.object(in: reminders)
            return reminder.done ? [] : Set(reminder.tags)
        }, sorting: .custom(dependsOnObject: true, dependsOnMetadata: false) { _, row in
            let (date, title): (Date?, String)
            if row.collection == events.name {
                let event = try row.object(in: events)
                (date, title) = (event.start, event.title)
            } else {
                let reminder = try row.object(in: reminders)
                (date, title) = (reminder.due, reminder.title)
            }
            return SortKey(.ascending(date == nil), .ascending(date?.timeIntervalSince1970 ?? 0), .ascending(title))
        }, versionTag: "2", options: ViewOptions(allowedCollections: [events.name, reminders.name]))
    }

    /// A tag as stored: trimmed; `nil` when blank or when it holds a control character (a tag is a group name shown
    /// in headers).
    public static func normalizedTag(_ text: String) -> String? {
        let tag = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !tag.isEmpty, !tag.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return nil }
        guard tag.hasPrefix("#") else { return tag }
        let bare = tag.dropFirst().trimmingCharacters(in: .whitespaces)
        return bare.isEmpty ? nil : bare
    }

    static let sorting = ViewSorting.custom(dependsOnObject: true, dependsOnMetadata: false) { _, row in
        if row.collection == events.name {
            let event = try row.object(in: events)
            return SortKey(.ascending(event.start.timeIntervalSince1970), .ascending(event.title))
        }
        let reminder = try row.object(in: reminders)
        return SortKey(.ascending(reminder.due?.timeIntervalSince1970 ?? 0), .ascending(reminder.title))
    }
}
