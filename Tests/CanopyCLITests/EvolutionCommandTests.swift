import Canopy
import CanopyCLI
import CanopyTestSupport
import Foundation
import Testing

@Suite("canopy: migrations, extensions, delete, drop-view, skipped rows")
struct EvolutionCommandTests {
    /// A chore of an older model: no `priority`.
    struct OldChore: Codable, Sendable {
        var title: String
        var list: String
    }

    @Test("migrations lists the applied steps; extensions lists every extension with its state")
    func migrationsAndExtensions() async throws {
        try await withFixture { path, _ in
            #expect(await canopy("migrations", path).output.contains("no migration steps applied"))
            do {
                let database = try Database(path: path, options: .init(durability: .none))
                var migrator = Migrator()
                migrator.append(.addKey("memo-pinned", collection: "memos", "pinned", value: .bool(false)))
                try migrator.migrate(database)
            }
            let listed = try await canopy("migrations", path, "--json").json()
            #expect(listed["applied"]?.elements.first?["name"] == .string("memo-pinned"))
            #expect(listed["applied"]?.elements.first?["rows"]?.intValue == 2)
            let text = await canopy("migrations", path)
            #expect(text.output.contains("memo-pinned") && text.status == 0)

            let extensions = await canopy("extensions", path)
            #expect(extensions.status == 0)
            // The migration wrote rows while no process registered the views.
            #expect(extensions.output.contains("by-list  view"), "\(extensions.output)")
            #expect(extensions.output.contains("not registered since snapshot"), "\(extensions.output)")
            let json = try await canopy("extensions", path, "--json").json()
            #expect(json.elements.map { $0["name"]?.stringValue } == ["by-list", "urgent"])
            #expect(json.elements.allSatisfy { $0["stale"] == .bool(true) })
        }
    }

    @Test("info, views and verify report the rows a view skipped; verify lists them")
    func skippedRowsAreReported() async throws {
        try await withFixture { path, _ in
            do {
                let database = try Database(path: path, options: .init(durability: .none))
                try database.register(byList())
                try database.register(urgent())
                // A row of an older model (written by an old build, say): the views skip it rather than fail the write.
                try await database.newConnection().readWrite { txn in
                    try txn.set(OldChore(title: "old", list: "home"), forKey: "t9", in: TypedCollection<OldChore, TaskInfo>("tasks"))
                }
            }
            let views = await canopy("views", path)
            #expect(views.output.contains("1 row skipped (cannot decode)"), "\(views.output)")
            let info = await canopy("info", path)
            #expect(info.output.contains("1 row skipped (cannot decode)"), "\(info.output)")
            let verify = await canopy("verify", path)
            #expect(verify.status == 0, "\(verify.output) \(verify.errors)")
            #expect(verify.output.contains("skipped: tasks/t9"), "\(verify.output)")
            #expect(verify.output.contains("has no value for 'priority'"), "\(verify.output)")
            let json = try await canopy("views", path, "--json").json()
            #expect(json.elements.first?["skippedRows"]?.intValue == 1)
        }
    }

    @Test("delete needs --yes, deletes one key or a prefix, and marks the views stale")
    func delete() async throws {
        try await withFixture { path, _ in
            let dry = await canopy("delete", path, "tasks", "t1")
            #expect(dry.status == 1)
            #expect(dry.errors.contains("would delete row 't1'") && dry.errors.contains("--yes"))
            let done = await canopy("delete", path, "tasks", "t1", "--yes")
            #expect(done.status == 0, "\(done.errors)")
            #expect(done.output.contains("deleted 1 row"))
            #expect(done.output.contains("marked stale") && done.output.contains("by-list"))
            let prefix = try await canopy("delete", path, "memos", "--prefix", "m", "--yes", "--json").json()
            #expect(prefix["deleted"]?.intValue == 2)
            let database = try Database(path: path, options: .init(durability: .none, readOnly: true))
            try await database.newConnection().read { txn throws in
                #expect(try !txn.exists(key: "t1", inCollection: "tasks"))
                #expect(try txn.count(inCollection: "tasks") == 5)
                #expect(try txn.count(inCollection: "memos") == 0)
                // Stale, never wrong: reading the view without the app's closures is refused.
                #expect(throws: CanopyError.self) { try txn.view("by-list") }
            }
        }
    }

