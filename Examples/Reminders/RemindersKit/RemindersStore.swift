import Canopy
import CanopySearch
import CanopyTerminal
import Foundation

/// The reminders database: opens (or creates) it after checking the path, registers the views, and runs the tool's
/// writes. Every write validates its input before the write transaction starts, so bad input writes nothing.
public final class RemindersStore {
    /// The database.
    public let database: Database
    /// A connection for the commands' reads and writes.
    public let connection: Connection
    /// The time zone days are grouped and shown in: the one the database recorded when it was created (the views'
    /// definitions don't carry it, so shells with different `TZ` share them).
    public let timeZone: TimeZone
    /// The full-text index of titles, locations and notes (`reminders search`).
    public let search: SearchIndex
    /// The live search results of the TUI (`/`), over ``search``.
    public let searchResults: SearchResultsView

    /// Whether a database exists at `path` (a directory holding `data.mdb`).
    public static func exists(at path: String) throws -> Bool {
        let data = (path as NSString).appendingPathComponent("data.mdb")
        if access(data, F_OK) == 0 { return true }
        // Missing, or hidden by a directory this user cannot search: the latter must not read as "no database".
        guard errno == EACCES else { return false }
        throw RemindersError("permission denied: '\(path)' or a directory above it cannot be searched by this user, so its database cannot be read; run as its owner or change the permissions")
    }

    /// The directory holding `path` as `NSString.deletingLastPathComponent` gives it (`""` for a name alone, `/` for a
    /// name under the root; trailing slashes ignored), without it: on Linux it traps on a path of one character
    /// (`--db d`, `--db d/`), which ended `reminders` by a signal.
    static func parentDirectory(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        var parent = trimmed[..<slash]
        while parent.count > 1, parent.hasSuffix("/") { parent = parent.dropLast() }
        return parent.isEmpty ? "/" : String(parent)
    }

