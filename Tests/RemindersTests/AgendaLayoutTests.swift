import Canopy
import CanopyTerminal
import CanopyTestSupport
import Foundation
import RemindersKit
import Testing

/// Found trying `reminders tui` in tmux at 20 columns: the rows showed `09:00–09:15  Pers…`, the fixed calendar and ID
/// columns kept their place and the title got nothing.
@Suite("reminders, agenda rows in a narrow terminal", .ownThread)
struct AgendaLayoutTests {
    @Test("The title keeps its columns: the ID goes first, then the calendar, then the time; both row kinds stay aligned")
    func narrowRowsKeepTheTitle() throws {
        try withDatabasePath { path, _ in
            let store = try RemindersStore(path: path, timeZone: TimeZone(identifier: "UTC") ?? .current)
            let day = fixedNow.addingTimeInterval(3600)  // 09:00 on the day of fixedNow
            _ = try store.addEvent("Lunch with Ada at the café", start: day, end: day.addingTimeInterval(900), calendar: "Personal")
            _ = try store.addReminder("Water the plants", due: day.addingTimeInterval(1800), priority: 0, calendar: "Personal")
            let expected: [(width: Int, rows: [String])] = [
                (60, ["09:00–09:15 Lunch with Ada at the café      Personal      #1",
                      "   09:30    [ ] Water the plants            Personal      #2"]),
                (40, ["09:00–09:15 Lunch with Ada a… Personal",  // 11 left for the title: the ID goes
                      "   09:30    [ ] Water the pl… Personal"]),
                (30, ["09:00–09:15 Lunch with Ada at…",  // then the calendar
                      "   09:30    [ ] Water the pla…"]),
                (20, ["Lunch with Ada at t…",  // then the time: the title is the row
                      "[ ] Water the plants"]),
                (8, ["Lunch w…", "[ ] Wat…"]),
                (2, ["L…", "[…"]),
            ]
            for (width, rows) in expected {
                let agenda = try AgendaList(store: store, mappings: ViewMappings(view: "agenda", groupFilter: { _ in true }), now: fixedNow,
                                            width: width, height: 10, colour: false)
                let lines = try agenda.allLines()
                #expect(Array(lines.dropFirst()) == rows.map { $0.padding(toLength: width, withPad: " ", startingAt: 0) }, "width \(width)")
                for line in lines { #expect(DisplayWidth.of(line) == width, "width \(width): \(line)") }
            }
        }
    }
}
