import ArgumentParser
import Canopy
import CanopySource
import CanopyTerminal
import Foundation

struct Watch: ContextualCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the agenda and update it live as changes are committed (by this or any other process). q quits.")
    @OptionGroup var options: DatabaseOptions
    @Option(help: .hidden) var exitAfter: Int?

    func run(in context: RemindersContext) throws {
        let store = try options.open(context)
        try LiveAgenda(store: store, context: context, interactive: false, exitAfter: exitAfter).run()
    }
}

struct TUI: ContextualCommand {
    static let configuration = CommandConfiguration(
        commandName: "tui",
        abstract: "The agenda, interactive: ↑/↓/PgUp/PgDn/Home/End select, space done, d delete, t tomorrow, r rename calendar, q quit.")
    @OptionGroup var options: DatabaseOptions

    func run(in context: RemindersContext) throws {
        guard context.isTerminal, context.inputIsTerminal else {
            throw RemindersError("`reminders tui` needs a terminal; use `reminders watch` or `reminders list` in scripts")
        }
        let store = try options.open(context)
        try LiveAgenda(store: store, context: context, interactive: true, exitAfter: nil).run()
    }
}

/// The live agenda of `watch` and `tui`: the screen changes only through the changesets of commits (this process's
/// or another's), applied to the terminal list; in `tui`, keys write through the store.
final class LiveAgenda {
    let store: RemindersStore
    let context: RemindersContext
    let interactive: Bool
    let exitAfter: Int?
    let agenda: AgendaList
    var status = ""
    var prompt: (label: String, text: String, calendar: String)?
    var markedAt: ContinuousClock.Instant?

    init(store: RemindersStore, context: RemindersContext, interactive: Bool, exitAfter: Int?) throws {
        self.store = store
        self.context = context
        self.interactive = interactive
        self.exitAfter = exitAfter
        let size = context.terminalSize ?? (context.width, 24)
        agenda = try AgendaList(store: store, mappings: ViewMappings(view: "agenda", groupFilter: { _ in true }), now: context.now,
                                width: size.columns, height: max(3, size.lines - 2), colour: context.colour)
        agenda.list.showsSelection = interactive
        agenda.list.marksChanges = true
    }

    func run() throws {
        if context.isTerminal { try runOnScreen() } else { try runAsLog() }
    }

    /// Not a terminal: print the agenda, then each changeset in words as it comes.
    func runAsLog() throws {
        for line in try agenda.allLines() { context.print(line) }
        context.print("Watching \(store.database.path) for changes (Ctrl-C stops).")
        var seen = 0
        while exitAfter.map({ seen < $0 }) ?? true {
            if try agenda.dataSource.hasNewCommits() {
                let changeset = try advance()
                guard !changeset.isEmpty else { continue }
                seen += 1
                context.print("Snapshot \(changeset.toSnapshot):")
                for line in agenda.describe(changeset) { context.print(line) }
            } else {
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
    }

    /// A terminal: draw in place; redraw on changes, keys and resizes.
    func runOnScreen() throws {
        let screen = TerminalScreen(write: context.output)
        let saved = TerminalDevice.enterRawMode()
        screen.enter()
        defer {
            screen.leave()
            if let saved { TerminalDevice.restore(saved) }
        }
        let clock = ContinuousClock()
        var seen = 0
        while exitAfter.map({ seen < $0 }) ?? true {
            if let size = TerminalDevice.size(fileDescriptor: 1) {
                agenda.list.width = size.columns
                agenda.list.height = max(3, size.lines - 2)
            }
            screen.draw(try frame())
            guard let keys = TerminalDevice.readKeys(timeoutMilliseconds: 50) else { return }
            for key in keys {
                if try !handle(key) { return }
            }
            if try agenda.dataSource.hasNewCommits() {
                if !(try advance()).isEmpty {
                    seen += 1
                    markedAt = clock.now
                }
            }
            if let markedAt, clock.now - markedAt > .milliseconds(1500) {
                agenda.list.clearMarks()
                self.markedAt = nil
            }
        }
    }

    func advance() throws -> ViewChangeset {
        do {
            return try agenda.dataSource.advance()
        } catch let error as SourceError where error.code == .invalidBatch {
            status = "A change could not be applied row by row; reloaded. (\(error.message))"
            return .reload(from: agenda.dataSource.snapshot, mappings: agenda.dataSource.mappings)
        }
    }

    func frame() throws -> [String] {
        let width = agenda.list.width
        let title = interactive
            ? "Agenda — ↑↓ select · space done · d delete · t tomorrow · r rename calendar · q quit"
            : "Agenda — live (q quits) · \(store.database.path)"
        var lines = [TerminalStyle(bold: true).apply(to: DisplayWidth.fit(title, to: width), colour: agenda.list.colour)]
        let body = try agenda.list.render()
        lines += body
        if agenda.dataSource.numberOfSections == 0 { lines.append(DisplayWidth.fit("Nothing on the agenda yet.", to: width)) }
        while lines.count < agenda.list.height + 1 { lines.append(String(repeating: " ", count: width)) }
        let footer = prompt.map { "\($0.label): \($0.text)▏" } ?? status
        lines.append(TerminalStyle(dim: prompt == nil).apply(to: DisplayWidth.fit(footer, to: width), colour: agenda.list.colour))
        return lines
    }

    /// Handles a key; returns `false` to quit.
    func handle(_ key: Key) throws -> Bool {
        if var current = prompt {
            switch key {
            case .enter:
                prompt = nil
                let newName = current.text.trimmingCharacters(in: .whitespaces)
                if !newName.isEmpty { perform { let count = try store.changeCalendar(current.calendar, newName: newName); return "Renamed \(current.calendar) to \(newName) (\(count) rows)." } }
            case .escape:
                prompt = nil
                status = "Rename cancelled."
            case .character(let character) where character == "\u{7F}" || character == "\u{08}":
                if !current.text.isEmpty { current.text.removeLast() }
                prompt = current
            case .character(let character):
                current.text.append(character)
                prompt = current
            default:
                break
            }
            return true
        }
        if agenda.list.handle(key) { return true }
        guard case .character(let character) = key else { return true }
        if character == "q" { return false }
        guard interactive, let path = agenda.list.selectedIndexPath, let item = try agenda.dataSource.item(at: path) else { return true }
        switch character {
        case " ":
            if case .reminder = item { perform { try store.setDone(item.id); return "Done: \(item.title)." } } else { status = "Events can't be done; d deletes." }
        case "d":
            perform { try store.delete(item.id); return "Deleted \(item.title)." }
        case "t":
            perform { try store.moveToTomorrow(item.id, now: context.now); return "Moved \(item.title) to tomorrow." }
        case "r":
            let name = try store.calendars().first { $0.key == item.calendar }?.calendar.name ?? item.calendar
            prompt = ("Rename calendar '\(name)' to", "", name)
        default:
            break
        }
        return true
    }

    /// Runs a write; the screen changes only when its changeset comes back through the observer.
    func perform(_ write: () throws -> String) {
        do { status = try write() } catch { status = "error: \(error)" }
    }
}
