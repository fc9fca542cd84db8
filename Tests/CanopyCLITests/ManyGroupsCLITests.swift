import Canopy
import CanopyCLI
import CanopyTestSupport
import Foundation
import Testing

/// A database whose memos are in a view by tag (a row under each of its tags) and a filtered view of it, written by
/// the "app"; the commands read it without the app's closures.
@Suite("canopy: views whose rows are in many groups")
struct ManyGroupsCLITests {
    static func makeDatabase(at path: String) throws {
        let database = try Database(path: path, options: .init(durability: .none))
        let byTag = View(name: "by-tag", grouping: .manyByObject(memos) { _, memo in Set(memo.tags) },
                         sorting: .byObject(memos) { _, _, memo in SortKey(.ascending(memo.text)) }, versionTag: "1")
        try database.register(byTag)
        try database.register(FilteredView.make(name: "long", parent: byTag) { _, row in try row.object(in: memos).text.count > 4 })
        try database.newConnection().readWrite { txn in
            try txn.set(Memo(text: "milk", tags: ["shop", "home"]), forKey: "m1", in: memos)
            try txn.set(Memo(text: "paint fence", tags: ["home", "weekend"]), forKey: "m2", in: memos)
            try txn.set(Memo(text: "no tags", tags: []), forKey: "m3", in: memos)
        }
    }

    @Test("views, groups, view --group and verify show each row under each of its groups")
    func inspect() async throws {
        let directory = try TemporaryDirectory(prefix: "canopy-cli-test")
        defer { directory.remove() }
        let path = directory.appending("db")
        try Self.makeDatabase(at: path)

        let views = await canopy("views", path)
        #expect(views.status == 0, "\(views.errors)")
        #expect(views.output.contains("by-tag  many-groups-view           1        -       3       4  "), "\(views.output)")
        #expect(views.output.contains("long    filtered-many-groups-view  1        by-tag  2       2  "), "\(views.output)")
        let json = try await canopy("views", path, "--json").json()
        #expect(json.elements.map { $0["rowsInManyGroups"]?.boolValue } == [true, true])

        let groups = try await canopy("groups", path, "by-tag", "--json").json()
        #expect(groups.elements.map { "\($0["group"]?.stringValue ?? "?") \($0["rows"]?.intValue ?? -1)" } == ["home 2", "shop 1", "weekend 1"])

        let home = try await canopy("view", path, "by-tag", "--group", "home", "--json").json()
        #expect(home["rows"]?.elements.map { $0["key"]?.stringValue } == ["m1", "m2"])
        let all = try await canopy("view", path, "by-tag", "--json").json()
        #expect(all["rows"]?.elements.map { "\($0["group"]?.stringValue ?? "?")/\($0["key"]?.stringValue ?? "?")" }
                == ["home/m1", "home/m2", "shop/m1", "weekend/m2"])

        let verify = await canopy("verify", path)
        #expect(verify.status == 0, "\(verify.output)\(verify.errors)")
    }
}
