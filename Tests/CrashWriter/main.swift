import Canopy
import CanopyCoreTestFixtures
import CanopySearch
import CanopySearchTestFixtures
import CanopyTestFixtures
import CanopyTestSupport
import Foundation

// A child process for the tests that need another process (crash, cross-process, hangs).
//
// Default mode: commits numbered transactions in a loop until it is killed (or `--commits N` are done). Each
// transaction writes `counter` = n and rows "n-a", "n-b" (so a half-applied transaction is visible), then prints
// "acked n" after the commit returns.
//
// Usage: CrashWriter <database-path> <full|metadataOnly|none> [options]
//   --wait-for-go          first reads a line from standard input (several children started at once then open the
//                          database at once: the concurrent first open test)
//   --with-view            registers `crashWriterView()` (tag "1"), kept up to date by every commit
//   --with-many-group-view registers `crashWriterManyGroupView()` (a row in 2 or 3 groups), kept up to date too
//   --with-search          registers `crashWriterSearch()`, kept up to date by every commit
//   --search-query Q       registers `crashWriterSearch()` and its results view, sets the view's query to Q, prints
//                          "query set" and exits
//   --view-tag T           with --with-view: registers the view with version tag T (another definition)
//   --commits N            stops after N commits instead of running until killed
//   --gap-microseconds N   sleeps N microseconds between two commits (the last commit then comes right after a
//                          spaced touch of the signal file; the process exits at once after it)
//   --churn                each transaction also removes "<n-1>-a", and removes and writes again "<n-2>-b" with number
//                          n (a row whose record loses every extension's attachment, and moves in the view's order)
//   --regroup SEED         each transaction also rewrites one to three earlier entries with a random part and number
//                          (`crashWriterRegroup`: rows change their sets of groups in the many-group view)
//   --observe-many-groups N  registers `crashWriterManyGroupView()`, prints "observing", then observes it, applying
//                          every changeset to a model checked against the view, until the counter reaches N; prints
//                          "done <changesets> <reloads> <rows>" (exit 0) or "mismatch …" / "timeout" (exit 1)
//   --with-manual-list     registers `crashWriterFocusList()` and changes it in every commit as
//                          `crashWriterFocusStep` says (inserts "<n>-a", moves a row)
//   --remove-all           first removes every entry (one removeAll) and sets the counter to 0, so that the commits
//                          that follow write "1-a", "1-b", … again
//   --commit-log-limit N   opens with this commit log limit (a small one prunes commits other processes missed)
//   --row-bytes N          gives every row a payload of N bytes (grows the map quickly)
//   --initial-map-size N   opens with this initial map size (bytes)
//   --hold-read            opens the database, holds a read transaction, prints "holding", and waits to be killed
//   --file-size-limit N    limits the process's file size to N bytes (RLIMIT_FSIZE), writes until a write fails,
//                          prints "failed <code>" and exits 0 (the disk-full test)
//   --nested-checks        runs every nested transaction call and prints "<case> <error code or ok>" per line (the
//                          test kills it after a timeout: a hang is a failure)
//   --hold-write           opens the database, begins a write transaction, prints "holding", and waits to be killed
//   --read-all             opens the database read-only and reads it through the API as an app would: every entry
//                          decoded, the view's groups and every row of it; prints "ok <rows> <view rows>" (exit 0) or
//                          "error <code>" (exit 1) — the corruption test's API reader
//   --fault-outside-lmdb   opens the database read-only, reads a row (the guard of LMDB calls is installed), then
//                          reads a bad address outside any LMDB call: the process must die by SIGSEGV (a fault
//                          that is not LMDB's is never contained)
//   --read-transforming K  reads the comma-separated keys K, in that order, as the types with transforming
//                          `init(from:)` of TransformingModels.swift, through a connection without caches, and prints
//                          one line per key (`describeTransformingRow`)

