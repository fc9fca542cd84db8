import Canopy
import CanopyTestSupport
import Foundation
import RemindersKit
import Testing

@Suite("reminders, end to end", .serialized, .ownThread)
struct RemindersCommandTests {
    /// Adds the four items of the golden tests.
    func seed(_ path: String) {
        #expect(reminders(["add", "event", "Dentist", "--start", "2026-11-25 10:00", "--calendar", "Health", "--location", "Clinic", "--db", path]).status == 0)
        #expect(reminders(["add", "reminder", "Buy milk", "--due", "today 17:00", "--priority", "2", "--db", path]).status == 0)
        #expect(reminders(["add", "event", "Standup", "--start", "tomorrow 9:30", "--end", "tomorrow 9:45", "--calendar", "Work", "--db", path]).status == 0)
        #expect(reminders(["add", "reminder", "Plan holiday", "--db", path]).status == 0)
    }

    @Test("add, then list: the agenda grouped by day and sorted by time (golden output)")
    func golden() throws {
        try withDatabasePath { path, _ in
            let added = reminders(["add", "event", "Dentist", "--start", "2026-11-25 10:00", "--calendar", "Health", "--location", "Clinic", "--db", path])
            #expect(added.out == "Added event #1: Dentist, Wed 25 Nov 10:00–11:00\n")
            #expect(reminders(["add", "reminder", "Buy milk", "--due", "today 17:00", "--priority", "2", "--db", path]).out
                    == "Added reminder #2: Buy milk, due Mon 23 Nov 17:00\n")
            #expect(reminders(["add", "event", "Standup", "--start", "tomorrow 9:30", "--end", "tomorrow 9:45", "--calendar", "Work", "--db", path]).status == 0)
            #expect(reminders(["add", "reminder", "Plan holiday", "--db", path]).status == 0)
            let list = reminders(["list", "--db", path])
            #expect(list.status == 0 && list.err.isEmpty)
            // Piped (not a terminal): no trailing spaces.
            #expect(list.out == """
            Monday 23 November 2026 · today
               17:00    [ ] Buy milk !!                                     Personal      #2
            Tuesday 24 November 2026 · tomorrow
            09:30–09:45 Standup                                             Work          #3
            Wednesday 25 November 2026
            10:00–11:00 Dentist @ Clinic                                    Health        #1
            Some day
                        [ ] Plan holiday                                    Personal      #4

            """)
            let day = reminders(["list", "--day", "tomorrow", "--db", path])
            #expect(day.out.contains("Standup") && !day.out.contains("Dentist"))
            let work = reminders(["list", "--calendar", "work", "--db", path])
            #expect(work.out.hasPrefix("Work · Tuesday 24 November 2026") && !work.out.contains("Buy milk"))
        }
    }

    @Test("list --json is valid JSON with the sections and items")
    func json() throws {
        try withDatabasePath { path, _ in
            seed(path)
            let result = reminders(["list", "--json", "--db", path])
            #expect(result.status == 0)
            struct Agenda: Decodable {
                struct Section: Decodable { var group: String; var title: String; var items: [Item] }
                struct Item: Decodable { var id: String; var kind: String; var title: String; var calendar: String; var start: Date?; var due: Date? }
                var sections: [Section]
            }
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            let agenda = try decoder.decode(Agenda.self, from: Data(result.out.utf8))
            #expect(agenda.sections.map(\.group) == ["2026-11-23", "2026-11-24", "2026-11-25", "someday"])
            #expect(agenda.sections[2].items.first?.title == "Dentist" && agenda.sections[2].items.first?.calendar == "Health")
            #expect(agenda.sections[0].items.first?.kind == "reminder")
            #expect(agenda.sections[2].items.first?.start == Date(timeIntervalSince1970: 1_795_600_800))
        }
    }

    @Test("done, edit and delete change the agenda; overdue lists open reminders past due")
    func editing() throws {
        try withDatabasePath { path, _ in
            seed(path)
            #expect(reminders(["done", "2", "--db", path]).out == "Done: #2.\n")
            #expect(!reminders(["list", "--db", path]).out.contains("Buy milk"))
            #expect(reminders(["edit", "1", "--to", "tomorrow 8:00", "--title", "Dentist (moved)", "--db", path]).status == 0)
            let list = reminders(["list", "--day", "tomorrow", "--db", path]).out
            #expect(list.contains("08:00–09:00 Dentist (moved)"))
            #expect(reminders(["delete", "3", "--db", path]).status == 0)
            #expect(!reminders(["list", "--db", path]).out.contains("Standup"))
            #expect(reminders(["add", "reminder", "Late", "--due", "2026-11-20 10:00", "--db", path]).status == 0)
            let overdue = reminders(["list", "--overdue", "--db", path])
            #expect(overdue.out.contains("Late") && !overdue.out.contains("Plan holiday"))
            let later = reminders(["list", "--overdue", "--db", path], now: Date(timeIntervalSince1970: 1_795_420_800 - 30 * 86_400))
            #expect(later.out == "Nothing overdue.\n")
        }
    }

    @Test("calendars: list, add with a colour, rename (every item follows), recolour")
    func calendars() throws {
        try withDatabasePath { path, _ in
            seed(path)
            #expect(reminders(["calendars", "add", "Family", "--colour", "green", "--db", path]).status == 0)
            let rename = reminders(["calendars", "rename", "Work", "Office", "--db", path])
            #expect(rename.out == "Renamed Work to Office (1 item).\n")
            #expect(reminders(["list", "--db", path]).out.split(separator: "\n").contains { $0.contains("Standup") && $0.contains("Office") })
            #expect(reminders(["calendars", "colour", "Office", "red", "--db", path]).status == 0)
            let listed = reminders(["calendars", "--db", path]).out
            #expect(listed.contains("Office           red      (work)") && listed.contains("Family           green    (family)"))
            // Delete: refused while the calendar has items (nothing written), done when it is empty.
            let before = try contents(of: path)
            let busy = reminders(["calendars", "delete", "Office", "--db", path])
            #expect(busy.status == 1 && busy.err.contains("still has 1 item;"), "\(busy.err)")
            #expect(try contents(of: path) == before)
            #expect(reminders(["calendars", "delete", "Family", "--db", path]).out == "Deleted calendar Family.\n")
            #expect(!reminders(["calendars", "--db", path]).out.contains("Family"))
            #expect(reminders(["calendars", "delete", "Family", "--db", path]).status == 1)
        }
    }

    @Test("Bad input: a clear message on stderr, a non-zero exit, nothing written", arguments: [
        (["done", "99"], "no event or reminder has ID 99"),
        (["done", "9\u{1B}[2J"], "no event or reminder has ID 9\\u{1B}[2J;"),
        (["done", "1"], "#1 is an event; only reminders can be done (`reminders delete 1` removes an event)"),
        (["add", "event", "X", "--start", "someday soon"], "can't read the date 'someday soon'"),
        (["add", "event", "X", "--start", "2026-11-25 10:00", "--end", "2026-11-25 09:00"], "ends before it starts"),
        (["add", "reminder", "X", "--due", "2026-02-30"], "can't read the date"),
        (["add", "reminder", "X", "--priority", "7"], "priority must be 0"),
        (["edit", "1"], "nothing to change"),
        (["edit", "99", "--title", "Y"], "no event or reminder has ID 99"),
        (["edit", "", "--title", "Y"], "an empty ID names no event or reminder"),
        (["done", ""], "an empty ID names no event or reminder"),
        (["calendars", "rename", "Nope", "Other"], "no calendar is named 'Nope'"),
        (["calendars", "add", "Z", "--colour", "pink"], "unknown colour 'pink'"),
        (["list", "--overdue", "--day", "today"], "can't be combined"),
    ])
    func badInput(arguments: [String], message: String) throws {
        try withDatabasePath { path, _ in
            seed(path)
            let before = try contents(of: path)
            let result = reminders(arguments + ["--db", path])
            #expect(result.status != 0)
            #expect(result.err.contains(message), "stderr: \(result.err)")
            #expect(result.out.isEmpty)
            #expect(try contents(of: path) == before)
        }
    }

    @Test("A missing database directory, a file in the way, and another app's database are refused without writing")
    func badDatabases() throws {
        try withDatabasePath { path, directory in
            let missing = directory.appending("no/such/dir/db")
            let result = reminders(["add", "reminder", "X", "--db", missing])
            #expect(result.status == 1 && result.err.contains("does not exist"))
            #expect(!FileManager.default.fileExists(atPath: directory.appending("no")))

            let file = directory.appending("file")
            #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
            let inFile = reminders(["add", "reminder", "X", "--db", file + "/db"])
            #expect(inFile.status == 1 && inFile.err.contains("does not exist (or is not a directory)"))
            let isFile = reminders(["add", "reminder", "X", "--db", file])
            #expect(isFile.status == 1 && isFile.err.contains("is a file"))

            let other = directory.appending("other")
            let database = try Database(path: other, options: .init(durability: .metadataOnly))  // as the tool opens it (one Database per path per process)
            try database.newConnection().readWrite { txn in
                try txn.set("hello", forKey: "k", in: TypedCollection<String, NoMetadata>("notes"))
            }
            let before = try database.currentSnapshot()
            let foreign = reminders(["add", "reminder", "X", "--db", other])
            #expect(foreign.status == 1 && foreign.err.contains("another app's database (collections: notes)"), "stderr: \(foreign.err)")
            #expect(try database.currentSnapshot() == before)
            #expect(try database.newConnection().read { try $0.collectionNames() } == ["notes"])

            let listMissing = reminders(["list", "--db", path])
            #expect(listMissing.status == 0 && listMissing.out.hasPrefix("Nothing yet"))
            #expect(!(try RemindersStore.exists(at: path)))
        }
    }

    @Test("Usage errors exit 2, as canopy's do; help and --version exit 0")
    func usage() {
        let unknown = reminders(["frobnicate"])
        #expect(unknown.status == 2 && unknown.err.contains("Unexpected argument 'frobnicate'"))
        let missing = reminders(["add", "reminder"])
        #expect(missing.status == 2 && missing.err.contains("Missing expected argument"))
        let badOption = reminders(["list", "--bogus"])
        #expect(badOption.status == 2)
        let version = reminders(["--version"])
        #expect(version.status == 0 && version.out == "reminders \(CanopyVersion.description)\n")
        let help = reminders(["--help"])
        #expect(help.status == 0 && help.out.contains("SUBCOMMANDS") && help.out.contains("watch"))
    }

    @Test("The default database is $XDG_DATA_HOME/reminders")
    func defaultPath() throws {
        try withDatabasePath { _, directory in
            let result = reminders(["add", "reminder", "X"], environment: ["XDG_DATA_HOME": directory.path])
            #expect(result.status == 0)
            #expect((try? RemindersStore.exists(at: directory.appending("reminders"))) == true)
            #expect(reminders(["list"], environment: ["XDG_DATA_HOME": directory.path]).out.contains("[ ] X"))
        }
    }

    @Test("Dates: absolute, today, tomorrow, weekdays, times; a day alone is 9:00")
    func dates() throws {
        let input = DateInput(now: fixedNow, timeZone: TimeZone(identifier: "UTC") ?? .current)
        func iso(_ text: String) throws -> String { ISO8601DateFormatter().string(from: try input.parse(text)) }
        #expect(try iso("2026-11-25 10:00") == "2026-11-25T10:00:00Z")
        #expect(try iso("today 17:00") == "2026-11-23T17:00:00Z")
        #expect(try iso("tomorrow") == "2026-11-24T09:00:00Z")
        #expect(try iso("fri 9:30") == "2026-11-27T09:30:00Z")
        #expect(try iso("monday") == "2026-11-30T09:00:00Z")
        #expect(try iso("18:45") == "2026-11-23T18:45:00Z")
        for bad in ["", "25/11/2026", "today tomorrow", "24:00", "2026-13-01", "fri 9"] {
            #expect(throws: RemindersError.self) { try input.parse(bad) }
        }
    }

    /// A new user's first command was `reminders --db /tmp/x list`: "Unknown option '--db'" (it was accepted only after
    /// the subcommand's name).
    @Test("--db is accepted before the subcommand too, by every command (nested ones, default subcommands, the demo); nothing goes to the default folder")
    func databaseBeforeSubcommand() throws {
        try withDatabasePath { path, directory in
            let home = ["XDG_DATA_HOME": directory.appending("data")]
            func run(_ arguments: [String]) -> RunResult { reminders(arguments, environment: home) }
            #expect(run(["--db", path, "add", "reminder", "Buy milk", "--due", "today 17:00"]).out == "Added reminder #1: Buy milk, due Mon 23 Nov 17:00\n")
            #expect(run(["--db", path, "add", "event", "Dentist", "--start", "tomorrow 10:00"]).status == 0)
            let before = run(["--db", path, "list"])
            #expect(before.status == 0 && before.out.contains("Buy milk") && before.out.contains("Dentist"), "\(before)")
            #expect(run(["list", "--db", path]).out == before.out)
            #expect(run(["--db", path, "calendars"]).out.hasPrefix("Personal"))
            #expect(run(["--db", path, "focus", "add", "1"]).status == 0)
            #expect(run(["--db", path, "focus", "move", "1", "1"]).out == "Moved #1 to 1 of 1.\n")
            #expect(run(["--db", path, "search", "milk"]).out.hasPrefix("#1  Buy milk"))
            let demoPath = directory.appending("demo")
            #expect(run(["--db", demoPath, "demo"]).out.contains("Database: \(demoPath)\n"))
            #expect(!FileManager.default.fileExists(atPath: directory.appending("data")), "a command used the default folder")
            // Usage errors stay usage errors.
            let missing = run(["list", "--db"])
            #expect(missing.status == 2 && missing.err.contains("Missing value for '--db <db>'"), "\(missing)")
            // Two different databases are refused (one was kept silently): nothing is written to either.
            let other = directory.appending("other")
            let twice = run(["--db", other, "add", "reminder", "Wrong agenda", "--db", path])
            #expect(twice.status == 2 && twice.err.contains("--db names 2 databases (\(other), \(path)): give it once"), "\(twice)")
            #expect(run(["--db=\(path)", "list", "--db", other]).status == 2)
            #expect(!FileManager.default.fileExists(atPath: other), "a database was made at the other path")
            #expect(!run(["list", "--db", path]).out.contains("Wrong agenda"))
            // The same folder twice is one database; after `--`, `--db` is a title.
            #expect(run(["--db", path, "list", "--db", path]).out == before.out)
            #expect(run(["--db", path, "list", "--db", path + "/"]).out == before.out)
            #expect(run(["--db", path, "add", "reminder", "--", "--db"]).status == 0)
            #expect(run(["--db", path, "list"]).out.contains("--db"))
        }
    }

    @Test("The demo runs on a fresh temporary database, prints its path and every step's changeset")
    func demo() throws {
        try withDatabasePath { path, _ in
            let result = reminders(["demo", "--db", path])
            #expect(result.status == 0, "\(result.err)")
            #expect(result.out.contains("Database: \(path)"))
            #expect(result.out.contains("1. Seeded 50 events and reminders"))
            #expect(result.out.contains("+ row [0, "))
            #expect(result.out.contains("moved to [1, "))
            #expect(result.out.contains("updated: "))
            #expect(result.out.contains("Office"))
            // It tags a few events (and reminders): `list --by-tag`, which it suggests, has them.
            let byTag = reminders(["list", "--by-tag", "--db", path]).out
            #expect(byTag.contains("#work\n") && byTag.split(separator: "\n").contains { $0.contains(" 14:00–15:00 ") && $0.contains(" #work") }, "\(byTag)")
            #expect(byTag.contains("#bills\n") && byTag.contains("Pay rent !!! #bills"), "\(byTag)")
            let again = reminders(["demo", "--db", path])
            #expect(again.status == 1 && again.err.contains("holds a database already"))
            // Every command it prints runs as printed: `swift run reminders …` on the demo's database, with options
            // the tool accepts.
            let commands = result.out.split(separator: "\n").compactMap { line -> String? in
                guard let start = line.range(of: "swift run reminders ") else { return nil }
                return String(line[start.lowerBound...]).components(separatedBy: "`").first
            }
            #expect(commands.count >= 8, "\(commands)")
            for command in commands {
                let words = shellWords(command)
                #expect(Array(words.prefix(3)) == ["swift", "run", "reminders"], "\(command)")
                let arguments = Array(words.dropFirst(3))
                #expect(arguments.suffix(2) == ["--db", path], "\(command)")
                #expect(throws: Never.self, "\(command)") { _ = try RemindersCommand.parseAsRoot(arguments) }
            }
        }
    }

    @Test("Blank titles and calendar names are refused; control characters in a title are printed escaped")
    func blankAndControlCharacters() throws {
        try withDatabasePath { path, _ in
            for title in ["", "   ", "\n\n", " \t\n "] {
                let result = reminders(["add", "reminder", title, "--db", path])
                #expect(result.status == 1 && result.err.contains("the title is blank"), "\(title.debugDescription): \(result.err)")
            }
            let blankCalendar = reminders(["add", "event", "Lunch", "--start", "tomorrow 12:00", "--calendar", " ", "--db", path])
            #expect(blankCalendar.status == 1 && blankCalendar.err.contains("the calendar name is blank"), "\(blankCalendar.err)")
            #expect(reminders(["calendars", "add", "\n", "--db", path]).err.contains("the calendar name is blank"))
            let escape = reminders(["add", "reminder", "Pay \u{1B}[2Jrent", "--db", path])
            #expect(escape.status == 0)
            #expect(!escape.out.contains("\u{1B}") && escape.out.contains("Pay \\u{1B}[2Jrent"), "\(escape.out.debugDescription)")
        }
    }

    @Test("The default database's missing folders are created 0700, whatever the umask")
    func privateFolders() throws {
        guard let executable = builtExecutable(named: "reminders") else {
            Issue.record("the reminders executable was not built next to the tests")
            return
        }
        let directory = try TemporaryDirectory(prefix: "reminders-test")
        defer { directory.remove() }
        let data = directory.appending("a/b")
        // A child with umask 000 (the umask is per process: changing it here would touch every test running now).
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "umask 000; exec \"$0\" add reminder X", executable]
        process.environment = ["XDG_DATA_HOME": data, "HOME": directory.path, "PATH": "/usr/bin:/bin"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        for folder in [directory.appending("a"), data] {
            let mode = (try FileManager.default.attributesOfItem(atPath: folder)[.posixPermissions] as? Int) ?? -1
            #expect(mode == 0o700, "\(folder): \(String(mode, radix: 8))")
        }
    }

    /// Foundation's `NSString.deletingLastPathComponent` traps on Linux for a path of one character, which `reminders`
    /// used for the database's folder: `--db d` ended by SIGILL before any message.
    @Test("--db of one character (d, d/, é), relative to the working directory: no signal; the database is made there and read back")
    func oneCharacterDatabasePath() throws {
        guard let executable = builtExecutable(named: "reminders") else {
            Issue.record("the reminders executable was not built next to the tests")
            return
        }
        let directory = try TemporaryDirectory(prefix: "reminders-test")
        defer { directory.remove() }
        for (made, read) in [("d", "d/"), ("é", "é"), ("e/", "e")] {
            let add = try ChildRun(executable, ["add", "reminder", "Buy milk", "--db", made], seconds: 60, currentDirectory: directory.path)
            #expect(!add.signalled && add.status == 0, "add --db \(made): status \(add.status), signalled \(add.signalled): \(add.errors)")
            let list = try ChildRun(executable, ["search", "milk", "--db", read], seconds: 60, currentDirectory: directory.path)
            #expect(!list.signalled && list.status == 0 && list.output.contains("Buy milk"), "search --db \(read): \(list.status) \(list.errors)")
            #expect(FileManager.default.fileExists(atPath: directory.appending(made) + "/data.mdb"))
        }
        // A folder `x` whose data.mdb is a directory: a message, no signal.
        try FileManager.default.createDirectory(atPath: directory.appending("x/data.mdb"), withIntermediateDirectories: true)
        let damaged = try ChildRun(executable, ["list", "--db", "x"], seconds: 60, currentDirectory: directory.path)
        #expect(!damaged.signalled && damaged.status == 1 && damaged.errors.contains("can't open the database"), "\(damaged.status) \(damaged.errors)")
    }
}

/// The words of a POSIX shell command line (single and double quotes, no expansions).
func shellWords(_ line: String) -> [String] {
    var words: [String] = []
    var current = ""
    var quote: Character?
    var inWord = false
    for character in line {
        if let open = quote {
            if character == open { quote = nil } else { current.append(character) }
        } else if character == "'" || character == "\"" {
            quote = character
            inWord = true
        } else if character == " " {
            if inWord { words.append(current) }
            current = ""
            inWord = false
        } else {
            current.append(character)
            inWord = true
        }
    }
    if inWord { words.append(current) }
    return words
}
