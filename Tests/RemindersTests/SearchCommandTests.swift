import Canopy
import CanopyTestSupport
import Foundation
import RemindersKit
import Testing

@Suite("reminders search", .serialized, .ownThread)
struct SearchCommandTests {
    @Test("search: ranked, accents and case folded, prefixes and phrases; highlighted only at a terminal; bad queries are errors")
    func searchCommand() throws {
        try withDatabasePath { path, _ in
            #expect(reminders(["add", "reminder", "Buy oat milk", "--db", path]).status == 0)
            #expect(reminders(["add", "event", "Crème brûlée class", "--start", "tomorrow 18:00", "--location", "Café Olé", "--db", path]).status == 0)
            #expect(reminders(["add", "reminder", "Milkshake with milk", "--db", path]).status == 0)
            let prefix = reminders(["search", "milk*", "--db", path])
            #expect(prefix.status == 0)
            #expect(prefix.out.split(separator: "\n").map { String($0.prefix(3)) } == ["#3 ", "#1 "], "more matches rank first: \(prefix.out)")
            #expect(!prefix.out.contains("\u{1B}"), "no escapes when not a terminal")
            let folded = reminders(["search", "CREME", "cafe", "--db", path])
            #expect(folded.out.contains("#2  Crème brûlée class") && folded.out.contains("Café Olé"), "\(folded.out)")
            #expect(reminders(["search", "\"milk oat\"", "--db", path]).out.contains("No event or reminder matches"))
            let bad = reminders(["search", "\"oat", "--db", path])
            #expect(bad.status == 1)
            #expect(bad.err.contains("is not closed"), "\(bad.err)")
            #expect(reminders(["search", "!!!", "--db", path]).err.contains("no word to search for"))

            let out = Output()
            let context = RemindersContext(environment: [:], now: fixedNow, timeZone: TimeZone(identifier: "UTC") ?? .current,
                                           output: out.append, errorOutput: { _ in }, isTerminal: true, terminalSize: (80, 24))
            #expect(RemindersCLI.run(["search", "oat", "--db", path], context: context) == 0)
            #expect(out.text.contains("Buy \u{1B}[1;33moat\u{1B}[0m milk"), "\(out.text)")
        }
    }

    /// A new user tagged a meeting `work`, searched for work and found nothing: the index had titles, locations and
    /// notes only.
    @Test("search finds events and reminders by their tags (work, #work, wor*), shows the tags that matched; a retag re-indexes")
    func searchByTag() throws {
        try withDatabasePath { path, _ in
            #expect(reminders(["add", "event", "Team sync", "--start", "tomorrow 10:00", "--tag", "work", "--tag", "meetings", "--db", path]).status == 0)
            #expect(reminders(["add", "reminder", "Send slides", "--tag", "work", "--db", path]).status == 0)
            #expect(reminders(["add", "reminder", "Homework", "--db", path]).status == 0)
            let work = reminders(["search", "work", "--db", path])
            #expect(work.status == 0 && work.out.split(separator: "\n").filter { !$0.hasPrefix(" ") }.map { String($0.prefix(3)) }.sorted() == ["#1 ", "#2 "], "\(work.out)")
            #expect(work.out.contains("#1  Team sync  · event Tue 24 Nov 10:00\n      #work #meetings\n"), "\(work.out)")
            #expect(reminders(["search", "#work", "--db", path]).out == work.out)
            #expect(reminders(["search", "meet*", "--db", path]).out.hasPrefix("#1  Team sync"))
            #expect(reminders(["edit", "1", "--tag", "travel", "--db", path]).status == 0)
            #expect(reminders(["search", "meetings", "--db", path]).out.contains("No event or reminder matches"))
            #expect(reminders(["search", "travel", "--db", path]).out.hasPrefix("#1  Team sync"))
        }
    }

    @Test("tui in tmux: / searches as you type, and the results follow another process's writes", .timeLimit(.minutes(1)))
    func liveSearchInTmux() throws {
        try withDatabasePath { path, _ in
            #expect(reminders(["add", "reminder", "Buy oat milk", "--db", path]).status == 0)
            #expect(reminders(["add", "reminder", "Call the bank", "--db", path]).status == 0)
            let tui = try TUISession(database: path, columns: 120, lines: 20)
            defer { tui.stop() }
            func screen() -> String { (try? tui.screen()) ?? "" }
            #expect(try tui.waitUntil { $0.contains("Call the bank") }, "screen: \(screen())")
            try tui.keys("/")
            #expect(try tui.waitUntil { $0.contains("[5 Search]") && $0.contains("Search: ▏") }, "screen: \(screen())")
            // Typing narrows the results, the word being typed a prefix: "b" matches both (buy, bank), "ba" only the
            // bank; an explicit "*" is kept as typed.
            try tui.keys("b")
            #expect(try tui.waitUntil { $0.contains("Buy oat milk") && $0.contains("Call the bank") }, "screen: \(screen())")
            try tui.keys("a")
            #expect(try tui.waitUntil { $0.contains("Call the bank") && !$0.contains("Buy oat milk") }, "screen: \(screen())")
            try tui.keys("Enter")
            #expect(try tui.waitUntil { $0.contains("Search: ba · 1 match") }, "screen: \(screen())")
            // Reopened, the prompt shows what was typed (not the query's added "*"); "*" typed by hand stays.
            try tui.keys("/")
            #expect(try tui.waitUntil { $0.contains("Search: ba▏") }, "screen: \(screen())")
            try tui.keys("*", "Enter")
            #expect(try tui.waitUntil { $0.contains("Search: ba* · 1 match") }, "screen: \(screen())")
            // Another process writes a matching reminder: it joins the results.
            let binary = try #require(LiveTests.remindersBinary, "the reminders executable was not built")
            let added = try LiveTests.shell(binary, ["add", "reminder", "Bake bread", "--db", path])
            #expect(added.status == 0, "\(added.output)")
            #expect(try tui.waitUntil { $0.contains("Bake bread") && $0.contains("Call the bank") }, "screen: \(screen())")
            try tui.keys("q")
        }
    }

    /// Found typing a long search in `reminders tui`: the status line kept the start of the text and cut the end, so
    /// what was typed next (and the cursor) never showed, and erasing looked like doing nothing.
    @Test("tui in tmux: a search longer than the status line shows its end, where the cursor is, as it is typed and erased",
          .timeLimit(.minutes(1)))
    func longSearchShowsItsEnd() throws {
        try withDatabasePath { path, _ in
            #expect(reminders(["add", "reminder", "Call the bank", "--db", path]).status == 0)
            let tui = try TUISession(database: path, columns: 40, lines: 12)
            defer { tui.stop() }
            func status() -> String { (try? tui.statusLine()) ?? "" }
            #expect(try tui.waitUntil { $0.contains("[ ] Call") }, "screen: \((try? tui.screen()) ?? "")")
            try tui.keys("/")
            #expect(try tui.waitUntil(tui.statusLine) { $0.hasPrefix("Search: ▏") }, "status: \(status())")
            // 60 characters (past the 40 columns), ending in "bank" and an é: the end shows, after an ellipsis.
            try tui.keys("-l", String(repeating: "x ", count: 27) + "bankés")
            #expect(try tui.waitUntil(tui.statusLine) { $0.hasPrefix("Search: …") && $0.hasSuffix("bankés▏") }, "status: \(status())")
            try tui.keys("BSpace", "BSpace")
            #expect(try tui.waitUntil(tui.statusLine) { $0.hasPrefix("Search: …") && $0.hasSuffix("x bank▏") }, "status: \(status())")
            try tui.keys("Escape", "q")
        }
    }
}
