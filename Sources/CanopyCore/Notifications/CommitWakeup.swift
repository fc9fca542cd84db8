import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// Cross-process commit wake-up.
//
// A process that commits reads the one byte of `canopy-commit.signal` in the database directory right after the
// commit (a single `pread`; the first commit creates the file and writes the byte; touches are at least a
// millisecond apart, see CommitBeacon).
// A process that observes the database watches that file with inotify
// (Linux; the whole directory until the file exists): its modification wakes the watcher thread, which tells its
// subscribers (view observers, `canopy watch`) to look for new snapshots. Nothing busy-waits: an idle watcher sleeps
// in poll(2). Where inotify is unavailable (other systems, a directory that cannot be watched), subscribers keep
// their polling fallback.
//
// The signal can be turned off with the environment variable CANOPY_COMMIT_SIGNAL=off (read when a database is
// opened), to measure its cost; observers of that database then depend on polling. CANOPY_COMMIT_WATCH=off
// (read when a directory's watcher starts) turns the watching off: observers fall back to polling.

/// Touches the signal file after each commit of this process.
///
/// Each touch wakes every watching process, which costs the committing thread several microseconds (the kernel
/// wakes the watchers) — as much as a small commit itself. So touches are spaced by at least ``minimumSpacing``: a
/// commit right after a touch schedules one trailing touch at the end of the spacing instead. An isolated commit
/// wakes observers at once; a burst of commits wakes them at most once a millisecond, and the last commit of a burst
/// within a millisecond — or at the process's exit, if it exits first (see ``installExitHandler``).
final class CommitBeacon: Sendable {
    /// The signal file's name in the database directory.
    static let fileName = "canopy-commit.signal"
    /// The least time between two touches.
    static let minimumSpacing: UInt64 = 1_000_000  // nanoseconds

    private struct State {
        var descriptor: Int32?
        var lastTouch: UInt64 = 0
        var trailingTouchScheduled = false
    }
    private let state = Mutex(State())
    private let enabled: Bool

    init() {
        enabled = ProcessInfo.processInfo.environment["CANOPY_COMMIT_SIGNAL"] != "off"
    }

    deinit {
        if let fd = state.withLock({ $0.descriptor }), fd >= 0 { close(fd) }
    }

    /// Called after each commit: touches the signal file now, or schedules a touch at the end of the spacing. The
    /// first call opens the file (creating it if needed, with one byte). Failures are ignored: observers then find
    /// the commit by polling.
    func signal(directory: String, mode: UInt32) {
        guard enabled else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        let delay: UInt64? = state.withLock { state in
            if state.descriptor == nil {
                let opened = Self.openSignalFile(directory + "/" + Self.fileName, mode: mode)
                state.descriptor = opened
                state.lastTouch = now
                return nil
            }
            if state.trailingTouchScheduled { return nil }
            let since = now &- state.lastTouch
            if since >= Self.minimumSpacing {
                Self.touch(state.descriptor)
                state.lastTouch = now
                return nil
            }
            state.trailingTouchScheduled = true
            Self.pendingAtExit.withLock { $0[ObjectIdentifier(self)] = self }
            return Self.minimumSpacing - since
        }
        guard let delay else { return }
        Self.installExitHandler
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(delay))) { [self] in
            touchIfScheduled()
        }
    }

    /// Makes the scheduled trailing touch now, if it has not been made yet.
    private func touchIfScheduled() {
        state.withLock { state in
            guard state.trailingTouchScheduled else { return }
            Self.touch(state.descriptor)
            state.lastTouch = DispatchTime.now().uptimeNanoseconds
            state.trailingTouchScheduled = false
            _ = Self.pendingAtExit.withLock { $0.removeValue(forKey: ObjectIdentifier(self)) }
        }
    }

    /// The beacons with a trailing touch scheduled: a process that exits right after a commit (a command-line tool's
    /// last write) makes them at exit, or the observers of its last commit would not be woken for it.
    /// (Lock order: a beacon's state, then this.)
    private static let pendingAtExit = Mutex<[ObjectIdentifier: CommitBeacon]>([:])

    /// Installs, once per process, the `atexit` handler that makes the scheduled touches. A process that ends
    /// without `exit` (killed, `_exit`) leaves them unmade: its observers then find its last commits by their
    /// safety poll.
    private static let installExitHandler: Void = {
        atexit {
            let beacons = CommitBeacon.pendingAtExit.withLock { Array($0.values) }
            for beacon in beacons { beacon.touchIfScheduled() }
        }
    }()

    /// Opens the signal file without following a symbolic link (`O_NOFOLLOW`: a link fails with `ELOOP`, and the
    /// database open refuses links anyway), creating it with `O_EXCL` when missing — never through a dangling link —
    /// with its one byte, so that reading it is an access that inotify reports. -1 when it cannot be opened.
    static func openSignalFile(_ file: String, mode: UInt32) -> Int32 {
        for _ in 0..<2 {
            var descriptor = open(file, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
            if descriptor < 0 && errno == ENOENT {
                descriptor = open(file, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode_t(mode))
                if descriptor < 0 && errno == EEXIST { continue }  // another process created it meanwhile: open that one
            }
            guard descriptor >= 0 else { return -1 }
            // The write is this commit's wake-up (watchers see the modification), and gives a new file its byte.
            var byte: UInt8 = 1
            _ = pwrite(descriptor, &byte, 1, 0)
            return descriptor
        }
        return -1
    }

    /// Reads the byte (IN_ACCESS): wakes watchers without dirtying the inode, as a write would (its mtime).
    private static func touch(_ descriptor: Int32?) {
        guard let descriptor, descriptor >= 0 else { return }
        var byte: UInt8 = 0
        _ = pread(descriptor, &byte, 1, 0)
    }
}

