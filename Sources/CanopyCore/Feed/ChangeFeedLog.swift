import LMDB

/// Where the change feed lives:
///
/// - its records are in the commit log, `canopy.commits`, next to each commit's notification: key = snapshot
///   (8 bytes big-endian) + `F` (see ``FeedRecord/key(_:)``) → a ``FeedRecord``. On the page the commit writes anyway,
///   so recording the feed dirties no other page of the file. Readers of notifications take only 8-byte keys.
/// - `canopy.feed-consumers` (created when a writable database is opened): consumer name → the snapshot it
///   acknowledged (8 bytes big-endian).
///
/// Whether commits are recorded is kept in `canopy.info` (`feed` → the snapshot the feed was enabled at), so every
/// process writing the database records them once any process enabled the feed, whatever options it opened with.
struct FeedTables: Sendable {
    /// The commit log (`canopy.commits`), which holds the feed's records.
    let feed: LMDB.Database
    let consumers: LMDB.Database

    static let consumersName = StoreTableName.feedConsumers

    static func create(in txn: LMDB.WriteTransaction, commitLog: LMDB.Database) throws -> FeedTables {
        FeedTables(feed: commitLog, consumers: try txn.openDatabase(named: consumersName, flags: [.create], checksummed: true))
    }

    /// The tables of a database opened read-only; `nil` when no writer of this build created them yet.
    static func openIfPresent(in txn: LMDB.ReadTransaction, commitLog: LMDB.Database) throws -> FeedTables? {
        do {
            return FeedTables(feed: commitLog, consumers: try txn.openDatabase(named: consumersName, checksummed: true))
        } catch let error as LMDBError where error.code == .notFound {
            return nil
        }
    }
}

extension DatabaseCore {
    /// Whether the feed is on (the snapshot it was enabled at) as of the committed transaction `committed`, read
    /// through `txn` (a write transaction that began right after it) unless known: as ``committedState``, the record
    /// is read once per commit that changed the file, not once per commit of this process.
    func feedEnabledSince(_ txn: LMDB.ReadTransaction, committed: Int) throws -> UInt64? {
        if let known = committedFeed.withLock({ $0 }), known.transaction == committed { return known.enabledSince }
        let enabledSince = try ChangeFeedLog.enabledSince(txn, info: tables.info)
        committedFeed.withLock { $0 = (committed, enabledSince) }
        return enabledSince
    }

    /// Records whether the feed was on after a commit of this process, as of its transaction id.
    func rememberFeedEnabled(since enabledSince: UInt64?, transaction: Int) {
        committedFeed.withLock { $0 = (transaction, enabledSince) }
    }
}

/// Reading and writing the feed's records inside LMDB transactions (the store's side; the public API is in
/// Database+ChangeFeed.swift).
enum ChangeFeedLog {
    /// Commits between two prunings of the feed (as for the commit log: most commits don't touch its oldest page).
    static let pruneInterval: UInt64 = 64

    /// The snapshot the feed was enabled at, or `nil` when it is off.
    static func enabledSince(_ txn: LMDB.ReadTransaction, info: LMDB.Database) throws -> UInt64? {
        try StoreInfoRecords.changeFeed.value(in: txn, info: info, path: nil)
    }

    /// Every consumer's acknowledged snapshot, by name.
    static func consumers(_ txn: LMDB.ReadTransaction, _ tables: FeedTables) throws -> [String: UInt64] {
        var result: [String: UInt64] = [:]
        try txn.forEach(in: tables.consumers) { key, value in
            guard value.count == 8 else {
                throw CanopyError(.corruptStore, "the checkpoint of feed consumer '\(String(decoding: key, as: UTF8.self))' is \(value.count) bytes, not 8")
            }
            result[String(decoding: key, as: UTF8.self)] = value.loadBigEndianUInt64(at: 0)
            return true
        }
        return result
    }

    /// The commits after `since`, at most `limit`, in order.
    ///
    /// - Throws: ``CanopyError/Code/changeFeedDisabled`` when the feed is off; ``CanopyError/Code/changeFeedGap`` when
    ///   the feed no longer (or never) held the commit after `since`; ``CanopyError/Code/invalidArgument`` when `since`
    ///   is after the database's snapshot; ``CanopyError/Code/corruptStore`` for a malformed or missing record.
    static func read(
        _ txn: LMDB.ReadTransaction, info: LMDB.Database, tables: FeedTables?, current: UInt64, since: UInt64, limit: Int,
        path: String
    ) throws -> [FeedCommit] {
        guard let tables, let enabled = try enabledSince(txn, info: info) else {
            throw CanopyError(
                .changeFeedDisabled,
                "the change feed is not enabled on this database; enable it with Database.enableChangeFeed() (from then on every commit is recorded with its values)",
                path: path)
        }
        guard since <= current else {
            throw CanopyError(
                .invalidArgument,
                "snapshot \(since) is after the database's latest snapshot \(current): the database was replaced or restored from an older backup; start the consumer again from a snapshot it has",
                path: path)
        }
        guard since < current, limit > 0 else { return [] }
        guard since >= enabled else {
            throw CanopyError(
                .changeFeedGap,
                "the change feed starts after snapshot \(enabled) (when it was enabled); commits \(since + 1)...\(enabled) were never recorded. Read from snapshot \(enabled) or later, after loading the state as of then",
                path: path)
        }
        var commits: [FeedCommit] = []
        var expected = since + 1
        try txn.forEach(in: tables.feed, from: FeedRecord.key(expected)) { key, value in
            guard let snapshot = FeedRecord.snapshot(ofKey: key) else { return true }  // a notification
            if snapshot > current { return false }
            guard snapshot == expected else {
                if commits.isEmpty {
                    throw CanopyError(
                        .changeFeedGap,
                        "the change feed no longer holds commits \(expected)...\(snapshot - 1) (pruned: more than the log keeps, and no consumer checkpoint held them, or one held more than DatabaseOptions.changeFeedConsumerLimit). Reload the state and continue from snapshot \(current)",
                        path: path)
                }
                throw CanopyError(.corruptStore, "the change feed has no record of commit \(expected) but has \(snapshot)", path: path)
            }
            commits.append(try FeedRecord.decode(value, snapshot: snapshot, path: path))
            expected += 1
            return commits.count < limit
        }
        if commits.isEmpty {
            throw CanopyError(
                .changeFeedGap,
                "the change feed no longer holds commit \(since + 1) (pruned); reload the state and continue from snapshot \(current)",
                path: path)
        }
        return commits
    }
}
