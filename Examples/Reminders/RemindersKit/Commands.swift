import ArgumentParser
import Canopy
import CanopySource
import CanopyTerminal
import Foundation

/// A command that runs with a ``RemindersContext`` (so that tests can run it in-process).
protocol ContextualCommand: ParsableCommand {
    func run(in context: RemindersContext) throws
}

extension ContextualCommand {
    /// Runs with the live context.
    func run() throws { try run(in: .live()) }
}

/// The `--db` option every command takes, before or after the subcommand's name (`reminders --db D list` and
/// `reminders list --db D`): the root command declares it too, parses it wherever it is, and each subcommand's option
/// group gets the root's value (ArgumentParser hands an option group of a type already parsed to the commands below).
struct DatabaseOptions: ParsableArguments {
    @Option(name: .long, help: "The database folder (default: $XDG_DATA_HOME/reminders or ~/.local/share/reminders).")
    var db: String?

    /// Refuses `--db` given twice with different folders (`reminders --db A list --db B`): ArgumentParser would keep
    /// one of them silently, and a command run on the other database than the user meant changes the wrong agenda.
    /// The same folder twice, however written, is accepted. Arguments after `--` are values, not options.
    static func checkOneDatabase(in arguments: [String]) throws {
        var named: [String] = []
        var index = arguments.startIndex
        while index < arguments.endIndex, arguments[index] != "--" {
            let argument = arguments[index]
            if argument == "--db", arguments.index(after: index) < arguments.endIndex {
                index = arguments.index(after: index)
                named.append(arguments[index])
            } else if argument.hasPrefix("--db=") {
                named.append(String(argument.dropFirst("--db=".count)))
            }
            index = arguments.index(after: index)
        }
        // One folder written two ways (`/tmp/x` and `/tmp/x/`, `./x` and `x`) is one database.
        func folder(_ path: String) -> String { URL(fileURLWithPath: path).standardizedFileURL.path }
        var distinct: [String] = []
        for path in named where !distinct.contains(where: { folder($0) == folder(path) }) { distinct.append(path) }
        guard distinct.count > 1 else { return }
        throw ValidationError("--db names \(distinct.count) databases (\(distinct.joined(separator: ", "))): give it once")
    }

    /// Opens the store; for the default path, creates its parent folders.
    func open(_ context: RemindersContext, create: Bool = true) throws -> RemindersStore {
        let path = context.databasePath(db)
        if db == nil, create {
            // Private whatever the umask: the folders hold the user's agenda.
            try? FileManager.default.createDirectory(atPath: RemindersStore.parentDirectory(of: path), withIntermediateDirectories: true,
                                                     attributes: [.posixPermissions: 0o700])
        }
        return try RemindersStore(path: path, timeZone: context.timeZone, create: create)
    }
}

/// `reminders`: the root command.
public struct RemindersCommand: ParsableCommand {
    /// The command tree.
    public static let configuration = CommandConfiguration(
        commandName: "reminders",
        abstract: "Events and reminders in an agenda, on a Canopy database.",
        discussion: """
            Try `reminders demo` for a tour, then `reminders add event "Dentist" --start "tomorrow 10:00" --tag health`, \
            `reminders list` and `reminders tui`.

            --db names the database folder, before or after the subcommand (`reminders --db /tmp/x list`); \
            two different folders are refused.

            Exit codes: 0 success, 1 an error of the tool (such as an unknown ID), 2 usage.
            """,
        version: "reminders \(CanopyVersion.description)",
        subcommands: [Add.self, List.self, Search.self, Done.self, Edit.self, Delete.self, Calendars.self, Focus.self, Watch.self, TUI.self, Demo.self])

    /// `--db`, accepted before the subcommand too (`reminders --db D list`); the subcommands read this value.
    @OptionGroup var options: DatabaseOptions

    /// Creates the command.
    public init() {}
}

