import CoreMetrics
import Dispatch
import LMDB
import Logging

extension DatabaseCore {
    /// How many commits a reader may lag before ``checkPinnedReaders(currentTransactionID:)`` warns that it holds pages.
    static let pinnedReaderWarningLag = 10_000
    /// How often (in commits) the reader table is read for pinned snapshots, when the logger would print the warning.
    static let pinnedReaderCheckInterval = 1_024

    /// After a commit that wrote something: the commit metrics (`start`: when the write transaction began, in
    /// `DispatchTime`'s monotonic nanoseconds).
    @inline(__always)
    func recordCommit(startedAt start: UInt64, bytesWritten: Int) {
        metrics.commits.increment()
        metrics.commitDuration.recordNanoseconds(Int64(truncatingIfNeeded: DispatchTime.now().uptimeNanoseconds &- start))
        if bytesWritten > 0 { metrics.bytesWritten.increment(by: Int64(bytesWritten)) }
    }

    /// Called (only when the logger prints debug messages) after a write transaction began at `start`: the wait for
    /// LMDB's write lock, held by another process (this process's writers queue before it, on ``writeLock``).
    /// `start`: `DispatchTime`'s monotonic nanoseconds.
    func didWaitForWriteLock(since start: UInt64) {
        let waited = DispatchTime.now().uptimeNanoseconds &- start
        guard waited > 10_000_000 else { return }
        logger.debug("a write waited for another process's write lock",
                     metadata: ["canopy.path": "\(path)", "canopy.waited_ms": "\(waited / 1_000_000)"])
    }

    /// After `mdb_reader_check` cleared `cleared` slots of dead processes.
    func didClearReaderSlots(_ cleared: Int) {
        guard cleared > 0 else { return }
        logger.debug("cleared reader slots of dead processes", metadata: ["canopy.path": "\(path)", "canopy.slots": "\(cleared)"])
    }

    /// After the map grew from `from` to `to` bytes.
    func didGrowMap(from: Int, to: Int) {
        metrics.mapSize.record(to)
        logger.debug("the map grew", metadata: ["canopy.path": "\(path)", "canopy.from": "\(from)", "canopy.to": "\(to)"])
    }

    /// Map and reader gauges, and (every ``pinnedReaderCheckInterval`` commits, only when the logger prints warnings)
    /// the check for old pinned snapshots. Called with the periodic reader check.
    func recordEnvironmentGauges(check: Int) {
        let info = environment.info()
        metrics.mapSize.record(info.mapSize)
        metrics.mapUsed.record((info.lastPage + 1) * environment.statistics().pageSize)
        metrics.readerSlotsInUse.record(info.readersInUse)
        if logger.logLevel <= .warning, check % (Self.pinnedReaderCheckInterval / Self.readerCheckInterval) == 0 {
            checkPinnedReaders(currentTransactionID: info.lastTransactionID)
        }
    }

    /// Warns about read transactions (pinned connections, observers, tools) of any process that are more than
    /// ``pinnedReaderWarningLag`` commits old: LMDB cannot reuse the pages they see, so the file grows.
    func checkPinnedReaders(currentTransactionID: Int) {
        guard let readers = try? environment.readers() else { return }
        for reader in readers {
            guard let id = reader.transactionID, currentTransactionID - id > Self.pinnedReaderWarningLag else { continue }
            logger.warning(
                "a read transaction is pinned to an old snapshot and keeps LMDB from reusing pages: the file grows until it advances or ends",
                metadata: [
                    "canopy.path": "\(path)", "canopy.pid": "\(reader.processID)", "canopy.thread": "\(reader.thread)",
                    "canopy.commits_behind": "\(currentTransactionID - id)", "canopy.process_alive": "\(reader.processIsAlive)",
                ])
        }
    }

    /// After an extension was rebuilt (or built) at registration.
    func didRebuildExtension(_ name: String, reason: String) {
        metrics.rebuilds.increment()
        logger.debug("rebuilding an extension", metadata: ["canopy.path": "\(path)", "canopy.extension": "\(name)", "canopy.reason": "\(reason)"])
    }

    /// At each pruning of the change feed: warns about consumers more than half of `limit` commits behind, and about
    /// those past it (their next read throws ``CanopyError/Code/changeFeedGap``).
    func reportFeedConsumers(_ consumers: [String: UInt64], snapshot: UInt64, limit: UInt64) {
        guard logger.logLevel <= .warning else { return }
        for (name, checkpoint) in consumers.sorted(by: { $0.key < $1.key }) where snapshot > checkpoint {
            let behind = snapshot - checkpoint
            if behind > limit {
                logger.warning(
                    "a change feed consumer is further behind than DatabaseOptions.changeFeedConsumerLimit: the feed no longer holds its commits, and its next read fails with changeFeedGap",
                    metadata: ["canopy.path": "\(path)", "canopy.consumer": "\(name)", "canopy.behind": "\(behind)", "canopy.limit": "\(limit)"])
            } else if behind > limit / 2 {
                logger.warning(
                    "a change feed consumer holds many commits in the feed (the file grows); it must acknowledge, or be removed with removeFeedConsumer(named:)",
                    metadata: ["canopy.path": "\(path)", "canopy.consumer": "\(name)", "canopy.behind": "\(behind)", "canopy.limit": "\(limit)"])
            }
        }
    }

    /// A pinned observer passed over `snapshots` commits in one advance.
    func recordObserverLag(_ snapshots: UInt64) {
        metrics.observerLag.record(Int64(clamping: snapshots))
    }
}

extension Connection {
    /// Records, for the database's `canopy_observer_lag_snapshots` metric, that an observer on this connection passed
    /// over `snapshots` commits in one advance.
    public func recordObserverLag(_ snapshots: UInt64) {
        core.recordObserverLag(snapshots)
    }
}
