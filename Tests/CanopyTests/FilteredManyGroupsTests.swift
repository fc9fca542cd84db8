import Canopy
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// A database written by the build before filtered views over many-group views had their own kind (abf6e15): notes
/// k1 "a" [x, y, z] pinned, k2 "b" [x], k3 "c" [y, w] pinned; the view `by-tag` (``makeByTagView``) and the filtered
/// view `pinned` over it (pinned notes), recorded with the kind `filtered-view`. Kept gzipped in Fixtures/.
func extractFilteredManyGroupsFixture(into directory: TemporaryDirectory) throws -> String {
    try unpackGzippedDatabase(
        URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/canopy4-filtered-many-groups-abf6e15.data.mdb.gz"),
        into: directory)
}

/// The kinds the builds before ``View/filteredManyGroupsKind`` read as views, without closures
/// (`View.recordedKinds` of abf6e15 and the `canopy` commands' filters): any other kind is "no view named … is
/// recorded" there. A build from before many-group views read only the first two.
private let kindsAnOlderBuildReads: Set<String> = ["view", "filtered-view", View.manualKind, View.manyGroupsKind]

/// The fixture's filter, the same closure as when it was written.
private func pinnedView(parent: View) -> View {
    FilteredView.make(name: "pinned", parent: parent) { _, row in try row.object(in: taggedNotes).pinned }
}

private func contents(_ reader: ViewReader) throws -> [String: [String]] {
    var result: [String: [String]] = [:]
    for group in try reader.groups() { result[group] = try reader.rowIDs(inGroup: group, range: 0..<Int.max).map(\.key) }
    return result
}

@Suite("Filtered views over many-group views: recorded with their own kind, which older builds refuse")
struct FilteredManyGroupsTests {
    static let fixturePinned = ["w": ["k3"], "x": ["k1"], "y": ["k1", "k3"], "z": ["k1"]]

    @Test("Made from the parent view, it is recorded as filtered-many-groups-view (not a kind older builds read), and so are filtered views over it")
    func recordedKind() throws {
        try withDatabase { database, _ in
            let byTag = makeByTagView()
            try database.register(byTag)
            let pinned = pinnedView(parent: byTag)
            #expect(pinned.kind == View.filteredManyGroupsKind)
            try database.register(pinned)
            let short = FilteredView.make(name: "pinned-short", parent: pinned) { _, row in try row.object(in: taggedNotes).title.count < 3 }
            #expect(short.kind == View.filteredManyGroupsKind)
            try database.register(short)
            try database.newConnection().readWrite { txn throws in
                try txn.set(TaggedNote(title: "a", tags: ["x", "y"], pinned: true), forKey: "k1", in: taggedNotes)
                try txn.set(TaggedNote(title: "long", tags: ["y"], pinned: true), forKey: "k2", in: taggedNotes)
            }
            try database.newConnection().read { txn throws in
                let kinds = Dictionary(uniqueKeysWithValues: try txn.extensionRecords().map { ($0.name, $0.kind) })
                #expect(kinds["pinned"] == View.filteredManyGroupsKind)
                #expect(kinds["pinned-short"] == View.filteredManyGroupsKind)
                #expect(!kindsAnOlderBuildReads.contains(View.filteredManyGroupsKind))
                #expect(View.recordedKinds.contains(View.filteredManyGroupsKind))
                #expect(try contents(txn.view("pinned")) == ["x": ["k1"], "y": ["k1", "k2"]])
                #expect(try contents(txn.view("pinned-short")) == ["x": ["k1"], "y": ["k1"]])
                #expect(try txn.view("pinned-short").checkInvariants() == [])
            }
            // A filtered view made from a one-group parent keeps the kind older builds read right.
            let oneGroup = View(name: "first-tag", grouping: .byObject(taggedNotes) { _, note in note.tags.first },
                                sorting: .byObject(taggedNotes) { _, _, note in SortKey(.ascending(note.title)) })
            #expect(FilteredView.make(name: "f", parent: oneGroup) { _, _ in true }.kind == "filtered-view")
        }
    }

