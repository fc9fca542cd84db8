import Canopy
import CanopySearch
import CanopyTestSupport
import Foundation
import Testing

/// Search results in the groups of a view whose rows are in many groups: made from the parent view, recorded with
/// the kind older builds refuse; made from its name, refused.
@Suite("Search results view over a many-group view")
struct SearchResultsManyGroupsTests {
    /// Notes under their folder and under "all".
    static func byFolderAndAll() -> View {
        View(name: "by-folder-and-all", grouping: .manyByObject(notes) { _, note in [note.folder, "all"] },
             sorting: .byObject(notes) { _, _, note in SortKey(.ascending(note.title)) })
    }

    @Test("Grouped results over a many-group parent: a match is in each of its groups; the kind is filtered-many-groups-view")
    func groupedOverManyGroups() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let index = makeNoteSearch()
        let parent = Self.byFolderAndAll()
        let results = SearchResultsView.grouped(name: "results", index: index, parent: parent)
        try database.register(index)
        try database.register(parent)
        try database.register(results.view)
        #expect(results.view.kind == View.filteredManyGroupsKind)
        try database.newConnection().readWrite { txn in
            try txn.set(Note(title: "oat milk", folder: "shop"), forKey: "n1", in: notes)
            try txn.set(Note(title: "bread", folder: "shop"), forKey: "n2", in: notes)
            try txn.set(Note(title: "milk the cow", folder: "farm"), forKey: "n3", in: notes)
            try results.setQuery("milk", in: txn)
        }
        try database.newConnection().read { txn in
            let reader = try txn.view("results")
            var contents: [String: [String]] = [:]
            for group in try reader.groups() { contents[group] = try reader.rowIDs(inGroup: group).map(\.key) }
            #expect(contents == ["all": ["n3", "n1"], "farm": ["n3"], "shop": ["n1"]])
            #expect(try reader.checkInvariants() == [])
            #expect(try txn.extensionRecords().first { $0.name == "results" }?.kind == View.filteredManyGroupsKind)
        }
    }

    @Test("Made from the parent's name over a many-group parent: registration refuses it with invalidArgument")
    func byNameRefused() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let index = makeNoteSearch()
        try database.register(index)
        try database.register(Self.byFolderAndAll())
        let error = #expect(throws: CanopyError.self) {
            try database.register(SearchResultsView.grouped(name: "results", index: index, parentView: "by-folder-and-all").view)
        }
        #expect(error?.code == .invalidArgument)
    }
}
