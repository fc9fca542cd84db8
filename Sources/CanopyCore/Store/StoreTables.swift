import LMDB

/// The LMDB databases the store keeps its rows and records in.
///
/// - `canopy.info`: `format` → format tag; the other records listed in ``StoreInfoKey``.
/// - `canopy.collections`: collection name → ``CollectionRecord`` (numeric id, codec name).
/// - `canopy.objects`: row key → one flag byte (bit 0: has metadata) + the object's bytes.
/// - `canopy.metadata`: row key → the metadata's bytes.
/// - `canopy.commits`: snapshot (8 bytes big-endian) → a ``CommitLogEntry``: the commit's notification and the store's
///   state after it (``StoreState``), so that the newest entry is the store's state (format `canopy/5`).
/// - `canopy.extensions`: extension name → its registration record (JSON).
///
/// A row key is the collection's 4-byte big-endian id followed by the key's UTF-8 bytes, so the rows of one collection
/// are contiguous and ordered by key.
///
/// Every value of these tables and of the extensions' tables (`ext.<name>.<table>`) carries a CRC32C trailer
/// (since format `canopy/4`; LMDB's ``LMDB/ValueChecksum``), written and checked by the handles below: a changed byte
/// reads as ``CanopyError/Code/corruptStore``, never as a wrong value. The format record is read as stored, trailer or
/// not: it says whether the others have one (``FormatUpgrade`` adds them to a `canopy/3` file).
///
/// Until `canopy/4` the state was a record of its own in `canopy.info` (`state`), which every commit rewrote: one more
/// B-tree dirtied per commit (its page, and its root's record in LMDB's main table). A read-only open of a `canopy/4`
/// file reads it there (``stateInCommitLog`` is `false`); a read-write open upgrades the file (``FormatUpgrade``).
struct StoreTables: Sendable {
    let info: LMDB.Database
    let collections: LMDB.Database
    let objects: LMDB.Database
    let metadata: LMDB.Database
    let commits: LMDB.Database
    let extensions: LMDB.Database
    /// Whether the store's state is the newest commit-log entry (`canopy/5`), or the `state` record of `canopy.info`
    /// (a `canopy/4` file opened read-only, which this build reads as it is).
    var stateInCommitLog = true

    /// The format this build writes and reads.
    static let formatTag = "canopy/5"
    /// The format of a store opened without value checksums (``DatabaseOptions/valueChecksums``, for measuring their
    /// cost): `canopy/5` without the trailers. Each kind of open refuses the other's files (`incompatibleFormat`), so
    /// a trailer is never read as data nor data as a damaged trailer.
    static let uncheckedFormatTag = "canopy/5-without-checksums"
    /// The previous format, whose state is a record of `canopy.info`: read as it is by a read-only open, upgraded in
    /// place by a read-write one (``FormatUpgrade``).
    static let previousFormatTag = "canopy/4"
    /// ``previousFormatTag`` without checksums.
    static let previousUncheckedFormatTag = "canopy/4-without-checksums"

    /// Whether the tables' values carry checksums (they do unless the database was opened without them).
    var checksummed: Bool { info.checksummed }
    /// The format tag of a store of these tables.
    var expectedFormatTag: String {
        stateInCommitLog ? (checksummed ? Self.formatTag : Self.uncheckedFormatTag)
            : (checksummed ? Self.previousFormatTag : Self.previousUncheckedFormatTag)
    }
    /// The format of the previous release with the checksum mode of these tables (upgraded in place by a read-write
    /// open, read as it is by a read-only one).
    var previousFormatTag: String { checksummed ? Self.previousFormatTag : Self.previousUncheckedFormatTag }
    /// The format before checksums, which a read-write open upgrades in place (see ``FormatUpgrade``).
    static let upgradableFormatTag = "canopy/3"

    static func open(in txn: LMDB.ReadTransaction, create: Bool) throws -> StoreTables {
        let flags: LMDB.Database.Flags = create ? [.create] : []
        return StoreTables(
            info: try txn.openDatabase(named: StoreTableName.info, flags: flags, checksummed: true),
            collections: try txn.openDatabase(named: StoreTableName.collections, flags: flags, checksummed: true),
            objects: try txn.openDatabase(named: StoreTableName.objects, flags: flags, checksummed: true),
            metadata: try txn.openDatabase(named: StoreTableName.metadata, flags: flags, checksummed: true),
            commits: try txn.openDatabase(named: StoreTableName.commits, flags: flags, checksummed: true),
            extensions: try txn.openDatabase(named: StoreTableName.extensions, flags: flags, checksummed: true))
    }

    /// The format record, or `nil` when there is none. Read as stored, since it says whether values carry checksums:
    /// with a valid trailer it is `canopy/4` or later; without, an earlier format (or a damaged record, which then
    /// reads as an unknown format).
    func format(in txn: LMDB.ReadTransaction) throws -> String? {
        try txn.withValue(forKey: StoreInfoKey.format, in: info.withoutChecksums) { stored in
            guard let stored else { return nil }
            let tag = StoreInfoKey.format.withUnsafeBytes { key in ValueChecksum.payload(of: stored, key: key) } ?? stored
            return String(decoding: tag, as: UTF8.self)
        }
    }

    /// Writes this build's format record (with its checksum, as every value of `canopy.info`).
    func writeFormat(in txn: LMDB.WriteTransaction) throws {
        try txn.put(Array(expectedFormatTag.utf8), forKey: StoreInfoKey.format, in: info)
    }
}

/// A collection's numeric id and codec, as recorded in `canopy.collections`.
struct CollectionRecord: Sendable, Hashable {
    var id: UInt32
    var codec: String

    var encoded: [UInt8] {
        var bytes = withUnsafeBytes(of: id.bigEndian) { Array($0) }
        bytes.append(contentsOf: codec.utf8)
        return bytes
    }