/// Runs `reminders` with arguments in a context and returns the exit status.
public enum RemindersCLI {
    /// Parses `arguments` (without the program name), runs the command, prints errors to the context's standard error.
    /// - Returns: 0 on success, 1 for an error of the tool, 2 for usage errors (as `canopy`), the status of an
    ///   `ExitCode` a command threw (128 + the signal when `tui` was ended by one).
    public static func run(_ arguments: [String], context: RemindersContext) -> Int32 {
        do {
            try DatabaseOptions.checkOneDatabase(in: arguments)
            var command = try RemindersCommand.parseAsRoot(arguments)
            if let contextual = command as? any ContextualCommand {
                try contextual.run(in: context)
            } else {
                try command.run()
            }
            return 0
        } catch let error as RemindersError {
            context.errorOutput("error: \(error.message)\n")
            return 1
        } catch let error as CanopyError {
            context.errorOutput("error: \(error)\n")
            return 1
        } catch let error as SourceError {
            context.errorOutput("error: \(error)\n")
            return 1
        } catch let exit as ExitCode {
            return exit.rawValue
        } catch {
            let message = RemindersCommand.fullMessage(for: error)
            let code = RemindersCommand.exitCode(for: error)
            if code == .success {
                context.output(message + "\n")
                return 0
            }
            context.errorOutput(message + "\n")
            return code == .validationFailure ? 2 : code.rawValue
        }
    }
}

// MARK: add

struct Add: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Add an event or a reminder.", subcommands: [AddEvent.self, AddReminder.self])
}

struct AddEvent: ContextualCommand {
    static let configuration = CommandConfiguration(commandName: "event", abstract: "Add an event.")
    @OptionGroup var options: DatabaseOptions
    @Argument(help: "What happens.") var title: String
    @Option(help: "When it starts: '2026-11-25 10:00', 'today 17:00', 'tomorrow', 'fri 9:30'.") var start: String
    @Option(help: "When it ends (default: an hour after the start).") var end: String?
    @Option(help: "The calendar (created when new).") var calendar: String = "Personal"
    @Option(help: "Where.") var location: String?
    @Option(help: "Notes.") var notes: String?
    @Option(name: .customLong("tag"), help: "A tag; repeat for several (`list --by-tag` shows the event under each).") var tags: [String] = []

    func run(in context: RemindersContext) throws {
        // Checked before the database is opened (or created); read again in the database's time zone.
        _ = try DateInput(now: context.now, timeZone: context.timeZone).parse(start)
        _ = try end.map { try DateInput(now: context.now, timeZone: context.timeZone).parse($0) }
        _ = try RemindersStore.checkTags(tags)
        let store = try options.open(context)
        let context = context.inZone(store.timeZone)
        let dates = DateInput(now: context.now, timeZone: context.timeZone)
        let startDate = try dates.parse(start)
        let endDate = try end.map { try dates.parse($0) } ?? startDate.addingTimeInterval(3600)
        let id = try store.addEvent(title, start: startDate, end: endDate, calendar: calendar, location: location, notes: notes, tags: tags)
        context.print("Added event #\(id): \(Format.printable(title)), \(Format.span(startDate, endDate, context))")
    }
}

struct AddReminder: ContextualCommand {
    static let configuration = CommandConfiguration(commandName: "reminder", abstract: "Add a reminder.")
    @OptionGroup var options: DatabaseOptions
    @Argument(help: "What to do.") var title: String
    @Option(help: "When it is due: '2026-11-25 10:00', 'today 17:00', 'tomorrow', 'fri 9:30'.") var due: String?
    @Option(help: "0 (none) to 3 (high).") var priority: Int = 0
    @Option(help: "The calendar (created when new).") var calendar: String = "Personal"
    @Flag(help: "Flag it (shown with a flag).") var flag = false
    @Option(name: .customLong("tag"), help: "A tag; repeat for several (`list --by-tag` shows the reminder under each).") var tags: [String] = []

    func run(in context: RemindersContext) throws {
        _ = try due.map { try DateInput(now: context.now, timeZone: context.timeZone).parse($0) }
        _ = try RemindersStore.checkTags(tags)
        let store = try options.open(context)
        let context = context.inZone(store.timeZone)
        let dueDate = try due.map { try DateInput(now: context.now, timeZone: context.timeZone).parse($0) }
        let id = try store.addReminder(title, due: dueDate, priority: priority, calendar: calendar, flagged: flag, tags: tags)
        context.print("Added reminder #\(id): \(Format.printable(title))\(dueDate.map { ", due \(Format.date($0, context))" } ?? "")")
    }
}

