import Canopy
import CanopyCoreTestFixtures
import CanopyIndexes
import CanopyTestSupport
import Foundation
import class LMDB.Environment
import struct LMDB.EnvironmentOptions
import Testing

/// What a registration checks and writes: an unchanged, current definition is a read; a changed one — options or
/// closures, without a new version tag — is rebuilt, and the outcome says why.
@Suite("Registration")
struct RegistrationTests {
    static let path = "notes"
    static let other = TypedCollection<Note, NoMetadata>("others")

    /// Notes by priority bucket, sorted by title (or, with `descending`, by title descending).
    static func byPriority(descending: Bool = false, bucket: Int = 2, allowed: Set<String>? = ["notes"]) -> View {
        View(
            name: "by-priority",
            // Over "notes" and, with `allowed`, "others" (two collections of notes): closures over the row.
            grouping: .custom(dependsOnObject: true, dependsOnMetadata: false) { row in "p\(try row.object(as: Note.self).priority / bucket)" },
            sorting: .custom(dependsOnObject: true, dependsOnMetadata: false) { _, row in
                let note = try row.object(as: Note.self)
                return SortKey(descending ? .descending(note.title) : .ascending(note.title))
            },
            options: ViewOptions(allowedCollections: allowed))
    }

    static func important(threshold: Int = 5) -> View {
        FilteredView.make(name: "important", parentView: "by-priority") { _, row in try row.object(as: Note.self).priority >= threshold }
    }

    static func byTitleLength(offset: Int64 = 0) -> SecondaryIndex<Int64OrderedCoding> {
        SecondaryIndex<Int64OrderedCoding>.byObject(name: "by-length", notes) { _, note in
            Int64(note.title.count) + offset
        }
    }

    /// 300 notes over 5 buckets, and 20 rows of another collection.
    static func fill(_ database: Database) throws {
        try database.newConnection().readWrite { txn in
            for i in 0..<300 { try txn.set(Note(title: "note \(1000 + i * 7 % 300)", priority: i % 10), forKey: "n\(i)", in: notes) }
            for i in 0..<20 { try txn.set(Note(title: "other \(i)", priority: i % 10), forKey: "o\(i)", in: other) }
        }
    }

    /// The registered view's rows equal what its definition gives over every row.
    static func expectBruteForce(_ database: Database, bucket: Int, descending: Bool, collections: [String], threshold: Int = 5) throws {
        try database.newConnection().read { txn in
            var expected: [String: [(title: String, key: String, collection: String, priority: Int)]] = [:]
            for collection in collections {
                try txn.enumerateObjects(in: TypedCollection<Note, NoMetadata>(collection)) { key, note in
                    expected["p\(note.priority / bucket)", default: []].append((note.title, key, collection, note.priority))
                    return true
                }
            }
            let reader = try txn.view("by-priority")
            #expect(try reader.groups() == expected.keys.sorted())
            for (group, rows) in expected {
                let titles = rows.map(\.title).sorted()
                #expect(try reader.rowIDs(inGroup: group).count == rows.count)
                let shown = try reader.rowIDs(inGroup: group).map { id in try txn.object(forKey: id.key, in: TypedCollection<Note, NoMetadata>(id.collection))?.title }
                #expect(shown == (descending ? titles.reversed() : titles), "group \(group)")
            }
            #expect(try reader.checkInvariants() == [])
            if let important = try? txn.view("important") {
                #expect(try important.count() == expected.values.joined().filter { $0.priority >= threshold }.count)
            }
        }
    }

    static func reopen(_ directory: TemporaryDirectory, readOnly: Bool = false) throws -> Database {
        try Database(path: directory.appending("db"), options: .init(durability: .none, readOnly: readOnly))
    }

