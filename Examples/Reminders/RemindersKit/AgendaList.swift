import Canopy
import CanopySource
import CanopyTerminal
import Foundation

/// The row of an event: time span (with the day in lists that mix days), title (and location, tags), calendar, ID.
public final class EventCell: TerminalCell {}

/// The row of a reminder: due time (with the day in lists that mix days), a checkbox and the title (with its priority
/// and tags), calendar, ID.
public final class ReminderCell: TerminalCell {}

/// The agenda as a terminal list: a view-backed data source over the `agenda` (or `by-calendar`, `overdue`, `by-tag`,
/// `focus`, the search results) view, with an event cell and a reminder cell registered by key. Both read the item's
/// calendar (name, colour) through the index's pinned transaction, so a row always shows the calendar as of the
/// snapshot the list shows. In a narrow terminal the ID goes first, then the calendar, then the time: the title keeps
/// ``titleMinimumWidth`` columns.
public final class AgendaList: DataSourceProvider {
    /// The columns a row's title keeps before the ID, the calendar or the time is shown: a reminder's checkbox and 8
    /// characters. Events and reminders use the same, so rows of both kinds drop the same columns and stay aligned.
    public static let titleMinimumWidth = 4 + TerminalColumn.defaultMinimumWidth
    /// The data source type.
    public typealias Source = ViewDatasource<AgendaItem, TerminalCell, TerminalSupplementaryView, TerminalListView>
    /// The terminal list.
    public let list: TerminalListView
    /// The view-backed data source.
    public let dataSource: Source
    /// The reference for "today" in headers.
    public let now: Date
    /// The time zone of the days.
    public let timeZone: TimeZone
    /// Whether the list shows the `by-tag` view (sections are tags, not days).
    let byTag: Bool

    /// A list over `mappings` of `store`'s database.
    ///
    /// - Parameters:
    ///   - store: the database.
    ///   - mappings: the groups shown (days of `agenda`, `"<calendar> <day>"` groups of `by-calendar`, ...).
    ///   - now: the reference for "today" in headers.
    ///   - width: the terminal width.
    ///   - height: the viewport's height.
    ///   - colour: whether to use ANSI colour.
    public convenience init(store: RemindersStore, mappings: ViewMappings, now: Date, width: Int, height: Int, colour: Bool) throws {
        try self.init(store: store, mappings: mappings, now: now, list: TerminalListView(width: width, height: height, colour: colour))
    }

    /// A data source over `mappings` whose cells go to `list`; with `attach`, it becomes the list's data source
    /// (without, the caller shows it, as a segment of a ``SegmentedDatasource``).
    public init(store: RemindersStore, mappings: ViewMappings, now: Date, list: TerminalListView, attach: Bool = true) throws {
        self.list = list
        let timeZone = store.timeZone
        self.now = now
        self.timeZone = timeZone
        let factory = Source.SourceFactory(cellKey: { item, _ in
            if case .event = item { "event" } else { "reminder" }
        })
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_GB")
        formatter.timeZone = timeZone
        formatter.dateFormat = "HH:mm"
        let time: (Date) -> String = { formatter.string(from: $0) }
        // Lists whose sections are not days (focus, by tag, search results) mix days: their rows say which.
        let showsDays = !Self.dayViews.contains(mappings.view)
        // (The focus list holds reminders only: no event's "–11:00".)
        let timeWidth = !showsDays ? 11 : mappings.view == Schema.focus ? 17 : Self.dayAndTimeWidth
        let dayFormatter = DateFormatter()
        dayFormatter.locale = Locale(identifier: "en_GB")
        dayFormatter.timeZone = timeZone
        dayFormatter.dateFormat = "EEE d MMM HH:mm"
        let day: (Date) -> String = { dayFormatter.string(from: $0) }

        func calendarColumn(_ key: String, _ index: ViewCellIndex) throws -> TerminalColumn {
            let calendar = try index.transaction().object(forKey: key, in: Schema.calendars)
            return TerminalColumn(calendar?.name ?? key, width: .fixed(10), style: TerminalStyle(foreground: calendar?.colour))
        }
        factory.registerCell(.type(EventCell.self), in: list, key: "event") { cell, item, index in
            guard case .event(let id, let event) = item else { return }
            let title = (event.location.map { "\(event.title) @ \($0)" } ?? event.title) + Self.tagsText(event.tags)
            cell.columns = [
                TerminalColumn("\(showsDays ? day(event.start) : time(event.start))–\(time(event.end))", width: .fixed(timeWidth)),
                TerminalColumn(title, style: TerminalStyle(bold: true), minimumWidth: Self.titleMinimumWidth),
                try calendarColumn(event.calendar, index),
                TerminalColumn("#\(id)", width: .fixed(5), alignment: .right, style: TerminalStyle(dim: true)),
            ]
        }
        factory.registerCell(.type(ReminderCell.self), in: list, key: "reminder") { cell, item, index in
            guard case .reminder(let id, let reminder) = item else { return }
            let priority = reminder.priority > 0 ? " " + String(repeating: "!", count: reminder.priority) : ""
            cell.columns = [
                TerminalColumn(reminder.due.map { showsDays ? day($0) : "   \(time($0))" } ?? "", width: .fixed(timeWidth)),
                TerminalColumn("[\(reminder.done ? "x" : " ")] \(reminder.flagged ? "⚑ " : "")\(reminder.title)\(priority)\(Self.tagsText(reminder.tags))",
                               style: TerminalStyle(foreground: reminder.priority >= 3 ? .red : nil), minimumWidth: Self.titleMinimumWidth),
                try calendarColumn(reminder.calendar, index),
                TerminalColumn("#\(id)", width: .fixed(5), alignment: .right, style: TerminalStyle(dim: true)),
            ]
        }
        let byTag = mappings.view == "by-tag"
        self.byTag = byTag
        let searchResults = store.searchResults
        let isSearch = mappings.view == searchResults.name
        factory.registerHeaderText { index in
            guard let group = index.group else { return nil }
            if byTag { return "#\(group)" }
            if group == Schema.focus { return "Focus" }
            // The query as of the snapshot shown (it is stored in the database, so it outlives the tui).
            if isSearch { return (try? searchResults.query(in: index.transaction()))?.map { "Matches for \(Format.printable($0.text))" } ?? "Matches" }
            // Groups of `by-calendar` are "<calendar key> <day>".
            let parts = group.split(separator: " ", maxSplits: 1).map(String.init)
            if parts.count == 2 {
                let name = (try? index.transaction().object(forKey: parts[0], in: Schema.calendars))??.name ?? parts[0]
                return "\(name) · \(AgendaList.dayTitle(parts[1], now: now, timeZone: timeZone))"
            }
            return AgendaList.dayTitle(group, now: now, timeZone: timeZone)
        }
        dataSource = try Source(database: store.database, mappings: mappings, factory: factory, container: list) { id, txn in
            if id.collection == Schema.events.name { return try txn.object(forKey: id.key, in: Schema.events).map { .event(id: id.key, $0) } }
            return try txn.object(forKey: id.key, in: Schema.reminders).map { .reminder(id: id.key, $0) }
        }
        if attach { list.dataSource = dataSource }
    }

