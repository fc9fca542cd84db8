import Synchronization

/// The change feed as an asynchronous sequence (``Database/changes(since:pollInterval:batchSize:)``): the commits
/// after a snapshot, in order, then each new commit as it happens, until the iterating task is cancelled.
public struct ChangeFeedChanges: AsyncSequence, Sendable {
    /// A commit with its values.
    public typealias Element = FeedCommit

    let database: Database
    let since: UInt64
    let pollInterval: Duration
    let batchSize: Int

    /// Creates the iterator; each iterator follows the feed on its own from `since`.
    public func makeAsyncIterator() -> Iterator {
        Iterator(database: database, last: since, pollInterval: pollInterval, batchSize: batchSize)
    }

    /// Reads the feed in batches and waits for commits when it has caught up.
    public struct Iterator: AsyncIteratorProtocol {
        let database: Database
        var last: UInt64
        let pollInterval: Duration
        let batchSize: Int
        var buffer: [FeedCommit] = []
        var position = 0
        var waiter: CommitWaiter?

        init(database: Database, last: UInt64, pollInterval: Duration, batchSize: Int) {
            self.database = database
            self.last = last
            self.pollInterval = pollInterval
            self.batchSize = batchSize
        }

        /// The next commit; `nil` once the task is cancelled.
        /// - Throws: what ``Database/readChanges(since:limit:)`` throws.
        public mutating func next() async throws -> FeedCommit? {
            while true {
                if position < buffer.count {
                    let commit = buffer[position]
                    position += 1
                    last = commit.snapshot
                    return commit
                }
                if Task.isCancelled { return nil }
                // Watch before reading, so that a commit between the read and the wait still wakes the wait.
                if waiter == nil { waiter = CommitWaiter(database: database, pollInterval: pollInterval) }
                buffer = try database.readChanges(since: last, limit: batchSize)
                position = 0
                if buffer.isEmpty {
                    guard await waiter?.wait() == true else { return nil }
                }
            }
        }
    }
}

/// Wakes a waiting task when any process may have committed (the signal file), or after the poll interval.
final class CommitWaiter: Sendable {
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation
    private let watch: CommitWatch
    private let ticker: Task<Void, Never>

    init(database: Database, pollInterval: Duration) {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        self.stream = stream
        self.continuation = continuation
        watch = database.watchCommits { continuation.yield() }
        ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: pollInterval)
                continuation.yield()
            }
        }
    }

    /// Waits for the next wake-up; false when the waiting task was cancelled.
    func wait() async -> Bool {
        var iterator = stream.makeAsyncIterator()
        return await iterator.next() != nil && !Task.isCancelled
    }

    deinit {
        ticker.cancel()
        watch.cancel()
        continuation.finish()
    }
}
