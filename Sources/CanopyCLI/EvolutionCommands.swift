import ArgumentParser
import Canopy
import Foundation

extension CanopyCommand {
    struct Extensions: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List every extension recorded in the database (views, filtered views, indexes) and its state.",
            discussion: """
                STATE is current, or "not registered since snapshot N" when rows were written while no process \
                registered it (the app brings it up to date when it next registers it or writes; `canopy drop-view` drops it), followed \
                by the rows it skipped because it could not decode them.
                """)

        @OptionGroup var database: DatabaseArgument
        @OptionGroup var output: OutputOptions

        func run() throws {
            let db = try database.openReadOnly()
            let rows: [(record: ExtensionRecord, snapshot: UInt64?, store: UInt64, skipped: SkippedRows?)] = try db.newConnection().read { txn in
                let snapshots = try txn.extensionSnapshots()
                return try txn.extensionRecords().sorted { $0.name < $1.name }.map { record in
                    (record, snapshots.extensions[record.name], snapshots.store, try txn.skippedRows(ofExtension: record.name))
                }
            }
            func state(_ snapshot: UInt64?, _ store: UInt64) -> String {
                guard let snapshot else { return "no stored state" }
                return snapshot < store ? "not registered since snapshot \(snapshot)" : "current"
            }
            if output.json {
                console.line(JSONValue.array(rows.map { row in
                    .members([
                        ("name", .string(row.record.name)), ("kind", .string(row.record.kind)), ("versionTag", .string(row.record.versionTag)),
                        ("registeredAtSnapshot", .int(row.record.registeredAtSnapshot)), ("snapshot", row.snapshot.map { .int($0) } ?? .null),
                        ("stale", .bool((row.snapshot ?? 0) < row.store || row.snapshot == nil)), ("state", .string(state(row.snapshot, row.store))),
                        ("skippedRows", .int(row.skipped?.count ?? 0)), ("options", .string(row.record.options)),
                    ])
                }).text)
                return
            }
            guard !rows.isEmpty else {
                console.line("no extensions recorded")
                return
            }
            var table = TextTable("NAME", "KIND", "VERSION", "SNAPSHOT", "STATE")
            for row in rows {
                var text = state(row.snapshot, row.store)
                if let skipped = row.skipped, skipped.count > 0 { text += ", \(skipped.count) rows skipped (cannot decode)" }
                table.add(row.record.name, row.record.kind, row.record.versionTag, row.snapshot.map(String.init) ?? "-", text)
            }
            console.line(table.render())
        }
    }

    struct Migrations: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the migration steps applied to the database, when, and any step that started and did not finish.")

        @OptionGroup var database: DatabaseArgument
        @OptionGroup var output: OutputOptions

        func run() throws {
            let db = try database.openReadOnly()
            let (applied, running) = try db.newConnection().read { txn in (try txn.appliedMigrations(), try txn.migrationsInProgress()) }
            let formatter = ISO8601DateFormatter()
            if output.json {
                console.line(JSONValue.members([
                    ("applied", .array(applied.map { step in
                        .members([("name", .string(step.name)), ("appliedAt", .string(formatter.string(from: step.appliedAt))),
                                  ("snapshot", .int(step.snapshot)), ("rows", .int(step.rows))])
                    })),
                    ("inProgress", .array(running.map { step in
                        .members([("name", .string(step.name)), ("after", step.after.map { .string($0) } ?? .null),
                                  ("rows", .int(step.rows)), ("batches", .int(step.batches))])
                    })),
                ]).text)
                return
            }
            if applied.isEmpty && running.isEmpty {
                console.line("no migration steps applied")
                return
            }
            if !applied.isEmpty {
                var table = TextTable("STEP", "APPLIED", "SNAPSHOT", "ROWS")
                for step in applied { table.add(step.name, formatter.string(from: step.appliedAt), String(step.snapshot), String(step.rows)) }
                console.line(table.render())
            }
            for step in running {
                console.line("in progress: \(step.name): \(step.rows) rows in \(step.batches) batches, up to key '\(step.after ?? "")'; the app resumes it at its next migrate")
            }
        }
    }
}
