import LMDB

extension ReadWriteTransaction {
    /// Turns the change feed on from `since` (the snapshot it starts after) or, with `nil`, off: writes its record in
    /// `canopy.info`, and says so to this transaction's commit. Whether the feed is on is otherwise taken from what
    /// this process remembers of the transaction before (``DatabaseCore/feedEnabledSince(_:committed:)``), which this
    /// write changes: a commit that also wrote rows recorded itself (and remembered for the next) as the feed was.
    func setChangeFeedEnabled(since: UInt64?) throws {
        if let since {
            try StoreInfoRecords.changeFeed.put(since, in: writeStorage, info: tables.info)
        } else {
            try StoreInfoRecords.changeFeed.remove(in: writeStorage, info: tables.info)
        }
        feedEnabledSince = .some(since)
    }

    /// Records `notification`'s commit in the change feed, with the values of the rows it set, when the feed is
    /// enabled; every ``ChangeFeedLog/pruneInterval`` commits, prunes the records no consumer needs any more.
    ///
    /// Runs in ``commit()`` after the commit log entry. Whether the feed is on is read from `canopy.info` once per
    /// commit of another process (``DatabaseCore/feedEnabledSince(_:committed:)``); only enabling and disabling the
    /// feed write that record (``setChangeFeedEnabled(since:)``, which tells this transaction what it wrote).
    func recordInChangeFeed(_ notification: CommitNotification) throws {
        // (Tested without copying the tables: most stores have no feed, and every commit asks.)
        guard core.feedTables != nil else { return }
        let enabledSince: UInt64?
        if let written = feedEnabledSince {
            enabledSince = written
        } else {
            enabledSince = try core.feedEnabledSince(storage, committed: storage.id - 1)
            feedEnabledSince = .some(enabledSince)
        }
        guard enabledSince != nil, let feedTables = core.feedTables else { return }
        var changes: [FeedChange] = []
        if notification.removedAll { changes.append(FeedChange(kind: .removeAll, collection: "")) }
        for collection in notification.removedCollections.sorted() {
            changes.append(FeedChange(kind: .removeCollection, collection: collection))
        }
        for (collection, keys) in Self.feedKeys(notification.keySets) {
            let record = try collectionRecord(collection)
            for (key, removed) in keys {
                guard let record, !removed, let row = try feedRow(record, key: key, collection: collection) else {
                    changes.append(FeedChange(kind: .remove, collection: collection, key: key))
                    continue
                }
                changes.append(FeedChange(kind: .set, collection: collection, key: key, codec: record.codec,
                                          objectBytes: row.object, metadataBytes: row.metadata))
            }
        }
        let snapshot = notification.snapshot
        try writeStorage.put(FeedRecord.encode(FeedCommit(snapshot: snapshot, changes: changes)), forKey: FeedRecord.key(snapshot),
                             in: feedTables.feed)
        if snapshot % ChangeFeedLog.pruneInterval == 0 { try pruneChangeFeed(feedTables, snapshot: snapshot) }
    }

    /// The keys a commit set or removed, by collection (collections and keys sorted, each key once, `removed` when the
    /// commit removed the row), walked from the change log's lists and sets as they are: building the notification's
    /// key sets (hashed sets of strings, three maps) cost a bulk commit about 550 instructions a row for nothing the
    /// feed needs, and left them built in the notification. The change log keeps a removed key out of the changed
    /// ones; a key in both is taken as removed anyway (as the sets were read).
    static func feedKeys(_ keySets: CommitKeySets) -> [(collection: String, keys: [(key: String, removed: Bool)])] {
        var byCollection: [String: [(key: String, removed: Bool)]] = [:]
        for kind in CommitKeySets.Kind.allCases {
            let removed = kind == .removedKeys
            keySets.forEachPart(kind) { part in
                var keys = byCollection.removeValue(forKey: part.collection) ?? []
                keys.reserveCapacity(keys.count + part.count)
                part.forEach { keys.append(($0, removed)) }
                byCollection[part.collection] = keys
            }
        }
        return byCollection.sorted { $0.key < $1.key }.map { collection, keys in
            let sorted = keys.sorted { $0.key < $1.key }
            var unique: [(key: String, removed: Bool)] = []
            unique.reserveCapacity(sorted.count)
            for entry in sorted {
                if let last = unique.last, last.key == entry.key {
                    if entry.removed { unique[unique.count - 1].removed = true }
                } else {
                    unique.append(entry)
                }
            }
            return (collection, unique)
        }
    }

    /// The object and metadata bytes of a row as this transaction leaves it; `nil` when there is no such row.
    private func feedRow(_ record: CollectionRecord, key: String, collection: String) throws -> (object: [UInt8], metadata: [UInt8]?)? {
        try withRowKey(record, key, collection: collection) { rowKey in
            let stored: (object: [UInt8], hasMetadata: Bool)? = try storage.withValue(forKey: rowKey, in: tables.objects) { value in
                guard let value else { return nil }
                guard let flags = value.first, let object = StoredRecord.objectBytes(value) else {
                    throw CanopyError(.corruptStore, "a row's stored record is malformed", path: core.path, collection: collection, key: key)
                }
                return (Array(object), flags & StoredRecord.hasMetadata != 0)
            }
            guard let stored else { return nil }
            let metadata = stored.hasMetadata ? try storage.withValue(forKey: rowKey, in: tables.metadata) { $0.map { Array($0) } } : nil
            return (stored.object, metadata)
        }
    }

    /// Deletes the feed records that are older than the log keeps (``DatabaseOptions/commitLogLimit``) and that every
    /// consumer has acknowledged; a consumer more than ``DatabaseOptions/changeFeedConsumerLimit`` commits behind
    /// stops holding the feed (it gets ``CanopyError/Code/changeFeedGap`` when it reads next).
    private func pruneChangeFeed(_ feedTables: FeedTables, snapshot: UInt64) throws {
        let keep = UInt64(max(1, core.options.commitLogLimit))
        var floor = snapshot > keep ? snapshot - keep : 0
        let consumers = try ChangeFeedLog.consumers(storage, feedTables)
        for checkpoint in consumers.values { floor = min(floor, checkpoint) }
        let consumerLimit = UInt64(max(1, core.options.changeFeedConsumerLimit))
        let hardFloor = snapshot > consumerLimit ? snapshot - consumerLimit : 0
        floor = max(floor, hardFloor)
        core.reportFeedConsumers(consumers, snapshot: snapshot, limit: consumerLimit)
        guard floor > 0 else { return }
        try deleteFeedRecords(in: feedTables, through: floor)
    }

    /// Deletes the feed's records of snapshots up to `last` (all of them with `.max`), leaving the notifications.
    func deleteFeedRecords(in feedTables: FeedTables, through last: UInt64) throws {
        try writeStorage.withCursor(in: feedTables.feed) { cursor in
            var entry = try cursor.first()
            while let current = entry, current.key.count >= 8, current.key.loadBigEndianUInt64(at: 0) <= last {
                if FeedRecord.snapshot(ofKey: current.key) != nil {
                    try cursor.deleteCurrent()
                    entry = try cursor.current()
                } else {
                    entry = try cursor.next()
                }
            }
        }
    }
}
