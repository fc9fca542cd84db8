/// What a write transaction changed so far, consolidated per key: the raw material of its ``CommitNotification``.
///
/// Kept per collection (the collection written last is found by one string comparison, others through a small
/// index), with keys as ``CacheKey``s: a write hashes its key once with the short hash, sets grow by rehashing stored
/// hashes rather than strings. A row the transaction creates (it did not exist when written) is only appended to a
/// list, without a hash: it cannot be in the log already (a row leaves the log's lists only by a removal, which moves
/// the lists into the sets first), so a bulk insert keeps no hashed set of 100,000 keys. The notification takes the
/// lists and sets as they are (``CommitKeySets``): its sets of strings are built only if someone asks for them.
struct ChangeLog {
    private struct Changes {
        var objects: Set<CacheKey> = []
        var metadata: Set<CacheKey> = []
        var removed: Set<CacheKey> = []
        /// Keys of rows created by this transaction, in none of the sets above, each once (all of them changed their
        /// object; ``createdWithMetadata`` those that also have metadata).
        var created: [String] = []
        var createdWithMetadata: [String] = []

        var isEmpty: Bool { objects.isEmpty && metadata.isEmpty && removed.isEmpty && created.isEmpty }

        /// Moves the created rows' keys into the sets (before a removal, which must find them there).
        mutating func hashCreated() {
            guard !created.isEmpty else { return }
            objects.reserveCapacity(objects.count + created.count)
            for key in created { objects.insert(CacheKey(key)) }
            for key in createdWithMetadata { metadata.insert(CacheKey(key)) }
            created = []
            createdWithMetadata = []
        }
    }

    private var names: [String] = []
    private var entries: [Changes] = []
    private var slots: [String: Int] = [:]
    private var last = -1
    private(set) var removedCollections: Set<String> = []
    private(set) var removedAll = false

    var isEmpty: Bool {
        removedCollections.isEmpty && !removedAll && entries.allSatisfy(\.isEmpty)
    }

    /// The index of `collection`'s changes, added when needed.
    @inline(__always)
    private mutating func slot(_ collection: String) -> Int {
        if last >= 0, names[last] == collection { return last }
        return otherSlot(collection)
    }

    /// ``slot(_:)`` for a collection other than the last one: the few first collections by comparing names (a commit
    /// usually writes one or two, and a dictionary would be allocated, filled and freed for each), more through the
    /// index.
    private mutating func otherSlot(_ collection: String) -> Int {
        if names.count <= Self.scannedCollections {
            for index in names.indices where names[index] == collection {
                last = index
                return index
            }
        } else if let slot = slots[collection] {
            last = slot
            return slot
        }
        names.append(collection)
        entries.append(Changes())
        last = names.count - 1
        if names.count > Self.scannedCollections {
            if slots.isEmpty { for index in names.indices { slots[names[index]] = index } } else { slots[collection] = last }
        }
        return last
    }

    /// How many collections are found by comparing names before the index is built.
    private static let scannedCollections = 8

    /// Records a row that did not exist before this write (`metadata`: it was written with metadata).
    mutating func created(_ key: String, in collection: String, metadata: Bool) {
        let slot = slot(collection)
        // A key removed earlier in the transaction is in `removed`: it goes through the sets, which take it out.
        guard entries[slot].removed.isEmpty else {
            changed(key, in: collection, object: true, metadata: metadata)
            return
        }
        entries[slot].created.append(key)
        if metadata { entries[slot].createdWithMetadata.append(key) }
    }

    mutating func changed(_ key: String, in collection: String, object: Bool, metadata: Bool) {
        let slot = slot(collection)
        let key = CacheKey(key)
        if object { entries[slot].objects.insert(key) }
        if metadata { entries[slot].metadata.insert(key) }
        if !entries[slot].removed.isEmpty { entries[slot].removed.remove(key) }
    }

    mutating func removed(_ key: String, in collection: String) {
        let slot = slot(collection)
        entries[slot].hashCreated()
        let key = CacheKey(key)
        entries[slot].objects.remove(key)
        entries[slot].metadata.remove(key)
        entries[slot].removed.insert(key)
    }

    mutating func removedAll(inCollection collection: String) {
        entries[slot(collection)] = Changes()
        removedCollections.insert(collection)
    }

    mutating func removedEverything() {
        self = ChangeLog()
        removedAll = true
    }

    /// The changed objects', changed metadata's and removed keys by collection (collections without any left out), as
    /// the log holds them. A key created and then changed again is in a list and a set: it is taken out of the list
    /// (one pass over the list, only in that case), so that every key is given once.
    private func loggedKeys() -> CommitKeySets.Logged {
        var logged = CommitKeySets.Logged()
        for slot in entries.indices {
            let changes = entries[slot]
            let name = names[slot]
            func part(_ listed: [String], _ hashed: Set<CacheKey>) -> CommitKeySets.LoggedKeys {
                guard !listed.isEmpty, !hashed.isEmpty else { return CommitKeySets.LoggedKeys(collection: name, listed: listed, hashed: hashed) }
                return CommitKeySets.LoggedKeys(collection: name, listed: listed.filter { !hashed.contains(CacheKey($0)) }, hashed: hashed)
            }
            let objects = part(changes.created, changes.objects)
            let metadata = part(changes.createdWithMetadata, changes.metadata)
            if !objects.isEmpty { logged.changedObjects.append(objects) }
            if !metadata.isEmpty { logged.changedMetadata.append(metadata) }
            if !changes.removed.isEmpty { logged.removedKeys.append(CommitKeySets.LoggedKeys(collection: name, listed: [], hashed: changes.removed)) }
        }
        return logged
    }

    func notification(snapshot: UInt64, customPayload: [UInt8]?, extensionPayloads: [String: ExtensionPayload]) -> CommitNotification {
        var bytes: [String: [UInt8]] = [:]
        var typed = TypedExtensionChanges()
        if !extensionPayloads.isEmpty {
            bytes.reserveCapacity(extensionPayloads.count)
            for (name, payload) in extensionPayloads {
                bytes[name] = payload.bytes
                if let value = payload.value { typed.values[name] = value }
            }
        }
        var notification = CommitNotification(
            snapshot: snapshot, keySets: CommitKeySets(logged: loggedKeys()), removedCollections: removedCollections,
            removedAll: removedAll, customPayload: customPayload, extensionPayloads: bytes)
        notification.typedExtensionChanges = typed
        return notification
    }
}
