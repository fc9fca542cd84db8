import LMDB

/// A row a migration step failed on, with what it threw (the migrator turns it into a ``CanopyError``).
struct MigrationStepRowFailure: Error {
    var collection: String
    var key: String?
    var error: any Error
}

/// What one batch of a migration step did.
struct MigrationBatchResult {
    /// The last key the batch handled (the step's checkpoint), or `nil` when it handled none.
    var lastKey: String?
    /// The rows it changed.
    var rows: Int
    /// Whether the step is complete.
    var finished: Bool
}

extension ReadWriteTransaction {
    /// Runs one batch of `step`: at most `limit` rows after `after`. No extension may be registered (the migrator
    /// checks): rows are written as bytes. The commit reports each touched collection as wholly rewritten (as
    /// removed, in ``CommitNotification``'s terms), not key by key: caches drop it, and the extensions over it that are
    /// recorded in the database are rebuilt once at their next registration (a catch-up from the log would replay
    /// every row), while those over other collections stay current.
    func runMigrationBatch(_ step: MigrationStep, after: String?, isFirstBatch: Bool, limit: Int) throws -> MigrationBatchResult {
        switch step.action {
        case .rewrite(let rewrite):
            return try rewriteObjects(of: step.collection, after: after, limit: limit, rewrite)
        case .renameCollection(let target):
            return try moveRows(from: step.collection, to: target, isFirstBatch: isFirstBatch, limit: limit)
        case .deleteCollection:
            return try deleteRows(of: step.collection, limit: limit)
        case .changeCodec(let codec, let convert):
            return try changeCodec(of: step.collection, to: codec, convert)
        }
    }

    /// A collection's stored rows in key order after `after` (at most `limit`), copied out of the map, and whether
    /// more follow.
    private func storedRows(
        _ record: CollectionRecord, collection: String, after: String?, limit: Int
    ) throws -> (rows: [(rowKey: [UInt8], flags: UInt8, attachments: [UInt8], object: [UInt8])], more: Bool) {
        let prefix = RowKey.prefix(collectionID: record.id)
        let start = after.map { prefix + Array($0.utf8) + [0] } ?? prefix
        var rows: [(rowKey: [UInt8], flags: UInt8, attachments: [UInt8], object: [UInt8])] = []
        rows.reserveCapacity(min(limit, 100_000))
        var more = false
        try storage.forEach(in: tables.objects, from: start) { rowKey, value in
            guard rowKey.starts(with: prefix) else { return false }
            guard rows.count < limit else {
                more = true
                return false
            }
            guard let flags = value.first, let object = StoredRecord.objectBytes(value), let attachments = StoredRecord.attachmentBytes(value) else {
                throw CanopyError(.corruptStore, "the stored row is malformed", path: core.path, collection: collection, key: RowKey.key(of: rowKey))
            }
            rows.append((Array(rowKey), flags, Array(attachments), Array(object)))
            return true
        }
        return (rows, more)
    }

    private func rewriteObjects(
        of collection: String, after: String?, limit: Int,
        _ rewrite: (String, UnsafeRawBufferPointer, String) throws -> [UInt8]?
    ) throws -> MigrationBatchResult {
        guard let record = try collectionRecord(collection) else { return MigrationBatchResult(lastKey: nil, rows: 0, finished: true) }
        let (rows, more) = try storedRows(record, collection: collection, after: after, limit: limit)
        let storage = try writeStorage
        var changed = 0
        var lastKey: String?
        for row in rows {
            let key = row.rowKey.withUnsafeBytes { RowKey.key(of: $0) }
            lastKey = key
            let replacement: [UInt8]?
            do {
                replacement = try row.object.withUnsafeBytes { try rewrite(key, $0, record.codec) }
            } catch {
                throw MigrationStepRowFailure(collection: collection, key: key, error: error)
            }
            guard let replacement else { continue }
            // The record keeps its flags and attachments (those of extensions registered elsewhere are stale after
            // this write, and rebuilt at their registration).
            let value = replacement.withUnsafeBytes {
                StoredRecord.value(hasMetadata: row.flags & StoredRecord.hasMetadata != 0, attachments: row.attachments, object: $0)
            }
            try guarded { try storage.put(value, forKey: row.rowKey, in: tables.objects) }
            changed += 1
        }
        if changed > 0 { wholeCollectionRewritten(collection) }
        return MigrationBatchResult(lastKey: lastKey, rows: changed, finished: !more)
    }

