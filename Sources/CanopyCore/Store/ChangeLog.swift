/// What a write transaction changed so far, consolidated per key: the raw material of its ``CommitNotification``.
struct ChangeLog {
    var changedObjects: [String: Set<String>] = [:]
    var changedMetadata: [String: Set<String>] = [:]
    var removedKeys: [String: Set<String>] = [:]
    var removedCollections: Set<String> = []
    var removedAll = false

    var isEmpty: Bool {
        changedObjects.isEmpty && changedMetadata.isEmpty && removedKeys.isEmpty && removedCollections.isEmpty && !removedAll
    }

    mutating func changed(_ key: String, in collection: String, object: Bool, metadata: Bool) {
        if object { changedObjects[collection, default: []].insert(key) }
        if metadata { changedMetadata[collection, default: []].insert(key) }
        if removedKeys[collection]?.remove(key) != nil, removedKeys[collection]?.isEmpty == true {
            removedKeys[collection] = nil
        }
    }

    mutating func removed(_ key: String, in collection: String) {
        changedObjects[collection]?.remove(key)
        if changedObjects[collection]?.isEmpty == true { changedObjects[collection] = nil }
        changedMetadata[collection]?.remove(key)
        if changedMetadata[collection]?.isEmpty == true { changedMetadata[collection] = nil }
        removedKeys[collection, default: []].insert(key)
    }

    mutating func removedAll(inCollection collection: String) {
        changedObjects[collection] = nil
        changedMetadata[collection] = nil
        removedKeys[collection] = nil
        removedCollections.insert(collection)
    }

    mutating func removedEverything() {
        self = ChangeLog()
        removedAll = true
    }

    func notification(snapshot: UInt64, customPayload: [UInt8]?, extensionPayloads: [String: [UInt8]]) -> CommitNotification {
        CommitNotification(
            snapshot: snapshot, changedObjects: changedObjects, changedMetadata: changedMetadata, removedKeys: removedKeys,
            removedCollections: removedCollections, removedAll: removedAll, customPayload: customPayload,
            extensionPayloads: extensionPayloads)
    }
}
