#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Canopy
import Dispatch
import Synchronization

/// Rings when a database may have new commits — this process's (on the committing thread, at once) or another
/// process's (through ``/CanopyCore/Database/watchCommits(_:)``: inotify on the commit signal file). A wake-up, not a change: the
/// one woken reads the snapshot or advances.
///
/// Three ways to wait, for three kinds of loops, none of which polls while the wake-up is ``isActive``:
/// - `await` ``wait(after:timeout:)`` (async code; ``ViewDatasource/changes(pollInterval:)`` uses it);
/// - `poll(2)` on ``fileDescriptor``, which is readable after a ring until ``acknowledge()`` (a terminal loop that
///   also waits for keys and signals; `TerminalRunner` uses it);
/// - ``generation``, which moves at every ring.
public final class CommitWakeup: Sendable {
    private let database: Database
    /// The generation and the async waiters (Canopy's one mechanism, shared with ``ViewObserver``).
    private let signal = CommitSignal()
    private let token = Mutex<ObserverToken?>(nil)
    private let watch = Mutex<CommitWatch?>(nil)
    /// The pipe rung at each wake-up: read end, write end (both non-blocking; -1 when no pipe could be made).
    private let pipeEnds: (read: Int32, write: Int32)

    /// Starts ringing for `database`'s commits, until released.
    public init(database: Database) {
        self.database = database
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends {
                _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            }
            pipeEnds = (ends[0], ends[1])
        } else {
            pipeEnds = (-1, -1)
        }
        // The closures hold the wake-up weakly: releasing it ends the subscriptions (deinit).
        token.withLock { $0 = database.addCommitWakeup { [weak self] in self?.ring() } }
        watch.withLock { $0 = database.watchCommits { [weak self] in self?.ring() } }
    }

    deinit {
        if let token = token.withLock({ $0 }) { database.removeObserver(token) }
        watch.withLock { $0?.cancel() }
        if pipeEnds.read >= 0 { close(pipeEnds.read) }
        if pipeEnds.write >= 0 { close(pipeEnds.write) }
    }

    /// Whether other processes' commits ring it too; when false (no inotify), loops must also look every so often.
    public var isActive: Bool { watch.withLock { $0?.isActive ?? false } }

    /// How many times it rang.
    public var generation: UInt64 { signal.generation }

    /// A descriptor that is readable after a ring until ``acknowledge()``; -1 when the pipe could not be made (then
    /// wait with ``wait(after:timeout:)`` or look every so often).
    public var fileDescriptor: Int32 { pipeEnds.read }

    /// Empties ``fileDescriptor`` (call it before looking at the database, so a ring during the look is not lost).
    public func acknowledge() {
        guard pipeEnds.read >= 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 64)
        while buffer.withUnsafeMutableBytes({ read(pipeEnds.read, $0.baseAddress, $0.count) }) > 0 {}
    }

    /// Blocks the calling thread until ``fileDescriptor`` is readable (a ring since the last ``acknowledge()``) or
    /// `timeout` passes (`nil`: no limit); returns whether it rang. Acknowledge, then look at the database, then wait:
    /// a ring during the look is not lost.
    @discardableResult
    public func waitForRing(timeout: Duration?) -> Bool {
        let milliseconds = timeout.map { Int32(clamping: $0.components.seconds * 1_000 + $0.components.attoseconds / 1_000_000_000_000_000) } ?? -1
        var descriptor = pollfd(fd: pipeEnds.read, events: Int16(POLLIN), revents: 0)
        while true {
            // Without a pipe, wait `timeout` (at most 200 ms) and let the caller look.
            let ready = poll(&descriptor, pipeEnds.read >= 0 ? 1 : 0, pipeEnds.read >= 0 ? milliseconds : (milliseconds < 0 ? 200 : milliseconds))
            if ready < 0, errno == EINTR { continue }
            return ready > 0
        }
    }

    /// Rings: moves the generation, wakes the waiters and makes ``fileDescriptor`` readable.
    public func ring() {
        signal.fire()
        if pipeEnds.write >= 0 {
            var byte: UInt8 = 1
            _ = write(pipeEnds.write, &byte, 1)   // a full pipe already says "rung"
        }
    }

    /// Returns when the generation is past `generation`, after `timeout`, or when the task is cancelled.
    public func wait(after generation: UInt64, timeout: Duration) async {
        await signal.wait(after: generation, timeout: timeout)
    }
}

/// A data source that changes by itself when commits arrive: it rings its ``wakeup`` and applies what arrived when
/// asked (on the container's thread), so a loop never polls for commits.
public protocol LiveDataSource: DataSource {
    /// Rings when there may be commits to apply.
    var wakeup: CommitWakeup { get }
    /// Applies the commits made since the data source's snapshot to the container (one batch, or a reload).
    /// - Returns: whether the container changed.
    /// - Throws: what reading the store throws; ``SourceError/Code/invalidBatch`` when the container rejected a batch
    ///   (it reloaded, so it shows the new state anyway).
    @discardableResult
    func applyPendingChanges() throws -> Bool
    /// Moves to the latest commit without telling the container, which shows something else (a segment not shown);
    /// whoever shows this source again takes its rows as they are then. Keeps the source from pinning an old
    /// snapshot while it is hidden.
    /// - Throws: what reading the store throws.
    func skipPendingChanges() throws
}