/// Watches a database directory for commits of any process and wakes subscribers; one watcher thread per directory
/// per process, started by the first subscription and stopped after the last.
final class CommitWatcher: Sendable {
    private struct State {
        var subscribers: [UInt64: @Sendable () -> Void] = [:]
        var nextID: UInt64 = 0
    }
    private let state = Mutex(State())
    private let directory: String
    /// The inotify descriptor and the read/write ends of the pipe that stops the thread; `nil` when unavailable.
    private let descriptors: (inotify: Int32, stopRead: Int32, stopWrite: Int32)?

    private static let registry = Mutex<[String: CommitWatcher]>([:])

    /// Whether commits of other processes wake subscribers at once (inotify is available and watches the directory);
    /// otherwise subscribers depend on polling.
    var isActive: Bool { descriptors != nil }

    private init(directory: String) {
        self.directory = directory
        #if os(Linux)
        guard ProcessInfo.processInfo.environment["CANOPY_COMMIT_WATCH"] != "off" else {
            descriptors = nil
            return
        }
        let inotify = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        var pipeEnds: [Int32] = [-1, -1]
        guard inotify >= 0 else {
            descriptors = nil
            return
        }
        // The signal file alone when it exists (one wake-up per commit); otherwise the whole directory (LMDB's writes
        // to data.mdb, the creation of the signal file) until it does.
        let watchesFile = inotify_add_watch(inotify, directory + "/" + CommitBeacon.fileName, Self.fileMask) >= 0
        guard watchesFile || inotify_add_watch(inotify, directory, Self.directoryMask) >= 0, pipe(&pipeEnds) == 0 else {
            close(inotify)
            descriptors = nil
            return
        }
        descriptors = (inotify, pipeEnds[0], pipeEnds[1])
        watchingFile.store(watchesFile, ordering: .relaxed)
        #else
        descriptors = nil
        #endif
    }

