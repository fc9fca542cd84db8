import Canopy
import CanopyCoreTestFixtures
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// The pages a commit wrote stay in memory with the committed index of that version (``ViewIndex/committedPages``),
/// and the counts of the groups a span did not touch stay in the mappings (``ViewMappings/update(with:changedGroups:)``):
/// both are short cuts that must read exactly what the tables and a full update would. Checked against a model of the
/// rows, at the latest snapshot and at older snapshots held by pinned connections while later commits rewrite the same
/// pages.
@Suite("Committed pages and counts carried between commits")
struct CommittedPagesTests {
    static let parts = ["a", "b", "c", "d"]

    /// The rows of each part in the view's order (newest number first), from the model.
    static func expected(_ model: [String: CrashWriterEntry]) -> [String: [String]] {
        var byPart: [String: [(number: Int, key: String)]] = [:]
        for (key, entry) in model { byPart[entry.part, default: []].append((entry.number, key)) }
        return byPart.mapValues { rows in
            rows.sorted { $0.number != $1.number ? $0.number > $1.number : $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }.map(\.key)
        }
    }

    /// What the view holds, read through `txn`.
    static func rendered(_ txn: ReadTransaction) throws -> [String: [String]] {
        let view = try txn.view("entries-by-part")
        var result: [String: [String]] = [:]
        for group in try view.groups() { result[group] = try view.rowIDs(inGroup: group).map(\.key) }
        return result
    }

    @Test("readers at the latest and at older snapshots, the next writers and the observers' counts agree with the rows",
          .timeLimit(.minutes(2)), arguments: [UInt64(11), 2_026, 90_210])
    func agreesWithTheRows(seed: UInt64) throws {
        let directory = try TemporaryDirectory(prefix: "committed-pages")
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        try database.register(crashWriterView())
        let writer = database.newConnection()
        var random = SeededRandom(seed: seed)
        func pick(_ bound: Int) -> Int { Int(random.next() % UInt64(bound)) }

        // Groups that empty and come back (few rows in "d"), ranges over page boundaries (hundreds of rows).
        let filtered = ViewMappings(view: "entries-by-part", groupFilter: { $0 != "c" })
        var fixed = ViewMappings(groups: ["d", "a", "zzz"], view: "entries-by-part")
        fixed.setRange(.first(40), forGroup: "a")
        let observers = try [filtered, fixed].map { try ViewObserver(database: database, mappings: $0) }

        var model: [String: CrashWriterEntry] = [:]
        var number = 0
        var pinned: [(connection: Connection, expected: [String: [String]])] = []
        for commit in 0..<300 {
            try writer.readWrite { txn in
                for _ in 0..<(1 + pick(3)) {
                    let key = "k\(pick(commit < 20 ? 400 : 600))"
                    if pick(5) == 0 {
                        try txn.remove(key: key, in: crashWriterEntries)
                        model[key] = nil
                    } else {
                        number += 1
                        // "d" rarely, so that it empties and comes back; numbers from the past land inside pages.
                        let part = pick(40) == 0 ? "d" : Self.parts[pick(3)]
                        let entry = CrashWriterEntry(number: pick(3) == 0 ? pick(number) : number, part: part)
                        try txn.set(entry, forKey: key, in: crashWriterEntries)
                        model[key] = entry
                    }
                }
                if model.values.contains(where: { $0.part == "d" }), pick(8) == 0 {
                    for (key, entry) in model where entry.part == "d" {
                        try txn.remove(key: key, in: crashWriterEntries)
                        model[key] = nil
                    }
                }
            }
            let expected = Self.expected(model)
            let context = "seed \(seed), commit \(commit)"
            let (rendered, problems) = try database.newConnection().read { txn in
                (try Self.rendered(txn), commit % 50 == 49 ? try txn.view("entries-by-part").checkInvariants() : [])
            }
            #expect(rendered == expected, "\(context): the view differs from the rows")
            #expect(problems == [], "\(context)")
            for (observer, definition) in zip(observers, [filtered, fixed]) {
                try observer.advance()
                var fresh = definition
                try observer.read { txn in try fresh.update(with: txn.view("entries-by-part")) }
                #expect(observer.mappings.description == fresh.description, "\(context): the observer's counts differ from a full update")
                #expect(observer.mappings.allGroups == fresh.allGroups, "\(context)")
            }
            // Readers pinned at older snapshots, while later commits rewrite the pages they read.
            if commit % 7 == 0 {
                let connection = database.newConnection()
                _ = try connection.pin()
                pinned.append((connection, expected))
            }
            if pinned.count > 3 || (commit % 5 == 0 && !pinned.isEmpty) {
                let (connection, old) = pinned.removeFirst()
                let (rendered, snapshot) = try connection.read { txn in (try Self.rendered(txn), txn.snapshot) }
                #expect(rendered == old, "\(context): a reader pinned at snapshot \(snapshot) sees other rows")
                connection.unpin()
            }
        }
    }
}

