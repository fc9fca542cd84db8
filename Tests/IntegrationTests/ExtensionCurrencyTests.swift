import Canopy
import CanopyIndexes
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// A process keeps extensions registered while another process (the `CrashWriter` child, which registers none) writes
/// rows: the first process's next write must bring them up to date before marking them current, and reads through
/// them meanwhile must not show a stale state.
@Suite("Extension currency across processes", .ownThread)
struct ExtensionCurrencyTests {
    static func byNumber() -> SecondaryIndex<Int64OrderedCoding> {
        SecondaryIndex<Int64OrderedCoding>.byObject(name: "by-number", crashWriterEntries) { _, entry in
            Int64(entry.number)
        }
    }

    static func evenOnly() -> View {
        FilteredView.make(name: "even", parentView: "entries-by-part") { _, row in try row.object(as: CrashWriterEntry.self).number % 2 == 0 }
    }

    /// The view's groups and rows equal what the closures give over every row (brute force), the filtered view's
    /// too, the index holds every row's number, and each is recorded as current.
    static func expectAgreement(_ database: Database) throws {
        try database.newConnection().read { txn in
            var expected: [String: [(number: Int, key: String)]] = [:]
            try txn.enumerateObjects(in: crashWriterEntries) { key, entry in
                expected[entry.part, default: []].append((entry.number, key))
                return true
            }
            let view = try txn.view("entries-by-part")
            let even = try txn.view("even")
            #expect(try view.groups() == expected.keys.sorted())
            for (group, rows) in expected {
                let order = rows.sorted { $0.number != $1.number ? $0.number > $1.number : $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
                #expect(try view.rowIDs(inGroup: group).map(\.key) == order.map(\.key), "group \(group)")
                #expect(try even.rowIDs(inGroup: group).map(\.key) == order.filter { $0.number % 2 == 0 }.map(\.key), "group \(group)")
            }
            #expect(try view.checkInvariants() == [])
            #expect(try even.checkInvariants() == [])
            let index = byNumberRegistered(database)
            var rows: [(String, CrashWriterEntry)] = []
            try txn.enumerateObjects(in: crashWriterEntries) { key, entry in
                rows.append((key, entry))
                return true
            }
            for (key, entry) in rows {
                #expect(try index?.value(of: RowID(collection: crashWriterEntries.name, key: key), in: txn) == Int64(entry.number))
            }
            #expect(try index?.count(in: txn) == rows.count)
            let snapshots = try txn.extensionSnapshots()
            for name in ["entries-by-part", "even", "by-number"] { #expect(snapshots.extensions[name] == snapshots.store, "\(name)") }
        }
    }

    static func byNumberRegistered(_ database: Database) -> SecondaryIndex<Int64OrderedCoding>? {
        database.registeredExtension(named: "by-number") as? SecondaryIndex<Int64OrderedCoding>
    }

    static func seed(_ database: Database) throws {
        try database.newConnection().readWrite { txn in
            for number in 1...4 {
                for part in ["a", "b"] { try txn.set(CrashWriterEntry(number: number, part: part), forKey: "seed-\(number)-\(part)", in: crashWriterEntries) }
            }
        }
    }

    @Test("Another process writes without the extensions; this process's next write catches them up from the commit log, then marks them current",
          .timeLimit(.minutes(5)))
    func writeCatchesUp() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let database = try Self.openSeeded(path, options: .init(durability: .none))
        // Inserts, removals, rows removed and written again in one transaction (their records lose the attachments).
        try runCrashWriter(path, ["--commits", "8", "--churn"])
        // A read through the registered view sees it stale, and says so rather than show it.
        let stale = #expect(throws: CanopyError.self) { try database.newConnection().read { txn in _ = try txn.view("entries-by-part") } }
        #expect(stale?.code == .staleView)
        let staleIndex = #expect(throws: CanopyError.self) {
            try database.newConnection().read { txn in _ = try Self.byNumberRegistered(database)?.count(in: txn) }
        }
        #expect(staleIndex?.code == .staleView)
        // One write of this process: the extensions are caught up first (not rebuilt), then maintained.
        try database.newConnection().readWrite { txn in
            try txn.set(CrashWriterEntry(number: 100, part: "a"), forKey: "mine", in: crashWriterEntries)
        }
        #expect((database.registeredExtension(named: "entries-by-part") as? View)?.lastPopulation?.reason == "first registration")
        try Self.expectAgreement(database)
    }

