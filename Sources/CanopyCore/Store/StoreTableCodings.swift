import LMDB

// The codings of the store's own tables and `canopy.info` records (``StoreTables``), one per stored form. Decoding
// throws ``TableCodingError`` on malformed bytes; ``StoreTable`` turns it into ``CanopyError/Code/corruptStore``.

/// `canopy.collections` values: the collection's id (4 bytes, big-endian, first-write order), then its codec's name
/// (UTF-8). Fewer than 4 bytes is malformed.
enum CollectionRecordCoding: TableCoding {
    static func withBytes<R>(of value: CollectionRecord, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try value.encoded.withUnsafeBytes(body)
    }

    static func decode(_ bytes: UnsafeRawBufferPointer) throws -> CollectionRecord {
        guard let record = CollectionRecord(decoding: bytes) else {
            throw TableCodingError("a collection record needs at least 4 bytes (its id), found \(bytes.count)")
        }
        return record
    }
}

/// `canopy.commits` values (the change feed's, under longer keys, are read by ``FeedRecord``): a ``CommitLogEntry``.
enum CommitLogEntryCoding: TableCoding {
    static func withBytes<R>(of value: CommitLogEntry, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try value.encoded.withUnsafeBytes(body)
    }

    static func decode(_ bytes: UnsafeRawBufferPointer) throws -> CommitLogEntry {
        try CommitLogEntry(decoding: bytes)
    }
}

/// The `state` record: ``StoreState`` (the snapshot, 8 bytes big-endian, then each extension's consistent snapshot).
enum StoreStateCoding: TableCoding {
    static func withBytes<R>(of value: StoreState, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try value.encoded.withUnsafeBytes(body)
    }

    static func decode(_ bytes: UnsafeRawBufferPointer) throws -> StoreState {
        try StoreState(decoding: bytes)
    }
}

/// The `attachment-slots` record: ``AttachmentSlots`` (the next slot, then (extension, slot) pairs).
enum AttachmentSlotsCoding: TableCoding {
    static func withBytes<R>(of value: AttachmentSlots, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try value.encoded.withUnsafeBytes(body)
    }

    static func decode(_ bytes: UnsafeRawBufferPointer) throws -> AttachmentSlots {
        guard let slots = AttachmentSlots(decoding: bytes) else { throw TableCodingError("the attachment slots do not decode") }
        return slots
    }
}

extension StoreTables {
    /// `canopy.collections`: collection name (UTF-8) → ``CollectionRecord``.
    var collectionsTable: StoreTable<StringUTF8Coding, CollectionRecordCoding> {
        StoreTable(database: collections, name: StoreTableName.collections,
                   remedy: "the collection's rows cannot be read; run `canopy verify` and restore the database from a backup")
    }

    /// `canopy.extensions`: extension name (UTF-8) → its registration record (JSON of ``ExtensionRecord``, decoded by
    /// ``ReadTransaction/decodeExtensionRecord(_:name:)``, which names the extension and says what to do).
    var extensionsTable: StoreTable<StringUTF8Coding, BytesCoding> {
        StoreTable(database: extensions, name: StoreTableName.extensions,
                   remedy: "unregister the extension (dropStorage) and register it again")
    }

    /// `canopy.commits`: snapshot (8 bytes big-endian) → ``CommitLogEntry`` (the change feed's records share the
    /// table under longer keys, read by ``FeedRecord``).
    var commitsTable: StoreTable<UInt64BigEndianCoding, CommitLogEntryCoding> {
        StoreTable(database: commits, name: StoreTableName.commits,
                   remedy: "observers behind this commit reload; run `canopy verify` to see the damage")
    }
}

/// The typed records of `canopy.info` (keys in ``StoreInfoKey``).
enum StoreInfoRecords {
    /// `state` → ``StoreState`` (`canopy/4`; in `canopy/5` the state is the commit log's newest entry, and this
    /// record holds ``StoreTables/movedStateRecord`` after an upgrade).
    static let state = StoreInfoRecord<StoreStateCoding>(
        key: StoreInfoKey.state, what: "the store's state record",
        remedy: "run `canopy verify` on the database and restore it from a backup")
    /// `attachment-slots` → ``AttachmentSlots``.
    static let attachmentSlots = StoreInfoRecord<AttachmentSlotsCoding>(
        key: StoreInfoKey.attachmentSlots, what: "the attachment-slots record",
        remedy: "run `canopy verify` on the database and restore it from a backup")
    /// `feed` → the snapshot the change feed was enabled at (8 bytes big-endian).
    static let changeFeed = StoreInfoRecord<UInt64BigEndianCoding>(
        key: StoreInfoKey.changeFeed, what: "the change feed's record",
        remedy: "disable the change feed and enable it again (`canopy changes DIR --enable`)")

    /// `ext.<name>.state` → an extension's state record (its own bytes), in `canopy/4` and `canopy/5` files; since
    /// `canopy/6` the records are part of the state (``StoreState/extensionStates``).
    static func extensionState(of name: String) -> StoreInfoRecord<BytesCoding> {
        StoreInfoRecord(extensionStateOf: name, key: StoreInfoKey.extensionState(of: name),
                        remedy: "unregister the extension (dropStorage) and register it again")
    }
}
