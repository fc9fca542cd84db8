import Dispatch
import Foundation
import Synchronization

/// Follows one view through one ``ViewMappings`` as commits happen, and turns every commit (or span of commits) into a
/// ``ViewChangeset`` a list UI can apply.
///
/// The observer has its own connection, pinned to a snapshot (a long-lived read transaction): its ``mappings`` and
/// everything read through ``read(_:)`` describe exactly that snapshot, whatever writers do meanwhile. ``advance()``
/// moves it to the latest snapshot and returns the changes from the old mappings to the new ones; the commits it passed
/// over are coalesced into one changeset.
///
/// Three ways to use it:
/// - call ``advance()`` yourself (a UI run loop, a test, a benchmark);
/// - iterate ``changes(includeEmpty:pollInterval:)``, an `AsyncSequence` that advances each time it is asked for the
///   next element and there are new commits — so the consumer reads the new state before the observer moves on;
/// - ``observe(includeEmpty:pollInterval:_:)`` with a callback, called after each advance.
///
/// Commits of this process wake the observer at once; commits of other processes (which share the database file) wake
/// it through inotify on the database's commit signal file (``Database/watchCommits(_:)``), or, where that is
/// unavailable, are noticed by polling every `pollInterval` — they come with the same changesets, read from the
/// persisted commit log.
///
/// ```swift
/// let observer = try ViewObserver(database: database, mappings: ViewMappings(groups: ["inbox"], view: "by-list"))
/// let watching = Task {
///     for try await changes in observer.changes() {
///         for change in changes.rowChanges { print(change) }
///         try observer.read { txn in /* read the rows the changes lead to */ }
///     }
/// }
/// ```
public final class ViewObserver: @unchecked Sendable {
    // @unchecked: `gate` serializes advancing, changing mappings and reading (so a read never sees a half-advanced
    // observer); the mappings themselves sit in a mutex so that ``mappings`` can be read from inside ``read(_:)``.
    /// The database observed.
    public let database: Database
    /// The observer's own connection, pinned to ``snapshot``. Don't advance or unpin it yourself.
    public let connection: Connection
    private let gate = NSLock()
    private let currentMappings: Mutex<ViewMappings>
    private let signal: CommitSignal
    private let commitObserver: ObserverToken
    /// Wakes the observer when another process commits (CommitWakeup.swift); polling remains the fallback.
    private let crossProcessWakeup: CommitWakeupSubscription

    /// Opens a connection, pins it to the latest snapshot and updates `mappings` there.
    ///
    /// - Parameters:
    ///   - database: the database.
    ///   - mappings: which groups of which view to show, and how.
    ///   - connectionOptions: the options of the observer's connection (its caches serve ``read(_:)``).
    /// - Throws: ``CanopyError/Code/extensionFailed`` when the mappings' view is not registered; what reading throws.
    public init(database: Database, mappings: ViewMappings, connectionOptions: ConnectionOptions = .init()) throws {
        self.database = database
        self.connection = database.newConnection(options: connectionOptions)
        var mappings = mappings
        try connection.pin()
        try connection.read { txn in try mappings.update(with: txn.view(mappings.view)) }
        self.currentMappings = Mutex(mappings)
        let signal = CommitSignal()
        self.signal = signal
        self.commitObserver = database.addCommitObserver { _ in signal.fire() }
        self.crossProcessWakeup = CommitWatcher.subscribe(directory: database.path) { signal.fire() }
    }

    deinit {
        database.removeObserver(commitObserver)
        connection.unpin()
        signal.fire()
    }

    /// The mappings at ``snapshot``.
    public var mappings: ViewMappings { currentMappings.withLock { $0 } }

    /// The snapshot the observer is pinned to.
    public var snapshot: UInt64 { currentMappings.withLock { $0.snapshot ?? 0 } }

    /// Runs `body` in a read transaction at ``snapshot`` — the state the last changeset leads to. The observer doesn't
    /// advance while `body` runs.
    public func read<R>(_ body: (ReadTransaction) throws -> R) throws -> R {
        try gate.withLock { try connection.read(body) }
    }

    /// Whether commits were made (by any process) after ``snapshot``.
    public func hasNewCommits() throws -> Bool {
        try database.currentSnapshot() > snapshot
    }

    /// Moves to the latest snapshot and returns the changes since the previous one (empty when nothing was committed,
    /// or when the commits didn't touch the view's rows or sections).
    ///
    /// When the commit log no longer holds every commit passed over (the observer stayed behind for more than
    /// ``DatabaseOptions/commitLogLimit`` commits) or the view was rebuilt in the span, the changeset is a reload
    /// (``ViewChangeset/isReload``).
    ///
    /// - Throws: what reading the view throws; ``CanopyError/Code/extensionFailed`` when the view was unregistered.
    @discardableResult
    public func advance() throws -> ViewChangeset {
        try gate.withLock {
            let current = mappings
            let from = current.snapshot ?? 0
            let notifications: [CommitNotification]
            do {
                notifications = try connection.advance()
            } catch let error as CanopyError where error.code == .snapshotMismatch {
                var reloaded = current
                try connection.read { txn in try reloaded.update(with: txn.view(reloaded.view)) }
                currentMappings.withLock { $0 = reloaded }
                return .reload(from: from, mappings: reloaded)
            }
            let changeset = try connection.read { txn in
                try ViewChangeset.compute(notifications: notifications, from: current, reader: txn.view(current.view))
            }
            currentMappings.withLock { $0 = changeset.mappings }
            return changeset
        }
    }

