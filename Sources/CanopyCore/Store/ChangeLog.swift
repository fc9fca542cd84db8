/// What a write transaction changed so far, consolidated per key: the raw material of its ``CommitNotification``.
///
/// Kept per collection (the collection written last is found by one string comparison, others through a small
/// index), with keys as ``CacheKey``s: a write hashes its key once with the short hash, sets grow by rehashing stored
/// hashes rather than strings, and the notification's sets of strings are built once, at their final size, at commit.
struct ChangeLog {
    private struct Changes {
        var objects: Set<CacheKey> = []
        var metadata: Set<CacheKey> = []
        var removed: Set<CacheKey> = []

        var isEmpty: Bool { objects.isEmpty && metadata.isEmpty && removed.isEmpty }
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

    mutating func changed(_ key: String, in collection: String, object: Bool, metadata: Bool) {
        let slot = slot(collection)
        let key = CacheKey(key)
        if object { entries[slot].objects.insert(key) }
        if metadata { entries[slot].metadata.insert(key) }
        if !entries[slot].removed.isEmpty { entries[slot].removed.remove(key) }
    }

    mutating func removed(_ key: String, in collection: String) {
        let slot = slot(collection)
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

    /// The changed objects', changed metadata's and removed keys by collection (collections without any left out),
    /// built in one pass over the collections written. (Set by set, not through a key path: projecting a key path and
    /// instantiating its generic metadata cost more than building the sets of a one-row commit.)
    ///
    /// A collection whose changed objects and changed metadata are the same keys (every `set` changes both) shares one
    /// set of strings between the two maps (copy on write): built and hashed once. (The maps are not created with a
    /// minimum capacity: that initializer is not specialized, and cost more than the growth it saves.)
    private func keyStrings() -> (objects: [String: Set<String>], metadata: [String: Set<String>], removed: [String: Set<String>]) {
        var objects: [String: Set<String>] = [:]
        var metadata: [String: Set<String>] = [:]
        var removed: [String: Set<String>] = [:]
        for slot in entries.indices {
            let changes = entries[slot]
            var objectStrings: Set<String>?
            if !changes.objects.isEmpty {
                let strings = Self.strings(changes.objects)
                objects[names[slot]] = strings
                objectStrings = strings
            }
            if !changes.metadata.isEmpty {
                if let objectStrings, changes.metadata == changes.objects {
                    metadata[names[slot]] = objectStrings
                } else {
                    metadata[names[slot]] = Self.strings(changes.metadata)
                }
            }
            if !changes.removed.isEmpty { removed[names[slot]] = Self.strings(changes.removed) }
        }
        return (objects, metadata, removed)
    }

    private static func strings(_ keys: Set<CacheKey>) -> Set<String> {
        // One key (a one-row commit) without `init(minimumCapacity:)`, which is not specialized: an empty set grows
        // to hold it.
        var set: Set<String> = keys.count == 1 ? [] : Set(minimumCapacity: keys.count)
        for key in keys { set.insert(key.key) }
        return set
    }

    func notification(snapshot: UInt64, customPayload: [UInt8]?, extensionPayloads: [String: ExtensionPayload]) -> CommitNotification {
        let (objects, metadata, removed) = keyStrings()
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
            snapshot: snapshot, changedObjects: objects, changedMetadata: metadata, removedKeys: removed,
            removedCollections: removedCollections, removedAll: removedAll, customPayload: customPayload,
            extensionPayloads: bytes)
        notification.typedExtensionChanges = typed
        return notification
    }
}