    @Test("Made from the parent's name over a many-group view, registration refuses it with invalidArgument and writes nothing")
    func byNameRefused() throws {
        try withDatabase { database, _ in
            try database.register(makeByTagView())
            let before = try database.newConnection().read { txn in try txn.extensionRecords() }
            let error = #expect(throws: CanopyError.self) {
                try database.register(FilteredView.make(name: "pinned", parentView: "by-tag") { _, row in try row.object(in: taggedNotes).pinned })
            }
            #expect(error?.code == .invalidArgument)
            #expect(error?.extensionName == "pinned")
            #expect(error?.message.contains("FilteredView.make(name:parent:") == true, "\(String(describing: error))")
            try database.newConnection().read { txn throws in
                #expect(try txn.extensionRecords() == before)
            }
            // The parent carries on.
            try database.newConnection().readWrite { txn throws in
                try txn.set(TaggedNote(title: "a", tags: ["x", "y"]), forKey: "k1", in: taggedNotes)
            }
            #expect(try database.newConnection().read { txn in try contents(txn.view("by-tag")) } == ["x": ["k1"], "y": ["k1"]])
        }
    }

    @Test("A parent view passed that is not the one registered under its name (one group against many) is refused")
    func parentMismatchRefused() throws {
        try withDatabase { database, _ in
            try database.register(View(name: "by-tag", grouping: .byObject(taggedNotes) { _, note in note.tags.first },
                                       sorting: .byObject(taggedNotes) { _, _, note in SortKey(.ascending(note.title)) }))
            let error = #expect(throws: CanopyError.self) { try database.register(pinnedView(parent: makeByTagView())) }
            #expect(error?.code == .invalidArgument)
            #expect(try database.newConnection().read { txn in try txn.extensionRecords().map(\.name) } == ["by-tag"])
        }
    }

    @Test("A filtered view over a many-group view recorded as filtered-view by abf6e15 reads as it is, then is rebuilt with its kind at registration")
    func upgradesTheFixture() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try extractFilteredManyGroupsFixture(into: directory)
        try Database(path: path, options: .init(readOnly: true)).newConnection().read { txn in
            #expect(try txn.extensionRecords().first { $0.name == "pinned" }?.kind == "filtered-view")
            let pinned = try txn.persistedView("pinned")
            #expect(pinned.rowsInManyGroups)
            #expect(try contents(pinned) == Self.fixturePinned)
            #expect(try pinned.checkStructure() == [])
        }
        do {
            let database = try Database(path: path)
            let byTag = makeByTagView()
            guard case .current = try database.register(byTag) else {
                Issue.record("the unchanged parent was rebuilt")
                return
            }
            let outcome = try database.register(pinnedView(parent: byTag))
            guard case .rebuilt(.kindChanged(from: "filtered-view", to: View.filteredManyGroupsKind)) = outcome else {
                Issue.record("expected a rebuild for the new kind, got \(outcome)")
                return
            }
            try database.newConnection().read { txn throws in
                #expect(try contents(txn.view("pinned")) == Self.fixturePinned)
                #expect(try txn.view("pinned").checkInvariants() == [])
            }
            try database.newConnection().readWrite { txn throws in
                try txn.set(TaggedNote(title: "b", tags: ["x", "w"], pinned: true), forKey: "k2", in: taggedNotes)
            }
        }
        try Database(path: path, options: .init(readOnly: true)).newConnection().read { txn in
            let kind = try #require(try txn.extensionRecords().first { $0.name == "pinned" }?.kind)
            #expect(kind == View.filteredManyGroupsKind)
            #expect(!kindsAnOlderBuildReads.contains(kind))
            let pinned = try txn.persistedView("pinned")
            #expect(pinned.kind == View.filteredManyGroupsKind)
            #expect(pinned.parentView == "by-tag")
            #expect(try contents(pinned) == ["w": ["k2", "k3"], "x": ["k1", "k2"], "y": ["k1", "k3"], "z": ["k1"]])
            #expect(try pinned.checkStructure() == [])
        }
    }
}
