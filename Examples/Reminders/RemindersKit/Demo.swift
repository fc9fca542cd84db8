import ArgumentParser
import Canopy
import CanopySource
import Foundation

struct Demo: ContextualCommand {
    static let configuration = CommandConfiguration(
        abstract: "A tour: a fresh database, two weeks of items, then edits with the agenda and each changeset printed.",
        usage: "reminders demo [--db <db>]",
        discussion: "--db names a folder for the demo's new database (default: a new temporary folder); it must hold no database yet.")
    // The root's `--db` (see DatabaseOptions); hidden here, since its help names the tool's default folder, not the demo's.
    @OptionGroup(visibility: .hidden) var options: DatabaseOptions

    func run(in context: RemindersContext) throws {
        let path = options.db ?? FileManager.default.temporaryDirectory.appendingPathComponent("reminders-demo-\(UUID().uuidString.prefix(8))").path
        guard !(try RemindersStore.exists(at: path)) else { throw RemindersError("'\(path)' holds a database already; the demo starts from a fresh one") }
        try DemoScript(path: path, context: context).run()
    }
}

/// The scripted tour `reminders demo` (and `make demo`) prints.
struct DemoScript {
    let path: String
    let context: RemindersContext

    func say(_ text: String = "") { context.print(text) }

    /// The command line that does `arguments` on the demo's database, as it runs when pasted (from the package's
    /// folder): `swift run reminders <arguments> --db '<path>'`.
    func command(_ arguments: String) -> String {
        "swift run reminders \(arguments) --db \(Self.shellQuoted(path))"
    }

    /// `text` quoted for a POSIX shell when it needs it.
    static func shellQuoted(_ text: String) -> String {
        let plain = text.allSatisfy { $0.isLetter || $0.isNumber || "/._-+:@%".contains($0) }
        return plain && !text.isEmpty ? text : "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    func pause() {
        if context.demoPause > .zero { Thread.sleep(forTimeInterval: Double(context.demoPause.components.attoseconds) / 1e18 + Double(context.demoPause.components.seconds)) }
    }

    func run() throws {
        let store = try RemindersStore(path: path, timeZone: context.timeZone)
        say("Canopy demo: an agenda of events and reminders, kept in a Canopy database.")
        say("Database: \(path)")
        say("(Look at it later with `\(command("list"))`, or `mdb_stat -a \(Self.shellQuoted(path))`.)")
        say()

        let seeded = try seed(store)
        say("1. Seeded \(seeded) events and reminders over two weeks, in 3 calendars, in one write transaction.")
        say("   The `agenda` view groups them by day and sorts each day by time; it is kept up to date in every write.")
        let days = (0..<3).map { Schema.day(of: context.now.addingTimeInterval(Double($0) * 86_400), in: context.timeZone) }
        let agenda = try AgendaList(store: store, mappings: ViewMappings(groups: days, view: "agenda"), now: context.now,
                                    width: min(context.width, 78), height: 10, colour: context.colour)
        let total = try store.connection.read { txn in try txn.view("agenda").count() }
        say("   \(total) rows in \(try store.connection.read { try $0.view("agenda").numberOfGroups() }) days. The first three days, as a terminal list over the view:")
        say()
        show(agenda)
        pause()

        let today = Schema.day(of: context.now, in: context.timeZone)
        let todays = try store.connection.read { txn in try txn.view("agenda").rowIDs(inGroup: today) }
        let tomorrows = try store.connection.read { txn in try txn.view("agenda").rowIDs(inGroup: days[1]) }
        let dates = DateInput(now: context.now, timeZone: context.timeZone)

        try step(2, "Add a reminder for today at 18:00", command: command("add reminder \"Buy flowers\" --due \"today 18:00\" --priority 2 --calendar Home"),
                 agenda: agenda) {
            _ = try store.addReminder("Buy flowers", due: try dates.parse("today 18:00"), priority: 2, calendar: "Home")
        }
        if let reminder = todays.first(where: { $0.collection == Schema.reminders.name }) {
            let title = try store.item(reminder.key).title
            try step(3, "Complete \"\(title)\": done reminders leave the agenda", command: command("done \(reminder.key)"), agenda: agenda) {
                try store.setDone(reminder.key)
            }
        }
        if let event = todays.first(where: { $0.collection == Schema.events.name }) {
            let title = try store.item(event.key).title
            try step(4, "Move \"\(title)\" to tomorrow at 16:00: a move between sections", command: command("edit \(event.key) --to \"tomorrow 16:00\""),
                     agenda: agenda) {
                try store.edit(event.key, date: try dates.parse("tomorrow 16:00"))
            }
        }
        if let event = tomorrows.last(where: { $0.collection == Schema.events.name }) {
            let title = try store.item(event.key).title
            try step(5, "Delete \"\(title)\"", command: command("delete \(event.key)"), agenda: agenda) {
                try store.delete(event.key)
            }
        }
        try step(6, "Rename the calendar Work to Office: every row that shows it is updated", command: command("calendars rename Work Office"),
                 agenda: agenda) {
            let touched = try store.changeCalendar("Work", newName: "Office")
            say("   (one commit: the calendar object, plus a touch of its \(touched == 1 ? "1 event or reminder" : "\(touched) events and reminders"), so the rows that show its name update)")
        }
        say("That's it. Each change was one commit; the observer turned each commit into a changeset of index paths")
        say("(section and row inserts, deletes, moves and updates) that the terminal list applied as one checked batch.")
        say("Try it yourself (`list --by-tag` shows the events and reminders under each of their tags):")
        say("  " + command("list"))
        say("  " + command("list --by-tag"))
        say("  " + command("tui"))
        say("and, in another terminal, while the tui runs:")
        say("  " + command("add reminder \"Call Ada\" --due \"today 20:00\""))
    }