// MARK: list

struct List: ContextualCommand {
    static let configuration = CommandConfiguration(abstract: "Show the agenda: events and open reminders by day.")
    @OptionGroup var options: DatabaseOptions
    @Option(help: "Only this day ('today', 'fri', '2026-11-25').") var day: String?
    @Option(help: "Only this calendar.") var calendar: String?
    @Flag(help: "Only open reminders past due.") var overdue = false
    @Flag(help: "Events and open reminders by tag: an item shows under each of its tags.") var byTag = false
    @Option(help: "Only events and open reminders with this tag (implies --by-tag).") var tag: String?
    @Flag(help: "Print JSON instead of text.") var json = false

    func run(in context: RemindersContext) throws {
        let path = context.databasePath(options.db)
        guard try RemindersStore.exists(at: path) else {
            if json { context.print("{\"sections\":[]}") } else { context.print("Nothing yet: no database at \(path). Add something with `reminders add event` or `reminders add reminder`.") }
            return
        }
        if overdue, day != nil || calendar != nil { throw RemindersError("--overdue can't be combined with --day or --calendar") }
        let tagged = byTag || tag != nil
        if tagged, overdue || day != nil || calendar != nil { throw RemindersError("--by-tag and --tag can't be combined with --overdue, --day or --calendar") }
        let tagGroup = try tag.map { text in
            guard let tag = Schema.normalizedTag(text) else { throw RemindersError("the tag '\(Format.printable(text))' is blank or holds a control character") }
            return tag
        }
        _ = try day.map { try DateInput(now: context.now, timeZone: context.timeZone).parse($0) }
        let store = try options.open(context, create: false)
        let context = context.inZone(store.timeZone)
        let dayGroup = try day.map { Schema.day(of: try DateInput(now: context.now, timeZone: context.timeZone).parse($0), in: context.timeZone) }
        let mappings: ViewMappings
        if let tagGroup {
            mappings = ViewMappings(groups: [tagGroup], view: "by-tag")
        } else if tagged {
            mappings = ViewMappings(view: "by-tag", groupFilter: { _ in true })
        } else if overdue {
            mappings = try store.overdueMappings(now: context.now)
        } else if let calendar {
            guard let key = try store.calendarKey(named: calendar) else {
                throw RemindersError("no calendar is named '\(calendar)'; `reminders calendars` lists them")
            }
            mappings = ViewMappings(view: "by-calendar", groupFilter: { group in
                group.hasPrefix(key + " ") && (dayGroup == nil || group == "\(key) \(dayGroup ?? "")")
            })
        } else if let dayGroup {
            mappings = ViewMappings(groups: [dayGroup], view: "agenda")
        } else {
            mappings = ViewMappings(view: "agenda", groupFilter: { _ in true })
        }
        let agenda = try AgendaList(store: store, mappings: mappings, now: context.now, width: context.width, height: 10, colour: context.colour)
        if json {
            context.print(try JSONExport.agenda(agenda, store: store))
            return
        }
        if agenda.dataSource.numberOfSections == 0 {
            context.print(overdue ? "Nothing overdue." : tagGroup.map { "No event or open reminder is tagged #\(Format.printable($0))." }
                          ?? (tagged ? "No event or open reminder has a tag." : "Nothing on the agenda."))
            return
        }
        for line in try agenda.allLines() { context.print(context.isTerminal ? line : line.trimmingTrailingSpaces()) }
    }
}

// MARK: done, edit, delete

struct Done: ContextualCommand {
    static let configuration = CommandConfiguration(abstract: "Mark a reminder done (it leaves the agenda).")
    @OptionGroup var options: DatabaseOptions
    @Argument(help: "The reminder's ID.") var id: String
    @Flag(help: "Mark it open again instead.") var undo = false

    func run(in context: RemindersContext) throws {
        let store = try options.open(context, create: false)
        try store.setDone(id, done: !undo)
        context.print(undo ? "Reopened #\(id)." : "Done: #\(id).")
    }
}

