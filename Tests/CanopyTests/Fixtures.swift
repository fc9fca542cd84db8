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
    // @unchecked: `items` is only touched under `lock`.
    private let lock = NSLock()
    private var items: [CommitNotification] = []

    func record(_ notification: CommitNotification) {
        lock.lock()
        items.append(notification)
        lock.unlock()
    }

    /// Waits (up to two seconds) until `count` notifications arrived and returns them.
    func wait(for count: Int) -> [CommitNotification] {
        for _ in 0..<200 {
            lock.lock()
            let current = items
            lock.unlock()
            if current.count >= count { return current }
            usleep(10_000)
        }
        lock.lock()
        defer { lock.unlock() }
        return items
    }
}
