/// What one committed read-write transaction changed, delivered to every observer after the commit.
///
/// Keys are grouped by collection. A key appears in at most one of ``removedKeys`` and the changed sets: a key set and
/// then removed in one transaction is only removed; a key removed and then set again is only changed.
/// ``removedCollections`` and ``removedAll`` are applied before the per-key sets (a collection emptied and then
/// written to lists both).
public struct CommitNotification: Sendable, Hashable {
    /// The snapshot the commit produced.
    public var snapshot: UInt64
    /// Keys whose object was set, replaced or touched, by collection.
    public var changedObjects: [String: Set<String>]
    /// Keys whose metadata was set, replaced, removed or touched, by collection.
    public var changedMetadata: [String: Set<String>]
    /// Keys that were removed, by collection.
    public var removedKeys: [String: Set<String>]
    /// Collections all of whose keys were removed.
    public var removedCollections: Set<String>
    /// Whether every row of every collection was removed.
    public var removedAll: Bool
    /// The bytes the writer attached with ``ReadWriteTransaction/customPayload``, if any.
    public var customPayload: [UInt8]?
    /// What each extension (such as a view) added to the notification, by extension name, as bytes (see
    /// ``extensionChange(named:coding:)`` for the typed value).
    public var extensionPayloads: [String: [UInt8]]
    /// The typed values behind ``extensionPayloads`` of a commit made in this process.
    var typedExtensionChanges = TypedExtensionChanges()

    /// Creates a notification.
    public init(
        snapshot: UInt64, changedObjects: [String: Set<String>] = [:], changedMetadata: [String: Set<String>] = [:],
        removedKeys: [String: Set<String>] = [:], removedCollections: Set<String> = [], removedAll: Bool = false,
        customPayload: [UInt8]? = nil, extensionPayloads: [String: [UInt8]] = [:]
    ) {
        self.snapshot = snapshot
        self.changedObjects = changedObjects
        self.changedMetadata = changedMetadata
        self.removedKeys = removedKeys
        self.removedCollections = removedCollections
        self.removedAll = removedAll
        self.customPayload = customPayload
        self.extensionPayloads = extensionPayloads
    }

    /// Whether the commit may have changed the object of (`collection`, `key`) — set, replaced, touched or removed.
    public func objectMayHaveChanged(forKey key: String, in collection: String) -> Bool {
        removedAll || removedCollections.contains(collection)
            || changedObjects[collection]?.contains(key) == true || removedKeys[collection]?.contains(key) == true
    }

    /// Whether the commit may have changed the metadata of (`collection`, `key`).
    public func metadataMayHaveChanged(forKey key: String, in collection: String) -> Bool {
        removedAll || removedCollections.contains(collection)
            || changedMetadata[collection]?.contains(key) == true || removedKeys[collection]?.contains(key) == true
    }

    /// Whether the commit touched `collection` at all.
    public func changedCollection(_ collection: String) -> Bool {
        removedAll || removedCollections.contains(collection) || changedObjects[collection] != nil
            || changedMetadata[collection] != nil || removedKeys[collection] != nil
    }

    /// Whether nothing is recorded (no row change, no payload).
    public var isEmpty: Bool {
        changedObjects.isEmpty && changedMetadata.isEmpty && removedKeys.isEmpty && removedCollections.isEmpty
            && !removedAll && customPayload == nil && extensionPayloads.isEmpty
    }
}

extension CommitNotification {
    /// Decodes the notification of a persisted commit-log entry (``CommitLogEntry``, either version).
    /// - Throws: ``CanopyError/Code/corruptStore`` when the bytes are malformed; ``CanopyError/Code/incompatibleFormat``
    ///   for an entry version this build does not read.
    init(decoding bytes: UnsafeRawBufferPointer) throws {
        self = try CommitLogEntry(decoding: bytes).notification
    }
}