struct Edit: ContextualCommand {
    static let configuration = CommandConfiguration(abstract: "Move, retitle, retag or change the calendar of an event or reminder.")
    @OptionGroup var options: DatabaseOptions
    @Argument(help: "The item's ID.") var id: String
    @Option(help: "A new title.") var title: String?
    @Option(name: [.customLong("to"), .customLong("date")], help: "A new date (an event keeps its duration).") var date: String?
    @Option(help: "Another calendar (created when new).") var calendar: String?
    @Option(name: .customLong("tag"), help: "Replace the item's tags with these (repeat for several).") var tags: [String] = []
    @Flag(help: "Remove every tag of the item.") var clearTags = false

    func run(in context: RemindersContext) throws {
        guard title != nil || date != nil || calendar != nil || !tags.isEmpty || clearTags else {
            throw RemindersError("nothing to change; give --title, --to, --calendar, --tag or --clear-tags")
        }
        if clearTags, !tags.isEmpty { throw RemindersError("--clear-tags can't be combined with --tag") }
        _ = try date.map { try DateInput(now: context.now, timeZone: context.timeZone).parse($0) }
        _ = try RemindersStore.checkTags(tags)
        let store = try options.open(context, create: false)
        let context = context.inZone(store.timeZone)
        let newDate = try date.map { try DateInput(now: context.now, timeZone: context.timeZone).parse($0) }
        if title != nil || newDate != nil || calendar != nil { try store.edit(id, title: title, date: newDate, calendar: calendar) }
        if !tags.isEmpty || clearTags { try store.setTags(id, tags) }
        context.print("Changed #\(id).")
    }
}

struct Delete: ContextualCommand {
    static let configuration = CommandConfiguration(abstract: "Delete an event or reminder.")
    @OptionGroup var options: DatabaseOptions
    @Argument(help: "The item's ID.") var id: String

    func run(in context: RemindersContext) throws {
        let store = try options.open(context, create: false)
        try store.delete(id)
        context.print("Deleted #\(id).")
    }
}

// MARK: calendars

struct Calendars: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List, add, rename, recolour or delete calendars.",
        subcommands: [CalendarList.self, CalendarAdd.self, CalendarRename.self, CalendarColour.self, CalendarDelete.self],
        defaultSubcommand: CalendarList.self)
}

struct CalendarList: ContextualCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the calendars.")
    @OptionGroup var options: DatabaseOptions

    func run(in context: RemindersContext) throws {
        let store = try options.open(context)
        for (key, calendar) in try store.calendars() {
            context.print(TerminalCell.layout([TerminalColumn(calendar.name, width: .fixed(16), style: TerminalStyle(foreground: calendar.colour)),
                                               TerminalColumn(calendar.colour.rawValue, width: .fixed(8)), TerminalColumn("(\(key))", width: .fixed(20))],
                                              width: 46, colour: context.colour).trimmingTrailingSpaces())
        }
    }
}

struct CalendarAdd: ContextualCommand {
    static let configuration = CommandConfiguration(commandName: "add", abstract: "Add a calendar.")
    @OptionGroup var options: DatabaseOptions
    @Argument(help: "Its name.") var name: String
    @Option(help: "Its colour: \(TerminalColor.allCases.map(\.rawValue).joined(separator: ", ")).") var colour: String?

    func run(in context: RemindersContext) throws {
        let parsed = try colour.map(parseColour)
        let store = try options.open(context)
        _ = try store.addCalendar(name, colour: parsed)
        context.print("Added calendar \(Format.printable(name)).")
    }
}

struct CalendarRename: ContextualCommand {
    static let configuration = CommandConfiguration(commandName: "rename", abstract: "Rename a calendar (every row showing it updates).")
    @OptionGroup var options: DatabaseOptions
    @Argument(help: "Its name now.") var name: String
    @Argument(help: "Its new name.") var newName: String

    func run(in context: RemindersContext) throws {
        let store = try options.open(context, create: false)
        let touched = try store.changeCalendar(name, newName: newName)
        context.print("Renamed \(Format.printable(name)) to \(Format.printable(newName)) (\(Plural.count(touched, "item"))).")
    }
}

struct CalendarColour: ContextualCommand {
    static let configuration = CommandConfiguration(commandName: "colour", abstract: "Change a calendar's colour.")
    @OptionGroup var options: DatabaseOptions
    @Argument(help: "The calendar.") var name: String
    @Argument(help: "The colour: \(TerminalColor.allCases.map(\.rawValue).joined(separator: ", ")).") var colour: String

