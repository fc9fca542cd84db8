import Canopy
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// A note with tags, for views whose rows are in many groups.
struct TaggedNote: Codable, Sendable, Equatable {
    var title: String
    var tags: [String]
    var pinned = false
}

let taggedNotes = TypedCollection<TaggedNote, NoMetadata>("notes")
/// The same notes stored as JSON, so that a test can write rows of another shape as bytes.
let jsonTaggedNotes = TypedCollection<TaggedNote, NoMetadata>("json-notes", codec: JSONCodec())

/// Notes under each of their tags, by title (`extra` groups added for every tagged note).
func makeByTagView(name: String = "by-tag", versionTag: String = "1", extra: Set<String> = [],
                   collection: TypedCollection<TaggedNote, NoMetadata> = taggedNotes) -> View {
    View(
        name: name,
        grouping: .manyByObject(collection) { _, note in Set(note.tags).union(note.tags.isEmpty ? [] : extra) },
        sorting: .byObject(collection) { _, _, note in SortKey(.ascending(note.title)) },
        versionTag: versionTag)
}

/// The keys of each group, by position.
private func groupContents(_ reader: ViewReader) throws -> [String: [String]] {
    var result: [String: [String]] = [:]
    for group in try reader.groups() { result[group] = try reader.rowIDs(inGroup: group, range: 0..<Int.max).map(\.key) }
    return result
}

@Suite("Views: a row in many groups")
struct ManyGroupsTests {
    static func note(_ key: String) -> RowID { RowID(collection: taggedNotes.name, key: key) }

