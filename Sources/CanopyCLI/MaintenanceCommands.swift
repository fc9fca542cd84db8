import ArgumentParser
import Canopy
import CanopySearch
import Foundation
import LMDB

extension CanopyCommand {
    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check the whole database: every page of every table, every value with its recorded codec, every view's and search index's structure.",
            discussion: """
                Exits 0 when all is well and 1 with a report of each problem. Views are checked from their stored tables \
                (counts add up, stored order holds, each entry points at an existing row once, a filtered view's entries \
                are in its parent); a stale view is reported as a warning (the app brings it up to date when it next registers it or writes). \
                Search indexes are checked from their stored tables against the rows' records (each indexed row is in the \
                list of each of its words and in no other, each list's directory lists exactly its blocks, the counts BM25 \
                ranks with add up); a damaged one is repaired by dropping it (`canopy drop-view DB NAME --yes`): the app \
                rebuilds it from the rows when it next registers it. \
                Example: canopy verify ./db --json
                """)

        @OptionGroup var database: DatabaseArgument
        @Option(parsing: .unconditional, help: "Report at most this many problems per check.") var maxProblems = 100
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if maxProblems < 1 { throw ValidationError("--max-problems must be 1 or more") }
        }

        struct ViewResult {
            var name: String
            var entries: Int?
            var stale: Bool
            var problems: [String]
            var skipped: SkippedRows?
        }

        /// The check of each recorded search index (`nil` check: it could not be read, `problems` says why).
        struct SearchResult {
            var name: String
            var check: SearchIndexCheck?
            var problems: [String]

            /// The check when the index was checked; `nil` when it could not be read or was not checked (stale, or
            /// another format: its counts are not the index's, never to be shown as such).
            var checked: SearchIndexCheck? { check.flatMap { $0.notChecked == nil ? $0 : nil } }

            /// What the summary line says of it: its rows when checked, else that it was not checked (or could not be
            /// read).
            var summary: String {
                if let checked { return "\(checked.rows) rows" }
                return check == nil ? "could not be read" : "not checked"
            }
        }

        func run() throws {
            let started = ContinuousClock.now
            let db = try database.openReadOnly()
            let walk = try TableWalk.run(db.environment)
            var problems = walk.problems
            let tableCount = walk.tables
            let entryCount = walk.entries
            Breadcrumb.phase("checking rows and views")
            var rows = 0
            var views: [ViewResult] = []
            var searchIndexes: [SearchResult] = []
            try db.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0)).read { txn in
                let stored = try txn.checkStoredRows(limit: maxProblems) { done in console.progress("rows checked: \(done)") }
                console.endProgress()
                rows = stored.rows
                problems += stored.problems
                for summary in try ViewSummary.all(in: txn) {
                    var result = ViewResult(name: summary.record.name, entries: summary.rows, stale: summary.isStale, problems: [], skipped: summary.skipped)
                    if let problem = summary.problem {
                        result.problems = [problem]
                    } else if !summary.isStale {
                        do {
                            result.problems = Array(try txn.persistedView(summary.record.name).checkStructure().prefix(maxProblems))
                        } catch {
                            result.problems = ["cannot be read: \(error)"]
                        }
                    }
                    views.append(result)
                }
                Breadcrumb.phase("checking search indexes")
                for record in try txn.extensionRecords() where record.kind == SearchIndex.recordedKind {
                    do {
                        let check = try txn.checkSearchIndex(named: record.name, limit: maxProblems)
                        searchIndexes.append(SearchResult(name: record.name, check: check, problems: check.problems))
                    } catch {
                        searchIndexes.append(SearchResult(name: record.name, check: nil, problems: ["cannot be read: \(error)"]))
                    }
                }
                searchIndexes.sort { $0.name < $1.name }
            }
            let seconds = (ContinuousClock.now - started) / .seconds(1)
            let ok = problems.isEmpty && views.allSatisfy { $0.problems.isEmpty } && searchIndexes.allSatisfy { $0.problems.isEmpty }
            if output.json {
                console.line(JSONValue.members([
                    ("ok", .bool(ok)), ("tables", .int(tableCount)), ("entries", .int(entryCount)), ("rows", .int(rows)),
                    ("problems", .array(problems.map { .string($0) })),
                    ("views", .array(views.map { v in
                        .members([("name", .string(v.name)), ("entries", v.entries.map { .int($0) } ?? .null), ("stale", .bool(v.stale)),
                                  ("problems", .array(v.problems.map { .string($0) })),
                                  ("skippedRows", .int(v.skipped?.count ?? 0)),
                                  ("skipped", .array((v.skipped?.rows ?? []).map { .members([("collection", .string($0.collection)), ("key", .string($0.key))]) })),
                                  ("skippedError", v.skipped.map { .string($0.firstError) } ?? .null)])
                    })),
                    ("searchIndexes", .array(searchIndexes.map { s in
                        .members([("name", .string(s.name)), ("rows", s.checked.map { .int($0.rows) } ?? .null),
                                  ("words", s.checked.map { .int($0.words) } ?? .null),
                                  ("skippedRows", .int(s.check?.skippedRows ?? 0)),
                                  ("checked", .bool(s.check != nil && s.check?.notChecked == nil)),
                                  ("notChecked", s.check?.notChecked.map { .string($0) } ?? .null),
                                  ("problems", .array(s.problems.map { .string($0) }))])
                    })),
                    ("seconds", .number(String(format: "%.3f", seconds))),
                ]).text)
            } else {
                for problem in problems { console.line("problem: \(problem)") }
                for view in views {
                    for problem in view.problems { console.line("problem: view '\(view.name)': \(problem)") }
                    if view.stale { console.line("warning: view '\(view.name)' is stale (rows were written without it); the app brings it up to date when it next registers it or writes") }
                    if let skipped = view.skipped, skipped.count > 0 {
                        // Not a failure: the rows are intact, the view leaves them out until they are migrated.
                        console.line("warning: view '\(view.name)': \(skipped.count) rows skipped (cannot decode): \(skipped.firstError)")
                        for row in skipped.rows { console.line("  skipped: \(row.collection)/\(row.key)") }
                        if skipped.count > skipped.rows.count { console.line("  … and \(skipped.count - skipped.rows.count) more") }
                    }
                }
                for index in searchIndexes {
                    for problem in index.problems { console.line("problem: search index '\(index.name)': \(problem)") }
                    if let why = index.check?.notChecked { console.line("warning: search index '\(index.name)' was not checked: \(why)") }
                    if !index.problems.isEmpty {
                        console.line("repair: drop the search index with `canopy drop-view \(database.path) \(index.name) --yes`; the app rebuilds it from the rows when it next registers it")
                    }
                }
                let viewsText = views.map { "\($0.name) (\($0.entries.map(String.init) ?? "?") entries)" }.joined(separator: ", ")
                let searchText = searchIndexes.isEmpty ? "" : String(format: ", %d search index%@ [%@]", searchIndexes.count, searchIndexes.count == 1 ? "" : "es",
                    searchIndexes.map { "\($0.name) (\($0.summary))" }.joined(separator: ", "))
                console.line(String(format: "%@: %d tables, %d entries, %d rows, %d views%@%@ checked in %.2f s",
                                    ok ? "ok" : "FAILED", tableCount, entryCount, rows, views.count, views.isEmpty ? "" : " [\(viewsText)]", searchText, seconds))
            }
            if !ok { throw ExitCode(CLIFailure.Status.failed.rawValue) }
        }
    }

    /// Walks every table (hidden): what a contained `canopy` runs after a crash to find where LMDB crashes.
    struct WalkTables: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "walk-tables", abstract: "Read every entry of every table (used after a crash to locate the damage).",
            shouldDisplay: false)

        @Argument(help: "The database directory.") var path: String

        func run() throws {
            Breadcrumb.database(path)
            Breadcrumb.phase("opening the environment (LMDB reads the meta pages)")
            let environment = try Environment(path: path, options: EnvironmentOptions(flags: [.readOnly], maxDatabases: 4096))
            let walk = try TableWalk.run(environment)
            console.line("\(walk.tables) tables, \(walk.entries) entries")
            for problem in walk.problems { console.line("problem: \(problem)") }
            if !walk.problems.isEmpty { throw ExitCode(CLIFailure.Status.failed.rawValue) }
        }
    }

    struct Backup: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy the database while it is in use: a consistent snapshot, also while writers run.",
            discussion: """
                DEST is created (it must not exist, or be an empty directory). The copy is written as \
                DEST/data.mdb.partial-<pid>, flushed to disk and then named data.mdb: a killed backup never leaves a \
                half-written data.mdb. Example: canopy backup ./db /backups/db-2026-11-23 --compact
                """)

        @OptionGroup var database: DatabaseArgument
        @Argument(help: "The directory to copy into.") var destination: String
        @Flag(help: "Leave out free pages and renumber pages (smaller, slower).") var compact = false
        @OptionGroup var output: OutputOptions

        func run() throws {
            let db = try database.openReadOnly()
            let manager = FileManager.default
            var isDirectory: ObjCBool = false
            if manager.fileExists(atPath: destination, isDirectory: &isDirectory) {
                guard isDirectory.boolValue, (try? manager.contentsOfDirectory(atPath: destination).isEmpty) == true else {
                    throw CLIFailure(.failed, "'\(destination)' exists and is not an empty directory (it may hold an interrupted backup's data.mdb.partial-<pid>); choose a new path or remove it")
                }
            } else {
                do {
                    try manager.createDirectory(atPath: destination, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
                } catch {
                    throw CLIFailure(.failed, "cannot create '\(destination)': \(error.localizedDescription); check that its parent exists and is writable")
                }
            }
            let snapshot = try db.currentSnapshot()
            try db.backup(to: destination, compact: compact)
            let bytes = (try? manager.attributesOfItem(atPath: destination + "/data.mdb")[.size] as? Int) ?? 0
            if output.json {
                console.line(JSONValue.members([("destination", .string(destination)), ("bytes", .int(bytes)), ("compact", .bool(compact)),
                                                ("snapshotAtStart", .int(snapshot))]).text)
            } else {
                console.line("copied to \(destination): \(byteCount(bytes))\(compact ? ", compacted" : ""); snapshot \(snapshot) or later. Check it with `canopy verify \(destination)`.")
            }
        }
    }

    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print rows as JSON lines: collection, key, codec, object, metadata (and the stored bytes in base64).",
            discussion: """
                The base64 bytes let `canopy import` restore rows exactly (dates and data that JSON cannot tell from \
                strings); --no-bytes leaves them out. Example: canopy export ./db > rows.jsonl
                """)

        @OptionGroup var database: DatabaseArgument
        @Option(help: "Only this collection.") var collection: String?
        @Flag(help: "Leave out the stored bytes (objectBase64, metadataBase64).") var noBytes = false

        func run() throws {
            let db = try database.openReadOnly()
            var failures = 0
            try db.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0)).read { txn in
                let collections: [String]
                if let collection {
                    _ = try txn.requireCollection(collection)
                    collections = [collection]
                } else {
                    collections = try txn.collectionNames()
                }
                for name in collections {
                    let codec = try txn.codecName(ofCollection: name) ?? "binary"
                    try txn.enumerateStoredRows(inCollection: name) { key, object, metadata in
                        func text(_ bytes: UnsafeRawBufferPointer?, _ what: String) -> JSONValue? {
                            guard let bytes else { return nil }
                            do { return .raw(try Codecs.jsonText(from: bytes, codecName: codec)) } catch {
                                failures += 1
                                console.error("error: the \(what) of \(name)/\(key) does not decode with codec '\(codec)' (\(error)); exported as bytes only")
                                return .null
                            }
                        }
                        let line = JSONValue.members([
                            ("collection", .string(name)), ("key", .string(key)), ("codec", .string(codec)),
                            ("object", text(object, "object")), ("metadata", text(metadata, "metadata") ?? .null),
                            ("objectBase64", noBytes ? nil : .string(Data(object).base64EncodedString())),
                            ("metadataBase64", noBytes ? nil : metadata.map { .string(Data($0).base64EncodedString()) } ?? .null),
                        ])
                        console.line(line.text)
                        return true
                    }
                }
            }
            if failures > 0 { throw ExitCode(CLIFailure.Status.failed.rawValue) }
        }
    }

    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write rows from JSON lines (as `canopy export` prints them) through the store, in batches.",
            discussion: """
                Each line needs collection, key and object (metadata optional). Rows with objectBase64 are stored byte \
                for byte when the collection's codec matches; into a JSON-codec collection, others are stored from their \
                JSON. A line without its binary bytes for a binary-codec collection is refused (JSON cannot say which \
                strings were dates or data, and the app could not read the row back): the import stops there. The \
                app's view closures are not here, so every view recorded in the database becomes stale and is brought \
                up to date (from the commit log, or rebuilt) when the app next registers it or writes; the output names \
                them. Example: canopy export ./a | canopy import ./b
                """)

        @OptionGroup var database: DatabaseArgument
        @Option(help: "Read this file instead of standard input.") var input: String?
        @Option(parsing: .unconditional, help: "Rows per write transaction.") var batchSize = 1000
        @Option(help: "The codec of collections the import creates, when a line does not name one: binary or json.") var codec = "binary"
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if batchSize < 1 { throw ValidationError("--batch-size must be 1 or more") }
            if Codecs.named(codec) == nil { throw ValidationError("--codec must be binary or json") }
        }

        struct Line {
            var lineNumber: Int
            var collection: String
            var key: String
            var codec: String?
            var object: JSONValue
            var metadata: JSONValue?
            var objectBytes: [UInt8]?
            var metadataBytes: [UInt8]?
        }

        static func parse(_ text: String, lineNumber: Int) throws -> Line {
            let value: JSONValue
            do { value = try JSONValue.parse(text) } catch {
                throw CLIFailure(.failed, "line \(lineNumber) is not JSON (\(error)); nothing after the last complete batch was imported")
            }
            guard let collection = value["collection"]?.stringValue, let key = value["key"]?.stringValue, let object = value["object"] else {
                throw CLIFailure(.failed, "line \(lineNumber) lacks \"collection\", \"key\" or \"object\"; nothing after the last complete batch was imported")
            }
            func bytes(_ name: String) throws -> [UInt8]? {
                guard let member = value[name], member != .null else { return nil }
                guard let text = member.stringValue, let data = Data(base64Encoded: text) else {
                    throw CLIFailure(.failed, "line \(lineNumber): \"\(name)\" is not base64")
                }
                return Array(data)
            }
            let metadata = value["metadata"].flatMap { $0 == .null ? nil : $0 }
            return Line(lineNumber: lineNumber, collection: collection, key: key, codec: value["codec"]?.stringValue, object: object, metadata: metadata,
                        objectBytes: try bytes("objectBase64"), metadataBytes: try bytes("metadataBase64"))
        }

        /// The next input line; a read error (an unreadable file, a device error) says where and what was kept.
        func nextLine(_ reader: LineReader) throws -> String? {
            do { return try reader.next() } catch {
                throw CLIFailure(.failed, "cannot read \(input.map { "'\($0)'" } ?? "standard input"): \(error.localizedDescription); the batches before it were imported")
            }
        }

        func run() throws {
            let reader: LineReader
            if let input {
                var isDirectory: ObjCBool = false
                if FileManager.default.fileExists(atPath: input, isDirectory: &isDirectory), isDirectory.boolValue {
                    throw CLIFailure(.failed, "'\(input)' is a directory; --input takes a file of JSON lines (as `canopy export` prints them). Nothing was imported")
                }
                guard let handle = FileHandle(forReadingAtPath: input) else {
                    throw CLIFailure(.failed, "cannot read '\(input)'; check the path and its permissions")
                }
                reader = LineReader(handle)
            } else {
                reader = LineReader(FileHandle.standardInput)
            }
            // Opening for writing takes the write lock (the format record): another process's transaction delays it.
            let errorConsole = console
            let opening = DispatchWorkItem { [path = database.path] in
                errorConsole.error("note: \(WriteLockWait(databasePath: (path as NSString).standardizingPath, waited: .seconds(3)))")
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + 3, execute: opening)
            let db: Canopy.Database
            do {
                defer { opening.cancel() }
                db = try database.open(readOnly: false, create: true)
            }
            let connection = db.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
            var lineNumber = 0
            var imported = 0
            var collections = Set<String>()
            var batch: [Line] = []
            func flush() throws {
                guard !batch.isEmpty else { return }
                let rows = batch
                let errorConsole = console
                try connection.readWrite(reportingWaitAfter: .seconds(3), { errorConsole.error("note: \($0)") }) { txn in
                    for row in rows {
                        let recorded = try txn.codecName(ofCollection: row.collection)
                        let target = recorded ?? row.codec.flatMap { Codecs.named($0) == nil ? nil : $0 } ?? codec
                        if let objectBytes = row.objectBytes, row.codec == target, row.metadata == nil || row.metadataBytes != nil {
                            try txn.setStoredRow(objectBytes: objectBytes, metadataBytes: row.metadataBytes, forKey: row.key,
                                                 inCollection: row.collection, codecName: target)
                        } else {
                            guard let encoder = Codecs.named(target) else { continue }
                            // JSON cannot say which strings were dates or data, nor hold every number: re-encoded
                            // with the binary codec, such a row would not decode as the app's type.
                            if target == "binary" {
                                throw CLIFailure(
                                    .failed,
                                    "line \(row.lineNumber) (\(row.collection)/\(row.key)): a row without its stored binary bytes (objectBase64 and, with metadata, metadataBase64) cannot be imported into the binary-codec collection '\(row.collection)': JSON does not say which strings are dates or data, so the app could not read it back. Export without --no-bytes: the bytes restore the row exactly. Nothing after the last complete batch was imported")
                            }
                            let objectBytes: [UInt8]
                            let metadataBytes: [UInt8]?
                            do {
                                objectBytes = try encoder.encode(row.object)
                                metadataBytes = try row.metadata.map { try encoder.encode($0) }
                            } catch {
                                throw CLIFailure(.failed, "\(row.collection)/\(row.key) cannot be encoded with codec '\(target)': \(error)")
                            }
                            try txn.setStoredRow(objectBytes: objectBytes, metadataBytes: metadataBytes, forKey: row.key,
                                                 inCollection: row.collection, codecName: target)
                        }
                    }
                }
                imported += rows.count
                for row in rows { collections.insert(row.collection) }
                batch.removeAll(keepingCapacity: true)
                console.progress("imported \(imported) rows")
            }
            while let text = try nextLine(reader) {
                lineNumber += 1
                if text.allSatisfy(\.isWhitespace) { continue }
                batch.append(try Self.parse(text, lineNumber: lineNumber))
                if batch.count >= batchSize { try flush() }
            }
            try flush()
            console.endProgress()
            let stale = try connection.read { txn in
                let snapshots = try txn.extensionSnapshots()
                return try txn.extensionRecords().filter { View.recordedKinds.contains($0.kind) }
                    .filter { (snapshots.extensions[$0.name] ?? 0) < snapshots.store }.map(\.name).sorted()
            }
            if output.json {
                console.line(JSONValue.members([("rows", .int(imported)), ("collections", .array(collections.sorted().map { .string($0) })),
                                                ("staleViews", .array(stale.map { .string($0) }))]).text)
            } else {
                console.line("imported \(imported) rows into \(collections.count) collection(s)")
                if !stale.isEmpty {
                    console.line("views left stale (brought up to date when the app next registers them or writes): \(stale.joined(separator: ", "))")
                }
            }
        }
    }
}

/// Reads lines from a file handle in chunks.
final class LineReader {
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private var start = 0
    private var atEnd = false

    init(_ handle: FileHandle) { self.handle = handle }

    /// The next line without its newline, or `nil` at the end.
    func next() throws -> String? {
        while true {
            if let newline = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[start..<newline], as: UTF8.self)
                start = newline + 1
                return line
            }
            if atEnd {
                guard start < buffer.count else { return nil }
                let line = String(decoding: buffer[start...], as: UTF8.self)
                start = buffer.count
                return line
            }
            buffer.removeFirst(start)
            start = 0
            let chunk = try handle.read(upToCount: 1 << 20) ?? Data()
            if chunk.isEmpty { atEnd = true } else { buffer.append(contentsOf: chunk) }
        }
    }
}