    @Test("An unchanged, current definition registers with a read: no commit, no snapshot move, even read-only")
    func unchangedIsARead() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        do {
            let database = try Self.reopen(directory)
            #expect(try database.register(Self.byPriority()) == .rebuilt(.firstRegistration))
            #expect(try database.register(Self.important()) == .rebuilt(.firstRegistration))
            #expect(try database.register(Self.byTitleLength()) == .rebuilt(.firstRegistration))
            try Self.fill(database)
        }
        let snapshot = try Self.reopen(directory).currentSnapshot()
        for readOnly in [false, true] {
            let database = try Self.reopen(directory, readOnly: readOnly)
            #expect(try database.register(Self.byPriority()) == .current)
            #expect(try database.register(Self.important()) == .current)
            #expect(try database.register(Self.byTitleLength()) == .current)
            #expect(try database.currentSnapshot() == snapshot)
            try Self.expectBruteForce(database, bucket: 2, descending: false, collections: ["notes"])
        }
    }

    @Test("Allowed collections changed without a new version tag: rebuilt, saying the definition changed")
    func changedOptionsRebuild() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        do {
            let database = try Self.reopen(directory)
            try database.register(Self.byPriority())
            try Self.fill(database)
        }
        let database = try Self.reopen(directory)
        let outcome = try database.register(Self.byPriority(allowed: ["notes", "others"]))
        guard case .rebuilt(.definitionChanged(let from, let to)) = outcome else {
            Issue.record("expected a rebuild for the changed definition, got \(outcome)")
            return
        }
        #expect(from.contains("\"allowedCollections\":[\"notes\"]") && to.contains("\"allowedCollections\":[\"notes\",\"others\"]"))
        try Self.expectBruteForce(database, bucket: 2, descending: false, collections: ["notes", "others"])
    }

    @Test("Sorting or grouping closures changed without a new version tag: the spot check finds it, and the view is rebuilt",
          arguments: [(3, false), (2, true)])
    func changedClosuresRebuild(bucket: Int, descending: Bool) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        do {
            let database = try Self.reopen(directory)
            try database.register(Self.byPriority())
            try database.register(Self.important())
            try Self.fill(database)
        }
        let database = try Self.reopen(directory)
        let outcome = try database.register(Self.byPriority(descending: descending, bucket: bucket))
        guard case .rebuilt(.storedStateMismatch) = outcome else {
            Issue.record("expected a rebuild for the changed closures, got \(outcome)")
            return
        }
        // Its filtered view, derived from the old order, is rebuilt with it.
        #expect(try database.register(Self.important()) == .rebuilt(.dependencyRebuilt("by-priority")))
        try Self.expectBruteForce(database, bucket: bucket, descending: descending, collections: ["notes"])
    }

    @Test("A filter changed without a new version tag is rebuilt; so is an index whose indexer changed")
    func changedFilterAndIndexerRebuild() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        do {
            let database = try Self.reopen(directory)
            try database.register(Self.byPriority())
            try database.register(Self.important())
            try database.register(Self.byTitleLength())
            try Self.fill(database)
        }
        let database = try Self.reopen(directory)
        #expect(try database.register(Self.byPriority()) == .current)
        let filtered = try database.register(Self.important(threshold: 8))
        guard case .rebuilt(.storedStateMismatch) = filtered else {
            Issue.record("expected a rebuild for the changed filter, got \(filtered)")
            return
        }
        let index = Self.byTitleLength(offset: 100)
        let indexed = try database.register(index)
        guard case .rebuilt(.storedStateMismatch) = indexed else {
            Issue.record("expected a rebuild for the changed indexer, got \(indexed)")
            return
        }
        try Self.expectBruteForce(database, bucket: 2, descending: false, collections: ["notes"], threshold: 8)
        try database.newConnection().read { txn throws in
            #expect(try index.value(of: RowID(collection: "notes", key: "n1"), in: txn) == Int64("note 1007".count) + 100)
        }
    }

    @Test("Randomized: rows written, rewritten, touched and removed while the extensions were not registered are caught up at registration exactly",
          arguments: [UInt64(11), 12, 13, 14])
    func randomMissedWritesCatchUp(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        do {
            let database = try Self.reopen(directory)
            try database.register(Self.byPriority())
            try database.register(Self.important())
            try database.register(Self.byTitleLength())
            try Self.fill(database)
        }
        for round in 0..<6 {
            do {
                // Another "process": the database opened without the extensions.
                let database = try Self.reopen(directory)
                try database.newConnection().readWrite { txn in
                    for _ in 0..<Int.random(in: 1...40, using: &random) {
                        let key = "n\(Int.random(in: 0..<320, using: &random))"
                        switch Int.random(in: 0..<5, using: &random) {
                        case 0: _ = try txn.remove(key: key, in: notes)
                        case 1:
                            // Removed and written again: the record loses the extensions' attachments.
                            _ = try txn.remove(key: key, in: notes)
                            try txn.set(Note(title: "again \(round) \(key)", priority: Int.random(in: 0..<10, using: &random)), forKey: key, in: notes)
                        case 2: _ = try txn.touchObject(forKey: key, inCollection: "notes")
                        default:
                            try txn.set(Note(title: "t\(Int.random(in: 0..<1000, using: &random))", priority: Int.random(in: 0..<10, using: &random)),
                                        forKey: key, in: notes)
                        }
                    }
                }
            }
            let database = try Self.reopen(directory)
            let outcomes = [try database.register(Self.byPriority()), try database.register(Self.important()), try database.register(Self.byTitleLength())]
            #expect(outcomes.allSatisfy { if case .caughtUp = $0 { true } else { false } }, "seed \(seed) round \(round): \(outcomes)")
            try Self.expectBruteForce(database, bucket: 2, descending: false, collections: ["notes"])
            let index = try #require(database.registeredExtension(named: "by-length") as? SecondaryIndex<Int64OrderedCoding>)
            try database.newConnection().read { txn in
                var rows: [(String, Note)] = []
                try txn.enumerateObjects(in: notes) { key, note in
                    rows.append((key, note))
                    return true
                }
                for (key, note) in rows {
                    #expect(try index.value(of: RowID(collection: "notes", key: key), in: txn) == Int64(note.title.count), "seed \(seed) key \(key)")
                }
                #expect(try index.count(in: txn) == rows.count, "seed \(seed)")
            }
        }
    }

    @Test("Options are recorded as JSON through Codable, with sorted keys")
    func optionsAreCodableJSON() throws {
        #expect(try Self.byPriority(allowed: ["b\"q", "a"]).recordedOptions()
            == #"{"allowedCollections":["a","b\"q"],"grouping":{"metadata":false,"object":true},"rerunOnTouch":false,"sorting":{"metadata":false,"object":true}}"#)
        #expect(try Self.important().recordedOptions() == #"{"parent":"by-priority","rerunOnTouch":false}"#)
        #expect(try Self.byTitleLength().recordedOptions() == #"{"collections":["notes"],"dependsOnMetadata":false,"dependsOnObject":true}"#)
        #expect(Self.important().options.parent == "by-priority")
        #expect(Self.byTitleLength().options == SecondaryIndexDefinition(collections: ["notes"], dependsOnObject: true, dependsOnMetadata: false))
    }

    /// Replaces the options recorded for extension `name` with `options`, with LMDB directly (as a damaged file, a
    /// hand edit or an earlier version would leave them), the database closed.
    static func rewriteRecordedOptions(_ directory: TemporaryDirectory, of name: String, to options: String) throws {
        let environment = try Environment(path: directory.appending("db"), options: EnvironmentOptions(maxDatabases: 64))
        try environment.write { txn in
            let table = try txn.openDatabase(named: "canopy.extensions", checksummed: true)
            let key = Array(name.utf8)
            guard let bytes = try txn.value(forKey: key, in: table) else { throw CanopyError(.invalidArgument, "no record of \(name)") }
            var record = try JSONDecoder().decode(ExtensionRecord.self, from: Data(bytes))
            record.options = options
            try txn.put(Array(try JSONEncoder().encode(record)), forKey: key, in: table)
        }
    }

    @Test("Options recorded by earlier versions (JSON built by hand, fewer fields) still read: the view and the index are rebuilt as changed, and tools read the old view's parent")
    func earlierOptionsStillRead() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        do {
            let database = try Self.reopen(directory)
            try database.register(Self.byPriority())
            try database.register(Self.important())
            try database.register(Self.byTitleLength())
            try Self.fill(database)
        }
        // The forms the code before issue 14 wrote: interpolated JSON with only these keys.
        try Self.rewriteRecordedOptions(directory, of: "by-priority", to: #"{"allowedCollections":["notes"],"rerunOnTouch":false}"#)
        try Self.rewriteRecordedOptions(directory, of: "important", to: #"{"rerunOnTouch":false,"parent":"by-priority"}"#)
        try Self.rewriteRecordedOptions(directory, of: "by-length", to: #"{"collections":["notes"]}"#)
        do {
            // A tool reads the views without registering them: the filtered view keeps its parent.
            let database = try Database(path: directory.appending("db"))
            try database.newConnection().read { txn throws in
                #expect(try txn.persistedView("important").parentView == "by-priority")
                #expect(try txn.persistedView("by-priority").count() == 300)
            }
        }
        let database = try Self.reopen(directory)
        for (name, outcome) in [("by-priority", try database.register(Self.byPriority())), ("by-length", try database.register(Self.byTitleLength()))] {
            guard case .rebuilt(.definitionChanged) = outcome else {
                Issue.record("\(name): expected a rebuild for the earlier definition, got \(outcome)")
                continue
            }
        }
        #expect(try database.register(Self.important()) != .current)
        try Self.expectBruteForce(database, bucket: 2, descending: false, collections: ["notes"])
    }

    @Test("Recorded options that are not JSON, or not the extension's options: a rebuild that says so, and a typed error for tools, never ignored")
    func malformedOptionsAreNotIgnored() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        do {
            let database = try Self.reopen(directory)
            try database.register(Self.byPriority())
            try database.register(Self.important())
            try database.register(Self.byTitleLength())
            try Self.fill(database)
        }
        try Self.rewriteRecordedOptions(directory, of: "important", to: #"{"parent":"by-priority","rerunOnTouch":fals"#)
        try Self.rewriteRecordedOptions(directory, of: "by-length", to: #"{"collections":"notes"}"#)
        do {
            // Read without its options, the filtered view would have lost its parent: the tool gets a typed error.
            let database = try Database(path: directory.appending("db"))
            try database.newConnection().read { txn in
                #expect {
                    _ = try txn.persistedView("important")
                } throws: { error in
                    guard let error = error as? CanopyError else { return false }
                    return error.code == .corruptStore && error.extensionName == "important" && error.message.contains("register the view again")
                }
            }
        }
        do {
            let database = try Self.reopen(directory)
            try database.register(Self.byPriority())
            for (name, outcome) in [("important", try database.register(Self.important())), ("by-length", try database.register(Self.byTitleLength()))] {
                guard case .rebuilt(.recordedOptionsUnreadable(let recorded, let reason)) = outcome else {
                    Issue.record("\(name): expected a rebuild for unreadable options, got \(outcome)")
                    continue
                }
                #expect(!recorded.isEmpty && !reason.isEmpty, "\(name)")
            }
        }
        // Registered again, the records are whole: the next process's registration is a read.
        let database = try Self.reopen(directory)
        #expect(try database.register(Self.byPriority()) == .current)
        #expect(try database.register(Self.important()) == .current)
        #expect(try database.register(Self.byTitleLength()) == .current)
    }
}
