import Canopy
import CanopyTestSupport
import Foundation
import RemindersKit
import Testing

/// `reminders`' views are never stale in normal use, whatever the shell's time zone, and commands that only read
/// write nothing.
@Suite("reminders: views current, reads write nothing", .ownThread)
struct CurrencyTests {
    /// Runs `reminders` in-process as a shell with `TZ=zone` would.
    func run(_ arguments: [String], zone: String, now: Date = fixedNow) -> RunResult {
        let out = Output()
        let err = Output()
        let context = RemindersContext(environment: [:], now: now, timeZone: TimeZone(identifier: zone) ?? .current,
                                       output: out.append, errorOutput: err.append, terminalSize: (80, 24))
        return RunResult(status: RemindersCLI.run(arguments, context: context), out: out.text, err: err.text)
    }

    /// The store's snapshot and the views recorded in the database that lag it (what `canopy info` marks stale).
    static func state(of path: String) throws -> (snapshot: UInt64, stale: [String], tags: [String: String]) {
        try Database(path: path).newConnection().read { txn in
            let snapshots = try txn.extensionSnapshots()
            let records = try txn.extensionRecords()
            let stale = records.filter { snapshots.extensions[$0.name] != snapshots.store }.map(\.name).sorted()
            return (snapshots.store, stale, Dictionary(uniqueKeysWithValues: records.map { ($0.name, $0.versionTag) }))
        }
    }

    @Test("After any sequence of commands from shells in different time zones, no view is stale and none was redefined; reads move no snapshot")
    func viewsStayCurrent() throws {
        try withDatabasePath { path, _ in
            let steps: [([String], String)] = [
                (["add", "event", "Standup", "--start", "today 09:30"], "UTC"),
                (["add", "reminder", "Late", "--due", "2026-11-20 10:00"], "Asia/Tokyo"),
                (["add", "reminder", "Pay rent", "--due", "tomorrow 08:00", "--calendar", "Home"], "America/New_York"),
                (["list"], "Asia/Tokyo"),
                (["list", "--overdue"], "America/New_York"),
                (["done", "2"], "UTC"),
                (["edit", "1", "--title", "Daily standup"], "Asia/Tokyo"),
                (["add", "reminder", "Someday"], "Europe/Paris"),
                (["focus", "add", "3"], "Asia/Tokyo"),
                (["focus", "add", "4", "--at", "1"], "UTC"),
                (["delete", "3"], "America/New_York"),
                (["focus"], "Europe/Paris"),
                (["list", "--calendar", "Personal"], "UTC"),
                (["done", "2", "--undo"], "Europe/Paris"),
            ]
            for (arguments, zone) in steps {
                let result = run(arguments + ["--db", path], zone: zone)
                #expect(result.status == 0, "\(arguments): \(result.err)")
                let state = try Self.state(of: path)
                #expect(state.stale.isEmpty, "after \(arguments) in \(zone): stale \(state.stale)")
                #expect(state.tags == ["agenda": "2", "by-calendar": "2", "overdue": "2", "focus": "1", "search": "2",
                                       "search-results": SearchResultsTag.expected, "by-tag": "2"], "\(state.tags)")
            }
            // What an operator sees: `canopy info` lists the six views (the search index is not a view), none stale.
            let canopy = try #require(builtExecutable(named: "canopy"), "the canopy executable was not built")
            let info = try ChildProcess(canopy, ["info", path])
            let lines = info.remainingLines()
            #expect(info.waitForExit() == 0)
            #expect(lines.filter { $0.hasSuffix("current") }.count == 6 && !lines.contains { $0.contains("stale") }, "\(lines)")
            // Reads, from any zone, and rejected commands write nothing.
            let before = try Self.state(of: path).snapshot
            for (arguments, zone) in [(["list"], "UTC"), (["list"], "Asia/Tokyo"), (["list", "--overdue"], "UTC"), (["list", "--day", "today"], "America/New_York")] {
                #expect(run(arguments + ["--db", path], zone: zone).status == 0)
            }
            #expect(run(["done", "999", "--db", path], zone: "UTC").status == 1)
            #expect(run(["add", "reminder", " ", "--db", path], zone: "UTC").status == 1)
            #expect(try Self.state(of: path).snapshot == before)
            // The days are the database's (UTC, recorded when it was created), whatever the shell's zone.
            let tokyo = run(["list", "--db", path], zone: "Asia/Tokyo").out
            let utc = run(["list", "--db", path], zone: "UTC").out
            #expect(tokyo == utc)
            #expect(utc.contains("Monday 23 November 2026 · today") && utc.contains("09:30"))
        }
    }

    @Test("list --overdue shows the open reminders due before now: earlier days, and today's rows due before now")
    func overdueIsBeforeNow() throws {
        try withDatabasePath { path, _ in
            for (title, due) in [("Yesterday's", "2026-11-22 18:00"), ("This morning", "today 07:00"), ("Tonight", "today 20:00"), ("Next week", "2026-11-30 09:00")] {
                #expect(reminders(["add", "reminder", title, "--due", due, "--db", path]).status == 0)
            }
            let overdue = reminders(["list", "--overdue", "--db", path]).out
            #expect(overdue.contains("Yesterday's") && overdue.contains("This morning"), "\(overdue)")
            #expect(!overdue.contains("Tonight") && !overdue.contains("Next week"), "\(overdue)")
            let evening = reminders(["list", "--overdue", "--db", path], now: fixedNow.addingTimeInterval(13 * 3600)).out
            #expect(evening.contains("Tonight") && !evening.contains("Next week"), "\(evening)")
        }
    }
}

/// The version tag of the reminders' search results view: its own tag with the index's name, tag and options hash.
enum SearchResultsTag {
    static var expected: String { Schema.searchResults(Schema.searchIndex()).view.versionTag }
}
