import Canopy
import CanopyTestSupport
import Foundation
import RemindersKit
import Testing

/// `reminders focus`: a list of reminders in the user's order (a manual view), from the command line and in the TUI.
@Suite("Focus list", .ownThread)
struct FocusTests {
    /// The focus list's IDs as `reminders focus` prints them (the last column of each row).
    static func focusIDs(_ path: String) -> [String] {
        reminders(["focus", "--db", path]).out.split(separator: "\n").dropFirst().compactMap { line in
            line.split(separator: " ").last.flatMap { $0.hasPrefix("#") ? String($0.dropFirst()) : nil }
        }
    }

    @Test("add, move and remove keep the user's order; a deleted reminder leaves the list; it survives reopening")
    func commands() throws {
        try withDatabasePath { path, _ in
            for title in ["Buy milk", "Call Ada", "File taxes", "Water plants"] {
                #expect(reminders(["add", "reminder", title, "--db", path]).status == 0)
            }
            #expect(reminders(["focus", "--db", path]).out.contains("Nothing in focus."))
            #expect(reminders(["focus", "add", "1", "--db", path]).out == "Added #1 to focus, at 1 of 1.\n")
            #expect(reminders(["focus", "add", "3", "--db", path]).status == 0)
            #expect(reminders(["focus", "add", "2", "--at", "1", "--db", path]).out == "Added #2 to focus, at 1 of 3.\n")
            #expect(reminders(["focus", "add", "4", "--at", "3", "--db", path]).status == 0)
            #expect(Self.focusIDs(path) == ["2", "1", "4", "3"])
            #expect(reminders(["focus", "move", "3", "1", "--db", path]).out == "Moved #3 to 1 of 4.\n")
            #expect(reminders(["focus", "move", "2", "4", "--db", path]).status == 0)
            #expect(Self.focusIDs(path) == ["3", "1", "4", "2"])
            let printed = reminders(["focus", "--db", path]).out
            #expect(printed.hasPrefix("Focus\n"), "\(printed)")
            #expect(printed.contains("[ ] File taxes"), "\(printed)")
            // The list mixes days: a due reminder says which.
            #expect(reminders(["edit", "3", "--to", "2026-11-26 09:00", "--db", path]).status == 0)
            #expect(reminders(["focus", "--db", path]).out.contains("Thu 26 Nov 09:00  [ ] File taxes"))
            // Done reminders stay (shown done); deleted ones leave; removed ones stay in the agenda.
            #expect(reminders(["done", "4", "--db", path]).status == 0)
            #expect(reminders(["focus", "--db", path]).out.contains("[x] Water plants"))
            #expect(reminders(["delete", "1", "--db", path]).status == 0)
            #expect(Self.focusIDs(path) == ["3", "4", "2"])
            #expect(reminders(["focus", "remove", "3", "--db", path]).out == "Removed #3 from focus.\n")
            #expect(Self.focusIDs(path) == ["4", "2"])
            #expect(reminders(["list", "--db", path]).out.contains("File taxes"))
        }
    }

    @Test("Bad input is an error that names the problem, exits 1 (2 for usage), and changes nothing")
    func badInput() throws {
        try withDatabasePath { path, _ in
            #expect(reminders(["add", "reminder", "Buy milk", "--db", path]).status == 0)
            #expect(reminders(["add", "event", "Dentist", "--start", "today 10:00", "--db", path]).status == 0)
            #expect(reminders(["add", "reminder", "Loose", "--db", path]).status == 0)
            #expect(reminders(["focus", "add", "1", "--db", path]).status == 0)
            let before = try contents(of: path)
            let cases: [([String], Int32, String)] = [
                (["focus", "add", "2"], 1, "#2 is an event; only reminders go in focus"),
                (["focus", "add", "1"], 1, "#1 is in focus already, at 1"),
                (["focus", "add", "99"], 1, "no event or reminder has ID 99"),
                (["focus", "add", "3", "--at", "0"], 1, "position 0 is out of range: give 1 to 2"),
                (["focus", "add", "3", "--at", "3"], 1, "position 3 is out of range: give 1 to 2"),
                (["focus", "add", "3", "--at", "-1"], 1, "position -1 is out of range: give 1 to 2"),
                (["focus", "move", "1", "2"], 1, "position 2 is out of range: give 1 to 1"),
                (["focus", "move", "3", "1"], 1, "#3 is not in focus; `reminders focus add 3` adds it"),
                (["focus", "remove", "3"], 1, "#3 is not in focus"),
                (["focus", "move", "1"], 2, "Missing expected argument '<position>'"),
                (["focus", "move", "1", "first"], 2, "give one position, a whole number from 1 (got first)"),
                (["focus", "move", "1", "1", "2"], 2, "give one position, a whole number from 1 (got 1 2)"),
                // A negative position is a position (out of range), not an unknown option.
                (["focus", "move", "1", "-1"], 1, "position -1 is out of range: give 1 to 1"),
            ]
            for (arguments, status, message) in cases {
                let result = reminders(arguments + ["--db", path])
                #expect(result.status == status, "\(arguments): \(result.err)")
                #expect(result.err.contains(message), "\(arguments): \(result.err)")
            }
            #expect(try contents(of: path) == before)
            #expect(Self.focusIDs(path) == ["1"])
        }
    }

