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
        /// The one existing row changed in the collection while nothing else was (the sets and lists above empty),
        /// and what of it changed: kept without a hash, so that a one-row commit builds no hashed set (an allocation,
        /// a hash and an insertion, then its release with the notification). Any other change of the collection
        /// moves it into the sets first (``hashSingle()``).
        var single: (key: String, object: Bool, metadata: Bool)?

        var isEmpty: Bool { objects.isEmpty && metadata.isEmpty && removed.isEmpty && created.isEmpty && single == nil }

        /// Whether a change of an existing row may be kept as ``single``: nothing else of the collection is logged.
        var takesSingle: Bool { objects.isEmpty && metadata.isEmpty && removed.isEmpty && created.isEmpty }

        /// Moves ``single`` into the sets (before any other change: the sets and lists must hold each key once).
        mutating func hashSingle() {
            guard let single else { return }
            self.single = nil
            if single.object { objects.insert(CacheKey(single.key)) }
            if single.metadata { metadata.insert(CacheKey(single.key)) }
        }

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

    /// The first collection written, kept inline (a commit usually writes one: its name and changes would otherwise
    /// be two arrays allocated and freed per commit); the others in ``names`` and ``entries``, slot `i` at `i - 1`.
    private var firstName: String?
    private var first = Changes()
    private var names: [String] = []
    private var entries: [Changes] = []
    private var slots: [String: Int] = [:]
    private var last = -1
    private(set) var removedCollections: Set<String> = []
    private(set) var removedAll = false

    var isEmpty: Bool {
        removedCollections.isEmpty && !removedAll && first.isEmpty && entries.allSatisfy(\.isEmpty)
    }

    /// Calls `body` with the changes of slot `slot` (0: the first collection's, inline), in place.
    @inline(__always)
    private mutating func withChanges<R>(_ slot: Int, _ body: (inout Changes) -> R) -> R {
        slot == 0 ? body(&first) : body(&entries[slot - 1])
    }

    /// The name of the collection of slot `slot`.
    private func name(ofSlot slot: Int) -> String? {
        slot == 0 ? firstName : names[slot - 1]
    }

    /// The index of `collection`'s changes, added when needed.
    @inline(__always)
    private mutating func slot(_ collection: String) -> Int {
        if last >= 0, name(ofSlot: last) == collection { return last }
        return otherSlot(collection)
    }

    /// ``slot(_:)`` for a collection other than the last one: the few first collections by comparing names (a commit
    /// usually writes one or two, and a dictionary would be allocated, filled and freed for each), more through the
    /// index.
    private mutating func otherSlot(_ collection: String) -> Int {
        guard let firstName else {
            firstName = collection
            last = 0
            return 0
        }
        if firstName == collection {
            last = 0
            return 0
        }
        if names.count < Self.scannedCollections {
            for index in names.indices where names[index] == collection {
                last = index + 1
                return last
            }
        } else if let slot = slots[collection] {
            last = slot
            return slot
        }
        names.append(collection)
        entries.append(Changes())
        last = names.count
        if names.count >= Self.scannedCollections {
            if slots.isEmpty { for index in names.indices { slots[names[index]] = index + 1 } } else { slots[collection] = last }
        }
        return last
    }

    /// How many collections are found by comparing names before the index is built.
    private static let scannedCollections = 8

    /// Records a row that did not exist before this write (`metadata`: it was written with metadata).
    mutating func created(_ key: String, in collection: String, metadata: Bool) {
        let slot = slot(collection)
        // A key removed earlier in the transaction is in `removed`: it goes through the sets, which take it out.
        let listed = withChanges(slot) { changes in
            guard changes.removed.isEmpty else { return false }
            changes.created.append(key)
            if metadata { changes.createdWithMetadata.append(key) }
            return true
        }
        if !listed { changed(key, in: collection, object: true, metadata: metadata) }
    }

    mutating func changed(_ key: String, in collection: String, object: Bool, metadata: Bool) {
        // A change of neither part logs nothing: kept as a row, it would make the log count as non-empty (and hold
        // extensions' snapshots back) while listing no key.
        guard object || metadata else { return }
        withChanges(slot(collection)) { changes in
            if let single = changes.single {
                if single.key == key {
                    changes.single = (key, single.object || object, single.metadata || metadata)
                    return
                }
                changes.hashSingle()
            } else if changes.takesSingle {
                changes.single = (key, object, metadata)
                return
            }
            let key = CacheKey(key)
            if object { changes.objects.insert(key) }
            if metadata { changes.metadata.insert(key) }
            if !changes.removed.isEmpty { changes.removed.remove(key) }
        }
    }

    mutating func removed(_ key: String, in collection: String) {
        withChanges(slot(collection)) { changes in
            changes.hashSingle()
            changes.hashCreated()
            let key = CacheKey(key)
            changes.objects.remove(key)
            changes.metadata.remove(key)
            changes.removed.insert(key)
        }
    }

    mutating func removedAll(inCollection collection: String) {
        withChanges(slot(collection)) { $0 = Changes() }
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
        guard let firstName else { return logged }
        func add(_ changes: borrowing Changes, _ name: String) {
            func part(_ listed: [String], _ single: String?, _ hashed: Set<CacheKey>) -> CommitKeySets.LoggedKeys {
                guard !listed.isEmpty, !hashed.isEmpty else {
                    return CommitKeySets.LoggedKeys(collection: name, listed: listed, single: single, hashed: hashed)
                }
                return CommitKeySets.LoggedKeys(collection: name, listed: listed.filter { !hashed.contains(CacheKey($0)) }, single: single, hashed: hashed)
            }
            let objects = part(changes.created, changes.single.flatMap { $0.object ? $0.key : nil }, changes.objects)
            let metadata = part(changes.createdWithMetadata, changes.single.flatMap { $0.metadata ? $0.key : nil }, changes.metadata)
            if !objects.isEmpty { logged.changedObjects.append(objects) }
            if !metadata.isEmpty { logged.changedMetadata.append(metadata) }
            if !changes.removed.isEmpty { logged.removedKeys.append(CommitKeySets.LoggedKeys(collection: name, listed: [], hashed: changes.removed)) }
        }
        add(first, firstName)
        for index in entries.indices { add(entries[index], names[index]) }
        return logged
    }

    /// The commit's notification. (`mutating` only so that the transaction's log is read where it is stored, not copied
    /// out of the transaction object first: a retain and a release of each of its arrays and sets.)
    mutating func notification(snapshot: UInt64, customPayload: [UInt8]?, extensionPayloads: [String: ExtensionPayload]) -> CommitNotification {
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
