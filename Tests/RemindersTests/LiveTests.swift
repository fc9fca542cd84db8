import Canopy
import CanopyTestSupport
import Foundation
import RemindersKit
import Synchronization
import Testing

@Suite("reminders, live", .serialized, .ownThread)
struct LiveTests {
    @Test("Renaming a calendar is a changeset of updates for every row that shows it", .timeLimit(.minutes(1)))
    func renameUpdatesRows() throws {
        try withDatabasePath { path, _ in
            let store = try RemindersStore(path: path, timeZone: TimeZone(identifier: "UTC") ?? .current)
            let day = fixedNow.addingTimeInterval(3600)
            for title in ["A", "B", "C"] { _ = try store.addEvent(title, start: day, end: day, calendar: title == "B" ? "Home" : "Work") }
            let agenda = try AgendaList(store: store, mappings: ViewMappings(view: "agenda", groupFilter: { _ in true }), now: fixedNow,
                                        width: 60, height: 10, colour: false)
            #expect(try agenda.allLines().filter { $0.contains("Work") }.count == 2)
            try store.changeCalendar("Work", newName: "Office")
            let changeset = try agenda.dataSource.advance()
            #expect(changeset.rowChanges.map(\.kind) == [.update, .update])
            #expect(agenda.list.lastBatchError == nil)
            let lines = try agenda.allLines()
            #expect(lines.filter { $0.contains("Office") }.count == 2 && !lines.contains { $0.contains("Work") })
        }
    }

    @Test("watch (not a terminal) prints the agenda, then the changeset of a commit", .timeLimit(.minutes(1)))
    func watchLog() throws {
        try withDatabasePath { path, _ in
            #expect(reminders(["add", "reminder", "First", "--due", "today 10:00", "--db", path]).status == 0)
            let out = Output()
            let done = DispatchSemaphore(value: 0)
            let thread = Thread {
                let context = RemindersContext(environment: [:], now: fixedNow, timeZone: TimeZone(identifier: "UTC") ?? .current,
                                               output: out.append, errorOutput: out.append)
                _ = RemindersCLI.run(["watch", "--db", path, "--exit-after", "1"], context: context)
                done.signal()
            }
            thread.start()
            // Wait for the watcher to be up (it prints its banner), then write.
            let deadline = Date().addingTimeInterval(20)
            while !out.text.contains("Watching"), Date() < deadline { usleep(10_000) }
            #expect(reminders(["add", "reminder", "Second", "--due", "today 11:00", "--db", path]).status == 0)
            #expect(done.wait(timeout: .now() + 20) == .success)
            #expect(out.text.contains("[ ] First"))
            #expect(out.text.contains("+ row [0, 1]: Second (#2) added"), "\(out.text)")
        }
    }

    @Test("watch survives another process writing without its views (canopy import): the views are caught up and the row shows",
          .timeLimit(.minutes(1)))
    func watchSurvivesImport() throws {
        let canopy = try #require(builtExecutable(named: "canopy"), "the canopy executable was not built")
        try withDatabasePath { path, directory in
            #expect(reminders(["add", "reminder", "First", "--due", "today 10:00", "--db", path]).status == 0)
            // A reminder as `canopy export` prints it, stored byte for byte by `canopy import`, which has no views.
            let bytes = try BinaryCodec().encode(Reminder(title: "Imported", due: fixedNow.addingTimeInterval(4 * 3600), calendar: "personal"))
            let line = "{\"collection\":\"reminders\",\"key\":\"77\",\"codec\":\"binary\",\"object\":null,\"objectBase64\":\"\(Data(bytes).base64EncodedString())\"}\n"
            let input = directory.appending("import.jsonl")
            try Data(line.utf8).write(to: URL(fileURLWithPath: input))
            let out = Output()
            let done = DispatchSemaphore(value: 0)
            let status = Mutex<Int32?>(nil)
            let thread = Thread {
                let context = RemindersContext(environment: [:], now: fixedNow, timeZone: TimeZone(identifier: "UTC") ?? .current,
                                               output: out.append, errorOutput: out.append)
                let code = RemindersCLI.run(["watch", "--db", path, "--exit-after", "1"], context: context)
                status.withLock { $0 = code }
                done.signal()
            }
            thread.start()
            let deadline = Date().addingTimeInterval(20)
            while !out.text.contains("Watching"), Date() < deadline { usleep(10_000) }
            let importer = try ChildProcess(canopy, ["import", path, "--input", input])
            _ = importer.remainingLines()
            #expect(importer.waitForExit() == 0)
            #expect(done.wait(timeout: .now() + 20) == .success)
            #expect(status.withLock { $0 } == 0, "\(out.text)")
            #expect(out.text.contains("Imported (#77) added"), "\(out.text)")
        }
    }