    /// The views whose groups are days (`agenda`, its filtered view `overdue`, and `by-calendar`'s "<calendar> <day>"):
    /// their rows show the time only.
    static let dayViews: Set<String> = ["agenda", "overdue", "by-calendar"]

    /// The time column of a list that mixes days: "Wed 25 Nov 10:00–11:00" and a space.
    static let dayAndTimeWidth = 23

    /// " #shop #home" for the tags `shop`, `home` (after a title).
    static func tagsText(_ tags: [String]) -> String { Schema.tagsText(tags).map { " " + $0 } ?? "" }

    /// "Wednesday 25 November 2026 · today" for the group "2026-11-25".
    public static func dayTitle(_ group: String, now: Date, timeZone: TimeZone) -> String {
        guard group != Schema.someday else { return "Some day" }
        let parser = DateFormatter()
        parser.locale = Locale(identifier: "en_US_POSIX")
        parser.timeZone = timeZone
        parser.dateFormat = "yyyy-MM-dd"
        guard let date = parser.date(from: group) else { return group }
        let title = DateFormatter()
        title.locale = Locale(identifier: "en_GB")
        title.timeZone = timeZone
        title.dateFormat = "EEEE d MMMM yyyy"
        var text = title.string(from: date)
        let today = Schema.day(of: now, in: timeZone)
        let tomorrow = Schema.day(of: now.addingTimeInterval(86_400), in: timeZone)
        if group == today { text += " · today" } else if group == tomorrow { text += " · tomorrow" } else if group < today { text += " · past" }
        return text
    }

    /// Every line of the list (the viewport grown to hold them all).
    public func allLines() throws -> [String] {
        list.height = max(1, list.numberOfLines)
        return try list.render()
    }

    /// One line per change of `changeset`, in words: sections that appeared or went, rows added, removed, moved,
    /// changed (titles read at the data source's current snapshot).
    public func describe(_ changeset: ViewChangeset) -> [String] {
        if changeset.isReload { return ["  ↻ the list was reloaded"] }
        var lines: [String] = []
        for change in changeset.sectionChanges {
            let title = byTag ? "#\(change.group)" : AgendaList.dayTitle(change.group, now: now, timeZone: timeZone)
            switch change.kind {
            case .insert: lines.append("  + section \(change.index): \(title) appears")
            case .delete: lines.append("  - section \(change.index): \(title) is gone (no more items that day)")
            }
        }
        for change in changeset.rowChanges {
            let title = change.finalIndexPath.flatMap { (try? dataSource.item(at: $0)) ?? nil }?.title ?? "#\(change.id.key)"
            let from = change.originalIndexPath.map { "\($0)" } ?? ""
            let to = change.finalIndexPath.map { "\($0)" } ?? ""
            switch change.kind {
            case .insert: lines.append("  + row \(to): \(title) (#\(change.id.key)) added")
            case .delete: lines.append("  - row \(from): #\(change.id.key) removed")
            case .move: lines.append("  → row \(from) moved to \(to): \(title)")
            case .update: lines.append("  ~ row \(from) updated: \(title)")
            }
        }
        return lines
    }
}