    /// Changes the mappings (groups, options) and returns a reload changeset at the current snapshot: the UI shows the
    /// new mappings from scratch.
    @discardableResult
    public func setMappings(_ newMappings: ViewMappings) throws -> ViewChangeset {
        try gate.withLock {
            var updated = newMappings
            try connection.read { txn in try updated.update(with: txn.view(updated.view)) }
            let from = snapshot
            currentMappings.withLock { $0 = updated }
            return .reload(from: from, mappings: updated)
        }
    }

    /// The changesets as commits happen, as an `AsyncSequence`: each element is one advance, covering every commit made
    /// since the previous one. The observer advances only when the next element is asked for, so a consumer that reads
    /// through ``read(_:)`` while handling an element sees the state that element leads to.
    ///
    /// - Parameters:
    ///   - includeEmpty: whether to also yield empty changesets (commits that didn't touch what the mappings show).
    ///   - pollInterval: how often to look for commits of other processes.
    public func changes(includeEmpty: Bool = false, pollInterval: Duration = .milliseconds(200)) -> Changes {
        Changes(observer: self, includeEmpty: includeEmpty, pollInterval: pollInterval)
    }

    /// Calls `callback` with each changeset (or the error that ended the observation), from a background task, until
    /// the returned observation is cancelled. The observer doesn't advance while `callback` runs.
    public func observe(
        includeEmpty: Bool = false, pollInterval: Duration = .milliseconds(200),
        _ callback: @escaping @Sendable (Result<ViewChangeset, any Error>) -> Void
    ) -> Observation {
        let changes = changes(includeEmpty: includeEmpty, pollInterval: pollInterval)
        return Observation(task: Task {
            do {
                for try await changeset in changes { callback(.success(changeset)) }
            } catch {
                callback(.failure(error))
            }
        })
    }

    /// Waits until a commit of this process happens or `timeout` passes, unless one happened after `generation`.
    func waitForCommit(after generation: UInt64, timeout: Duration) async {
        await signal.wait(after: generation, timeout: timeout)
    }

    var commitGeneration: UInt64 { signal.generation }

    /// The changesets of a ``ViewObserver``, one per advance; see ``ViewObserver/changes(includeEmpty:pollInterval:)``.
    public struct Changes: AsyncSequence, Sendable {
        /// One changeset per advance.
        public typealias Element = ViewChangeset
        let observer: ViewObserver
        let includeEmpty: Bool
        let pollInterval: Duration

        /// Makes an iterator.
        public func makeAsyncIterator() -> Iterator {
            Iterator(observer: observer, includeEmpty: includeEmpty, pollInterval: pollInterval)
        }

        /// Advances the observer when there are new commits; ends (returns `nil`) when its task is cancelled.
        public struct Iterator: AsyncIteratorProtocol {
            let observer: ViewObserver
            let includeEmpty: Bool
            let pollInterval: Duration

            /// The next non-empty changeset (or any, with `includeEmpty`), or `nil` when the task is cancelled.
            public mutating func next() async throws -> ViewChangeset? {
                while !Task.isCancelled {
                    let generation = observer.commitGeneration
                    if try observer.hasNewCommits() {
                        let changeset = try observer.advance()
                        if includeEmpty || !changeset.isEmpty { return changeset }
                        continue
                    }
                    await observer.waitForCommit(after: generation, timeout: pollInterval)
                }
                return nil
            }
        }
    }

    /// A running ``ViewObserver/observe(includeEmpty:pollInterval:_:)``; cancel it to stop the callbacks.
    public struct Observation: Sendable {
        let task: Task<Void, Never>

        /// Stops the callbacks (one in progress finishes).
        public func cancel() { task.cancel() }
    }
}

/// Wakes waiters when this process commits: a generation counter and the continuations waiting for it to move.
final class CommitSignal: Sendable {
    private struct State {
        var generation: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0
    }
    private let state = Mutex(State())

    var generation: UInt64 { state.withLock { $0.generation } }

    /// A commit happened: wake every waiter.
    func fire() {
        let waiters = state.withLock { state in
            state.generation &+= 1
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns when the generation is past `generation`, after `timeout`, or when the task is cancelled.
    func wait(after generation: UInt64, timeout: Duration) async {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state in
                    if state.generation != generation || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if ready {
                    continuation.resume()
                    return
                }
                let nanoseconds = max(0, timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000)
                DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { [self] in
                    resume(id)
                }
            }
        } onCancel: {
            resume(id)
        }
    }

    private func resume(_ id: UInt64) {
        let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
        waiter?.resume()
    }
}