let arguments = CommandLine.arguments
guard arguments.count >= 3, let durability = Durability(rawValue: arguments[2]) else {
    FileHandle.standardError.write(Data("usage: CrashWriter <database-path> <full|metadataOnly|none> [options]\n".utf8))
    exit(2)
}
func value(_ flag: String) -> String? {
    arguments.firstIndex(of: flag).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
}
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }  // unbuffered

let withView = arguments.contains("--with-view")
let viewTag = value("--view-tag") ?? "1"
let commitLimit = value("--commits").flatMap(Int.init)
let rowBytes = value("--row-bytes").flatMap(Int.init) ?? 0
var options = DatabaseOptions(durability: durability)
if let initial = value("--initial-map-size").flatMap(Int.init) { options.initialMapSize = initial }
if let limit = value("--commit-log-limit").flatMap(Int.init) { options.commitLogLimit = limit }
let churn = arguments.contains("--churn")
let commitGap = value("--gap-microseconds").flatMap(UInt32.init)

if arguments.contains("--wait-for-go") { _ = readLine() }

do {
    if let limit = value("--file-size-limit").flatMap(Int.init) {
        signal(SIGXFSZ, SIG_IGN)  // a write past the limit then fails with EFBIG instead of killing the process
        let database = try Database(path: arguments[1], options: options)
        var limits = rlimit(rlim_cur: rlim_t(limit), rlim_max: rlim_t(limit))
        setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limits)
        let connection = database.newConnection()
        var number = 0
        while number < 100_000 {
            number += 1
            do {
                try connection.readWrite { txn in
                    try txn.set(CrashWriterEntry(number: number, part: "a", payload: String(repeating: "x", count: 8_192)),
                                forKey: "\(number)-a", in: crashWriterEntries)
                }
                say("acked \(number)")
            } catch let error as CanopyError {
                say("failed \(error.code)")
                exit(0)
            }
        }
        say("never failed")
        exit(1)
    }
    if arguments.contains("--fault-outside-lmdb") {
        options.readOnly = true
        let database = try Database(path: arguments[1], options: options)
        _ = try database.newConnection().read { txn in try txn.count(inCollection: crashWriterEntries.name) }
        say("read")
        let address = UnsafePointer<UInt8>(bitPattern: 0x10)
        say("byte \(address?.pointee ?? 0)")
        exit(0)
    }
    if arguments.contains("--read-all") {
        options.readOnly = true
        do {
            let database = try Database(path: arguments[1], options: options)
            let (rows, viewRows) = try database.newConnection().read { txn in
                var rows = 0
                try txn.enumerateObjects(in: crashWriterEntries) { _, _ in
                    rows += 1
                    return true
                }
                let view = try txn.view(crashWriterView().name)
                var viewRows = 0
                for group in try view.groups() {
                    for id in try view.rowIDs(inGroup: group) {
                        guard try txn.object(forKey: id.key, in: crashWriterEntries) != nil else {
                            throw CanopyError(.corruptStore, "the view lists \(id.key), which is not stored")
                        }
                        viewRows += 1
                    }
                }
                return (rows, viewRows)
            }
            say("ok \(rows) \(viewRows)")
            exit(0)
        } catch let error as CanopyError {
            say("error \(error.code)")
            FileHandle.standardError.write(Data("CrashWriter: \(error)\n".utf8))
            exit(1)
        }
    }
    let database = try Database(path: arguments[1], options: options)
    if arguments.contains("--hold-read") {
        let connection = database.newConnection()
        try connection.pin()
        say("holding")
        while true { sleep(60) }
    }
    if arguments.contains("--hold-write") {
        try database.newConnection().readWrite { _ in
            say("holding")
            while true { sleep(60) }
        }
    }
    if let keys = value("--read-transforming") {
        let connection = database.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
        try connection.read { txn in
            for key in keys.split(separator: ",") { say(try describeTransformingRow(String(key), in: txn)) }
        }
        exit(0)
    }
    if let key = value("--write-undecodable") {
        // A row of the entries' collection that CrashWriterEntry cannot decode (as a tool's import of another shape
        // would write), without any extension registered.
        try database.newConnection().readWrite { txn in
            try txn.setStoredRow(objectBytes: try BinaryCodec().encode(["number": "not a number"]), metadataBytes: nil, forKey: key,
                                 inCollection: crashWriterEntries.name, codecName: BinaryCodec().name)
        }
        exit(0)
    }
    if arguments.contains("--nested-checks") {
        try runNestedChecks(database)
        exit(0)
    }
    if let query = value("--search-query") {
        let search = crashWriterSearch()
        let results = crashWriterResults(search)
        try database.register(search)
        try database.register(results.view)
        try database.newConnection().readWrite { txn in try results.setQuery(query, in: txn) }
        say("query set")
        exit(0)
    }
    if withView { try database.register(crashWriterView(versionTag: viewTag)) }
    if let target = value("--observe-many-groups").flatMap(Int.init) { try observeManyGroups(database, until: target) }
    if arguments.contains("--with-many-group-view") { try database.register(crashWriterManyGroupView()) }
    let regroupSeed = value("--regroup").flatMap(UInt64.init)
    if arguments.contains("--with-search") { try database.register(crashWriterSearch()) }
    let withManualList = arguments.contains("--with-manual-list")
    if withManualList { try database.register(crashWriterFocusList()) }
    if arguments.contains("--remove-all") {
        try database.newConnection().readWrite { txn in
            _ = try txn.removeAll(inCollection: crashWriterEntries.name)
            try txn.set(0, forKey: "n", in: TypedCollection<Int, NoMetadata>("counter"))
        }
    }
    let connection = database.newConnection()
    let entries = crashWriterEntries
    let counter = TypedCollection<Int, NoMetadata>("counter")
    let payload: String? = rowBytes > 0 ? String(repeating: "p", count: rowBytes) : nil
    var next = (try connection.read { txn in try txn.object(forKey: "n", in: counter) } ?? 0) + 1
    var written = 0
    while commitLimit.map({ written < $0 }) ?? true {
        let number = next
        if let commitGap, written > 0 { usleep(commitGap) }
        try connection.readWrite { txn in
            try txn.set(CrashWriterEntry(number: number, part: "a", payload: payload), forKey: "\(number)-a", in: entries)
            try txn.set(number, forKey: "n", in: counter)
            try txn.set(CrashWriterEntry(number: number, part: "b", payload: payload), forKey: "\(number)-b", in: entries)
            if withManualList {
                let list = try txn.manualList("focus")
                let step = crashWriterFocusStep(number: number, count: try list.count())
                try list.insert(key: "\(number)-a", inCollection: entries.name, at: step.insertAt)
                if let move = step.move { try list.move(from: move.from, to: move.to) }
            }
            if let regroupSeed { try crashWriterRegroup(txn, number: number, seed: regroupSeed) }
            if churn {
                _ = try txn.remove(key: "\(number - 1)-a", in: entries)
                if try txn.remove(key: "\(number - 2)-b", in: entries) {
                    try txn.set(CrashWriterEntry(number: number, part: "b", payload: payload), forKey: "\(number - 2)-b", in: entries)
                }
            }
        }
        say("acked \(number)")  // unbuffered: the test reads it after the kill
        next += 1
        written += 1
    }
    exit(0)
} catch {
    FileHandle.standardError.write(Data("CrashWriter: \(error)\n".utf8))
    exit(1)
}