/// A write whose row change one view took and a later view refused (its filter threw, and the caller caught the error)
/// writes nothing: the transaction commits without the views' commit step. The first view's writer changed its
/// directory in memory; that directory must not be kept as the committed one of the view's unchanged version.
@Suite("Committed pages: a write that wrote nothing leaves no directory of its own in the cache")
struct UnwrittenDirectoryTests {
    struct Refused: Error {}

    @Test("A change a filtered view refused, caught inside the transaction, refuses the transaction and leaves the parent's readers on the file's pages")
    func refusedChangeIsNotCached() throws {
        try withDatabase { database, _ in
            try database.register(makeTaskView())
            try database.register(FilteredView.make(name: "refusing", parentView: "by-list") { _, row in
                if try row.object(in: tasks).title == "boom" { throw Refused() }
                return true
            })
            let connection = database.newConnection()
            try connection.readWrite { txn throws in
                try txn.set(TodoItem(title: "a", list: "home", priority: 1), forKey: "k1", in: tasks)
                try txn.set(TodoItem(title: "b", list: "work", priority: 1), forKey: "k2", in: tasks)
            }
            func contents() throws -> [String: [String]] {
                try database.newConnection().read { txn throws in
                    let view = try txn.view("by-list")
                    var result: [String: [String]] = [:]
                    for group in ["home", "work"] { result[group] = try view.rowIDs(inGroup: group).map(\.key) }
                    return result
                }
            }
            let before = try contents()
            #expect(before == ["home": ["k1"], "work": ["k2"]])
            let snapshot = try database.newConnection().read { $0.snapshot }
            // "by-list" moves k1 to "work" in its writer, then "refusing" throws: the row is not written. The caller
            // catches the error and returns (alone, or after writing another row): the transaction is still refused
            // as a whole, since "by-list" applied a change the store did not write.
            for alsoWritesAnotherRow in [false, true] {
                let error = #expect(throws: CanopyError.self) {
                    try connection.readWrite { txn throws in
                        do {
                            try txn.set(TodoItem(title: "boom", list: "work", priority: 1), forKey: "k1", in: tasks)
                            Issue.record("the filtered view did not refuse the row")
                        } catch is Refused {}
                        if alsoWritesAnotherRow {
                            try txn.set(TodoItem(title: "c", list: "home", priority: 2), forKey: "k3", in: tasks)
                        }
                    }
                }
                #expect(error?.code == .extensionFailed, "\(String(describing: error))")
                #expect(try database.newConnection().read { $0.snapshot } == snapshot, "nothing was committed")
                #expect(try contents() == before, "the view reads a directory that is not the file's")
                try database.newConnection().read { txn throws in
                    #expect(try txn.view("by-list").checkInvariants() == [])
                    #expect(try txn.object(forKey: "k1", in: tasks)?.title == "a")
                    #expect(try txn.object(forKey: "k3", in: tasks) == nil)
                }
            }
            // The connection writes again as usual afterwards.
            try connection.readWrite { txn throws in
                try txn.set(TodoItem(title: "c", list: "home", priority: 2), forKey: "k3", in: tasks)
            }
            #expect(try contents().mapValues { Set($0) } == ["home": ["k1", "k3"], "work": ["k2"]])
        }
    }
}