    #if os(Linux)
    private static let fileMask = UInt32(IN_ACCESS | IN_MODIFY) | UInt32(IN_DONT_FOLLOW)
    private static let directoryMask = UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO)
    #endif
    /// Whether the watch is on the signal file (else on the directory).
    private let watchingFile = Atomic<Bool>(false)

    /// Moves the watch from the directory to the signal file once the file exists.
    private func narrowToSignalFile(_ inotify: Int32) {
        #if os(Linux)
        guard !watchingFile.load(ordering: .relaxed), inotify_add_watch(inotify, directory + "/" + CommitBeacon.fileName, Self.fileMask) >= 0 else { return }
        // Adding a watch on an already watched path returns its descriptor (same mask): the way to remove it.
        let directoryWatch = inotify_add_watch(inotify, directory, Self.directoryMask)
        if directoryWatch >= 0 { inotify_rm_watch(inotify, directoryWatch) }
        watchingFile.store(true, ordering: .relaxed)
        #endif
    }

    /// Subscribes `wake` to commits in `directory`; it runs on the watcher's thread, so it must be quick.
    static func subscribe(directory: String, _ wake: @escaping @Sendable () -> Void) -> CommitWakeupSubscription {
        let (watcher, id, start) = registry.withLock { registry in
            let watcher = registry[directory] ?? CommitWatcher(directory: directory)
            registry[directory] = watcher
            let (id, first) = watcher.state.withLock { state in
                let id = state.nextID
                state.nextID += 1
                state.subscribers[id] = wake
                return (id, state.subscribers.count == 1)
            }
            return (watcher, id, first)
        }
        if start { watcher.startThread() }
        return CommitWakeupSubscription(watcher: watcher, id: id)
    }

    fileprivate func unsubscribe(_ id: UInt64) {
        let stop = Self.registry.withLock { registry in
            let empty = state.withLock { state in
                state.subscribers[id] = nil
                return state.subscribers.isEmpty
            }
            if empty, registry[directory] === self { registry[directory] = nil }
            return empty
        }
        if stop, let descriptors {
            var byte: UInt8 = 0
            _ = write(descriptors.stopWrite, &byte, 1)
        }
    }

    private func startThread() {
        guard let descriptors else { return }
        let thread = Thread { [self] in run(descriptors) }
        thread.name = "canopy.commit-watcher"
        thread.start()
    }

    private func run(_ descriptors: (inotify: Int32, stopRead: Int32, stopWrite: Int32)) {
        defer {
            close(descriptors.inotify)
            close(descriptors.stopRead)
            close(descriptors.stopWrite)
        }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            var fds = [
                pollfd(fd: descriptors.inotify, events: Int16(POLLIN), revents: 0),
                pollfd(fd: descriptors.stopRead, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&fds, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if fds[1].revents != 0 { return }
            guard fds[0].revents != 0 else { continue }
            // Drain the events: one wake-up covers them all.
            while buffer.withUnsafeMutableBytes({ read(descriptors.inotify, $0.baseAddress, $0.count) }) > 0 {}
            narrowToSignalFile(descriptors.inotify)
            let subscribers = state.withLock { Array($0.subscribers.values) }
            for wake in subscribers { wake() }
        }
    }
}

/// A subscription to cross-process commit wake-ups; ends when cancelled or released.
final class CommitWakeupSubscription: Sendable {
    private let watcher: CommitWatcher
    private let id: UInt64
    private let cancelled = Atomic<Bool>(false)

    fileprivate init(watcher: CommitWatcher, id: UInt64) {
        self.watcher = watcher
        self.id = id
    }

    /// Whether other processes' commits wake the subscriber (false: it depends on polling).
    var isActive: Bool { watcher.isActive }

    /// Ends the subscription.
    func cancel() {
        if cancelled.exchange(true, ordering: .relaxed) == false { watcher.unsubscribe(id) }
    }

    deinit { cancel() }
}

extension Database {
    /// Calls `wake` whenever another process (or this one) may have committed to the database, until the returned
    /// watch is cancelled or released: a wake-up, not a notification — read the snapshot (or advance a pinned
    /// connection) to see what changed.
    ///
    /// On Linux this is inotify on `canopy-commit.signal` in the database directory, which writers touch after each
    /// commit, so an idle watch costs nothing and a commit wakes it within a fraction of a millisecond. Elsewhere ``CommitWatch/isActive`` is false and callers must poll. `wake` runs on a background
    /// thread and must return quickly.
    public func watchCommits(_ wake: @escaping @Sendable () -> Void) -> CommitWatch {
        CommitWatch(subscription: CommitWatcher.subscribe(directory: path, wake))
    }
}

/// A running ``Database/watchCommits(_:)``; cancel or release it to stop the wake-ups.
public final class CommitWatch: Sendable {
    let subscription: CommitWakeupSubscription

    init(subscription: CommitWakeupSubscription) {
        self.subscription = subscription
    }

    /// Whether commits of other processes wake the watch; when false (no inotify), poll instead.
    public var isActive: Bool { subscription.isActive }

    /// Stops the wake-ups.
    public func cancel() { subscription.cancel() }
}