    @Test("A row is in each of its groups; positions, counts and entries are per group; changing tags moves it between groups")
    func rowsInSeveralGroups() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn throws in
                try txn.set(TaggedNote(title: "milk", tags: ["shop", "home"]), forKey: "n1", in: taggedNotes)
                try txn.set(TaggedNote(title: "bread", tags: ["shop"]), forKey: "n2", in: taggedNotes)
                try txn.set(TaggedNote(title: "paint", tags: ["home", "weekend", "shop"]), forKey: "n3", in: taggedNotes)
                try txn.set(TaggedNote(title: "untagged", tags: []), forKey: "n4", in: taggedNotes)
            }
            try database.register(makeByTagView())
            try connection.read { txn throws in
                let view = try txn.view("by-tag")
                #expect(view.rowsInManyGroups)
                #expect(try groupContents(view) == ["home": ["n1", "n3"], "shop": ["n2", "n1", "n3"], "weekend": ["n3"]])
                #expect(try view.count() == 6)  // entries: a row counts once per group
                #expect(try view.entries(of: Self.note("n3")).map(\.group) == ["home", "shop", "weekend"])
                #expect(try view.positions(of: Self.note("n3")).map { "\($0.group)#\($0.index)" } == ["home#1", "shop#2", "weekend#0"])
                #expect(try view.position(of: Self.note("n3"), inGroup: "shop") == 2)
                #expect(try view.position(of: Self.note("n3"), inGroup: "nowhere") == nil)
                #expect(try view.position(of: Self.note("n3"))! == ("home", 1))  // the first group by name
                #expect(try view.entries(of: Self.note("n4")).isEmpty)
                #expect(try view.checkInvariants() == [])
                var mappings = ViewMappings(groups: ["shop", "home", "weekend"], view: "by-tag")
                try mappings.update(with: view)
                #expect(try mappings.indexPaths(of: Self.note("n3"), reader: view) == [ViewIndexPath(section: 0, row: 2), ViewIndexPath(section: 1, row: 1), ViewIndexPath(section: 2, row: 0)])
                #expect(try mappings.indexPath(of: Self.note("n3"), reader: view) == ViewIndexPath(section: 0, row: 2))
            }
            try connection.readWrite { txn throws in
                try txn.set(TaggedNote(title: "paint", tags: ["weekend", "garden"]), forKey: "n3", in: taggedNotes)  // leaves home and shop
                try txn.set(TaggedNote(title: "untagged", tags: ["home"]), forKey: "n4", in: taggedNotes)
                _ = try txn.remove(key: "n1", in: taggedNotes)
            }
            try connection.read { txn throws in
                let view = try txn.view("by-tag")
                #expect(try groupContents(view) == ["garden": ["n3"], "home": ["n4"], "shop": ["n2"], "weekend": ["n3"]])
                #expect(try view.checkInvariants() == [])
            }
        }
    }

    @Test("Changing a row's set of groups is, per group, a delete, an insert, a move or an update")
    func changesetsPerGroup() throws {
        try withDatabase { database, _ in
            try database.register(makeByTagView())
            let connection = database.newConnection()
            try connection.readWrite { txn throws in
                try txn.set(TaggedNote(title: "b", tags: ["x", "y"]), forKey: "n1", in: taggedNotes)
                try txn.set(TaggedNote(title: "a", tags: ["x", "y", "z"]), forKey: "n2", in: taggedNotes)
                try txn.set(TaggedNote(title: "c", tags: ["y", "z"]), forKey: "n3", in: taggedNotes)
            }
            let observer = try ViewObserver(database: database, mappings: ViewMappings(groups: ["x", "y", "z"], view: "by-tag"))
            try connection.readWrite { txn throws in
                // n1: leaves x, stays in y with a new title (moves after c), joins z.
                try txn.set(TaggedNote(title: "d", tags: ["y", "z"]), forKey: "n1", in: taggedNotes)
            }
            let changeset = try observer.advance()
            #expect(changeset.rowChanges.map(\.description) == [
                "delete notes/n1 [0, 1]", "insert notes/n1 [2, 2]", "move notes/n1 [1, 1] -> [1, 2]",
            ])
            // The same groups, another object: an update in each.
            try connection.readWrite { txn in try txn.set(TaggedNote(title: "d", tags: ["z", "y"], pinned: true), forKey: "n1", in: taggedNotes) }
            let updates = try observer.advance()
            #expect(updates.rowChanges.map(\.description) == ["update notes/n1 [1, 2] -> [1, 2]", "update notes/n1 [2, 2] -> [2, 2]"])
        }
    }

    @Test("A one-group view's change of group stays a move (its records follow the row)")
    func oneGroupViewsKeepMoves() throws {
        try withDatabase { database, _ in
            try database.register(makeTaskView())
            let connection = database.newConnection()
            try connection.readWrite { txn in
                try txn.set(TodoItem(title: "t", list: "a", priority: 1), forKey: "k", in: tasks)
                try txn.set(TodoItem(title: "s", list: "a", priority: 1), forKey: "k2", in: tasks)
                try txn.set(TodoItem(title: "u", list: "b", priority: 1), forKey: "k3", in: tasks)
            }
            let observer = try ViewObserver(database: database, mappings: ViewMappings(groups: ["a", "b"], view: "by-list"))
            try connection.readWrite { txn in try txn.set(TodoItem(title: "t", list: "b", priority: 1), forKey: "k", in: tasks) }
            let changes = try observer.advance().rowChanges.map(\.description)
            #expect(changes == ["move tasks/k [0, 1] -> [1, 0]"])
        }
    }

    @Test("Registration spot-checks every group of a sampled row: a group added without a new tag rebuilds the view")
    func spotCheckRecomputesAllGroups() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        do {
            let database = try Database(path: path, options: .init(durability: .none))
            try database.register(makeByTagView())
            try database.newConnection().readWrite { txn throws in
                for i in 0..<20 { try txn.set(TaggedNote(title: "n\(i)", tags: ["t\(i % 3)"]), forKey: "k\(i)", in: taggedNotes) }
            }
        }
        // The same tag and the same place in every group a row has; only a new group ("all") for every row. Each
        // sampled entry alone agrees: only recomputing all groups of the row finds the difference.
        let database = try Database(path: path, options: .init(durability: .none))
        let changed = makeByTagView(extra: ["all"])
        let outcome = try database.register(changed)
        guard case .rebuilt(.storedStateMismatch(let reason)) = outcome else {
            Issue.record("expected a rebuild for a stored-state mismatch, got \(outcome)")
            return
        }
        #expect(reason.contains("'all'"), "\(reason)")
        try database.newConnection().read { txn throws in
            let view = try txn.view("by-tag")
            #expect(try view.count(inGroup: "all") == 20)
            #expect(try view.checkInvariants() == [])
        }
    }

    @Test("A many-group definition differs from a one-group one with the same tag: rebuilt")
    func manyGroupsIsPartOfTheDefinition() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        do {
            let database = try Database(path: path, options: .init(durability: .none))
            try database.register(View(name: "by-tag", grouping: .byObject(taggedNotes) { _, note in note.tags.first },
                                       sorting: .byObject(taggedNotes) { _, _, note in SortKey(.ascending(note.title)) }))
        }
        let database = try Database(path: path, options: .init(durability: .none))
        let outcome = try database.register(makeByTagView())
        // The many form is recorded as another kind (older builds refuse it), which rebuilds as a changed definition does.
        guard case .rebuilt(.kindChanged(from: "view", to: View.manyGroupsKind)) = outcome else {
            Issue.record("expected a rebuild for a changed definition, got \(outcome)")
            return
        }
    }

    @Test("Writes made while the view was not registered are caught up, every group of each row")
    func catchUp() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        do {
            let database = try Database(path: path, options: .init(durability: .none))
            try database.register(makeByTagView())
            try database.newConnection().readWrite { txn throws in
                try txn.set(TaggedNote(title: "a", tags: ["x", "y"]), forKey: "k1", in: taggedNotes)
                try txn.set(TaggedNote(title: "b", tags: ["y"]), forKey: "k2", in: taggedNotes)
                try txn.set(TaggedNote(title: "c", tags: ["x", "z"]), forKey: "k3", in: taggedNotes)
            }
        }
        do {
            // A process without the view's closures: rewrites, removes and re-adds rows.
            let database = try Database(path: path, options: .init(durability: .none))
            try database.newConnection().readWrite { txn throws in
                try txn.set(TaggedNote(title: "a", tags: ["z"]), forKey: "k1", in: taggedNotes)
                _ = try txn.remove(key: "k2", in: taggedNotes)
                _ = try txn.remove(key: "k3", in: taggedNotes)
                try txn.set(TaggedNote(title: "c", tags: ["y", "x"]), forKey: "k3", in: taggedNotes)
                try txn.set(TaggedNote(title: "d", tags: ["x", "y", "z"]), forKey: "k4", in: taggedNotes)
            }
            #expect(throws: CanopyError.self) { try database.newConnection().read { txn in _ = try txn.view("by-tag").count() } }
        }
        let database = try Database(path: path, options: .init(durability: .none))
        let view = makeByTagView()
        #expect(try database.register(view) == .caughtUp(rows: 4))
        try database.newConnection().read { txn throws in
            let reader = try txn.view("by-tag")
            #expect(try groupContents(reader) == ["x": ["k3", "k4"], "y": ["k3", "k4"], "z": ["k1", "k4"]])
            #expect(try reader.checkInvariants() == [])
        }
    }

    @Test("Rows that do not decode are skipped from every group and enter all of them once rewritten")
    func skippedRows() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn throws in
                try txn.set(TaggedNote(title: "ok", tags: ["x", "y"]), forKey: "k1", in: jsonTaggedNotes)
                // A tool writes a row of another shape (no tags).
                try txn.setStoredRow(objectBytes: Array(#"{"title":"old"}"#.utf8), metadataBytes: nil, forKey: "k2", inCollection: "json-notes", codecName: "json")
            }
            try database.register(makeByTagView(collection: jsonTaggedNotes))
            try connection.read { txn throws in
                #expect(try txn.skippedRows(ofExtension: "by-tag")?.count == 1)
                #expect(try txn.view("by-tag").checkInvariants() == [])
            }
            try connection.readWrite { txn throws in
                // A decodable row that becomes undecodable leaves every group.
                try txn.setStoredRow(objectBytes: Array(#"{"title":"broken"}"#.utf8), metadataBytes: nil, forKey: "k1", inCollection: "json-notes", codecName: "json")
            }
            try connection.read { txn throws in
                #expect(try txn.view("by-tag").count() == 0)
                #expect(try txn.skippedRows(ofExtension: "by-tag")?.count == 2)
                #expect(try txn.view("by-tag").checkInvariants() == [])
            }
            try connection.readWrite { txn throws in
                try txn.set(TaggedNote(title: "fixed", tags: ["x", "z"]), forKey: "k2", in: jsonTaggedNotes)
            }
            try connection.read { txn throws in
                #expect(try groupContents(txn.view("by-tag")) == ["x": ["k2"], "z": ["k2"]])
                #expect(try txn.skippedRows(ofExtension: "by-tag")?.count == 1)
                #expect(try txn.view("by-tag").checkInvariants() == [])
            }
        }
    }

    @Test("A filtered view over a many-group view filters each group of a row; populated and maintained alike")
    func filteredOverManyGroups() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn throws in
                try txn.set(TaggedNote(title: "a", tags: ["x", "y", "z"]), forKey: "k1", in: taggedNotes)
                try txn.set(TaggedNote(title: "b", tags: ["x"], pinned: true), forKey: "k2", in: taggedNotes)
            }
            let byTag = makeByTagView()
            try database.register(byTag)
            // Keeps pinned notes, and every note in group "y".
            let filtered = FilteredView.make(name: "pinned", parent: byTag) { group, row in
                try group == "y" || row.object(in: taggedNotes).pinned
            }
            try database.register(filtered)
            try connection.read { txn throws in
                let view = try txn.view("pinned")
                #expect(view.rowsInManyGroups)
                #expect(try groupContents(view) == ["x": ["k2"], "y": ["k1"]])
                #expect(try view.checkInvariants() == [])
            }
            let observer = try ViewObserver(database: database, mappings: ViewMappings(groups: ["x", "y", "z"], view: "pinned"))
            try connection.readWrite { txn throws in
                try txn.set(TaggedNote(title: "a", tags: ["x", "y", "z"], pinned: true), forKey: "k1", in: taggedNotes)
            }
            // Group z was empty (its section hidden): it appears as a section; in x an insert, in y an update.
            let changeset = try observer.advance()
            #expect(changeset.sectionChanges.map(\.description) == ["insert section 2 (z)"])
            #expect(changeset.rowChanges.map(\.description) == ["insert notes/k1 [0, 0]", "update notes/k1 [1, 0] -> [1, 0]"])
            try connection.read { txn throws in
                #expect(try groupContents(txn.view("pinned")) == ["x": ["k1", "k2"], "y": ["k1"], "z": ["k1"]])
                #expect(try txn.view("pinned").checkInvariants() == [])
            }
        }
    }

    @Test("Reopened and read without the closures (a tool): groups, entries and structure from the stored tables")
    func persistedAndReopened() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        do {
            let database = try Database(path: path, options: .init(durability: .none))
            let byTag = makeByTagView()
            try database.register(byTag)
            try database.register(FilteredView.make(name: "pinned", parent: byTag) { _, row in try row.object(in: taggedNotes).pinned })
            try database.newConnection().readWrite { txn throws in
                try txn.set(TaggedNote(title: "a", tags: ["x", "y"], pinned: true), forKey: "k1", in: taggedNotes)
                try txn.set(TaggedNote(title: "b", tags: ["y"]), forKey: "k2", in: taggedNotes)
            }
        }
        do {
            let database = try Database(path: path, options: .init(readOnly: true))
            try database.newConnection().read { txn throws in
            let view = try txn.persistedView("by-tag")
            #expect(!view.hasClosures)
            #expect(view.rowsInManyGroups)
            #expect(try groupContents(view) == ["x": ["k1"], "y": ["k1", "k2"]])
            #expect(try view.entries(of: Self.note("k1")).map(\.group) == ["x", "y"])
            #expect(try view.checkStructure() == [])
            let pinned = try txn.persistedView("pinned")
            #expect(pinned.rowsInManyGroups)
            #expect(try groupContents(pinned) == ["x": ["k1"], "y": ["k1"]])
            #expect(try pinned.checkStructure() == [])
            }
        }
        // Registered again with the same definition: nothing to do.
        let writable = try Database(path: path, options: .init(durability: .none))
        #expect(try writable.register(makeByTagView()) == .current)
    }

    @Test("A view stored before rows could be in many groups reads unchanged: one entry per row")
    func oldViewsReadAsOneGroup() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try extractCanopy3Fixture(into: directory)
        let database = try Database(path: path)
        try database.newConnection().read { txn throws in
            for name in ["agenda", "by-calendar"] {
                let view = try txn.persistedView(name)
                #expect(!view.rowsInManyGroups)
                var rows = 0
                for group in try view.groups() {
                    for id in try view.rowIDs(inGroup: group, range: 0..<Int.max) {
                        #expect(try view.entries(of: id).map(\.group) == [group])
                        rows += 1
                    }
                }
                #expect(rows == 4)
                #expect(try view.checkStructure() == [])
            }
        }
    }

    @Test("A commit's changes say whether records are per group; the flag survives encoding, an unknown flag is refused")
    func payloadFlag() throws {
        let record = ViewRowChange(id: Self.note("k"), original: nil, final: ViewEntry(group: "x", orderBytes: [1, 2]),
                                   objectChanged: true, metadataChanged: false, reinserted: false)
        for perGroup in [false, true] {
            let changes = ViewCommitChanges(rows: [record], isReset: false, recordsPerGroup: perGroup)
            #expect(try ViewCommitChanges.decode(changes.encoded) == changes)
        }
        // A one-group view's payload is byte for byte what it was before the flag existed (second byte 0).
        #expect(ViewCommitChanges(rows: [], isReset: false).encoded == [1, 0, 0])
        #expect(ViewCommitChanges(rows: [], isReset: true, recordsPerGroup: true).encoded == [1, 3, 0])
        let error = #expect(throws: CanopyError.self) { try ViewCommitChanges.decode([1, 4, 0]) }
        #expect(error?.code == .incompatibleFormat)
    }

    @Test("Malformed entry lists are corruptStore, never a trap", arguments: [
        [0x00], [0x00, 0x05, 0x01, 0x01], [0x00, 0x02, 0x01, 0x09, 0x41], [0x00, 0x01, 0x00, 0x00], [0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],
    ] as [[UInt8]])
    func malformedEntryLists(bytes: [UInt8]) throws {
        try withDatabase { database, _ in
            try database.register(makeByTagView())
            try database.newConnection().readWrite { txn in try txn.set(TaggedNote(title: "a", tags: ["x", "y"]), forKey: "k", in: taggedNotes) }
            try database.newConnection().readWrite { txn throws in
                let slot = try #require(try txn.attachmentSlot(for: "by-tag"))
                let key = try #require(try txn.storedRowKey(for: Self.note("k")))
                _ = try txn.setAttachments(at: slot, [(key, bytes)])
            }
            let error = #expect(throws: CanopyError.self) {
                try database.newConnection().read { txn in _ = try txn.view("by-tag").entries(of: Self.note("k")) }
            }
            #expect(error?.code == .corruptStore)
        }
    }
}