    /// Found trying the tui as a new user at 80 columns: the title's keys were cut before `q quit` (at 60 columns none
    /// showed), an empty focus or search segment said "Nothing here yet." with no hint of how to fill it, and the
    /// search results' header was the group's name, "matches".
    @Test("tui at 80 columns: the title ends with ? keys · q quit, the status line lists the keys; empty segments say how to fill them; 6 shows tagged events; search results say their query; # edits tags",
          .timeLimit(.minutes(1)))
    func tuiForANewUser() throws {
        try withDatabasePath { path, _ in
            #expect(reminders(["add", "event", "Team sync", "--start", "today 10:00", "--tag", "work", "--db", path]).status == 0)
            #expect(reminders(["add", "reminder", "Buy milk", "--db", path]).status == 0)
            let tui = try TUISession(database: path, columns: 80, lines: 16)
            defer { tui.stop() }
            func waitFor(_ what: String, _ condition: ([String]) -> Bool) throws {
                let lines = { (screen: String) in screen.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) }
                if try tui.waitUntil({ condition(lines($0)) }) { return }
                Issue.record("waited for \(what); screen:\n\((try? tui.screen()) ?? "")")
            }
            try waitFor("the title and the keys") { lines in
                lines.first?.split(separator: " ").joined(separator: " ") == "[1 Agenda] 2 Overdue 3 By calendar 4 Focus 5 Search 6 By tag · ? keys · q quit"
                    && lines.contains { $0.hasPrefix("↑/↓ select · space done · d delete") }
            }
            try tui.keys("4")
            try waitFor("the empty focus list's hint") { $0.contains { $0.hasPrefix("Nothing in focus: select a reminder in 1, 2, 3 or 6 and press f.") } }
            try tui.keys("6")
            try waitFor("the event under its tag") { lines in
                lines.count > 2 && lines[1].hasPrefix("#work") && lines[2].contains("Mon 23 Nov 10:00–11:00  Team sync #work")
            }
            try tui.keys("5")
            try waitFor("the empty search's hint") { $0.contains { $0.hasPrefix("No match: press / and type") } }
            try tui.keys("/", "s", "y")
            try waitFor("the results of the query") { lines in lines.count > 2 && lines[1].hasPrefix("Matches for sy*") && lines[2].contains("Team sync") }
            try tui.keys("Enter", "?")
            try waitFor("the keys again") { $0.contains { $0.hasPrefix("↑/↓ select · space done") } }
            // # edits the selected item's tags, comma-separated; 6 shows the event under its new tag.
            try tui.keys("1", "Home", "#")
            try waitFor("the tags prompt") { $0.contains { $0.hasPrefix("Tags of 'Team sync' (commas between): work▏") } }
            try tui.keys("-l", ", clients")
            try tui.keys("Enter")
            try waitFor("the new tags") { $0.contains { $0.hasPrefix("Tagged Team sync: #work #clients.") } }
            try tui.keys("6")
            try waitFor("the event under its new tag") { lines in lines.count > 2 && lines[1].hasPrefix("#clients") && lines[2].contains("Team sync #work #clients") }
            // Esc leaves the tags prompt and the rename prompt (the same editing) without a change; Enter renames.
            try tui.keys("#", "x", "Escape")
            try waitFor("the tags kept") { $0.contains { $0.hasPrefix("Tags kept.") } }
            try tui.keys("r", "X", "BSpace", "Escape")
            try waitFor("the rename cancelled") { $0.contains { $0.hasPrefix("Rename cancelled.") } }
            try tui.keys("r")
            try tui.keys("-l", "Office")
            try tui.keys("Enter")
            try waitFor("the renamed calendar") { $0.contains { $0.hasPrefix("Renamed Personal to Office (2 rows).") } }
            try tui.keys("q")
        }
    }

    static var remindersBinary: String? { builtExecutable(named: "reminders") }

    /// Runs a command through `sh` with its output in a temporary file (a tmux server started by `new-session` keeps
    /// inherited descriptors open, so a pipe would never reach end of file).
    @discardableResult
    static func shell(_ executable: String, _ arguments: [String], captureOutput: Bool = true) throws -> (status: Int32, output: String) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("reminders-shell-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        func quote(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let command = ([executable] + arguments).map(quote).joined(separator: " ") + " </dev/null >\(quote(file)) 2>&1"
        // posix_spawn + waitpid rather than Foundation.Process, whose exit monitoring never saw tmux's client exit.
        var pid: pid_t = 0
        let words: [String] = ["/bin/sh", "-c", command]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        guard posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ) == 0 else { throw RemindersError("could not run \(executable)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1, errno == EINTR {}
        let output = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
        return ((status >> 8) & 0xFF, output)
    }

    @Test("tui in a pseudo-terminal (tmux) shows an item added by a second process",
          .timeLimit(.minutes(1)))
    func tuiInTmux() throws {
        try withDatabasePath { path, _ in
            #expect(reminders(["add", "reminder", "Already there", "--due", "today 10:00", "--db", path]).status == 0)
            let tui = try TUISession(database: path, columns: 100, lines: 20)
            defer { tui.stop() }
            func screen() -> String { (try? tui.screen()) ?? "" }
            #expect(try tui.waitUntil { $0.contains("Already there") }, "screen: \(screen())")
            // A second process adds an item; the running tui picks up its commit.
            let binary = try #require(Self.remindersBinary, "the reminders executable was not built")
            let added = try Self.shell(binary, ["add", "reminder", "Call Ada", "--due", "today 23:00", "--db", path])
            #expect(added.status == 0, "\(added.output)")
            #expect(try tui.waitUntil { $0.contains("Call Ada") }, "screen: \(screen())")
            // Keys: select the first row and mark it done; it leaves the agenda through the changeset (the status line
            // says "Done: Already there.").
            try tui.keys("Home", "Space")
            #expect(try tui.waitUntil { !$0.contains("[ ] Already there") }, "screen: \(screen())")
            // d asks first: any key but y keeps the item, and the next key clears the status line.
            try tui.keys("Home", "d")
            #expect(try tui.waitUntil { $0.contains("Delete \"Call Ada\" (#2)? y deletes") }, "screen: \(screen())")
            try tui.keys("n")
            #expect(try tui.waitUntil { $0.contains("Kept Call Ada.") }, "screen: \(screen())")
            #expect(screen().contains("[ ] Call Ada"))
            try tui.keys("Down")
            #expect(try tui.waitUntil { !$0.contains("Kept Call Ada.") }, "the status line clears at the next key: \(screen())")
            try tui.keys("Home", "d", "y")
            #expect(try tui.waitUntil { $0.contains("Deleted Call Ada.") }, "screen: \(screen())")
            #expect(!screen().contains("[ ] Call Ada"))
            // Segments: 2 shows the overdue reminders, 1 the agenda again.
            try tui.keys("2")
            #expect(try tui.waitUntil { $0.contains("[2 Overdue]") }, "screen: \(screen())")
            try tui.keys("q")
        }
    }

    /// Found resizing the tui in tmux: after the window shrank the rows disappeared (only the title and the day's
    /// header were drawn again), and a key press brought back the selected row at its old width, wrapped.
    @Test("tui in tmux redraws every row at the new width when the terminal is resized", .timeLimit(.minutes(1)))
    func tuiRedrawsOnResize() throws {
        try withDatabasePath { path, _ in
            #expect(reminders(["add", "reminder", "Already there", "--due", "today 10:00", "--db", path]).status == 0)
            #expect(reminders(["add", "reminder", "Second one", "--due", "today 11:00", "--db", path]).status == 0)
            let tui = try TUISession(database: path, columns: 100, lines: 20)
            defer { tui.stop() }
            /// Both rows shown whole on one line each, ending with their ids.
            func rowsWhole(_ text: String) -> Bool {
                let lines = text.split(separator: "\n")
                return lines.contains { $0.contains("[ ] Already there") && $0.hasSuffix("#1") }
                    && lines.contains { $0.contains("[ ] Second one") && $0.hasSuffix("#2") }
            }
            #expect(try tui.waitUntil(rowsWhole), "screen: \((try? tui.screen()) ?? "")")
            for (columns, lines) in [(60, 12), (90, 16)] {
                try tui.resize(columns: columns, lines: lines)
                #expect(try tui.waitUntil(rowsWhole), "\(columns)x\(lines) screen: \((try? tui.screen()) ?? "")")
            }
            try tui.keys("q")
        }
    }
}
