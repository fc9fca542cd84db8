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
        abstract: "The agenda, interactive: six lists that follow every change (this process's or another's); ? lists the keys, q quits.",
        discussion: """
            Lists: 1 agenda, 2 overdue, 3 by calendar, 4 focus, 5 search, 6 by tag (events and open reminders under each of \
            their tags).

            Keys: / search (the results follow each key; Enter or Esc ends typing); ↑/↓/PgUp/PgDn/Home/End select; space \
            done; d delete (y confirms); t tomorrow; # edit the tags (commas between; none removes them); r rename the \
            row's calendar; f focus on/off; [ and ] move up/down in focus; ? the keys of the list shown; q quit.
            """)
    @OptionGroup var options: DatabaseOptions

    func run(in context: RemindersContext) throws {
        guard context.isTerminal, context.inputIsTerminal else {
            throw RemindersError("`reminders tui` needs a terminal; use `reminders watch` or `reminders list` in scripts")
        }
        let store = try options.open(context)
        try LiveAgenda(store: store, context: context, interactive: true, exitAfter: nil).run()
    }
}

/// The live agenda of `watch` and `tui`: six segments (the agenda, overdue reminders, the agenda by calendar, the
/// focus list, the live search results, events and open reminders by tag — an item under each of its tags) over one
/// terminal list, run by a `TerminalRunner`. The screen changes only through the changesets of commits (this
/// process's or another's), pushed by the data sources; in `tui`, keys write through the store.
final class LiveAgenda {
    typealias Segments = SegmentedDatasource<AgendaList.Source, TerminalListView>
    let store: RemindersStore
    let context: RemindersContext
    let interactive: Bool
    let exitAfter: Int?
    let list: TerminalListView
    let segments: [AgendaList]
    let segmented: Segments
    /// The item `d` asked about, until the next key answers.
    var pendingDelete: AgendaItem?
    /// The calendar `r` is renaming and the name typed so far.
    var rename: (calendar: String, text: String)?
    /// The item `#` is tagging and its tags as typed so far (comma-separated).
    var tagging: (item: AgendaItem, text: String)?
    /// The search typed after `/`, while the prompt is open.
    var searchText: String?
    /// The text last typed at the search prompt (its query adds a `*`: see ``asYouTypeQuery(_:)``), to show it again
    /// when `/` reopens the prompt.
    var lastTypedSearch = ""
    /// The segment of the overdue reminders.
    static let overdueSegment = 1
    /// The segment of the focus list.
    static let focusSegment = 3
    /// The segment of the live search results.
    static let searchSegment = 4
    /// The segment of the items by tag.
    static let byTagSegment = 5

    init(store: RemindersStore, context: RemindersContext, interactive: Bool, exitAfter: Int?) throws {
        self.store = store
        self.context = context
        self.interactive = interactive
        self.exitAfter = exitAfter
        let size = context.terminalSize ?? (context.width, 24)
        let list = TerminalListView(width: size.columns, height: max(3, size.lines - 2), colour: context.colour)
        self.list = list
        let segments = try [
            ViewMappings(view: "agenda", groupFilter: { _ in true }),
            try store.overdueMappings(now: context.now),
            ViewMappings(view: "by-calendar", groupFilter: { _ in true }),
            ViewMappings(groups: [Schema.focus], view: Schema.focus),
            ViewMappings(groups: [Schema.searchGroup], view: store.searchResults.name),
            ViewMappings(view: "by-tag", groupFilter: { _ in true }),
        ].map { try AgendaList(store: store, mappings: $0, now: context.now, list: list, attach: false) }
        self.segments = segments
        segmented = try Segments(segments: zip(["Agenda", "Overdue", "By calendar", "Focus", "Search", "By tag"], segments).map { ($0, $1.dataSource) },
                                 container: list)
        list.dataSource = segmented
        list.marksChanges = true
    }

    func run() throws {
        if context.isTerminal { try runOnScreen() } else { try runAsLog() }
    }

    /// Not a terminal: print the agenda, then each changeset in words as it comes (woken by commits, no polling).
    func runAsLog() throws {
        let agenda = segments[0]
        for line in try agenda.allLines() { context.print(line.trimmingTrailingSpaces()) }
        context.print("Watching \(store.database.path) for changes (Ctrl-C stops).")
        let wakeup = agenda.dataSource.wakeup
        var seen = 0
        while exitAfter.map({ seen < $0 }) ?? true {
            wakeup.acknowledge()
            guard try agenda.dataSource.hasNewCommits() else {
                wakeup.waitForRing(timeout: wakeup.isActive ? nil : .milliseconds(200))
                continue
            }
            let changeset = try advance(agenda.dataSource)
            guard !changeset.isEmpty else { continue }
            seen += 1
            context.print("Snapshot \(changeset.toSnapshot):")
            for line in agenda.describe(changeset) { context.print(line) }
        }
    }

