import ArgumentParser
import Canopy
import CanopySource
import CanopyTerminal
import Foundation

extension CanopyCommand {
    struct Views: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the views recorded in the database: kind, version tag, parent, groups, rows, snapshot, stale or not.",
            discussion: "Example: canopy views ./db --json")

        @OptionGroup var database: DatabaseArgument
        @OptionGroup var output: OutputOptions

        func run() throws {
            let db = try database.openReadOnly()
            let views = try db.newConnection().read { txn in try ViewSummary.all(in: txn) }
            if output.json {
                console.line(JSONValue.array(views.map(\.json)).text)
            } else {
                console.line(ViewSummary.table(views))
            }
        }
    }

    struct Groups: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the groups of a view with their row counts, in stored order.",
            discussion: "Example: canopy groups ./db agenda")

        @OptionGroup var database: DatabaseArgument
        @Argument(help: "The view (or filtered view).") var view: String
        @OptionGroup var output: OutputOptions

        func run() throws {
            let db = try database.openReadOnly()
            let groups = try db.newConnection().read { txn in
                let reader = try txn.persistedView(view)
                return try reader.groups().map { (name: $0, rows: try reader.count(inGroup: $0)) }
            }
            if output.json {
                console.line(JSONValue.array(groups.map { .members([("group", .string($0.name)), ("rows", .int($0.rows))]) }).text)
            } else {
                var table = TextTable("GROUP", "ROWS")
                for g in groups { table.add(printable(g.name), String(g.rows)) }
                console.line(table.render())
            }
        }
    }

    struct ViewRows: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "view",
            abstract: "Page through a view in its stored order: group, index, collection, key, object.",
            discussion: """
                Without --group, pages run through the groups in order. Example: canopy view ./db agenda --group 2024-05-01 \
                --offset 20 --limit 20. Objects are summarised in plain output and complete in --json. In a view whose rows \
                can be in many groups (KIND "many-groups-view", or "filtered-many-groups-view" for a filtered view of one, \
                in canopy views), a row appears under each of its groups.
                """)

        @OptionGroup var database: DatabaseArgument
        @Argument(help: "The view (or filtered view).") var view: String
        @Option(help: "Only this group.") var group: String?
        @Option(parsing: .unconditional, help: "Skip this many rows (0 or more).") var offset = 0
        @Option(parsing: .unconditional, help: "Print at most this many rows (0 or more).") var limit = 100
        @Flag(help: "From the last row to the first.") var reverse = false
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if offset < 0 { throw ValidationError("--offset must be 0 or more") }
            if limit < 1 { throw ValidationError("--limit must be 1 or more (groups DIR VIEW gives the counts)") }
        }

        struct Row {
            var group: String
            var index: Int
            var id: RowID
            var object: String?
            var problem: String?
        }

        func run() throws {
            let db = try database.openReadOnly()
            let (snapshot, total, rows) = try db.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0)).read { txn in
                let reader = try txn.persistedView(view)
                var groups = try reader.groups()
                if let group {
                    guard groups.contains(group) else {
                        throw CLIFailure(.failed, "the view '\(view)' has no group '\(group)'; its groups are: \(groups.isEmpty ? "none" : groups.joined(separator: ", "))")
                    }
                    groups = [group]
                }
                if reverse { groups.reverse() }
                var rows: [Row] = []
                var skip = offset
                var total = 0
                for name in groups {
                    let count = try reader.count(inGroup: name)
                    total += count
                    guard rows.count < limit else { continue }
                    if skip >= count {
                        skip -= count
                        continue
                    }
                    let ids = try reader.rowIDs(inGroup: name, offset: skip, limit: limit - rows.count, reversed: reverse)
                    for (i, id) in ids.enumerated() {
                        let index = reverse ? count - 1 - skip - i : skip + i
                        var row = Row(group: name, index: index, id: id)
                        do {
                            if let stored = try txn.rawObject(forKey: id.key, inCollection: id.collection) {
                                row.object = try stored.bytes.withUnsafeBytes { try Codecs.jsonText(from: $0, codecName: stored.codec) }
                            } else {
                                row.problem = "the row is missing"
                            }
                        } catch {
                            row.problem = "does not decode: \(error)"
                        }
                        rows.append(row)
                    }
                    skip = 0
                }
                return (txn.snapshot, total, rows)
            }
            if output.json {
                console.line(JSONValue.members([
                    ("view", .string(view)), ("snapshot", .int(snapshot)), ("offset", .int(offset)), ("total", .int(total)),
                    ("rows", .array(rows.map { row in
                        .members([("group", .string(row.group)), ("index", .int(row.index)), ("collection", .string(row.id.collection)),
                                  ("key", .string(row.id.key)), ("object", row.object.map { .raw($0) } ?? .null),
                                  ("problem", row.problem.map { .string($0) })])
                    })),
                ]).text)
                return
            }
            let shown = rows.isEmpty ? "no rows" : "rows \(offset + 1)-\(offset + rows.count)"
            let footer = "\(shown) of \(total) at snapshot \(snapshot)" + (offset + rows.count < total ? "; next page: --offset \(offset + rows.count)" : "")
            if console.outputIsTerminal {
                // For people at a terminal: CanopyTerminal's list view, a section per group (colour unless NO_COLOR).
                let width = TerminalDevice.size()?.columns ?? 100
                let colour = TerminalColorPolicy.isEnabled(isTerminal: isatty(1) == 1, environment: ProcessInfo.processInfo.environment)
                console.line(try Self.renderList(rows, width: width, colour: colour))
                console.line(footer)
                return
            }
            var table = TextTable("GROUP", "INDEX", "COLLECTION", "KEY", "OBJECT")
            for row in rows {
                table.add(printable(row.group), String(row.index), printable(row.id.collection), printable(row.id.key), printable(row.object.map { summary($0) } ?? "(\(row.problem ?? "?"))"))
            }
            console.line(table.render())
            console.line(footer)
        }

        /// The page as CanopyTerminal's list view renders it: a section per group (its name as the header), a row per
        /// entry with its index, collection/key and object summary in aligned columns.
        static func renderList(_ rows: [Row], width: Int, colour: Bool) throws -> String {
            var sections: [DatasourceSection<Row>] = []
            for row in rows {
                if sections.last?.header == printable(row.group) {
                    sections[sections.count - 1].items.append(row)
                } else {
                    sections.append(DatasourceSection(items: [row], header: printable(row.group)))
                }
            }
            let list = TerminalListView(width: max(20, width), height: rows.count + 2 * sections.count, colour: colour)
            let factory = SectionedDatasource<Row, TerminalCell, TerminalSupplementaryView, TerminalListView>.SourceFactory()
            factory.registerCell(.type(TerminalCell.self), in: list) { cell, row, _ in
                cell.columns = [
                    TerminalColumn(String(row.index), width: .fixed(7), alignment: .right),
                    TerminalColumn(printable("\(row.id.collection)/\(row.id.key)"), width: .fixed(28)),
                    TerminalColumn(printable(row.object.map { summary($0) } ?? "(\(row.problem ?? "?"))")),
                ]
            }
            let source = SectionedDatasource(sections: sections, factory: factory, container: list)
            list.dataSource = source
            return try withExtendedLifetime(source) { try list.renderToString() }
        }
    }
}