    func run(in context: RemindersContext) throws {
        let parsed = try parseColour(colour)
        let store = try options.open(context, create: false)
        try store.changeCalendar(name, colour: parsed)
        context.print("\(name) is \(parsed.rawValue) now.")
    }
}

struct CalendarDelete: ContextualCommand {
    static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete an empty calendar (move or delete its items first).")
    @OptionGroup var options: DatabaseOptions
    @Argument(help: "The calendar.") var name: String

    func run(in context: RemindersContext) throws {
        let store = try options.open(context, create: false)
        try store.deleteCalendar(name)
        context.print("Deleted calendar \(Format.printable(name)).")
    }
}

func parseColour(_ text: String) throws -> TerminalColor {
    guard let colour = TerminalColor(rawValue: text.lowercased()) else {
        throw RemindersError("unknown colour '\(text)'; use one of \(TerminalColor.allCases.map(\.rawValue).joined(separator: ", "))")
    }
    return colour
}

/// "1 item", "2 items".
enum Plural {
    static func count(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var text = self
        while text.hasSuffix(" ") { text.removeLast() }
        return text
    }
}

/// Dates as the tool prints them.
enum Format {
    /// `text` safe for a terminal: control characters (an escape sequence in a title would be obeyed) shown escaped.
    static func printable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else { return text }
        return text.unicodeScalars.map { scalar in
            scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) ? "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}" : String(scalar)
        }.joined()
    }

    static func formatter(_ format: String, _ context: RemindersContext) -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_GB")
        formatter.timeZone = context.timeZone
        formatter.dateFormat = format
        return formatter
    }

    static func date(_ date: Date, _ context: RemindersContext) -> String {
        formatter("EEE d MMM HH:mm", context).string(from: date)
    }

    static func span(_ start: Date, _ end: Date, _ context: RemindersContext) -> String {
        let sameDay = Schema.day(of: start, in: context.timeZone) == Schema.day(of: end, in: context.timeZone)
        return "\(date(start, context))–\(sameDay ? formatter("HH:mm", context).string(from: end) : date(end, context))"
    }
}

/// The agenda as JSON: `{"sections": [{"group", "title", "items": [{"id", "kind", "title", ...}]}]}`.
enum JSONExport {
    struct Item: Encodable {
        var id: String
        var kind: String
        var title: String
        var calendar: String
        var start: Date?
        var end: Date?
        var due: Date?
        var done: Bool?
        var priority: Int?
        var flagged: Bool?
        var tags: [String]?
        var location: String?
    }
    struct Section: Encodable {
        var group: String
        var title: String
        var items: [Item]
    }
    struct Agenda: Encodable {
        var sections: [Section]
    }

    static func agenda(_ agenda: AgendaList, store: RemindersStore) throws -> String {
        let source = agenda.dataSource
        let names = Dictionary(try store.calendars().map { ($0.key, $0.calendar.name) }, uniquingKeysWith: { first, _ in first })
        var sections: [Section] = []
        for section in 0..<source.numberOfSections {
            var items: [Item] = []
            for row in 0..<source.numberOfItems(inSection: section) {
                guard let item = try source.item(at: ViewIndexPath(section: section, row: row)) else { continue }
                switch item {
                case .event(let id, let event):
                    items.append(Item(id: id, kind: "event", title: event.title, calendar: names[event.calendar] ?? event.calendar,
                                      start: event.start, end: event.end, tags: event.tags.isEmpty ? nil : event.tags, location: event.location))
                case .reminder(let id, let reminder):
                    items.append(Item(id: id, kind: "reminder", title: reminder.title, calendar: names[reminder.calendar] ?? reminder.calendar,
                                      due: reminder.due, done: reminder.done, priority: reminder.priority, flagged: reminder.flagged,
                                      tags: reminder.tags.isEmpty ? nil : reminder.tags))
                }
            }
            let group = source.group(forSection: section) ?? ""
            sections.append(Section(group: group, title: source.supplementaryText(kind: .header, inSection: section) ?? group, items: items))
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return String(decoding: try encoder.encode(Agenda(sections: sections)), as: UTF8.self)
    }
}