    @Test("drop-view needs --yes, refuses a parent with dependents, and removes an extension's records and tables")
    func dropView() async throws {
        try await withFixture { path, _ in
            let parent = await canopy("drop-view", path, "by-list", "--yes")
            #expect(parent.status == 1)
            #expect(parent.errors.contains("urgent") && parent.errors.contains("drop it first"))
            let dry = await canopy("drop-view", path, "urgent")
            #expect(dry.status == 1 && dry.errors.contains("pass --yes"))
            #expect(await canopy("drop-view", path, "urgent", "--yes").status == 0)
            #expect(await canopy("drop-view", path, "by-list", "--yes").status == 0)
            let verify = try await canopy("verify", path, "--json").json()
            #expect(verify["ok"] == .bool(true))
            #expect(verify["views"]?.elements.isEmpty == true)
            let database = try Database(path: path, options: .init(durability: .none))
            #expect(try database.recordedExtensions().isEmpty)
            // The app registers the view again: rebuilt from the rows.
            try database.register(byList())
            try await database.newConnection().read { txn throws in
                #expect(try txn.view("by-list").count() == 6)
                #expect(try txn.view("by-list").checkInvariants() == [])
            }
        }
    }

    @Test("bad input: unknown collection, key or extension; a KEY and --prefix; a read-only database — typed errors, nothing changed")
    func badInput() async throws {
        try await withFixture { path, directory in
            let before = await canopy("export", path).output
            let unknownCollection = await canopy("delete", path, "nope", "k", "--yes")
            #expect(unknownCollection.status == 1 && unknownCollection.errors.contains("no collection named 'nope'"))
            let unknownKey = await canopy("delete", path, "tasks", "zz", "--yes")
            #expect(unknownKey.status == 1 && unknownKey.errors.contains("no row 'zz'"))
            let both = await canopy("delete", path, "tasks", "t1", "--prefix", "t", "--yes")
            #expect(both.status == 2)
            let unknownView = await canopy("drop-view", path, "nope", "--yes")
            #expect(unknownView.status == 1 && unknownView.errors.contains("by-list, urgent"))
            let missing = await canopy("extensions", directory.appending("missing"))
            #expect(missing.status == 3)
            #expect(await canopy("export", path).output == before)

            // A database the user may not write: the open for writing fails, nothing changes.
            guard getuid() != 0 else { return }  // root writes anyway
            chmod(path + "/data.mdb", 0o400)
            defer { chmod(path + "/data.mdb", 0o600) }
            let readOnly = await canopy("delete", path, "tasks", "t1", "--yes")
            #expect(readOnly.status != 0, "\(readOnly.output)")
            #expect(await canopy("export", path).output == before)
        }
    }

    /// Before, `export --no-bytes | import` into a binary collection exited 0 and left rows whose dates were strings.
    @Test("import refuses a line without bytes for a binary collection, naming the line; with bytes it round-trips")
    func importKeepsTypes() async throws {
        try await withFixture { path, directory in
            let export = await canopy("export", path, "--collection", "tasks", "--no-bytes")
            let file = directory.appending("rows.jsonl")
            try export.output.write(toFile: file, atomically: true, encoding: .utf8)
            let target = directory.appending("new")
            let imported = await canopy("import", target, "--input", file)
            #expect(imported.status == 1)
            #expect(imported.errors.contains("line 1 (tasks/t1)"), "\(imported.errors)")
            #expect(imported.errors.contains("without --no-bytes"))
            let database = try Database(path: target, options: .init(durability: .none, readOnly: true))
            let count = try await database.newConnection().read { txn in try txn.count() }
            #expect(count == 0)
            // With the bytes, every row comes back exactly.
            let full = await canopy("export", path, "--collection", "tasks")
            try full.output.write(toFile: file, atomically: true, encoding: .utf8)
            let exact = directory.appending("exact")
            #expect(await canopy("import", exact, "--input", file).status == 0)
            let copy = try Database(path: exact, options: .init(durability: .none, readOnly: true))
            try await copy.newConnection().read { txn throws in
                for (key, chore, _) in fixtureTasks { #expect(try txn.object(forKey: key, in: tasks) == chore) }
            }
        }
    }
}