    init(id: UInt32, codec: String) {
        self.id = id
        self.codec = codec
    }

    init?(decoding bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= 4 else { return nil }
        id = bytes.loadBigEndianUInt32(at: 0)
        codec = String(decoding: bytes[4...], as: UTF8.self)
    }
}

/// The store's persisted state: the snapshot number and, per extension, the snapshot it is consistent with.
///
/// Written by every committing transaction (in its commit-log entry, ``CommitLogEntry``), so that an extension which
/// was not registered while others wrote is detected (its snapshot lags the store's) and rebuilt. ``encoded`` is the
/// form of the `canopy/4` record in `canopy.info`, read from files of that format and moved by the upgrade.
struct StoreState: Sendable, Hashable {
    var snapshot: UInt64 = 0
    var extensionSnapshots: [String: UInt64] = [:]

    var encoded: [UInt8] {
        var out = ByteWriter()
        out.append(bigEndian: snapshot)
        out.append(bigEndian: UInt32(extensionSnapshots.count))
        for (name, snapshot) in extensionSnapshots.sorted(by: { $0.key < $1.key }) {
            out.append(string: name)
            out.append(bigEndian: snapshot)
        }
        return out.bytes
    }

    init() {}

    init(decoding bytes: UnsafeRawBufferPointer) throws {
        var reader = ByteReader(bytes)
        snapshot = try reader.readBigEndianUInt64()
        if reader.isAtEnd { return }
        let count = try reader.readBigEndianUInt32()
        for _ in 0..<count {
            let name = try reader.readString()
            extensionSnapshots[name] = try reader.readBigEndianUInt64()
        }
    }

    /// Reads only the snapshot number (the first 8 bytes) without decoding the rest.
    static func snapshot(in bytes: UnsafeRawBufferPointer) -> UInt64? {
        guard bytes.count >= 8 else { return nil }
        return bytes.loadBigEndianUInt64(at: 0)
    }
}

/// Row keys: the collection id followed by the key's UTF-8 bytes.
enum RowKey {
    /// Calls `body` with the row key of (`collectionID`, `key`), built on the stack.
    /// - Throws: ``CanopyError/Code/keyTooLong`` when the key does not fit LMDB's key size.
    @inline(__always)
    static func with<R>(
        collectionID: UInt32, key: String, maxKeySize: Int, collection: String,
        _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R {
        // The key's bytes in place (a native string's, without the copy that `withUTF8` on a `var` makes: a retain
        // and a release per read), else through `withUTF8`.
        if let built = try key.utf8.withContiguousStorageIfAvailable({ utf8 in
            try with(collectionID: collectionID, utf8: utf8, maxKeySize: maxKeySize, collection: collection, body)
        }) {
            return built
        }
        var key = key
        return try key.withUTF8 { utf8 in try with(collectionID: collectionID, utf8: utf8, maxKeySize: maxKeySize, collection: collection, body) }
    }

    /// ``with(collectionID:key:maxKeySize:collection:_:)`` from the key's UTF-8 bytes.
    @inline(__always)
    private static func with<R>(
        collectionID: UInt32, utf8: UnsafeBufferPointer<UInt8>, maxKeySize: Int, collection: String,
        _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R {
        let length = 4 + utf8.count
        guard length <= maxKeySize else {
            throw CanopyError(
                .keyTooLong,
                "the key is \(utf8.count) bytes of UTF-8; keys can be at most \(maxKeySize - 4) bytes",
                collection: collection, key: String(decoding: utf8.prefix(64), as: UTF8.self) + "…")
        }
        return try withUnsafeTemporaryAllocation(byteCount: length, alignment: 1) { buffer in
            buffer.storeBytes(of: collectionID.bigEndian, toByteOffset: 0, as: UInt32.self)
            if utf8.count > 0, let base = utf8.baseAddress, let destination = buffer.baseAddress {
                (destination + 4).copyMemory(from: base, byteCount: utf8.count)
            }
            return try body(UnsafeRawBufferPointer(buffer))
        }
    }

    /// The 4-byte prefix of a collection's rows.
    static func prefix(collectionID: UInt32) -> [UInt8] {
        withUnsafeBytes(of: collectionID.bigEndian) { Array($0) }
    }

    /// The key part of a row key.
    static func key(of rowKey: UnsafeRawBufferPointer) -> String {
        // (Rebasing a slice, not `dropFirst`: that is the generic `Collection` method, unspecialized, on every row
        // of a scan.)
        guard rowKey.count > 4 else { return "" }
        return String(decoding: UnsafeRawBufferPointer(rebasing: rowKey[4...]), as: UTF8.self)
    }

    /// Sets `key` to ``key(of:)``, in the storage `key` holds when nothing else holds it
    /// (``NativeASCIIString/assign(_:decoding:)``): a keyed scan's key for the next row, when its closure kept none.
    @inline(__always)
    static func assignKey(_ key: inout String, of rowKey: UnsafeRawBufferPointer) {
        guard rowKey.count > 4 else {
            key = ""
            return
        }
        NativeASCIIString.assign(&key, decoding: UnsafeRawBufferPointer(rebasing: rowKey[4...]))
    }

    /// The collection id of a row key.
    static func collectionID(of rowKey: UnsafeRawBufferPointer) -> UInt32? {
        rowKey.count >= 4 ? rowKey.loadBigEndianUInt32(at: 0) : nil
    }
}

/// Snapshot numbers as LMDB keys (8 bytes big-endian, so they sort numerically).
enum SnapshotKey {
    static func bytes(_ snapshot: UInt64) -> [UInt8] {
        withUnsafeBytes(of: snapshot.bigEndian) { Array($0) }
    }
}
