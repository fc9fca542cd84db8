import LMDB

/// A named reader of the change feed and how far it has acknowledged it.
public struct FeedConsumer: Sendable, Hashable {
    /// The consumer's name.
    public var name: String
    /// The last snapshot it acknowledged: it resumes with the commit after it.
    public var checkpoint: UInt64
    /// How many commits it has not acknowledged yet (the database's snapshot minus the checkpoint): the feed records
    /// it holds.
    public var behind: UInt64
}

extension Database {
    // MARK: Enabling

    /// Turns the durable change feed on: from the next commit, every commit is recorded with the values it wrote (see
    /// ``changes(since:pollInterval:batchSize:)``). Recorded in the database, so every process writing it records the
    /// feed from then on, whatever options it opened the database with. Does nothing when the feed is already on.
    ///
    /// A commit then also writes its rows' object and metadata bytes once more (next to its commit log entry); the feed keeps the
    /// last ``DatabaseOptions/commitLogLimit`` commits, and more while a consumer's checkpoint holds them.
    /// - Returns: the snapshot the feed starts after (its first record is the commit after it).
    /// - Throws: ``CanopyError/Code/readOnly`` on a read-only database.
    @discardableResult
    public func enableChangeFeed() throws -> UInt64 {
        try feedWrite { txn, _ in
            if let since = try ChangeFeedLog.enabledSince(txn.storage, info: txn.tables.info) { return since }
            let since = txn.storeState.snapshot
            try txn.setChangeFeedEnabled(since: since)
            return since
        }
    }

    /// Turns the change feed off and deletes its records and consumers' checkpoints.
    /// - Throws: ``CanopyError/Code/readOnly`` on a read-only database.
    public func disableChangeFeed() throws {
        try feedWrite { txn, feed in
            try txn.setChangeFeedEnabled(since: nil)
            try txn.deleteFeedRecords(in: feed, through: .max)
            try txn.writeStorage.empty(feed.consumers)
        }
    }

    /// The snapshot the change feed was enabled at (its first record is the commit after it), or `nil` when it is off.
    public func changeFeedEnabledSince() throws -> UInt64? {
        try feedRead { txn, _ in try ChangeFeedLog.enabledSince(txn, info: core.tables.info) }
    }

    // MARK: Reading

    /// The commits after snapshot `since`, in order, at most `limit` of them, with the values they wrote; empty when
    /// `since` is the latest snapshot.
    ///
    /// - Throws: ``CanopyError/Code/changeFeedDisabled`` when the feed is off; ``CanopyError/Code/changeFeedGap`` when
    ///   the feed no longer holds the commit after `since` (or never did: it came before the feed was enabled);
    ///   ``CanopyError/Code/invalidArgument`` when `since` is after the latest snapshot (a database restored from an
    ///   older backup); ``CanopyError/Code/corruptStore`` for a damaged record.
    public func readChanges(since: UInt64, limit: Int = 1_000) throws -> [FeedCommit] {
        try feedRead { txn, feed in
            try ChangeFeedLog.read(txn, info: core.tables.info, tables: feed, current: try core.readSnapshot(txn), since: since,
                                   limit: limit, path: path)
        }
    }

    /// The commits after snapshot `since` as an asynchronous sequence that follows the database: when it has caught
    /// up, it waits for the next commit of any process (woken through the database directory's signal file, polling
    /// every `pollInterval` only where that is not available). It ends when the iterating task is cancelled and
    /// throws what ``readChanges(since:limit:)`` throws.
    ///
    /// ```swift
    /// for try await commit in database.changes(since: checkpoint) {
    ///     try apply(commit)   // idempotent: skip commit.snapshot if it was applied before
    ///     try database.acknowledge(consumer: "search-indexer", through: commit.snapshot)
    /// }
    /// ```
    public func changes(since: UInt64, pollInterval: Duration = .milliseconds(200), batchSize: Int = 256) -> ChangeFeedChanges {
        ChangeFeedChanges(database: self, since: since, pollInterval: pollInterval, batchSize: max(1, batchSize))
    }

    // MARK: Consumers