    /// Opens the database at `path`, creating it when `create` is set, and registers every view (registering what is
    /// already there is a read, so every command can).
    ///
    /// - Parameter timeZone: the zone of a new database's days; an existing database keeps the one it recorded.
    /// - Throws: ``RemindersError`` when the parent directory is missing or not writable, when `path` is a file, when
    ///   the database belongs to another app, or when Canopy can't open it (the message says why).
    public init(path: String, timeZone: TimeZone, create: Bool = true) throws {
        let parent = Self.parentDirectory(of: path)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: parent.isEmpty ? "." : parent, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw RemindersError("the database directory '\(parent)' does not exist (or is not a directory); create it or pass another --db")
        }
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
            throw RemindersError("'\(path)' is a file, not a reminders database (a database is a directory); pass another --db")
        }
        let existed = try Self.exists(at: path)
        if !existed {
            guard create else { throw RemindersError("no reminders database at '\(path)' yet; add something with `reminders add`") }
            guard access(parent.isEmpty ? "." : parent, W_OK) == 0 else {
                throw RemindersError("can't create a database in '\(parent)': the directory is not writable; pass another --db")
            }
        }
        do {
            database = try Database(path: path, options: .init(durability: .metadataOnly))
        } catch let error as CanopyError {
            throw RemindersError("can't open the database at '\(path)': \(error.message)")
        }
        connection = database.newConnection()
        // A database of another app: it has collections but not our marker. Checked before anything is written.
        let (marker, collections, recordedZone) = try connection.read { txn in
            (try txn.object(forKey: "format", in: Schema.meta), try txn.collectionNames(), try txn.object(forKey: Schema.timeZoneKey, in: Schema.meta))
        }
        if existed, marker != Schema.format, !collections.isEmpty || marker != nil {
            throw RemindersError("'\(path)' holds another app's database (collections: \(collections.sorted().joined(separator: ", "))); pass another --db")
        }
        let zone = recordedZone.flatMap(TimeZone.init(identifier:)) ?? timeZone
        self.timeZone = zone
        // Migrate, then register: the views decode reminders as the current model. Another store on this path in this
        // process (a test, the TUI's writes) shares the registrations, and the first one migrated.
        if database.registeredExtension(named: "agenda") == nil {
            do {
                try Schema.migrator().migrate(database)
            } catch let error as CanopyError {
                throw RemindersError("can't bring the database at '\(path)' up to this version of reminders: \(error.message)")
            }
        }
        // Every view, wherever the tool writes, so that none is left stale. Another store on this path in this process
        // (a test, the TUI's writes) shares the registrations.
        for view in [Schema.agendaView(timeZone: zone), Schema.byCalendarView(timeZone: zone), Schema.overdueView(), Schema.focusView(), Schema.byTagView()]
        where database.registeredExtension(named: view.name) == nil {
            try database.register(view)
        }
        // The search index, then its results view (which reads the query the index loads).
        if let registered = database.registeredExtension(named: "search") as? SearchIndex,
           let results = registered.resultsView(named: "search-results") {
            (search, searchResults) = (registered, results)
        } else {
            search = Schema.searchIndex()
            searchResults = Schema.searchResults(search)
            try database.register(search)
            try database.register(searchResults.view)
        }
        if marker == nil || recordedZone == nil {
            try connection.readWrite { txn in
                if marker == nil {
                    try txn.set(Schema.format, forKey: "format", in: Schema.meta)
                    try txn.set(EventCalendar(name: "Personal", colour: .blue), forKey: "personal", in: Schema.calendars)
                }
                try txn.set(zone.identifier, forKey: Schema.timeZoneKey, in: Schema.meta)
            }
        }
    }

    /// The mappings of `list --overdue`: of the `overdue` view (open reminders with a due date), the days before
    /// today and, of today, the rows due before `now`.
    public func overdueMappings(now: Date) throws -> ViewMappings {
        let today = Schema.day(of: now, in: timeZone)
        let dueToday = try connection.read { txn in
            try txn.view("overdue").lowerBound(of: ViewEntry(group: today, orderBytes: SortKey(.ascending(now.timeIntervalSince1970)).bytes))
        }
        var mappings = ViewMappings(view: "overdue", groupFilter: { $0 < today || ($0 == today && dueToday > 0) })
        mappings.setRange(.first(dueToday), forGroup: today)
        return mappings
    }

    // MARK: Reading

    /// Every calendar by key.
    public func calendars() throws -> [(key: String, calendar: EventCalendar)] {
        try connection.read { txn in
            try txn.keys(inCollection: Schema.calendars.name).sorted().compactMap { key in
                try txn.object(forKey: key, in: Schema.calendars).map { (key, $0) }
            }
        }
    }

    /// The key of the calendar named `name` (case-insensitive), or `nil`.
    public func calendarKey(named name: String) throws -> String? {
        try calendars().first { $0.calendar.name.lowercased() == name.lowercased() }?.key
    }

    /// The event or reminder with `id`.
    /// - Throws: ``RemindersError`` when there is none.
    public func item(_ id: String) throws -> AgendaItem {
        guard !id.isEmpty else { throw RemindersError("an empty ID names no event or reminder; `reminders list` shows the IDs") }
        let found = try connection.read { txn -> AgendaItem? in
            if let event = try txn.object(forKey: id, in: Schema.events) { return .event(id: id, event) }
            if let reminder = try txn.object(forKey: id, in: Schema.reminders) { return .reminder(id: id, reminder) }
            return nil
        }
        // (The ID as typed, escaped: a control character in it must not reach the terminal.)
        guard let found else { throw RemindersError("no event or reminder has ID \(Format.printable(id)); `reminders list` shows the IDs") }
        return found
    }

    /// The items matching `query`, best first, with the matched words' ranges (see `SearchQuery` for the syntax).
    /// - Throws: ``RemindersError`` when the query is empty or malformed (the message says what is wrong).
    public func search(_ query: String, limit: Int) throws -> [(item: AgendaItem, hit: SearchHit)] {
        do {
            return try connection.read { txn in
                try search.search(query, in: txn, limit: limit).compactMap { hit in
                    if hit.id.collection == Schema.events.name {
                        return try txn.object(forKey: hit.id.key, in: Schema.events).map { (.event(id: hit.id.key, $0), hit) }
                    }
                    return try txn.object(forKey: hit.id.key, in: Schema.reminders).map { (.reminder(id: hit.id.key, $0), hit) }
                }
            }
        } catch let error as CanopyError where error.code == .invalidArgument {
            throw RemindersError("can't search for '\(query.prefix(60))': \(error.message)")
        }
    }

    /// Sets the query of the live search results (`""` clears them).
    /// - Throws: ``RemindersError`` when the query is malformed; the results keep the last good query.
    public func setLiveSearch(_ query: String) throws {
        do {
            try connection.readWrite { txn in try searchResults.setQuery(query, in: txn) }
        } catch let error as CanopyError where error.code == .invalidArgument {
            throw RemindersError(error.message)
        }
    }

    // MARK: Writing

    /// The key of a calendar named `name`, creating it (with the next colour) when there is none.
    func calendarKey(forName name: String, in txn: ReadWriteTransaction) throws -> String {
        let existing = try txn.keys(inCollection: Schema.calendars.name)
        for key in existing where try txn.object(forKey: key, in: Schema.calendars)?.name.lowercased() == name.lowercased() {
            return key
        }
        var key = Self.slug(name)
        var suffix = 2
        while existing.contains(key) { key = "\(Self.slug(name))-\(suffix)"; suffix += 1 }
        let palette: [TerminalColor] = [.green, .magenta, .yellow, .cyan, .red, .blue]
        try txn.set(EventCalendar(name: name, colour: palette[existing.count % palette.count]), forKey: key, in: Schema.calendars)
        return key
    }

    static func slug(_ name: String) -> String {
        let slug = String(name.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "-" })
        return slug.isEmpty ? "calendar" : slug
    }

    /// The next item ID ("1", "2", ...), counted in the database.
    func nextID(in txn: ReadWriteTransaction) throws -> String {
        let next = Int(try txn.object(forKey: "next-id", in: Schema.meta) ?? "1") ?? 1
        try txn.set(String(next + 1), forKey: "next-id", in: Schema.meta)
        return String(next)
    }

    /// Adds an event; returns its ID.
    /// - Throws: ``RemindersError`` for a blank title or calendar name, an end before the start, or a blank tag or one
    ///   with a control character (see ``Schema/normalizedTag(_:)``); nothing is written.
    public func addEvent(_ title: String, start: Date, end: Date, calendar: String, location: String? = nil, notes: String? = nil,
                         tags: [String] = []) throws -> String {
        try Self.checkTitle(title)
        try Self.checkCalendarName(calendar)
        guard end >= start else { throw RemindersError("the event ends before it starts; give an --end after --start") }
        let tags = try Self.checkTags(tags)
        return try connection.readWrite { txn in
            let id = try nextID(in: txn)
            let key = try calendarKey(forName: calendar, in: txn)
            try txn.set(Event(title: title, start: start, end: end, calendar: key, location: location, notes: notes, tags: tags),
                        forKey: id, in: Schema.events)
            return id
        }
    }

    /// Adds a reminder; returns its ID.
    public func addReminder(_ title: String, due: Date?, priority: Int, calendar: String, flagged: Bool = false, tags: [String] = []) throws -> String {
        try Self.checkTitle(title)
        try Self.checkCalendarName(calendar)
        guard (0...3).contains(priority) else { throw RemindersError("priority must be 0 (none) to 3 (high), not \(priority)") }
        let tags = try Self.checkTags(tags)
        return try connection.readWrite { txn in
            let id = try nextID(in: txn)
            let key = try calendarKey(forName: calendar, in: txn)
            try txn.set(Reminder(title: title, due: due, priority: priority, calendar: key, flagged: flagged, tags: tags), forKey: id, in: Schema.reminders)
            return id
        }
    }

    /// The tags as stored (see ``Schema/normalizedTag(_:)``), duplicates dropped, in the order given.
    /// - Throws: ``RemindersError`` for a blank tag or one with a control character.
    static func checkTags(_ tags: [String]) throws -> [String] {
        var result: [String] = []
        for text in tags {
            guard let tag = Schema.normalizedTag(text) else {
                throw RemindersError("the tag '\(Format.printable(text))' is blank or holds a control character; give tags with something to read")
            }
            if !result.contains(tag) { result.append(tag) }
        }
        return result
    }

    /// Replaces the tags of the event or reminder `id` (an empty list removes them all).
    /// - Throws: ``RemindersError`` for a blank tag or one with a control character, or an unknown ID; nothing is
    ///   written.
    public func setTags(_ id: String, _ tags: [String]) throws {
        let tags = try Self.checkTags(tags)
        switch try item(id) {
        case .event(_, var event):
            event.tags = tags
            try connection.readWrite { try $0.set(event, forKey: id, in: Schema.events) }
        case .reminder(_, var reminder):
            reminder.tags = tags
            try connection.readWrite { try $0.set(reminder, forKey: id, in: Schema.reminders) }
        }
    }

    /// Refuses a title (or, with `what`, a calendar name) that shows nothing: empty, blank, only newlines.
    static func checkTitle(_ title: String, what: String = "title") throws {
        guard !title.trimmingCharacters(in: .whitespacesAndNewlines.union(.controlCharacters)).isEmpty else {
            throw RemindersError("the \(what) is blank; give one with something to read")
        }
    }

    static func checkCalendarName(_ name: String) throws { try checkTitle(name, what: "calendar name") }

    /// Marks the reminder `id` done (or open again).
    public func setDone(_ id: String, done: Bool = true) throws {
        guard case .reminder(_, var reminder) = try item(id) else {
            throw RemindersError("#\(id) is an event; only reminders can be done (`reminders delete \(id)` removes an event)")
        }
        reminder.done = done
        try connection.readWrite { try $0.set(reminder, forKey: id, in: Schema.reminders) }
    }

    /// Changes an item: its title, its date (an event keeps its duration), its calendar.
    public func edit(_ id: String, title: String? = nil, date: Date? = nil, calendar: String? = nil) throws {
        if let title { try Self.checkTitle(title) }
        if let calendar { try Self.checkCalendarName(calendar) }
        let item = try item(id)
        try connection.readWrite { txn in
            let calendarKey = try calendar.map { try self.calendarKey(forName: $0, in: txn) }
            switch item {
            case .event(_, var event):
                if let title { event.title = title }
                if let date {
                    let duration = event.end.timeIntervalSince(event.start)
                    event.start = date
                    event.end = date.addingTimeInterval(duration)
                }
                if let calendarKey { event.calendar = calendarKey }
                try txn.set(event, forKey: id, in: Schema.events)
            case .reminder(_, var reminder):
                if let title { reminder.title = title }
                if let date { reminder.due = date }
                if let calendarKey { reminder.calendar = calendarKey }
                try txn.set(reminder, forKey: id, in: Schema.reminders)
            }
        }
    }

    /// Moves an item to the same time on the next day after today (`t` in the TUI).
    public func moveToTomorrow(_ id: String, now: Date) throws {
        let item = try item(id)
        var calendar = Foundation.Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let time = item.date.map { calendar.dateComponents([.hour, .minute], from: $0) } ?? DateComponents(hour: 9, minute: 0)
        let tomorrow = calendar.date(byAdding: .day, value: 1, to: calendar.startOfDay(for: now)) ?? now
        let date = calendar.date(bySettingHour: time.hour ?? 9, minute: time.minute ?? 0, second: 0, of: tomorrow) ?? tomorrow
        try edit(id, date: date)
    }

    /// Deletes an item.
    public func delete(_ id: String) throws {
        let item = try item(id)
        try connection.readWrite { txn in
            switch item {
            case .event: _ = try txn.remove(key: id, in: Schema.events)
            case .reminder: _ = try txn.remove(key: id, in: Schema.reminders)
            }
        }
    }

    /// Adds a calendar; returns its key.
    public func addCalendar(_ name: String, colour: TerminalColor?) throws -> String {
        try Self.checkCalendarName(name)
        guard try calendarKey(named: name) == nil else { throw RemindersError("a calendar named '\(name)' exists already") }
        return try connection.readWrite { txn in
            let key = try calendarKey(forName: name, in: txn)
            if let colour, var calendar = try txn.object(forKey: key, in: Schema.calendars) {
                calendar.colour = colour
                try txn.set(calendar, forKey: key, in: Schema.calendars)
            }
            return key
        }
    }

    /// Renames a calendar or changes its colour, and touches every event and reminder of it in the same commit, so
    /// that the agenda's next changeset updates every row that shows the calendar.
    ///
    /// The views group and sort by the items' own fields, so a calendar change doesn't move any row; but the rows
    /// show the calendar's name and colour (read by the cells through the data source's pinned transaction), so they
    /// must be redrawn. Touching them makes them updates in the changeset. The rows are found through the
    /// `by-calendar` view, whose groups start with the calendar's key: only that calendar's rows are read.
    /// - Returns: the number of rows touched.
    @discardableResult
    public func changeCalendar(_ name: String, newName: String? = nil, colour: TerminalColor? = nil) throws -> Int {
        if let newName { try Self.checkCalendarName(newName) }
        guard let key = try calendarKey(named: name) else {
            throw RemindersError("no calendar is named '\(name)'; `reminders calendars` lists them")
        }
        if let newName, newName.lowercased() != name.lowercased(), try calendarKey(named: newName) != nil {
            throw RemindersError("a calendar named '\(newName)' exists already")
        }
        return try connection.readWrite { txn in
            guard var calendar = try txn.object(forKey: key, in: Schema.calendars) else { return 0 }
            if let newName { calendar.name = newName }
            if let colour { calendar.colour = colour }
            try txn.set(calendar, forKey: key, in: Schema.calendars)
            let view = try txn.view("by-calendar")
            var touched = 0
            for group in try view.groups() where group.hasPrefix(key + " ") {
                for id in try view.rowIDs(inGroup: group) {
                    if try txn.touchObject(forKey: id.key, inCollection: id.collection) { touched += 1 }
                }
            }
            return touched
        }
    }

    /// Deletes the calendar named `name` when no event or reminder is in it (they would show its key instead of a
    /// name); the last calendar stays, since new items need one.
    /// - Throws: ``RemindersError`` when there is no such calendar, it still has items (how many, and what to do), or
    ///   it is the last one.
    public func deleteCalendar(_ name: String) throws {
        guard let key = try calendarKey(named: name) else {
            throw RemindersError("no calendar is named '\(name)'; `reminders calendars` lists them")
        }
        try connection.readWrite { txn in
            let view = try txn.view("by-calendar")
            var items = 0
            for group in try view.groups() where group.hasPrefix(key + " ") { items += try view.rowIDs(inGroup: group).count }
            guard items == 0 else {
                throw RemindersError("the calendar '\(name)' still has \(Plural.count(items, "item")); move them (`reminders edit ID --calendar OTHER`) or delete them first")
            }
            guard try txn.keys(inCollection: Schema.calendars.name).count > 1 else {
                throw RemindersError("'\(name)' is the last calendar; add another before deleting it")
            }
            _ = try txn.remove(key: key, in: Schema.calendars)
        }
    }
}