/// Each nested call, and what it gave: a CanopyError code, or "ok".
func runNestedChecks(_ database: Database) throws {
    try database.register(crashWriterView())
    let first = database.newConnection()
    let second = database.newConnection()
    try first.readWrite { txn in try txn.set(CrashWriterEntry(number: 1, part: "a"), forKey: "1-a", in: crashWriterEntries) }
    let observer = try ViewObserver(database: database, mappings: ViewMappings(groups: ["a"], view: "entries-by-part"))
    func outcome(_ name: String, _ body: () throws -> Void) {
        do {
            try body()
            say("\(name) ok")
        } catch let error as CanopyError {
            say("\(name) \(error.code)")
        } catch {
            say("\(name) \(error)")
        }
    }
    let write: (ReadWriteTransaction) throws -> Void = { txn in
        try txn.set(CrashWriterEntry(number: 2, part: "b"), forKey: "2-b", in: crashWriterEntries)
    }
    outcome("read-in-read-same") { try first.read { _ in try first.read { _ in } } }
    outcome("read-in-read-other") { try first.read { _ in try second.read { _ in } } }
    outcome("readWrite-in-read-same") { try first.read { _ in try first.readWrite(write) } }
    outcome("readWrite-in-read-other") { try first.read { _ in try second.readWrite(write) } }
    outcome("readWrite-in-readWrite-same") { try first.readWrite { _ in try first.readWrite(write) } }
    outcome("readWrite-in-readWrite-other") { try first.readWrite { _ in try second.readWrite(write) } }
    outcome("read-in-readWrite-same") { try first.readWrite { _ in try first.read { _ in } } }
    let another = View(name: "another", grouping: .byKey { _, key in key }, sorting: .byKey { _, _, key in SortKey(key) })
    outcome("register-in-readWrite") { try first.readWrite { _ in _ = try database.register(another) } }
    outcome("unregister-in-readWrite") { try first.readWrite { _ in try database.unregisterExtension(named: "entries-by-part") } }
    outcome("observer-read-in-observer-read") { try observer.read { _ in try observer.read { _ in } } }
    outcome("observer-advance-in-observer-read") { try observer.read { _ in _ = try observer.advance() } }
    outcome("readWrite-in-observer-read") { try observer.read { _ in try second.readWrite(write) } }
    outcome("pin-in-read-same") { try first.read { _ in _ = try first.pin() } }
    outcome("after-all-a-plain-write") { try second.readWrite(write) }
}