    @Test("An observer of a registered view in this process catches the view up and reports the other process's rows as changes",
          .timeLimit(.minutes(5)))
    func observerCatchesUp() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let database = try Self.openSeeded(path, options: .init(durability: .none))
        let observer = try ViewObserver(database: database, mappings: ViewMappings(groups: ["a", "b"], view: "entries-by-part"))
        let before = try observer.read { txn in try Rendering(mappings: observer.mappings, reader: txn.view("entries-by-part")) }
        try runCrashWriter(path, ["--commits", "5", "--churn"])
        let changeset = try observer.advance()
        #expect(!changeset.isReload)
        #expect(!changeset.rowChanges.isEmpty)
        try Self.expectAgreement(database)
        // Applied to what the UI showed, the changeset gives exactly the caught-up view.
        let after = try observer.read { txn in try Rendering(mappings: observer.mappings, reader: txn.view("entries-by-part")) }
        let applied = try ChangesetApplier.apply(changeset, to: before) { section in
            after.sections.indices.contains(section) ? after.sections[section].rows : []
        }
        #expect(applied == after)
        let counts = try observer.read { txn in try ["a", "b"].map { try txn.view("entries-by-part").count(inGroup: $0) } }
        #expect(counts == [observer.mappings.numberOfItems(inGroup: "a"), observer.mappings.numberOfItems(inGroup: "b")])
    }

    @Test("When the commit log no longer covers what another process wrote, the next write rebuilds the extensions", .timeLimit(.minutes(5)))
    func prunedLogRebuilds() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let database = try Self.openSeeded(path, options: .init(durability: .none, commitLogLimit: 4))
        try runCrashWriter(path, ["--commits", "20", "--churn", "--commit-log-limit", "4"])
        #expect(try database.catchUpExtensions())
        let view = try #require(database.registeredExtension(named: "entries-by-part") as? View)
        #expect(view.lastPopulation?.reason.contains("beyond what the commit log covers") == true, "\(String(describing: view.lastPopulation))")
        #expect((database.registeredExtension(named: "even") as? View)?.lastPopulation?.reason == "its dependency 'entries-by-part' was rebuilt")
        try Self.expectAgreement(database)
        #expect(try !database.catchUpExtensions())
    }

    /// Found trying issue 14's work: after a tool imported a row the app's type cannot decode, every write of the app
    /// failed with a decoding error about that row and no word of the view or of the other process — as if the row
    /// being written were at fault. Issue 16: by default the view skips such a row while catching up and records it
    /// (one bad row never bricks the app); a view with `strictDecoding` fails, naming the view, the row and what to do.
    @Test("A row another process wrote that the view's closures cannot decode: skipped and recorded; with strictDecoding the write fails naming the view, the row, and what to do",
          .timeLimit(.minutes(5)))
    func undecodableMissedRowNamesTheView() throws {
        let strict = View(
            name: "entries-by-part",
            grouping: .byObject(crashWriterEntries) { _, entry in entry.part },
            sorting: .byObject(crashWriterEntries) { _, _, entry in SortKey(.descending(entry.number)) },
            options: ViewOptions(allowedCollections: [crashWriterEntries.name], strictDecoding: true))
        for view in [strict, crashWriterView()] {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let path = directory.appending("db")
            let database = try Database(path: path, options: .init(durability: .none))
            try database.register(view)
            try Self.seed(database)
            try runCrashWriter(path, ["--write-undecodable", "foreign"])
            let before = try database.currentSnapshot()
            func write() throws {
                try database.newConnection().readWrite { txn in
                    try txn.set(CrashWriterEntry(number: 100, part: "a"), forKey: "mine", in: crashWriterEntries)
                }
            }
            guard !view.viewOptions.strictDecoding else {
                let error = #expect(throws: CanopyError.self) { try write() }
                #expect(error?.code == .decodingFailed)
                #expect(error?.extensionName == "entries-by-part")
                #expect(error?.key == "foreign")
                #expect(error?.message.contains("written by a process that did not register it") == true, "\(String(describing: error))")
                #expect(error?.message.contains("Fix or remove the row") == true)
                #expect(try database.currentSnapshot() == before)
                continue
            }
            // By default the write goes through and the view records the row it skipped.
            try write()
            try database.newConnection().read { txn throws in
                let skipped = try txn.skippedRows(ofExtension: "entries-by-part")
                #expect(skipped?.count == 1)
                #expect(skipped?.rows == [RowID(collection: crashWriterEntries.name, key: "foreign")])
                #expect(try txn.view("entries-by-part").position(ofKey: "mine", inCollection: crashWriterEntries.name) != nil)
                #expect(try txn.view("entries-by-part").checkInvariants() == [])
            }
        }
    }

    @Test("Registering in a fresh process after another wrote: caught up at registration, then registering again writes nothing",
          .timeLimit(.minutes(5)))
    func registrationCatchesUpThenReads() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        do {
            _ = try Self.openSeeded(path, options: .init(durability: .none))
        }
        try runCrashWriter(path, ["--commits", "6", "--churn"])
        do {
            // A fresh open, as an app starting: every extension is caught up at its registration.
            let database = try Database(path: path, options: .init(durability: .none))
            let outcomes = try Self.registerAll(database)
            #expect(outcomes.allSatisfy { if case .caughtUp = $0 { true } else { false } }, "\(outcomes)")
            try Self.expectAgreement(database)
        }
        let snapshot = try Database(path: path, options: .init(durability: .none)).currentSnapshot()
        do {
            // Started again: the same definitions, current: three reads, no commit.
            let database = try Database(path: path, options: .init(durability: .none))
            #expect(try Self.registerAll(database) == [.current, .current, .current])
            #expect(try database.currentSnapshot() == snapshot)
            try Self.expectAgreement(database)
        }
        do {
            // Even read-only (a read-only file system, a full disk): registering current definitions works.
            let database = try Database(path: path, options: .init(durability: .none, readOnly: true))
            #expect(try Self.registerAll(database) == [.current, .current, .current])
            try Self.expectAgreement(database)
        }
    }

    @Test("A view another process created after this one opened the database registers here with a read", .timeLimit(.minutes(5)))
    func viewCreatedElsewhereRegistersWithARead() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let database = try Database(path: path, options: .init(durability: .none))
        try Self.seed(database)
        try runCrashWriter(path, ["--commits", "2", "--with-view"])
        let snapshot = try database.currentSnapshot()
        #expect(try database.register(crashWriterView()) == .current)
        #expect(try database.currentSnapshot() == snapshot)
        #expect(try database.newConnection().read { txn in try txn.view("entries-by-part").count() } == 12)
    }

    static func registerAll(_ database: Database) throws -> [RegistrationOutcome] {
        [try database.register(crashWriterView()), try database.register(evenOnly()), try database.register(byNumber())]
    }

    /// A database at `path` with the view, the filtered view and the index registered (in that order) and seeded.
    static func openSeeded(_ path: String, options: DatabaseOptions) throws -> Database {
        let database = try Database(path: path, options: options)
        _ = try registerAll(database)
        try seed(database)
        return database
    }
}