    /// Registers a named consumer whose checkpoint holds the feed: records after it are kept until it acknowledges
    /// them (``acknowledge(consumer:through:)``), up to ``DatabaseOptions/changeFeedConsumerLimit`` commits. Does
    /// nothing to a consumer that exists.
    ///
    /// Delivery is at least once: a consumer reads from its checkpoint (``feedConsumer(named:)``), applies each
    /// commit, then acknowledges it; when it stops in between it sees those commits again, so it applies a commit
    /// idempotently by its snapshot number.
    ///
    /// - Parameters:
    ///   - name: The consumer's name (1 to 400 bytes of UTF-8).
    ///   - after: The snapshot a new consumer starts after (it reads the commit after it first); `nil` for the
    ///     database's latest snapshot.
    /// - Returns: the consumer's checkpoint (for an existing consumer, the one it has).
    /// - Throws: ``CanopyError/Code/changeFeedDisabled`` when the feed is off; ``CanopyError/Code/changeFeedGap``
    ///   when the feed no longer holds the commit after `after`; ``CanopyError/Code/invalidArgument`` for a bad name or
    ///   an `after` beyond the latest snapshot.
    @discardableResult
    public func registerFeedConsumer(named name: String, after: UInt64? = nil) throws -> UInt64 {
        try Self.validateConsumerName(name, path: path)
        return try feedWrite { txn, feed in
            if let existing = try txn.storage.value(forKey: Array(name.utf8), in: feed.consumers), existing.count == 8 {
                return existing.withUnsafeBytes { $0.loadBigEndianUInt64(at: 0) }
            }
            let current = txn.storeState.snapshot
            let start = after ?? current
            // Checks that the feed is on and holds the commit after `start` (reading one record).
            _ = try ChangeFeedLog.read(txn.storage, info: txn.tables.info, tables: feed, current: current, since: start, limit: 1, path: path)
            try txn.writeStorage.put(SnapshotKey.bytes(start), forKey: Array(name.utf8), in: feed.consumers)
            return start
        }
    }

    /// Moves consumer `name`'s checkpoint to `snapshot`: the commits up to it are done, and the feed may prune them.
    /// A checkpoint never moves back (acknowledging an older snapshot again does nothing), so acknowledging is
    /// idempotent too.
    /// - Throws: ``CanopyError/Code/invalidArgument`` when no consumer has that name or `snapshot` is after the latest
    ///   snapshot.
    public func acknowledge(consumer name: String, through snapshot: UInt64) throws {
        try feedWrite { txn, feed in
            guard let existing = try txn.storage.value(forKey: Array(name.utf8), in: feed.consumers), existing.count == 8 else {
                throw CanopyError(.invalidArgument, "no change feed consumer is named '\(name)'; register it with registerFeedConsumer(named:after:)",
                                  path: path)
            }
            guard snapshot <= txn.storeState.snapshot else {
                throw CanopyError(.invalidArgument, "consumer '\(name)' cannot acknowledge snapshot \(snapshot): the latest snapshot is \(txn.storeState.snapshot)",
                                  path: path)
            }
            let checkpoint = existing.withUnsafeBytes { $0.loadBigEndianUInt64(at: 0) }
            guard snapshot > checkpoint else { return }
            try txn.writeStorage.put(SnapshotKey.bytes(snapshot), forKey: Array(name.utf8), in: feed.consumers)
        }
    }

    /// Removes consumer `name`: its checkpoint no longer holds the feed. Returns whether it existed.
    @discardableResult
    public func removeFeedConsumer(named name: String) throws -> Bool {
        try feedWrite { txn, feed in try txn.writeStorage.delete(Array(name.utf8), in: feed.consumers) }
    }

    /// The consumer named `name`, or `nil`.
    public func feedConsumer(named name: String) throws -> FeedConsumer? {
        try feedConsumers().first { $0.name == name }
    }

    /// Every registered consumer, by name.
    public func feedConsumers() throws -> [FeedConsumer] {
        try feedRead { txn, feed in
            guard let feed else { return [] }
            let current = try core.readSnapshot(txn)
            return try ChangeFeedLog.consumers(txn, feed).sorted { $0.key < $1.key }.map { name, checkpoint in
                FeedConsumer(name: name, checkpoint: checkpoint, behind: current > checkpoint ? current - checkpoint : 0)
            }
        }
    }

    // MARK: Transactions of the feed

    static func validateConsumerName(_ name: String, path: String) throws {
        guard !name.isEmpty, name.utf8.count <= 400 else {
            throw CanopyError(.invalidArgument, "a change feed consumer's name must be 1 to 400 bytes of UTF-8", path: path)
        }
    }

    private func feedRead<R>(_ body: (LMDB.ReadTransaction, FeedTables?) throws -> R) throws -> R {
        do {
            return try core.environment.read { txn in try body(txn, core.feedTables) }
        } catch {
            throw CanopyError.wrap(error, path: path)
        }
    }

    /// Runs `body` in a write transaction that changes no row (so it records no commit and the snapshot stays).
    private func feedWrite<R>(_ body: (ReadWriteTransaction, FeedTables) throws -> R) throws -> R {
        guard let feed = core.feedTables else {
            throw CanopyError(.readOnly, "the database was opened read-only; the change feed is changed by a writable Database", path: path)
        }
        let connection = newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
        connection.state.isMaintenance = true
        return try connection.readWrite { txn in try body(txn, feed) }
    }
}