@Suite("Documentation examples: A row in many groups")
struct ManyGroupsArticleTests {
    @Test("Every code block of ManyGroups.md is in ManyGroupsArticleExamples.swift, in order")
    func articleIsCompiled() throws {
        let compiled = try String(contentsOf: DocExamplesTests.root.appendingPathComponent("Tests/CanopyTests/ManyGroupsArticleExamples.swift"), encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        let blocks = try DocExamplesTests.blocks(ofArticle: "ManyGroups.md")
        #expect(blocks.count == 2)
        var searchFrom = 0
        for (number, block) in blocks.enumerated() {
            let start = (searchFrom...max(searchFrom, compiled.count - block.count)).first { offset in
                offset + block.count <= compiled.count && Array(compiled[offset..<(offset + block.count)]) == block
            }
            guard let start else {
                Issue.record("block \(number) of ManyGroups.md is not in ManyGroupsArticleExamples.swift (after line \(searchFrom)); copy it there")
                continue
            }
            searchFrom = start + block.count
        }
    }

    @Test("The article's example runs and prints what its comments say")
    func articleRuns() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            let changes = try manyGroupsArticleExamples(database: database, connection: connection)
            #expect(changes.map(\.description) == ["delete notes/n1 [0, 1]", "insert notes/n1 [2, 1]", "update notes/n1 [1, 1] -> [1, 1]"])
            try connection.read { txn throws in
                let view = try txn.view("by-tag")
                #expect(try view.groups() == ["home", "shop", "work"])
                #expect(try view.rowIDs(inGroup: "work").map(\.key) == ["n2", "n1"])
                #expect(try view.checkInvariants() == [])
            }
        }
    }
}
