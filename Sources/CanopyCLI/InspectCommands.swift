import ArgumentParser
import Canopy
import Foundation
import LMDB

extension CanopyCommand {
    struct Info: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show file and map size, snapshot, readers, collections and views.",
            discussion: "Example: canopy info ~/.local/share/reminders/db --json")

        @OptionGroup var database: DatabaseArgument
        @OptionGroup var output: OutputOptions

        func run() throws {
            let db = try database.openReadOnly()
            let info = db.environment.info()
            let pageSize = db.environment.statistics().pageSize
            let fileBytes = (try? FileManager.default.attributesOfItem(atPath: db.path + "/data.mdb")[.size] as? Int) ?? nil
            let readers = try db.environment.readers()
            let connection = db.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
            let (snapshot, collections, views) = try connection.read { txn in
                let collections = try txn.collectionNames().map { name in
                    (name: name, rows: try txn.count(inCollection: name), codec: try txn.codecName(ofCollection: name) ?? "?")
                }
                return (txn.snapshot, collections, try ViewSummary.all(in: txn))
            }
            let usedBytes = (info.lastPage + 1) * pageSize
            if output.json {
                console.line(JSONValue.members([
                    ("path", .string(db.path)), ("fileBytes", fileBytes.map { .int($0) }), ("mapBytes", .int(info.mapSize)),
                    ("usedBytes", .int(usedBytes)), ("pageSize", .int(pageSize)), ("lastTransaction", .int(info.lastTransactionID)),
                    ("snapshot", .int(snapshot)),
                    ("readers", .members([("slots", .int(readers.count)), ("active", .int(readers.filter { $0.transactionID != nil }.count)),
                                          ("max", .int(info.maxReaders))])),
                    ("collections", .array(collections.map { .members([("name", .string($0.name)), ("rows", .int($0.rows)), ("codec", .string($0.codec))]) })),
                    ("views", .array(views.map(\.json))),
                ]).text)
                return
            }
            console.line("database     \(db.path)")
            console.line("file         \(fileBytes.map(byteCount) ?? "?") (data.mdb); map \(byteCount(info.mapSize)), \(byteCount(usedBytes)) used")
            console.line("snapshot     \(snapshot) (LMDB transaction \(info.lastTransactionID))")
            console.line("readers      \(readers.count) slot(s) in use, \(readers.filter { $0.transactionID != nil }.count) reading, of \(info.maxReaders)")
            console.line("collections  \(collections.count)")
            if !collections.isEmpty {
                var table = TextTable("NAME", "ROWS", "CODEC")
                for c in collections { table.add(c.name, String(c.rows), c.codec) }
                console.line(table.render(indent: "  "))
            }
            console.line("views        \(views.count)")
            if !views.isEmpty { console.line(ViewSummary.table(views, indent: "  ")) }
            if views.contains(where: \.isStale) {
                console.line("stale views lag the store (written by a process that did not register them); the app brings them up to date (from the commit log, or by a rebuild) when it next registers them or writes.")
            }
        }
    }

    struct Collections: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the collections with their row counts and codecs.",
            discussion: "Example: canopy collections ./db")

        @OptionGroup var database: DatabaseArgument
        @OptionGroup var output: OutputOptions

        func run() throws {
            let db = try database.openReadOnly()
            let collections = try db.newConnection().read { txn in
                try txn.collectionNames().map { (name: $0, rows: try txn.count(inCollection: $0), codec: try txn.codecName(ofCollection: $0) ?? "?") }
            }
            if output.json {
                console.line(JSONValue.array(collections.map { .members([("name", .string($0.name)), ("rows", .int($0.rows)), ("codec", .string($0.codec))]) }).text)
            } else {
                var table = TextTable("NAME", "ROWS", "CODEC")
                for c in collections { table.add(c.name, String(c.rows), c.codec) }
                console.line(table.render())
            }
        }
    }

    struct Keys: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the keys of a collection, in order.",
            discussion: "Example, the page after key r100: canopy keys ./db reminders --limit 100 --after r100")

        @OptionGroup var database: DatabaseArgument
        @Argument(help: "The collection.") var collection: String
        @Option(help: "Only keys starting with this prefix.") var prefix = ""
        @Option(help: "Only keys after this one (the last key of the previous page).") var after: String?
        @Option(parsing: .unconditional, help: "At most this many keys (0 or more).") var limit: Int?
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more") }
        }

        func run() throws {
            let db = try database.openReadOnly()
            let keys = try db.newConnection().read { txn in
                _ = try txn.requireCollection(collection)
                return try txn.keys(inCollection: collection, prefix: prefix, after: after, limit: limit ?? .max)
            }
            if output.json {
                console.line(JSONValue.array(keys.map { .string($0) }).text)
            } else {
                for key in keys { console.line(printable(key)) }
            }
        }
    }

    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print an object (and with --metadata its metadata) as JSON, through the codec recorded for its collection.",
            discussion: "Example: canopy get ./db reminders r1 --metadata. With --raw, prints the stored bytes in hex (for anything that does not decode).")

        @OptionGroup var database: DatabaseArgument
        @Argument(help: "The collection.") var collection: String
        @Argument(help: "The key.") var key: String
        @Flag(help: "Also print the metadata.") var metadata = false
        @Flag(help: "Print the stored bytes in hex instead of decoding them.") var raw = false
        @OptionGroup var output: OutputOptions

        func run() throws {
            let db = try database.openReadOnly()
            try db.newConnection().read { txn in
                let codec = try txn.requireCollection(collection)
                guard let object = try txn.rawObject(forKey: key, inCollection: collection) else {
                    throw CLIFailure(.failed, "no key '\(key)' in collection '\(collection)'; list the keys with `canopy keys \(database.path) \(collection)`")
                }
                let metadataBytes = metadata ? try txn.rawMetadata(forKey: key, inCollection: collection)?.bytes : nil
                if raw {
                    if output.json {
                        console.line(JSONValue.members([
                            ("collection", .string(collection)), ("key", .string(key)), ("codec", .string(codec)),
                            ("objectHex", .string(hex(object.bytes))), ("metadataHex", metadata ? metadataBytes.map { .string(hex($0)) } ?? .null : nil),
                        ]).text)
                    } else {
                        console.line(hex(object.bytes, perLine: 32))
                        if metadata { console.line("metadata:\n" + (metadataBytes.map { hex($0, perLine: 32) } ?? "none")) }
                    }
                    return
                }
                let objectText = try txn.jsonText(object.bytes, codec: codec, what: "object", collection: collection, key: key)
                let metadataText = try metadataBytes.map { try txn.jsonText($0, codec: codec, what: "metadata", collection: collection, key: key) }
                if output.json {
                    console.line(JSONValue.members([
                        ("collection", .string(collection)), ("key", .string(key)), ("codec", .string(codec)), ("object", .raw(objectText)),
                        ("metadata", metadata ? metadataText.map { .raw($0) } ?? .null : nil),
                    ]).text)
                } else {
                    console.line(try JSONValue.parse(objectText).prettyText)
                    if metadata { console.line("metadata: " + (try metadataText.map { try JSONValue.parse($0).prettyText } ?? "none")) }
                }
            }
        }
    }

    struct Stat: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show LMDB figures per table: depth, branch/leaf/overflow pages, entries; free pages; bytes per row and per view entry.",
            discussion: "Example: canopy stat ./db. `mdb_stat -a ./db` reads the same figures with LMDB's own tool.")

        @OptionGroup var database: DatabaseArgument
        @OptionGroup var output: OutputOptions

        func run() throws {
            let db = try database.openReadOnly()
            let env = db.environment
            let info = env.info()
            let (tables, free, freeList) = try env.read { txn in
                let tables = try txn.databaseNames().map { name in (name, try txn.statistics(of: txn.openDatabase(named: name))) }
                return (tables, try txn.freePages(), try txn.freeListStatistics())
            }
            let main = env.statistics()
            func bytes(_ names: (String) -> Bool) -> Int { tables.filter { names($0.0) }.reduce(0) { $0 + $1.1.totalBytes } }
            let rows = tables.first { $0.0 == "canopy.objects" }?.1.entries ?? 0
            let rowBytes = bytes { $0 == "canopy.objects" || $0 == "canopy.metadata" }
            // A view's entries are counted by its reader (each row's entry lives in the row's own record, so no table
            // has one record per entry); its bytes are those of its tables (pages, groups), without the entries the
            // rows' records carry (about 12 bytes each).
            let recordedViews = try db.newConnection().read { txn in
                try txn.extensionRecords().filter { View.recordedKinds.contains($0.kind) }.map(\.name)
            }
            let views = try recordedViews.sorted().map { view -> (name: String, entries: Int, bytes: Int) in
                let entries = try db.newConnection().read { txn in (try? txn.persistedView(view, allowingStale: true).count()) ?? 0 }
                return (view, entries, bytes { $0.hasPrefix("ext.\(view).") })
            }
            let pageSize = main.pageSize
            if output.json {
                func stats(_ s: DatabaseStatistics) -> [(String, JSONValue?)] {
                    [("depth", .int(s.depth)), ("branchPages", .int(s.branchPages)), ("leafPages", .int(s.leafPages)),
                     ("overflowPages", .int(s.overflowPages)), ("entries", .int(s.entries)), ("bytes", .int(s.totalBytes))]
                }
                console.line(JSONValue.members([
                    ("pageSize", .int(pageSize)), ("mapBytes", .int(info.mapSize)), ("lastPage", .int(info.lastPage)),
                    ("main", .members(stats(main))),
                    ("tables", .array(tables.map { .members([("name", .string($0.0))] + stats($0.1)) })),
                    ("free", .members([("pages", .int(free.pages)), ("records", .int(free.records)), ("bytes", .int(free.pages * pageSize))] + [("freeListPages", .int(freeList.leafPages + freeList.branchPages + freeList.overflowPages))])),
                    ("rows", .int(rows)), ("bytesPerRow", rows > 0 ? .number(String(format: "%.1f", Double(rowBytes) / Double(rows))) : .null),
                    ("views", .array(views.map { v in .members([("name", .string(v.name)), ("entries", .int(v.entries)), ("bytes", .int(v.bytes)),
                                                                ("bytesPerEntry", v.entries > 0 ? .number(String(format: "%.1f", Double(v.bytes) / Double(v.entries))) : .null)]) })),
                ]).text)
                return
            }
            console.line("page size \(pageSize) B; map \(byteCount(info.mapSize)); last page \(info.lastPage)")
            var table = TextTable("TABLE", "DEPTH", "BRANCH", "LEAF", "OVERFLOW", "ENTRIES", "BYTES")
            func add(_ name: String, _ s: DatabaseStatistics) {
                table.add(name, String(s.depth), String(s.branchPages), String(s.leafPages), String(s.overflowPages), String(s.entries), byteCount(s.totalBytes))
            }
            add("(main)", main)
            for (name, s) in tables { add(name, s) }
            add("(free list)", freeList)
            console.line(table.render())
            console.line("free pages: \(free.pages) (\(byteCount(free.pages * pageSize))) in \(free.records) free-list record(s)")
            if rows > 0 { console.line(String(format: "rows: %d, %.1f bytes per row (objects + metadata tables)", rows, Double(rowBytes) / Double(rows))) }
            for v in views where v.entries > 0 {
                console.line(String(format: "view %@: %d entries, %.1f bytes per entry", v.name, v.entries, Double(v.bytes) / Double(v.entries)))
            }
        }
    }

    struct Readers: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List LMDB's reader slots (process, thread, transaction); --clear-stale frees the slots of dead processes.",
            discussion: "Example: canopy readers ./db --clear-stale")

        @OptionGroup var database: DatabaseArgument
        @Flag(help: "Clear the slots of processes that died without ending their read transactions.") var clearStale = false
        @OptionGroup var output: OutputOptions

        func run() throws {
            let db = try database.openReadOnly()
            let cleared = clearStale ? try db.environment.readerCheck() : 0
            let readers = try db.environment.readers()
            if output.json {
                console.line(JSONValue.members([
                    ("readers", .array(readers.map { r in
                        .members([("pid", .int(r.processID)), ("thread", .string(r.thread)), ("transaction", r.transactionID.map { .int($0) } ?? .null),
                                  ("alive", .bool(r.processIsAlive)), ("self", .bool(r.processID == getpid()))])
                    })),
                    ("cleared", clearStale ? .int(cleared) : nil),
                ]).text)
                return
            }
            var table = TextTable("PID", "THREAD", "TRANSACTION", "STATE")
            for r in readers {
                let state = !r.processIsAlive ? "stale (process gone)" : r.processID == getpid() ? "this canopy process" : "alive"
                table.add(String(r.processID), r.thread, r.transactionID.map(String.init) ?? "-", state)
            }
            console.line(table.render())
            if clearStale { console.line("cleared \(cleared) stale slot(s)") }
            let stale = readers.filter { !$0.processIsAlive }.count
            if stale > 0 && !clearStale { console.line("\(stale) stale slot(s): run with --clear-stale to free them") }
        }
    }
}
