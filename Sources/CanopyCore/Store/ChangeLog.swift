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
        if let slot = slots[collection] {
            last = slot
            return slot
        }
        names.append(collection)
        entries.append(Changes())
        last = names.count - 1
        slots[collection] = last
        return last
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

    /// The changed objects' keys by collection (collections without any left out).
    var changedObjects: [String: Set<String>] { strings(\.objects) }
    /// The changed metadata's keys by collection.
    var changedMetadata: [String: Set<String>] { strings(\.metadata) }
    /// The removed keys by collection.
    var removedKeys: [String: Set<String>] { strings(\.removed) }

    private func strings(_ keys: KeyPath<Changes, Set<CacheKey>>) -> [String: Set<String>] {
        var result: [String: Set<String>] = [:]
        for (slot, name) in names.enumerated() where !entries[slot][keyPath: keys].isEmpty {
            var set = Set<String>(minimumCapacity: entries[slot][keyPath: keys].count)
            for key in entries[slot][keyPath: keys] { set.insert(key.key) }
            result[name] = set
        }
        return result
    }

    func notification(snapshot: UInt64, customPayload: [UInt8]?, extensionPayloads: [String: ExtensionPayload]) -> CommitNotification {
        var notification = CommitNotification(
            snapshot: snapshot, changedObjects: changedObjects, changedMetadata: changedMetadata, removedKeys: removedKeys,
            removedCollections: removedCollections, removedAll: removedAll, customPayload: customPayload,
            extensionPayloads: extensionPayloads.mapValues(\.bytes))
        for (name, payload) in extensionPayloads {
            if let value = payload.value { notification.typedExtensionChanges.values[name] = value }
        }
        return notification
    }
}