/// `--observe-many-groups N`: registers `crashWriterManyGroupView()`, prints "observing", then advances an observer
/// of every group of it, applies each changeset to its model of the list and compares it with the view as stored at
/// the observer's snapshot, until the counter reaches N. Prints "done <changesets> <reloads> <rows>" (exit 0),
/// "mismatch …" (exit 1), or "timeout" after two minutes (exit 1).
func observeManyGroups(_ database: Database, until target: Int) throws -> Never {
    try database.register(crashWriterManyGroupView())
    let observer = try ViewObserver(database: database, mappings: ViewMappings(view: "entries-by-tags", groupFilter: { _ in true }))
    var rendering = try observer.read { txn in try Rendering(mappings: observer.mappings, reader: txn.view("entries-by-tags")) }
    say("observing")
    var changesets = 0
    var reloads = 0
    let deadline = Date().addingTimeInterval(120)
    while Date() < deadline {
        let changes = try observer.advance()
        let step = try applyObserved(changes, to: rendering, observer: observer)
        guard step.applied == step.expected else {
            say("mismatch after \(changesets) changesets: applying gave \(step.applied.description.split(separator: "\n")) expected \(step.expected.description.split(separator: "\n"))")
            exit(1)
        }
        rendering = step.applied
        if changes.isReload { reloads += 1 } else if !changes.rowChanges.isEmpty || !changes.sectionChanges.isEmpty { changesets += 1 }
        if step.counter >= target {
            say("done \(changesets) \(reloads) \(rendering.sections.reduce(0) { $0 + $1.rows.count })")
            exit(0)
        }
        usleep(2_000)  // the child's own loop; the test waits on its output with a timeout
    }
    say("timeout")
    exit(1)
}
