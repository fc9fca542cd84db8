import ArgumentParser
import Canopy
import Foundation

/// The focus list: reminders in the order the user gives them, kept in a manual view (``ManualView``).
extension Schema {
    /// The focus list's view (and its one group).
    public static let focus = "focus"

    /// A manual view over reminders: `reminders focus add|move|remove` and the TUI's `f`, `[` and `]` edit it; a
    /// reminder deleted from the database leaves it.
    public static func focusView() -> View {
        ManualView.make(name: focus, collections: [reminders.name])
    }
}

extension RemindersStore {
    /// The IDs of the reminders in focus, in the user's order.
    public func focusIDs() throws -> [String] {
        try connection.read { txn in try txn.view(Schema.focus).rowIDs(inGroup: Schema.focus).map(\.key) }
    }

    /// Puts reminder `id` in focus at `position` (1-based; the end when `nil`); returns its position and the list's
    /// length.
    /// - Throws: ``RemindersError`` when there is no such reminder, it is an event, it is in focus already, or the
    ///   position is out of range; nothing is changed.
    @discardableResult
    public func addToFocus(_ id: String, at position: Int? = nil) throws -> (position: Int, count: Int) {
        guard case .reminder = try item(id) else { throw RemindersError("#\(id) is an event; only reminders go in focus") }
        return try connection.readWrite { txn in
            let list = try txn.manualList(Schema.focus)
            let count = try list.count()
            if let current = try txn.view(Schema.focus).position(ofKey: id, inCollection: Schema.reminders.name) {
                throw RemindersError("#\(id) is in focus already, at \(current.index + 1); `reminders focus move \(id) N` moves it")
            }
            let index = try Self.focusIndex(position ?? count + 1, count: count + 1)
            try list.insert(key: id, inCollection: Schema.reminders.name, at: index)
            return (index + 1, count + 1)
        }
    }

    /// Moves reminder `id` to `position` (1-based) of the focus list; returns the list's length.
    /// - Throws: ``RemindersError`` when it is not in focus or the position is out of range; nothing is changed.
    @discardableResult
    public func moveInFocus(_ id: String, to position: Int) throws -> Int {
        try connection.readWrite { txn in
            let list = try txn.manualList(Schema.focus)
            let count = try list.count()
            guard let current = try txn.view(Schema.focus).position(ofKey: id, inCollection: Schema.reminders.name) else {
                throw RemindersError("#\(id) is not in focus; `reminders focus add \(id)` adds it")
            }
            try list.move(from: current.index, to: try Self.focusIndex(position, count: count))
            return count
        }
    }

    /// Takes reminder `id` out of focus (it stays in the agenda).
    /// - Throws: ``RemindersError`` when it is not in focus.
    public func removeFromFocus(_ id: String) throws {
        try connection.readWrite { txn in
            guard try txn.manualList(Schema.focus).remove(key: id, inCollection: Schema.reminders.name) else {
                throw RemindersError("#\(id) is not in focus; `reminders focus` lists what is")
            }
        }
    }

    /// The 0-based index of a 1-based `position` among `count` places.
    static func focusIndex(_ position: Int, count: Int) throws -> Int {
        guard (1...max(1, count)).contains(position), count > 0 else {
            throw RemindersError("position \(position) is out of range: give 1 to \(max(1, count))")
        }
        return position - 1
    }
}

// MARK: focus

struct Focus: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A list of reminders in your own order: show it, add to it, reorder it, take from it.",
        discussion: "Positions count from 1. A reminder deleted from the database leaves the list; done ones stay (shown [x]) until removed.",
        subcommands: [FocusList.self, FocusAdd.self, FocusMove.self, FocusRemove.self],
        defaultSubcommand: FocusList.self)
}

struct FocusList: ContextualCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "Show the focus list, in its order.")
    @OptionGroup var options: DatabaseOptions

    func run(in context: RemindersContext) throws {
        let path = context.databasePath(options.db)
        guard try RemindersStore.exists(at: path) else {
            context.print("Nothing in focus: no database at \(path). Add a reminder with `reminders add reminder`, then `reminders focus add ID`.")
            return
        }
        let store = try options.open(context, create: false)
        let context = context.inZone(store.timeZone)
        let focus = try AgendaList(store: store, mappings: ViewMappings(groups: [Schema.focus], view: Schema.focus), now: context.now,
                                   width: context.width, height: 10, colour: context.colour)
        guard focus.dataSource.numberOfSections > 0 else {
            context.print("Nothing in focus. `reminders focus add ID` adds a reminder (`reminders list` shows the IDs).")
            return
        }
        for line in try focus.allLines() { context.print(context.isTerminal ? line : line.trimmingTrailingSpaces()) }
    }
}

struct FocusAdd: ContextualCommand {
    static let configuration = CommandConfiguration(commandName: "add", abstract: "Add a reminder to the focus list.")
    @OptionGroup var options: DatabaseOptions
    @Argument(help: "The reminder's ID.") var id: String
    // (Unconditional: "-1" is a position out of range, said so, rather than a missing value.)
    @Option(parsing: .unconditional, help: "Its position, from 1 (default: the end).") var at: Int?

    func run(in context: RemindersContext) throws {
        let store = try options.open(context, create: false)
        let (position, count) = try store.addToFocus(id, at: at)
        context.print("Added #\(id) to focus, at \(position) of \(count).")
    }
}

struct FocusMove: ContextualCommand {
    static let configuration = CommandConfiguration(
        commandName: "move", abstract: "Move a reminder to another position of the focus list.",
        usage: "reminders focus move [--db <db>] <id> <position>")
    @OptionGroup var options: DatabaseOptions
    @Argument(help: "The reminder's ID.") var id: String
    // (Captured as text, unrecognized dashes included: "-1" is a position out of range, said so, rather than an
    // unknown option and a missing position.)
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("Its new position, from 1.", valueName: "position"))
    var positionText: [String] = []

    /// The one position given, as a number.
    var position: Int {
        get throws {
            guard positionText.count == 1, let position = Int(positionText[0]) else {
                throw ValidationError(positionText.isEmpty
                    ? "Missing expected argument '<position>'"
                    : "give one position, a whole number from 1 (got \(positionText.joined(separator: " ")))")
            }
            return position
        }
    }

    func validate() throws { _ = try position }

    func run(in context: RemindersContext) throws {
        let store = try options.open(context, create: false)
        let position = try position
        let count = try store.moveInFocus(id, to: position)
        context.print("Moved #\(id) to \(position) of \(count).")
    }
}

struct FocusRemove: ContextualCommand {
    static let configuration = CommandConfiguration(commandName: "remove", abstract: "Take a reminder out of the focus list (it stays in the agenda).")
    @OptionGroup var options: DatabaseOptions
    @Argument(help: "The reminder's ID.") var id: String

    func run(in context: RemindersContext) throws {
        let store = try options.open(context, create: false)
        try store.removeFromFocus(id)
        context.print("Removed #\(id) from focus.")
    }
}
