import Canopy
import CanopyCLI
import CanopyTestSupport
import Foundation
import Testing

@Suite("canopy: inspection commands on a database whose views are not registered")
struct InspectionTests {
    @Test("print the outputs (for golden updates)", .enabled(if: ProcessInfo.processInfo.environment["CANOPY_CLI_PRINT"] != nil))
    func printOutputs() async throws {
        try await withFixture { path, _ in
            for arguments in [["info", path], ["views", path], ["groups", path, "by-list"], ["view", path, "by-list"], ["view", path, "urgent", "--reverse", "--limit", "2"],
                              ["get", path, "tasks", "t1", "--metadata"], ["collections", path], ["keys", path, "tasks"], ["stat", path], ["verify", path], ["readers", path]] {
                let result = await canopy(arguments)
                print("$ canopy \(arguments.joined(separator: " "))  -> \(result.status)\n\(result.output)\(result.errors)")
            }
        }
    }

    @Test("views, groups and a view's rows in stored order, as plain columns (golden)")
    func plainGolden() async throws {
        try await withFixture { path, _ in
            let views = await canopy("views", path)
            #expect(views.status == 0)
            #expect(views.output == """
                NAME     KIND           VERSION  PARENT   GROUPS  ROWS  SNAPSHOT  STATE
                by-list  view           2        -        2       6     3         current
                urgent   filtered-view  1        by-list  2       4     3         current

                """)
            let groups = await canopy("groups", path, "by-list")
            #expect(groups.output == "GROUP  ROWS\nhome   4\nwork   2\n")
            let rows = await canopy("view", path, "by-list")
            #expect(rows.status == 0)
            #expect(rows.output == """
                GROUP  INDEX  COLLECTION  KEY  OBJECT
                home   0      tasks       t6   {"title":"Plan trip","list":"home","priority":4,"due":"2027…
                home   1      tasks       t3   {"title":"Water plants","list":"home","priority":3,"due":"2…
                home   2      tasks       t5   {"title":"Fix bike","list":"home","priority":2,"due":"2027-…
                home   3      tasks       t1   {"title":"Buy milk","list":"home","priority":1,"due":"2027-…
                work   0      tasks       t4   {"title":"Write report","list":"work","priority":5,"due":"2…
                work   1      tasks       t2   {"title":"Call Ada","list":"work","priority":3,"due":"2027-…
                rows 1-6 of 6 at snapshot 3

                """)
            let reversed = await canopy("view", path, "urgent", "--reverse", "--limit", "2")
            #expect(reversed.output.split(separator: "\n").dropFirst().prefix(2).map { $0.split(separator: " ", omittingEmptySubsequences: true).prefix(4).joined(separator: " ") }
                    == ["work 1 tasks t2", "work 0 tasks t4"])
            #expect(reversed.output.contains("rows 1-2 of 4 at snapshot 3; next page: --offset 2"))
            let get = await canopy("get", path, "tasks", "t1", "--metadata")
            #expect(get.output == """
                {
                  "title": "Buy milk",
                  "list": "home",
                  "priority": 1,
                  "due": "2027-01-15T08:00:00.000Z",
                  "estimate": 0.5
                }
                metadata: {
                  "color": "blue"
                }

                """)
        }
    }

    @Test("at a terminal, view renders with CanopyTerminal's list view: a header per group, aligned rows", .timeLimit(.minutes(1)))
    func viewAtATerminal() async throws {
        try await withFixture { path, _ in
            let console = Console.capturing(outputIsTerminal: true)
            let status = await CanopyCLI.run(["view", path, "by-list"], console: console)
            #expect(status == 0)
            // The list view pads each line to the terminal's width.
            let lines = console.output.split(separator: "\n", omittingEmptySubsequences: false)
                .map { String($0.reversed().drop(while: { $0 == " " }).reversed()) }
            #expect(lines.first == "home", "\(console.output)")
            #expect(lines.contains("work"))
            let t6 = try #require(lines.first { $0.contains("tasks/t6") })
            #expect(t6.hasPrefix("      0 tasks/t6"), "\(t6)")
            #expect(t6.contains(#"{"title":"Plan trip""#))
            // Columns stay aligned: the object column starts at the same place in every row.
            let starts = lines.filter { $0.contains("tasks/") }.compactMap { $0.range(of: "{")?.lowerBound.utf16Offset(in: $0) }
            #expect(starts.count == 6 && Set(starts).count == 1, "\(starts)")
            #expect(lines.contains("rows 1-6 of 6 at snapshot 3"))
            #expect(!console.output.contains("\u{1B}["), "no colour when the output is not a real terminal")
        }
    }

    @Test("info --json: sizes, snapshot, collections with counts and codecs, views with parent, groups, rows, snapshot")
    func infoJSON() async throws {
        try await withFixture { path, _ in
            let result = await canopy("info", path, "--json")
            #expect(result.status == 0, "\(result.errors)")
            let info = try result.json()
            #expect(info["snapshot"]?.intValue == 3)
            #expect((info["mapBytes"]?.intValue ?? 0) > 0)
            #expect((info["usedBytes"]?.intValue ?? 0) > 0)
            let collections = info["collections"]?.elements ?? []
            #expect(collections.map { $0["name"]?.stringValue } == ["memos", "tasks"])
            #expect(collections.map { $0["rows"]?.intValue } == [2, 6])
            #expect(collections.map { $0["codec"]?.stringValue } == ["json", "binary"])
            let views = info["views"]?.elements ?? []
            #expect(views.map { $0["name"]?.stringValue } == ["by-list", "urgent"])
            #expect(views.map { $0["kind"]?.stringValue } == ["view", "filtered-view"])
            #expect(views.map { $0["rows"]?.intValue } == [6, 4])
            #expect(views.map { $0["groups"]?.intValue } == [2, 2])
            #expect(views.map { $0["parent"] } == [.null, .string("by-list")])
            #expect(views.map { $0["versionTag"]?.stringValue } == ["2", "1"])
            #expect(views.map { $0["stale"]?.boolValue } == [false, false])
            #expect(views.map { $0["snapshot"]?.intValue } == [3, 3])
        }
    }

    @Test("keys, get and view --json carry what the plain output shows, objects complete")
    func readCommandsJSON() async throws {
        try await withFixture { path, _ in
            let keys = try await canopy("keys", path, "tasks", "--after", "t2", "--limit", "3", "--json").json()
            #expect(keys.elements.compactMap(\.stringValue) == ["t3", "t4", "t5"])
            let prefixed = try await canopy("keys", path, "memos", "--prefix", "m", "--json").json()
            #expect(prefixed.elements.compactMap(\.stringValue) == ["m1", "m2"])

            let get = try await canopy("get", path, "tasks", "t2", "--metadata", "--json").json()
            #expect(get["codec"]?.stringValue == "binary")
            #expect(get["object"].map { try? JSONValue.parse($0.text) }??["title"] == .string("Call Ada"))
            #expect(get["object"].map { try? JSONValue.parse($0.text) }??["estimate"] == .number("1.0"))
            #expect(get["metadata"].map { try? JSONValue.parse($0.text) }??["color"] == .string("red"))
            let memo = try await canopy("get", path, "memos", "m1", "--json").json()
            #expect(memo["codec"]?.stringValue == "json")
            #expect(memo["object"].map { try? JSONValue.parse($0.text) }??["text"] == .string("hello \"world\""))
            #expect(memo["metadata"] == nil)

            let raw = try await canopy("get", path, "tasks", "t1", "--raw", "--json").json()
            let hexText = try #require(raw["objectHex"]?.stringValue)
            #expect(hexText.count % 2 == 0 && hexText.count > 20 && hexText.allSatisfy(\.isHexDigit))

            let page = try await canopy("view", path, "by-list", "--group", "home", "--offset", "1", "--limit", "2", "--json").json()
            #expect(page["total"]?.intValue == 4)
            let rows = page["rows"]?.elements ?? []
            #expect(rows.map { $0["key"]?.stringValue } == ["t3", "t5"])
            #expect(rows.map { $0["index"]?.intValue } == [1, 2])
            #expect(rows.map { $0["group"]?.stringValue } == ["home", "home"])
            #expect(rows.first.flatMap { $0["object"] }.map { try? JSONValue.parse($0.text) }??["title"] == .string("Water plants"))

            let groups = try await canopy("groups", path, "urgent", "--json").json()
            #expect(groups.elements.map { $0["group"]?.stringValue } == ["home", "work"])
            #expect(groups.elements.map { $0["rows"]?.intValue } == [2, 2])

            let collections = try await canopy("collections", path, "--json").json()
            #expect(collections.elements.map { $0["rows"]?.intValue } == [2, 6])
        }
    }

    @Test("stat --json: every table with LMDB figures, free pages, bytes per row and per view entry")
    func statJSON() async throws {
        try await withFixture { path, _ in
            let stat = try await canopy("stat", path, "--json").json()
            let tables = stat["tables"]?.elements ?? []
            let names = tables.compactMap { $0["name"]?.stringValue }
            #expect(names.contains("canopy.objects") && names.contains("ext.by-list.pages") && names.contains("ext.urgent.groups"))
            #expect(tables.first { $0["name"]?.stringValue == "canopy.objects" }?["entries"]?.intValue == 8)
            #expect(stat["rows"]?.intValue == 8)
            #expect(stat["free"]?["pages"]?.intValue != nil)
            #expect((stat["views"]?.elements ?? []).map { $0["entries"]?.intValue } == [6, 4])
        }
    }

    @Test("inspection leaves the database file unchanged")
    func readOnly() async throws {
        try await withFixture { path, _ in
            let before = try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb"))
            for arguments in [["info", path], ["view", path, "by-list"], ["verify", path], ["stat", path], ["export", path], ["readers", path, "--clear-stale"]] {
                let result = await canopy(arguments)
                #expect(result.status == 0, "\(arguments): \(result.errors)")
            }
            let after = try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb"))
            #expect(before == after)
        }
    }

    @Test("readers --json lists slots; --help of every command has an example")
    func readersAndHelp() async throws {
        try await withFixture { path, _ in
            let readers = try await canopy("readers", path, "--json").json()
            #expect(readers["readers"] != nil)
        }
        for command in ["info", "collections", "keys", "get", "views", "groups", "view", "watch", "stat", "verify", "backup", "export", "import", "readers"] {
            let help = await canopy(command, "--help")
            #expect(help.status == 0)
            #expect(help.output.contains("canopy \(command)") || help.output.contains("Example"), "\(command): \(help.output)")
            #expect(help.output.contains("Example"), "\(command) --help has no example")
        }
    }
}