    func advance(_ source: AgendaList.Source) throws -> ViewChangeset {
        do {
            return try source.advance()
        } catch let error as SourceError where error.code == .invalidBatch {
            return .reload(from: source.snapshot, mappings: source.mappings)
        }
    }

    /// The title line: the segments, the one shown in brackets, and the keys.
    var title: String {
        let tabs = zip(1..., segmented.segments).map { index, segment in
            index - 1 == segmented.selectedIndex ? "[\(index) \(segment.title)]" : "\(index) \(segment.title)"
        }
        // Short enough for 80 columns: every key is on the status line (``keysHelp``), shown at the start and on `?`.
        return tabs.joined(separator: " ") + (interactive ? " · ? keys · q quit" : " · live · q quits")
    }

    /// The keys of the segment shown, the most useful first (a narrow terminal cuts the end): the status line at the
    /// start, on `?`, and when a segment is chosen.
    var keysHelp: String {
        guard interactive else { return "1-6 lists · ↑/↓/PgUp/PgDn scroll · q quits" }
        if segmented.selectedIndex == Self.focusSegment {
            return "[ and ] move the selected reminder up/down · f takes it out · space done · ↑/↓ select · 1-6 lists · q quit"
        }
        return "↑/↓ select · space done · d delete · t tomorrow · # tags · f focus · r rename calendar · / search · 1-6 lists · q quit"
    }

    /// What an empty segment says: what would be there, and how to put something there.
    var emptyText: String {
        switch segmented.selectedIndex {
        case Self.overdueSegment: return "Nothing overdue."
        case Self.focusSegment:
            return interactive ? "Nothing in focus: select a reminder in 1, 2, 3 or 6 and press f." : "Nothing in focus: `reminders focus add ID` adds a reminder."
        case Self.searchSegment:
            return interactive ? "No match: press / and type words of titles, places, notes or tags (milk* for words starting with milk)."
                : "No match: `reminders search WORDS` searches from the command line."
        case Self.byTagSegment:
            return interactive ? "Nothing tagged: select an event or reminder in 1, 2 or 3 and press #." : "Nothing tagged: `reminders edit ID --tag NAME` tags an item."
        default: return "Nothing on the agenda: `reminders add event` or `reminders add reminder` (another terminal will do) adds to it."
        }
    }

    /// Shows the segment chosen: its title, what it says when empty, its keys.
    func showSegment(_ runner: TerminalRunner) {
        runner.title = title
        runner.emptyText = emptyText
        runner.status = keysHelp
    }

    /// A terminal: the runner draws, waits for keys, resizes and commits, and restores the terminal however it ends.
    func runOnScreen() throws {
        let runner = TerminalRunner(list: list, title: title, write: context.output)
        list.showsSelection = interactive
        showSegment(runner)
        runner.follow(segmented)
        runner.interceptKey = { [unowned self] key, runner in
            list.clearMarks()
            return try intercept(key, runner)
        }
        for (index, _) in segmented.segments.enumerated() {
            runner.bind(.character(Character("\(index + 1)"))) { [unowned self] runner in
                try segmented.selectSegment(index)
                showSegment(runner)
            }
        }
        runner.bind(.character("?")) { [unowned self] runner in runner.status = keysHelp }
        if interactive {
            runner.bind(.character(" ")) { [unowned self] runner in
                guard let item = try selectedItem() else { return }
                guard case .reminder = item else { runner.status = "Events can't be done; d deletes."; return }
                try store.setDone(item.id)
                runner.status = "Done: \(item.title)."
            }
            runner.bind(.character("d")) { [unowned self] runner in
                guard let item = try selectedItem() else { return }
                pendingDelete = item
                runner.status = "Delete \"\(item.title)\" (#\(item.id))? y deletes, any other key keeps it."
            }
            runner.bind(.character("t")) { [unowned self] runner in
                guard let item = try selectedItem() else { return }
                try store.moveToTomorrow(item.id, now: context.now)
                runner.status = "Moved \(item.title) to tomorrow."
            }
            runner.bind(.character("/")) { [unowned self] runner in
                try segmented.selectSegment(Self.searchSegment)
                showSegment(runner)
                var current = try store.connection.read { txn in try store.searchResults.query(in: txn)?.text } ?? ""
                if current == Self.asYouTypeQuery(lastTypedSearch) { current = lastTypedSearch }
                searchText = current
                runner.status = searchPrompt(current, problem: nil)
            }
            runner.bind(.character("f")) { [unowned self] runner in try toggleFocus(runner) }
            runner.bind(.character("[")) { [unowned self] runner in try moveInFocus(by: -1, runner) }
            runner.bind(.character("]")) { [unowned self] runner in try moveInFocus(by: 1, runner) }
            runner.bind(.character("r")) { [unowned self] runner in
                guard let item = try selectedItem() else { return }
                let name = try store.calendars().first { $0.key == item.calendar }?.calendar.name ?? item.calendar
                rename = (name, "")
                runner.status = "Rename calendar '\(name)' to: ▏"
            }
            runner.bind(.character("#")) { [unowned self] runner in
                guard let item = try selectedItem() else { return }
                // The prompt separates tags by commas: a tag holding one would come back as two.
                guard !item.tags.contains(where: { $0.contains(",") }) else {
                    runner.status = "A tag of \(item.title) holds a comma; `reminders edit \(item.id) --tag …` changes them."
                    return
                }
                tagging = (item, item.tags.joined(separator: ", "))
                runner.status = tagsPrompt(item, item.tags.joined(separator: ", "))
            }
        }
        var seen = 0
        runner.didApplyPushes = { [exitAfter] runner in
            seen += 1
            if let exitAfter, seen >= exitAfter { runner.stop() }
        }
        let outcome = try runner.run()
        if case .signal = outcome { throw ExitCode(outcome.exitStatus) }
    }