    @Test("A missing database: focus says so and creates nothing")
    func missingDatabase() throws {
        try withDatabasePath { path, _ in
            #expect(reminders(["focus", "--db", path]).out.contains("Nothing in focus: no database at"))
            #expect(!FileManager.default.fileExists(atPath: path))
            #expect(reminders(["focus", "add", "1", "--db", path]).status == 1)
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }

    /// Saw it fail before `[` and `]` were bound: the order on screen and in `reminders focus` stayed as added.
    @Test("tui: f puts the selected reminder in focus, 4 shows the list, [ and ] move the selected row, and the order persists",
          .timeLimit(.minutes(1)))
    func tuiMoves() throws {
        try withDatabasePath { path, _ in
            for title in ["Alpha", "Bravo", "Charlie"] {
                #expect(reminders(["add", "reminder", title, "--db", path]).status == 0)
                #expect(reminders(["focus", "add", String(["Alpha": 1, "Bravo": 2, "Charlie": 3][title] ?? 0), "--db", path]).status == 0)
            }
            #expect(reminders(["add", "reminder", "Delta", "--db", path]).status == 0)
            let tui = try TUISession(database: path, columns: 100, lines: 20)
            defer { tui.stop() }
            func waitFor(_ what: String, _ condition: (String) -> Bool) throws -> Bool {
                if try tui.waitUntil(condition) { return true }
                Issue.record("waited for \(what); screen:\n\((try? tui.screen()) ?? "")")
                return false
            }
            /// The titles of the rows on screen, top to bottom.
            func titles(_ text: String) -> [String] {
                text.split(separator: "\n").compactMap { line in ["Alpha", "Bravo", "Charlie", "Delta"].first { line.contains("] \($0)") } }
            }
            _ = try waitFor("the agenda") { $0.contains("Delta") }
            // In the agenda, Delta is the last row ("Some day", by title): f puts it in focus, at the end.
            try tui.keys("End", "f")
            _ = try waitFor("Delta in focus") { $0.contains("In focus, at 4 of 4: Delta.") }
            try tui.keys("4")
            _ = try waitFor("the focus list") { titles($0) == ["Alpha", "Bravo", "Charlie", "Delta"] && $0.contains("[4 Focus]") }
            // Delta up twice, then Alpha (now the first row) down once.
            try tui.keys("End", "[")
            _ = try waitFor("the first move") { titles($0) == ["Alpha", "Bravo", "Delta", "Charlie"] }
            try tui.keys("[")
            _ = try waitFor("the second move") { titles($0) == ["Alpha", "Delta", "Bravo", "Charlie"] }
            try tui.keys("Home", "]")
            _ = try waitFor("the third move") { titles($0) == ["Delta", "Alpha", "Bravo", "Charlie"] }
            // Another process's move shows up too.
            #expect(reminders(["focus", "move", "3", "1", "--db", path]).status == 0)
            _ = try waitFor("the other process's move") { titles($0) == ["Charlie", "Delta", "Alpha", "Bravo"] }
            // Moving past the ends does nothing; in another segment, [ says where to reorder.
            try tui.keys("Home", "[")
            try tui.keys("1", "[")
            _ = try waitFor("the hint") { $0.contains("Press 4 for the focus list") }
            try tui.keys("q")
            #expect(Self.focusIDs(path) == ["3", "4", "1", "2"])
        }
    }
}