    func step(_ number: Int, _ title: String, command: String, agenda: AgendaList, _ write: () throws -> Void) throws {
        say("\(number). \(title)")
        say("   $ \(command)")
        try write()
        let changeset = try agenda.dataSource.advance()
        say("   Changeset, snapshot \(changeset.fromSnapshot) → \(changeset.toSnapshot):")
        let lines = agenda.describe(changeset)
        for line in lines.isEmpty ? ["  (nothing shown changed)"] : lines { say("  " + line) }
        say()
        show(agenda)
        pause()
    }

    func show(_ agenda: AgendaList) {
        do {
            for line in try agenda.allLines() { say("    " + line.trimmingTrailingSpaces()) }
        } catch {
            say("    (could not render: \(error))")
        }
        say()
    }

    /// About 50 items over 14 days from today, the same for every run of the same day.
    func seed(_ store: RemindersStore) throws -> Int {
        let home = try store.addCalendar("Home", colour: .green)
        let work = try store.addCalendar("Work", colour: .magenta)
        let fitness = try store.addCalendar("Fitness", colour: .yellow)
        var calendar = Foundation.Calendar(identifier: .gregorian)
        calendar.timeZone = context.timeZone
        let start = calendar.startOfDay(for: context.now)
        func at(_ day: Int, _ hour: Int, _ minute: Int = 0) -> Date {
            start.addingTimeInterval(Double(day) * 86_400 + Double(hour) * 3600 + Double(minute) * 60)
        }
        let chores = ["Pay the electricity bill", "Book a haircut", "Water the plants", "Return library books", "Call the plumber",
                      "Buy a birthday card", "Renew passport", "Back up the laptop", "Take out recycling", "Order printer ink"]
        let meetings = ["Design review", "1:1 with Sam", "Planning", "Customer call", "Retro"]
        let places = ["Room 3", "Zoom", "Café Luna"]
        var count = 0
        try store.connection.readWrite { txn in
            func add(_ object: Event) throws { try txn.set(object, forKey: try store.nextID(in: txn), in: Schema.events); count += 1 }
            func add(_ object: Reminder) throws { try txn.set(object, forKey: try store.nextID(in: txn), in: Schema.reminders); count += 1 }
            for day in 0..<14 {
                let weekday = calendar.component(.weekday, from: at(day, 12))
                let workday = (2...6).contains(weekday)
                if workday {
                    try add(Event(title: "Standup", start: at(day, 9, 30), end: at(day, 9, 45), calendar: work, location: "Zoom"))
                    if day % 2 == 0 {
                        let meeting = meetings[day % meetings.count]
                        try add(Event(title: meeting, start: at(day, 14), end: at(day, 15), calendar: work,
                                      location: places[day % places.count], tags: meeting == "Customer call" ? ["work", "clients"] : ["work"]))
                    }
                }
                if day % 3 == 1 { try add(Event(title: "Gym", start: at(day, 7), end: at(day, 8), calendar: fitness)) }
                if day % 4 == 0 {
                    try add(Event(title: "Dinner with Ana", start: at(day, 19, 30), end: at(day, 21), calendar: home, location: "Café Luna", tags: ["friends"]))
                }
                if day % 7 == 5 { try add(Event(title: "Long run", start: at(day, 8), end: at(day, 9, 30), calendar: fitness, tags: ["health"])) }
                if day < chores.count {
                    try add(Reminder(title: chores[day], due: at(day, 17), priority: day % 4, calendar: day % 3 == 0 ? work : home,
                                     tags: chores[day].hasPrefix("Pay") ? ["bills"] : []))
                }
                if day % 5 == 0 { try add(Reminder(title: "Stretch", due: at(day, 21), calendar: fitness)) }
                if day % 2 == 1 { try add(Reminder(title: "Read 20 pages", due: at(day, 22), calendar: home)) }
                if day == 6 || day == 12 { try add(Reminder(title: "Call mum", due: at(day, 18, 30), priority: 1, calendar: home)) }
                if day == 9 { try add(Reminder(title: "Pay rent", due: at(day, 10), priority: 3, calendar: home, tags: ["bills"])) }
            }
            try add(Reminder(title: "Plan the summer holiday", due: nil, calendar: home))
        }
        return count
    }
}
