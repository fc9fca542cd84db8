import ArgumentParser
import Canopy
import Foundation
import LMDB

/// The database argument every command takes.
struct DatabaseArgument: ParsableArguments {
    @Argument(help: "The database directory (it holds data.mdb and lock.mdb).")
    var path: String

    @Flag(name: .customLong("no-lock"), help: ArgumentHelp(
        "Read without the lock file: for a read-only copy (read-only media, a lock.mdb that cannot be written).",
        discussion: "Safe only when no process writes the database meanwhile: without the lock file a writer may reuse the pages being read."))
    var noLock = false

    /// Opens the database read-only: nothing in it changes.
    func openReadOnly() throws -> Canopy.Database {
        try open(readOnly: true)
    }

    /// Opens the database for writing; with `create`, a missing database directory is created (not its parents).
    func open(readOnly: Bool, create: Bool = false) throws -> Canopy.Database {
        let advice = "Pass the directory that holds a Canopy database's data.mdb and lock.mdb."
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
        if !exists && errno == EACCES {
            throw CLIFailure(.cannotOpen, "cannot open the database: permission denied: '\(path)' cannot be reached by this user (a directory on the way lacks x permission); run as its owner or change the permissions")
        }
        if !exists && !create {
            throw CLIFailure(.cannotOpen, "cannot open the database: '\(path)' does not exist. \(advice)")
        }
        if exists && !isDirectory.boolValue {
            throw CLIFailure(.cannotOpen, "cannot open the database: '\(path)' is a file; a Canopy database is a directory holding data.mdb and lock.mdb.")
        }
        let dataFile = path + "/data.mdb"
        if exists && !create && access(dataFile, F_OK) != 0 {
            if errno == EACCES {
                throw CLIFailure(.cannotOpen, "cannot open the database: permission denied: the directory '\(path)' cannot be searched by this user (it needs x permission); run as its owner or change the permissions")
            }
            let partial = (try? FileManager.default.contentsOfDirectory(atPath: path))?.first { $0.hasPrefix("data.mdb" + Environment.partialCopySuffix) }
            if let partial {
                throw CLIFailure(.cannotOpen, "cannot open the database: '\(path)' holds only \(partial), the unfinished copy of an interrupted `canopy backup`, not a database. Remove the directory and back up again.")
            }
            throw CLIFailure(.cannotOpen, "cannot open the database: '\(path)' is a directory without data.mdb, not a Canopy database. Pass the directory that holds data.mdb and lock.mdb.")
        }
        let lockFile = path + "/lock.mdb"
        let lockExisted = access(lockFile, F_OK) == 0
        Breadcrumb.database(path)
        Breadcrumb.phase("opening the database (LMDB reads the meta pages, Canopy its records)")
        do {
            if noLock && !readOnly {
                throw CLIFailure(.usage, "--no-lock is for inspection only: this command writes, and writing needs the lock file")
            }
            let database = try Database(path: path, options: DatabaseOptions(maxTables: 1024, readOnly: readOnly, noLock: noLock))
            Breadcrumb.phase("reading the database")
            return database
        } catch {
            // Inspection changes nothing: a lock file LMDB created for a database that could not be opened goes.
            if readOnly && !lockExisted { unlink(lockFile) }
            throw CLIFailure.from(error)
        }
    }
}

/// The `--json` flag of read commands.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print JSON: one document, or one line per event for streams.")
    var json = false
}

var console: Console { Console.current }

/// Plain-text columns, padded to the widest cell.
struct TextTable {
    var header: [String]
    var rows: [[String]] = []

    init(_ header: String...) { self.header = header }

    mutating func add(_ cells: String...) { rows.append(cells) }
    mutating func add(_ cells: [String]) { rows.append(cells) }

    func render(indent: String = "") -> String {
        var widths = header.map(\.count)
        for row in rows {
            for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            var parts: [String] = []
            for (i, cell) in cells.enumerated() {
                parts.append(i == cells.count - 1 ? cell : cell.padding(toLength: widths[i], withPad: " ", startingAt: 0))
            }
            return indent + parts.joined(separator: "  ")
        }
        return ([line(header)] + rows.map(line)).joined(separator: "\n")
    }
}

/// `text` safe to print to a terminal: control characters (C0, DEL, C1) — which data may hold, and which a terminal
/// would obey (an escape sequence can recolour, move the cursor, retitle the window) — shown escaped as `\u{1B}`;
/// backslashes doubled so that the escaped form cannot be forged.
func printable(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: { isControl($0) || $0 == "\\" }) else { return text }
    var out = ""
    for scalar in text.unicodeScalars {
        if scalar == "\\" {
            out += "\\\\"
        } else if isControl(scalar) {
            out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
        } else {
            out.unicodeScalars.append(scalar)
        }
    }
    return out
}

private func isControl(_ scalar: Unicode.Scalar) -> Bool {
    scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
}

