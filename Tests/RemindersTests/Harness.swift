import Canopy
import CanopyTestSupport
import Foundation
import RemindersKit
import Synchronization

/// Text written by a command, collected under a lock (watch writes from another thread).
final class Output: Sendable {
    private let buffer = Mutex("")
    func append(_ text: String) { buffer.withLock { $0 += text } }
    var text: String { buffer.withLock { $0 } }
}

/// The outcome of one run of `reminders`.
struct RunResult {
    var status: Int32
    var out: String
    var err: String
}

/// Monday 23 November 2026, 08:00 UTC.
let fixedNow = Date(timeIntervalSince1970: 1_795_420_800)

/// Runs `reminders` in-process with a fixed clock, UTC, 80 columns and no terminal.
func reminders(_ arguments: [String], now: Date = fixedNow, environment: [String: String] = [:]) -> RunResult {
    let out = Output()
    let err = Output()
    let context = RemindersContext(environment: environment, now: now, timeZone: TimeZone(identifier: "UTC") ?? .current,
                                   output: out.append, errorOutput: err.append, terminalSize: (80, 24))
    let status = RemindersCLI.run(arguments, context: context)
    return RunResult(status: status, out: out.text, err: err.text)
}

/// A temporary folder with a database path inside it (not created).
func withDatabasePath<R>(_ body: (String, TemporaryDirectory) throws -> R) throws -> R {
    let directory = try TemporaryDirectory(prefix: "reminders-test")
    defer { directory.remove() }
    return try body(directory.appending("db"), directory)
}

/// Every stored object of the database (collection → key → bytes), read by another handle. Opening the store
/// registers the views, which may commit a registration record; user data is what "nothing written" is about.
func contents(of path: String) throws -> [String: [String: [UInt8]]] {
    try Database(path: path).newConnection().read { txn in
        var result: [String: [String: [UInt8]]] = [:]
        for collection in try txn.collectionNames() {
            for key in try txn.keys(inCollection: collection) {
                result[collection, default: [:]][key] = try txn.rawObject(forKey: key, inCollection: collection)?.bytes
            }
        }
        return result
    }
}
