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
/// An observer holds a snapshot only between two advances. While a snapshot is held, LMDB cannot reuse the pages
/// that later commits free, so the database file grows with every commit: advance whenever commits happen (the loops
/// and callbacks below do), and don't keep an observer pinned and idle while writers work.
///
/// Three ways to use it:
/// - call ``advance()`` yourself (a UI run loop, a test, a benchmark);
/// - iterate ``changes(includeEmpty:pollInterval:)``, an `AsyncSequence`. Each iteration is an observation of its own
///   (its own pinned snapshot, starting from the observer's state when the iteration was made): two loops over one
///   observer each see every change. An iteration advances when asked for its next element, and inside the loop
///   (in the iterating task) ``read(_:)``, ``mappings`` and ``snapshot`` describe the state the element leads to.
///   Once a loop has advanced, the observer follows it: it lets go of its own snapshot, and outside the loop too it
///   describes the state of the loop's latest advance (of the loop that advanced last, when there are several);
/// - ``observe(on:includeEmpty:pollInterval:_:)`` with a callback, delivered on an actor you name (the main actor for a
///   UI), or ``observe(includeEmpty:pollInterval:_:)`` from a background task.
///
/// Commits of this process wake the observer at once; commits of other processes (which share the database file) wake
/// it through inotify on the database's commit signal file (``/CanopyCore/Database/watchCommits(_:)``), or, where that is
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
    private let gate = Mutex<Void>(())
    private let currentMappings: Mutex<ViewMappings>
    private let signal: CommitSignal
    private let commitObserver: ObserverToken
    /// The iterations of ``changes(includeEmpty:pollInterval:)`` in progress, by the task iterating: reads from that
    /// task go to its iteration's state.
    private let iterations = Mutex<[Int: ViewObserver]>([:])
    /// Wakes the observer when another process commits (CommitWakeup.swift); polling remains the fallback.
    private let crossProcessWakeup: CommitWatch
    /// The iteration of ``changes(includeEmpty:pollInterval:)`` that advanced last, which this observer follows: its
    /// own connection is then unpinned (it holds no old snapshot), and its state is the iteration's. Set and cleared
    /// under ``gate``.
    private let followed = Mutex<ViewObserver?>(nil)

    /// Opens a connection, pins it to the latest snapshot and updates `mappings` there.
    ///
    /// - Parameters:
    ///   - database: the database.
    ///   - mappings: which groups of which view to show, and how.
    ///   - connectionOptions: the options of the observer's connection (its caches serve ``read(_:)``).
    /// - Throws: ``/CanopyCore/CanopyError/Code/extensionNotRegistered`` when the mappings' view is not registered; what reading throws.
    public init(database: Database, mappings: ViewMappings, connectionOptions: ConnectionOptions = .init()) throws {
        self.database = database
        self.connection = database.newConnection(options: connectionOptions)
        var mappings = mappings
        try connection.pin()
        let connection = self.connection
        try Self.catchingUp(database, view: mappings.view, retry: { _ = try connection.advance() }) {
            try connection.read { txn in try mappings.update(with: txn.view(mappings.view)) }
        }
        self.currentMappings = Mutex(mappings)
        let signal = CommitSignal()
        self.signal = signal
        self.commitObserver = database.addCommitWakeup { signal.fire() }
        self.crossProcessWakeup = database.watchCommits { signal.fire() }
    }

    /// An observer that starts from `mappings` (at their snapshot, which may be older than the latest): its first
    /// advance reports every change since then. One per iteration of ``changes(includeEmpty:pollInterval:)``.
    init(database: Database, startingFrom mappings: ViewMappings, connectionOptions: ConnectionOptions) throws {
        self.database = database
        self.connection = database.newConnection(options: connectionOptions)
        try connection.pin()
        self.currentMappings = Mutex(mappings)
        let signal = CommitSignal()
        self.signal = signal
        self.commitObserver = database.addCommitWakeup { signal.fire() }
        self.crossProcessWakeup = database.watchCommits { signal.fire() }
    }

    /// The iteration the current task is running, if any (see ``changes(includeEmpty:pollInterval:)``).
    private var currentIteration: ViewObserver? {
        guard let key = Self.currentTaskKey else { return nil }
        return iterations.withLock { $0[key] }
    }

    private static var currentTaskKey: Int? { withUnsafeCurrentTask { $0?.hashValue } }

    fileprivate func setIteration(_ iteration: ViewObserver?, forTask key: Int) {
        iterations.withLock { $0[key] = iteration }
    }

    fileprivate func removeIteration(_ iteration: ViewObserver) {
        iterations.withLock { $0 = $0.filter { $0.value !== iteration } }
    }

    deinit {
        database.removeObserver(commitObserver)
        connection.unpin()
        signal.fire()
    }

    /// The mappings at ``snapshot`` (inside a loop over ``changes(includeEmpty:pollInterval:)``: that iteration's;
    /// elsewhere, once a loop has advanced: the loop's).
    public var mappings: ViewMappings {
        if let iteration = currentIteration { return iteration.mappings }
        return observedMappings
    }

    /// The snapshot the observer is pinned to (inside a loop over ``changes(includeEmpty:pollInterval:)``: that
    /// iteration's; elsewhere, once a loop has advanced: the loop's).
    public var snapshot: UInt64 {
        mappings.snapshot ?? 0
    }

    /// The observer's state outside any iteration's task: its own, or that of the iteration it follows.
    private var observedMappings: ViewMappings {
        if let followed = followed.withLock({ $0 }) { return followed.mappings }
        return currentMappings.withLock { $0 }
    }

    /// Called by an iteration that has just advanced: the observer follows it and lets go of its own snapshot, which
    /// would otherwise keep every page freed since from being reused for as long as the loop runs.
    fileprivate func follow(_ iteration: ViewObserver) {
        // Under the gate: a read of this observer in progress finishes on the snapshot it started with.
        try? gated {
            followed.withLock { $0 = iteration }
            connection.unpin()
        }
    }

    /// The observer's own state, taking it back from the iteration it followed: its connection pinned again (to the
    /// latest snapshot; the caller advances from the returned mappings). For callers holding ``gate``.
    private func ownState() throws -> ViewMappings {
        guard let iteration = followed.withLock({ $0 }) else { return currentMappings.withLock { $0 } }
        let mappings = iteration.mappings
        try connection.pin()
        currentMappings.withLock { $0 = mappings }
        followed.withLock { $0 = nil }
        return mappings
    }

    /// Runs `body` in a read transaction at ``snapshot`` — the state the last changeset leads to (inside a loop over
    /// ``changes(includeEmpty:pollInterval:)``, in the iterating task: the state the current element leads to). The
    /// observer doesn't advance while `body` runs.
    ///
    /// - Throws: ``/CanopyCore/CanopyError/Code/nestedTransaction`` when called inside another `read` of this observer on the
    ///   same thread; what `body` throws.
    public func read<R>(_ body: (ReadTransaction) throws -> R) throws -> R {
        if let iteration = currentIteration { return try iteration.read(body) }
        return try gated {
            if let followed = followed.withLock({ $0 }) { return try followed.read(body) }
            return try connection.read(body)
        }
    }

    /// The thread inside ``gate`` (0 when none), so that a nested call is a typed error rather than a hang.
    private let gateOwner = Atomic<UInt>(0)

    private func gated<R>(_ body: () throws -> R) throws -> R {
        let me = ThreadIdentity.current()
        if gateOwner.load(ordering: .relaxed) == me {
            throw CanopyError(
                .nestedTransaction,
                "the observer was read or advanced inside its own read { } on the same thread: use the transaction you have",
                path: database.path, extensionName: currentMappings.withLock { $0.view })
        }
        return try gate.withLock { _ in
            gateOwner.store(me, ordering: .relaxed)
            defer { gateOwner.store(0, ordering: .relaxed) }
            return try body()
        }
    }

    /// Whether commits were made (by any process) after ``snapshot``.
    public func hasNewCommits() throws -> Bool {
        try database.currentSnapshot() > snapshot
    }

    /// Moves to the latest snapshot and returns the changes since the previous one (empty when nothing was committed,
    /// or when the commits didn't touch the view's rows or sections).
    ///
    /// When the commit log no longer holds every commit passed over (the observer stayed behind for more than
    /// ``/CanopyCore/DatabaseOptions/commitLogLimit`` commits) or the view was rebuilt in the span, the changeset is a reload
    /// (``ViewChangeset/isReload``).
    ///
    /// A view registered in this process that another process left stale (it wrote rows without registering the view)
    /// is brought up to date first (``/CanopyCore/Database/catchUpExtensions()``), and the changeset reports those rows.
    ///
    /// - Throws: what reading the view throws; ``/CanopyCore/CanopyError/Code/extensionNotRegistered`` when the view was
    ///   unregistered; ``/CanopyCore/CanopyError/Code/staleView`` when another process wrote without the view registered and this
    ///   process does not register it either (a tool): the observer stays at its snapshot, and a later advance, once
    ///   a process that registers the view has brought it up to date, reports every change since.
    @discardableResult
    public func advance() throws -> ViewChangeset {
        try gated {
            let current = try ownState()
            let from = current.snapshot ?? 0
            let changeset = try Self.catchingUp(database, view: current.view, retry: {}) { () throws -> ViewChangeset in
                let notifications: [CommitNotification]
                do {
                    notifications = try connection.advance(since: from)
                    connection.recordObserverLag(UInt64(notifications.count))
                } catch let error as CanopyError where error.code == .snapshotMismatch {
                    var reloaded = current
                    try connection.read { txn in try reloaded.update(with: txn.view(reloaded.view)) }
                    return .reload(from: from, mappings: reloaded)
                }
                return try connection.read { txn in
                    try ViewChangeset.compute(notifications: notifications, from: current, reader: txn.view(current.view))
                }
            }
            currentMappings.withLock { $0 = changeset.mappings }
            return changeset
        }
    }

    /// Runs `body`; when it finds the view stale (another process wrote rows without registering it) and the view is
    /// registered in this process, brings it up to date (``Database/catchUpExtensions()``, a write of its own), runs
    /// `retry` and then `body` again. The catch-up's commit carries the view's changes, so a changeset computed across
    /// it reports the other process's rows. A view not registered here stays stale: `body`'s ``CanopyError/Code/staleView``
    /// is thrown.
    private static func catchingUp<R>(_ database: Database, view: String, retry: () throws -> Void, _ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let error as CanopyError where error.code == .staleView && database.registeredExtension(named: view) is View {
            try database.catchUpExtensions()
            try retry()
            return try body()
        }
    }

    /// Changes the mappings (groups, options) and returns a reload changeset at the current snapshot: the UI shows the
    /// new mappings from scratch.
    @discardableResult
    public func setMappings(_ newMappings: ViewMappings) throws -> ViewChangeset {
        try gated {
            let from = try ownState().snapshot ?? 0
            var updated = newMappings
            try connection.read { txn in try updated.update(with: txn.view(updated.view)) }
            currentMappings.withLock { $0 = updated }
            return .reload(from: from, mappings: updated)
        }
    }

    /// The changesets as commits happen, as an `AsyncSequence`: each element is one advance, covering every commit made
    /// since the previous one.
    ///
    /// Each iteration (each `for try await` loop) is an independent observation with its own pinned snapshot,
    /// starting from this observer's state when `changes()` was called: two loops over sequences made at the same
    /// state each see every change. An iteration
    /// advances whenever commits happen (also those its elements skip) and yields when the next element is asked for;
    /// while the loop body runs, ``read(_:)``, ``mappings`` and ``snapshot`` — called from the iterating task —
    /// describe the state the element leads to. It holds its snapshot only between two advances.
    ///
    /// Once an iteration has advanced, this observer follows it: it lets go of its own snapshot (so that no old
    /// snapshot stays pinned for as long as the loop runs, which would keep LMDB from reusing freed pages and grow the
    /// file with every commit), and outside the loop's task too ``read(_:)``, ``mappings`` and ``snapshot`` describe
    /// the state of that iteration's latest advance — after the loop ends as well, until ``advance()`` or
    /// ``setMappings(_:)`` moves the observer on from there. The loop ends when its task is cancelled.
    ///
    /// - Parameters:
    ///   - includeEmpty: whether to also yield empty changesets (commits that didn't touch what the mappings show).
    ///   - pollInterval: how often to look for commits of other processes where the inotify wake-up is unavailable
    ///     (where it is active, their commits wake the observer within a millisecond and the poll runs every 2 s).
    public func changes(includeEmpty: Bool = false, pollInterval: Duration = .milliseconds(200)) -> Changes {
        Changes(observer: self, start: observedMappings, includeEmpty: includeEmpty, pollInterval: pollInterval)
    }

    /// Calls `callback` with each changeset (or the error that ended the observation), isolated to `actor` — the main
    /// actor for a UI (`observe(on: MainActor.shared) { _, result in ... }`) — until the returned observation is
    /// cancelled. Inside `callback`, ``read(_:)`` reads the state the changeset leads to. Like an iteration of
    /// ``changes(includeEmpty:pollInterval:)``, the observation is independent of other observations of this observer.
    public func observe<A: Actor>(
        on actor: A, includeEmpty: Bool = false, pollInterval: Duration = .milliseconds(200),
        _ callback: @escaping @Sendable (isolated A, Result<ViewChangeset, any Error>) -> Void
    ) -> Observation {
        let changes = changes(includeEmpty: includeEmpty, pollInterval: pollInterval)
        return Observation(task: Task {
            do {
                for try await changeset in changes { await callback(actor, .success(changeset)) }
            } catch {
                await callback(actor, .failure(error))
            }
        })
    }

    /// Calls `callback` with each changeset (or the error that ended the observation), from a background task, until
    /// the returned observation is cancelled. Inside `callback`, ``read(_:)`` reads the state the changeset leads to.
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
    /// With the inotify wake-up active, other processes' commits wake the observer too, so the poll is only a safety
    /// net (at most every ``wakeupSafetyPoll``); without it, `timeout` is how often other processes' commits are found.
    func waitForCommit(after generation: UInt64, timeout: Duration) async {
        let interval = crossProcessWakeup.isActive ? max(timeout, Self.wakeupSafetyPoll) : timeout
        await signal.wait(after: generation, timeout: interval)
    }

    /// How often an observer woken by inotify still checks for commits it might not have been told of.
    static let wakeupSafetyPoll: Duration = .seconds(2)

    var commitGeneration: UInt64 { signal.generation }

    /// The changesets of a ``ViewObserver``, one per advance; see ``ViewObserver/changes(includeEmpty:pollInterval:)``.
    public struct Changes: AsyncSequence, Sendable {
        /// One changeset per advance.
        public typealias Element = ViewChangeset
        let observer: ViewObserver
        /// The observer's state when ``ViewObserver/changes(includeEmpty:pollInterval:)`` was called.
        let start: ViewMappings
        let includeEmpty: Bool
        let pollInterval: Duration

        /// Makes an iterator: a new, independent observation starting from the observer's state when the sequence
        /// was made.
        public func makeAsyncIterator() -> Iterator {
            Iterator(iteration: Iteration(parent: observer, start: start),
                     includeEmpty: includeEmpty, pollInterval: pollInterval)
        }

        /// Advances its own observation when there are new commits; ends (returns `nil`) when its task is cancelled.
        public struct Iterator: AsyncIteratorProtocol {
            let iteration: Iteration
            let includeEmpty: Bool
            let pollInterval: Duration

            /// The next non-empty changeset (or any, with `includeEmpty`), or `nil` when the task is cancelled.
            public mutating func next() async throws -> ViewChangeset? {
                let observer = try iteration.observer()
                while !Task.isCancelled {
                    let generation = observer.commitGeneration
                    if try observer.hasNewCommits() {
                        let changeset = try observer.advance()
                        iteration.parentFollows()
                        if includeEmpty || !changeset.isEmpty {
                            iteration.attach(to: ViewObserver.currentTaskKey)
                            return changeset
                        }
                        continue
                    }
                    await observer.waitForCommit(after: generation, timeout: pollInterval)
                }
                return nil
            }
        }

        /// One iteration's own observer, made at its first `next()`, and its registration with the parent so that
        /// reads from the iterating task see the iteration's state.
        public final class Iteration: @unchecked Sendable {
            // @unchecked: `parent` and `start` are immutable, and `child` is set once under its mutex (a ViewObserver is
            // itself Sendable by the same reasoning).
            private let parent: ViewObserver
            private let start: ViewMappings
            private let child = Mutex<ViewObserver?>(nil)

            init(parent: ViewObserver, start: ViewMappings) {
                self.parent = parent
                self.start = start
            }

            deinit {
                if let child = child.withLock({ $0 }) { parent.removeIteration(child) }
            }

            func observer() throws -> ViewObserver {
                try child.withLock { child in
                    if let child { return child }
                    let made = try ViewObserver(database: parent.database, startingFrom: start,
                                                connectionOptions: parent.connection.options)
                    child = made
                    return made
                }
            }

            /// The parent follows this iteration, which has just advanced (see ``ViewObserver/follow(_:)``).
            func parentFollows() {
                guard let child = child.withLock({ $0 }) else { return }
                parent.follow(child)
            }

            func attach(to task: Int?) {
                guard let task, let child = child.withLock({ $0 }) else { return }
                parent.setIteration(child, forTask: task)
            }
        }
    }

    /// A running ``ViewObserver/observe(includeEmpty:pollInterval:_:)`` or
    /// ``ViewObserver/observe(on:includeEmpty:pollInterval:_:)``; cancel it to stop the callbacks.
    public struct Observation: Sendable {
        let task: Task<Void, Never>

        /// Stops the callbacks (one in progress finishes).
        public func cancel() { task.cancel() }
    }
}