/// Byte counts for people.
func byteCount(_ bytes: Int) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"]
    var value = Double(bytes)
    var unit = 0
    while value >= 1024 && unit < units.count - 1 {
        value /= 1024
        unit += 1
    }
    return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
}

/// Lowercase hex, `perLine` bytes a line (0: one line).
func hex(_ bytes: some Collection<UInt8>, perLine: Int = 0) -> String {
    let digits = Array("0123456789abcdef")
    var out = ""
    out.reserveCapacity(bytes.count * 2 + bytes.count / 16)
    for (i, byte) in bytes.enumerated() {
        if perLine > 0, i > 0, i % perLine == 0 { out += "\n" }
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 0xF)])
    }
    return out
}

/// A one-line summary of JSON text, at most `width` characters.
func summary(_ text: String, width: Int = 60) -> String {
    text.count <= width ? text : String(text.prefix(width - 1)) + "…"
}

extension Canopy.ReadTransaction {
    /// The collections with rows, or a failure naming the known ones when `name` is not among them.
    func requireCollection(_ name: String) throws -> String {
        guard let codec = try codecName(ofCollection: name) else {
            let known = try collectionNames()
            throw CLIFailure(.failed, "no collection named '\(name)'; the collections are: \(known.isEmpty ? "none" : known.joined(separator: ", "))")
        }
        return codec
    }

    /// JSON text of stored bytes, or a failure that says to use `--raw`.
    func jsonText(_ bytes: [UInt8], codec: String, what: String, collection: String, key: String, pretty: Bool = false) throws -> String {
        do {
            return try bytes.withUnsafeBytes { try Codecs.jsonText(from: $0, codecName: codec, prettyPrinted: pretty) }
        } catch {
            throw CLIFailure(.failed, "the stored \(what) of \(collection)/\(key) does not decode with its recorded codec '\(codec)' (\(error)); print its bytes with --raw, and run `canopy verify` on the database")
        }
    }
}

/// What `info` and `views` show of one view.
struct ViewSummary {
    var record: ExtensionRecord
    var parent: String?
    var groups: Int?
    /// Entries: a row counts once per group it is in.
    var rows: Int?
    /// A row can be in several groups (a `many…` grouping, or a filtered view over one).
    var manyGroups = false
    var snapshot: UInt64?
    var storeSnapshot: UInt64
    var problem: String?
    /// The rows the view left out because it could not decode them.
    var skipped: SkippedRows?

    var isStale: Bool { (snapshot ?? 0) < storeSnapshot || snapshot == nil }

    static func all(in txn: Canopy.ReadTransaction) throws -> [ViewSummary] {
        let snapshots = try txn.extensionSnapshots()
        return try txn.extensionRecords().filter { View.recordedKinds.contains($0.kind) }.sorted { $0.name < $1.name }.map { record in
            var summary = ViewSummary(record: record, snapshot: snapshots.extensions[record.name], storeSnapshot: snapshots.store)
            do {
                summary.skipped = try txn.skippedRows(ofExtension: record.name)
                let reader = try txn.persistedView(record.name, allowingStale: true)
                summary.parent = reader.parentView
                summary.manyGroups = reader.rowsInManyGroups
                summary.groups = try reader.numberOfGroups()
                summary.rows = try reader.count()
            } catch {
                summary.problem = "\(error)"
            }
            return summary
        }
    }

    var state: String {
        if problem != nil { return "unreadable" }
        let state = isStale ? "stale" : "current"
        guard let skipped, skipped.count > 0 else { return state }
        return "\(state), \(skipped.count) row\(skipped.count == 1 ? "" : "s") skipped (cannot decode)"
    }

    var json: JSONValue {
        .members([
            ("name", .string(record.name)), ("kind", .string(record.kind)), ("versionTag", .string(record.versionTag)),
            ("parent", parent.map { .string($0) } ?? .null), ("groups", groups.map { .int($0) }), ("rows", rows.map { .int($0) }),
            ("snapshot", snapshot.map { .int($0) } ?? .null), ("stale", .bool(isStale)), ("problem", problem.map { .string($0) }),
            ("skippedRows", .int(skipped?.count ?? 0)), ("rowsInManyGroups", .bool(manyGroups)),
        ])
    }

    static func table(_ summaries: [ViewSummary], indent: String = "") -> String {
        var table = TextTable("NAME", "KIND", "VERSION", "PARENT", "GROUPS", "ROWS", "SNAPSHOT", "STATE")
        for s in summaries {
            table.add(s.record.name, s.manyGroups && s.record.kind == View.filteredKind ? "\(s.record.kind), many groups" : s.record.kind, s.record.versionTag, s.parent ?? "-", s.groups.map(String.init) ?? "-",
                      s.rows.map(String.init) ?? "-", s.snapshot.map(String.init) ?? "-", s.state)
        }
        return table.render(indent: indent)
    }
}