    /// `f`: puts the selected reminder in focus (at the end), or takes it out.
    func toggleFocus(_ runner: TerminalRunner) throws {
        guard let item = try selectedItem() else { return }
        guard case .reminder = item else { runner.status = "Only reminders go in focus."; return }
        if try store.focusIDs().contains(item.id) {
            try store.removeFromFocus(item.id)
            runner.status = "Out of focus: \(item.title)."
        } else {
            let (position, count) = try store.addToFocus(item.id)
            runner.status = "In focus, at \(position) of \(count): \(item.title)."
        }
    }

    /// `[` and `]`: in the focus segment, moves the selected row up or down by one, through the data source's
    /// ``ViewDatasource/commitManualMove(from:to:)`` (refused when the list changed since the screen's snapshot). The
    /// commit's changeset moves the row on screen, and the selection with it.
    func moveInFocus(by offset: Int, _ runner: TerminalRunner) throws {
        let focus = segments[Self.focusSegment].dataSource
        guard segmented.selectedIndex == Self.focusSegment else { runner.status = "Press 4 for the focus list, then [ and ] reorder it."; return }
        guard let path = list.selectedIndexPath else { return }
        let destination = ViewIndexPath(section: path.section, row: path.row + offset)
        guard destination.row >= 0, destination.row < focus.numberOfItems(inSection: path.section) else { return }
        try focus.commitManualMove(from: path, to: destination)
        runner.status = "Moved to \(destination.row + 1)."
    }

    /// The item of the selected row, or `nil`.
    func selectedItem() throws -> AgendaItem? {
        guard let path = list.selectedIndexPath else { return nil }
        return try segmented.item(at: path)
    }

    /// The status line of the search prompt.
    /// The query searched for while `text` is typed: the word being typed is a prefix (`pl` already finds "plan"),
    /// unless it ends in `*` or a quote, or an open quote makes it part of a phrase.
    static func asYouTypeQuery(_ text: String) -> String {
        guard let last = text.last, last.isLetter || last.isNumber else { return text }
        guard text.filter({ $0 == "\"" }).count % 2 == 0 else { return text }
        return text + "*"
    }

    func searchPrompt(_ text: String, problem: String?) -> String {
        Self.promptLine("Search: ", text, hint: problem.map { "  (\($0))" } ?? "  (Enter or Esc ends typing)", width: list.width)
    }

    /// A prompt's status line, `label`, `text` and the cursor, then `hint` when it fits: text too long for `width`
    /// keeps its end, where the cursor is (`Search: …d of a long query▏`), so typing and erasing show; the status line
    /// cuts only what follows.
    static func promptLine(_ label: String, _ text: String, hint: String, width: Int) -> String {
        let line = label + text + "▏"
        let room = width - DisplayWidth.of(label) - 2  // the "…" and the cursor
        if DisplayWidth.of(line) <= width || room <= 0 {
            return DisplayWidth.of(line + hint) <= width ? line + hint : line
        }
        var kept: [Character] = []
        var used = 0
        for character in text.reversed() {
            let characterWidth = DisplayWidth.of(character)
            guard used + characterWidth <= room else { break }
            used += characterWidth
            kept.append(character)
        }
        return label + "…" + String(kept.reversed()) + "▏"
    }

