import Canopy
import CanopyTestSupport
import Foundation

/// A small model used across the store tests.
struct Note: Codable, Sendable, Equatable {
    var title: String
    var body: String = ""
    var priority: Int = 0
}

/// Metadata used across the store tests.
struct NoteInfo: Codable, Sendable, Equatable {
    var color: String
}

let notes = TypedCollection<Note, NoteInfo>("notes")
let jsonNotes = TypedCollection<Note, NoteInfo>("json-notes", codec: JSONCodec())

/// A fresh database in a fresh temporary directory; removed when `body` returns.
func withDatabase<R>(
    options: DatabaseOptions = .init(durability: .none), _ body: (Database, TemporaryDirectory) throws -> R
) throws -> R {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let database = try Database(path: directory.appending("db"), options: options)
    return try body(database, directory)
}

/// Async flavour of ``withDatabase(options:_:)``.
func withDatabase<R>(
    options: DatabaseOptions = .init(durability: .none), _ body: (Database, TemporaryDirectory) async throws -> R
) async throws -> R {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let database = try Database(path: directory.appending("db"), options: options)
    return try await body(database, directory)
}

/// Collects commit notifications delivered to a callback.
final class NotificationRecorder: @unchecked Sendable {
    // @unchecked: `items` is only touched while holding `condition`.
    private let condition = NSCondition()
    private var items: [CommitNotification] = []

    func record(_ notification: CommitNotification) {
        condition.lock()
        items.append(notification)
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until `count` notifications arrived (woken by each one, not polling; gives up after ten seconds) and
    /// returns them.
    func wait(for count: Int) -> [CommitNotification] {
        let deadline = Date(timeIntervalSinceNow: 10)
        condition.lock()
        defer { condition.unlock() }
        while items.count < count {
            if !condition.wait(until: deadline) { break }
        }
        return items
    }
}
