import CanopyCore
import CanopyTestSupport
import Foundation

/// A small model used across the store tests.
public struct Note: Codable, Sendable, Equatable {
    /// The title.
    public var title: String
    /// A body, empty unless a test sets one.
    public var body: String = ""
    /// A priority, 0 unless a test sets one.
    public var priority: Int = 0

    /// Creates a note.
    public init(title: String, body: String = "", priority: Int = 0) {
        self.title = title
        self.body = body
        self.priority = priority
    }
}

/// Metadata used across the store tests.
public struct NoteInfo: Codable, Sendable, Equatable {
    /// A colour name.
    public var color: String

    /// Creates metadata.
    public init(color: String) {
        self.color = color
    }
}

/// The notes of the store tests, in the binary codec.
public let notes = TypedCollection<Note, NoteInfo>("notes")
/// The same model in a collection stored as JSON.
public let jsonNotes = TypedCollection<Note, NoteInfo>("json-notes", codec: JSONCodec())

/// A fresh database in a fresh temporary directory; removed when `body` returns.
public func withDatabase<R>(
    options: DatabaseOptions = .init(durability: .none), _ body: (Database, TemporaryDirectory) throws -> R
) throws -> R {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let database = try Database(path: directory.appending("db"), options: options)
    return try body(database, directory)
}

/// Async flavour of ``withDatabase(options:_:)``.
public func withDatabase<R>(
    options: DatabaseOptions = .init(durability: .none), _ body: (Database, TemporaryDirectory) async throws -> R
) async throws -> R {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let database = try Database(path: directory.appending("db"), options: options)
    return try await body(database, directory)
}

/// Collects commit notifications delivered to a callback.
public final class NotificationRecorder: @unchecked Sendable {
    // @unchecked: `items` is only touched while holding `condition`.
    private let condition = NSCondition()
    private var items: [CommitNotification] = []

    /// Creates an empty recorder.
    public init() {}

    /// Records `notification` and wakes the waiters.
    public func record(_ notification: CommitNotification) {
        condition.lock()
        items.append(notification)
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until `count` notifications arrived (woken by each one, not polling; gives up after ten seconds) and
    /// returns them.
    public func wait(for count: Int) -> [CommitNotification] {
        let deadline = Date(timeIntervalSinceNow: 10)
        condition.lock()
        defer { condition.unlock() }
        while items.count < count {
            if !condition.wait(until: deadline) { break }
        }
        return items
    }
}