    /// A key typed at the search prompt: the results follow each change (a commit, so the list animates, and other
    /// processes' writes keep updating them).
    func typeSearch(_ key: Key, _ text: String, _ runner: TerminalRunner) throws {
        var text = text
        switch key {
        case .enter, .escape:
            searchText = nil
            let count = try store.connection.read { txn in try txn.view(store.searchResults.name).count() }
            runner.status = text.isEmpty ? "Search cleared." : "Search: \(text) · \(count) match\(count == 1 ? "" : "es") · / edits it"
            return
        case .character(let character) where character == "\u{7F}" || character == "\u{08}":
            if !text.isEmpty { text.removeLast() }
        case .character(let character):
            text.append(character)
        default:
            return
        }
        searchText = text
        lastTypedSearch = text
        do {
            try store.setLiveSearch(Self.asYouTypeQuery(text))
            runner.status = searchPrompt(text, problem: nil)
        } catch let error as RemindersError {
            // A query being typed (an open quote, a lone *) keeps the last results until it parses.
            runner.status = searchPrompt(text, problem: error.message)
        }
    }

    /// What a key does at a one-line prompt (rename, tags): Enter submits the text, Esc cancels, Backspace erases, a
    /// character is typed; other keys leave the text as it is.
    enum PromptInput: Equatable {
        case edited(String)
        case submitted(String)
        case cancelled

        init(_ key: Key, text: String) {
            var text = text
            switch key {
            case .enter: self = .submitted(text); return
            case .escape: self = .cancelled; return
            case .character(let character) where character == "\u{7F}" || character == "\u{08}": if !text.isEmpty { text.removeLast() }
            case .character(let character): text.append(character)
            default: break
            }
            self = .edited(text)
        }
    }

    /// The status line of the tags prompt of `item`.
    func tagsPrompt(_ item: AgendaItem, _ text: String) -> String {
        Self.promptLine("Tags of '\(item.title)' (commas between): ", text, hint: "", width: list.width)
    }

    /// A key at the tags prompt: Enter replaces the item's tags with those typed (none removes them), Esc keeps them.
    func typeTags(_ key: Key, _ current: (item: AgendaItem, text: String), _ runner: TerminalRunner) throws {
        switch PromptInput(key, text: current.text) {
        case .edited(let text):
            tagging = (current.item, text)
            runner.status = tagsPrompt(current.item, text)
        case .cancelled:
            tagging = nil
            runner.status = "Tags kept."
        case .submitted(let text):
            tagging = nil
            let tags = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            do {
                try store.setTags(current.item.id, tags)
                let stored = try store.item(current.item.id).tags
                runner.status = stored.isEmpty ? "\(current.item.title) has no tag now." : "Tagged \(current.item.title):\(AgendaList.tagsText(stored))."
            } catch let error as RemindersError {
                runner.status = "Tags kept: \(error.message)"
            }
        }
    }

    /// The keys of the delete question, the rename and tags prompts and the search prompt; returns whether the key was
    /// theirs.
    func intercept(_ key: Key, _ runner: TerminalRunner) throws -> Bool {
        if let text = searchText {
            try typeSearch(key, text, runner)
            return true
        }
        if let item = pendingDelete {
            pendingDelete = nil
            if key == .character("y") || key == .character("Y") {
                try store.delete(item.id)
                runner.status = "Deleted \(item.title)."
            } else {
                runner.status = "Kept \(item.title)."
            }
            return true
        }
        if let current = tagging {
            try typeTags(key, current, runner)
            return true
        }
        guard let current = rename else { return false }
        switch PromptInput(key, text: current.text) {
        case .submitted(let text):
            rename = nil
            let newName = text.trimmingCharacters(in: .whitespaces)
            guard !newName.isEmpty else { runner.status = "Rename cancelled."; return true }
            let count = try store.changeCalendar(current.calendar, newName: newName)
            runner.status = "Renamed \(current.calendar) to \(newName) (\(Plural.count(count, "row")))."
        case .cancelled:
            rename = nil
            runner.status = "Rename cancelled."
        case .edited(let text):
            rename = (current.calendar, text)
            runner.status = Self.promptLine("Rename calendar '\(current.calendar)' to: ", text, hint: "", width: list.width)
        }
        return true
    }
}