    private func moveRows(from source: String, to target: String, isFirstBatch: Bool, limit: Int) throws -> MigrationBatchResult {
        guard let record = try collectionRecord(source) else { return MigrationBatchResult(lastKey: nil, rows: 0, finished: true) }
        guard source != target else {
            throw MigrationStepRowFailure(collection: source, key: nil, error: CanopyError(.invalidArgument, "a collection cannot be renamed to itself"))
        }
        if isFirstBatch, try count(inCollection: target) > 0 {
            throw MigrationStepRowFailure(collection: target, key: nil, error: CanopyError(
                .invalidArgument, "the collection '\(target)' already has rows; rename '\(source)' to an empty collection, or delete '\(target)' in an earlier step"))
        }
        guard let codec = Codecs.named(record.codec) else {
            throw MigrationStepRowFailure(collection: source, key: nil, error: CanopyError(.codecMismatch, "the collection's codec '\(record.codec)' is not a built-in codec"))
        }
        let targetRecord: CollectionRecord
        do {
            targetRecord = try collectionRecordForWriting(target, codec: codec)
        } catch {
            throw MigrationStepRowFailure(collection: target, key: nil, error: error)
        }
        // Moved rows leave the source: each batch takes the first rows that remain.
        let (rows, more) = try storedRows(record, collection: source, after: nil, limit: limit)
        let storage = try writeStorage
        var lastKey: String?
        for row in rows {
            let key = row.rowKey.withUnsafeBytes { RowKey.key(of: $0) }
            lastKey = key
            let hasMetadata = row.flags & StoredRecord.hasMetadata != 0
            let metadata = hasMetadata ? try storage.value(forKey: row.rowKey, in: tables.metadata) : nil
            let value = row.object.withUnsafeBytes { StoredRecord.value(hasMetadata: metadata != nil, attachments: [], object: $0) }
            try withRowKey(targetRecord, key, collection: target) { targetKey in
                try guarded {
                    try value.withUnsafeBytes { try storage.put($0, forKey: targetKey, in: tables.objects) }
                    if let metadata { try metadata.withUnsafeBytes { try storage.put($0, forKey: targetKey, in: tables.metadata) } }
                }
            }
            try guarded {
                _ = try storage.delete(row.rowKey, in: tables.objects)
                if hasMetadata { _ = try storage.delete(row.rowKey, in: tables.metadata) }
            }
        }
        if !rows.isEmpty {
            wholeCollectionRewritten(source)
            wholeCollectionRewritten(target)
        }
        return MigrationBatchResult(lastKey: lastKey, rows: rows.count, finished: !more)
    }

    private func deleteRows(of collection: String, limit: Int) throws -> MigrationBatchResult {
        guard let record = try collectionRecord(collection) else { return MigrationBatchResult(lastKey: nil, rows: 0, finished: true) }
        let (rows, more) = try storedRows(record, collection: collection, after: nil, limit: limit)
        let storage = try writeStorage
        for row in rows {
            try guarded {
                _ = try storage.delete(row.rowKey, in: tables.objects)
                if row.flags & StoredRecord.hasMetadata != 0 { _ = try storage.delete(row.rowKey, in: tables.metadata) }
            }
        }
        if !rows.isEmpty { wholeCollectionRewritten(collection) }
        let lastKey = rows.last.map { row in row.rowKey.withUnsafeBytes { RowKey.key(of: $0) } }
        return MigrationBatchResult(lastKey: lastKey, rows: rows.count, finished: !more)
    }

    private func changeCodec(
        of collection: String, to codec: any Codec, _ convert: (UnsafeRawBufferPointer, any Codec, Bool) throws -> [UInt8]
    ) throws -> MigrationBatchResult {
        guard let record = try collectionRecord(collection), record.codec != codec.name else {
            return MigrationBatchResult(lastKey: nil, rows: 0, finished: true)
        }
        guard let from = Codecs.named(record.codec) else {
            throw MigrationStepRowFailure(collection: collection, key: nil, error: CanopyError(.codecMismatch, "the collection's codec '\(record.codec)' is not a built-in codec"))
        }
        let (rows, _) = try storedRows(record, collection: collection, after: nil, limit: .max)
        let storage = try writeStorage
        for row in rows {
            let key = row.rowKey.withUnsafeBytes { RowKey.key(of: $0) }
            do {
                let object = try row.object.withUnsafeBytes { try convert($0, from, false) }
                let value = object.withUnsafeBytes {
                    StoredRecord.value(hasMetadata: row.flags & StoredRecord.hasMetadata != 0, attachments: row.attachments, object: $0)
                }
                try guarded { try storage.put(value, forKey: row.rowKey, in: tables.objects) }
                if row.flags & StoredRecord.hasMetadata != 0, let metadata = try storage.value(forKey: row.rowKey, in: tables.metadata) {
                    let converted = try metadata.withUnsafeBytes { try convert($0, from, true) }
                    try guarded { try storage.put(converted, forKey: row.rowKey, in: tables.metadata) }
                }
            } catch let error as CanopyError {
                throw error
            } catch {
                throw MigrationStepRowFailure(collection: collection, key: key, error: error)
            }
        }
        wholeCollectionRewritten(collection)
        let updated = CollectionRecord(id: record.id, codec: codec.name)
        try guarded { try tables.collectionsTable.put(updated, forKey: collection, in: storage) }
        // Seen by this transaction at once, and by the caches of this process at commit (not before: a rollback
        // keeps the old codec).
        wroteCollectionRecord(updated, for: collection)
        return MigrationBatchResult(lastKey: rows.last.map { row in row.rowKey.withUnsafeBytes { RowKey.key(of: $0) } }, rows: rows.count, finished: true)
    }

    /// Reports `collection` as rewritten as a whole in this commit (see ``runMigrationBatch(_:after:isFirstBatch:limit:)``).
    private func wholeCollectionRewritten(_ collection: String) {
        cacheState.objectCache.removeAll(inCollection: collection)
        cacheState.metadataCache.removeAll(inCollection: collection)
        changes.removedAll(inCollection: collection)
        didWrite = true
    }
}
