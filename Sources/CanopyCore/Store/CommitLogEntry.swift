/// One entry of the commit log (`canopy.commits`, keyed by snapshot): what the commit changed (its notification, read
/// by other processes' observers and by extensions catching up) and the store's state after it (``StoreState``: the
/// snapshots and every extension's state record), so that the newest entry *is* the store's state and a commit writes
/// the rows' table, the extensions' tables and the log only (format `canopy/6`).
///
/// The one place entries are encoded and decoded. Version 3 (`canopy/6`):
///
/// `3 · snapshot (8 B) · flags (1 B: bit 0 every row removed, bit 1 changes unknown) · varint(extension count) ·
/// (string(extension) · varint(its consistent snapshot))* · varint(state record count) · (string(extension) ·
/// blob(its state record))* · the notification's changes`
///
/// version 2 (`canopy/5`, whose extensions' state records were in `canopy.info`) is the same without the state
/// records, and version 1 (`canopy/4`, no state; entries older than an upgrade): `1 · snapshot (8 B) · removed-all
/// (1 B) · the notification's changes`, where the changes are `3 × (varint(collection count) · (string(collection) ·
/// varint(key count) · string(key)*)*)` (changed objects, changed metadata, removed keys) `· varint(count) ·
/// string(removed collection)* · has-custom-payload (1 B) [· blob] · varint(count) · (string(extension) · blob)*`.
/// Older entries stay as they were written (a reader of notifications takes every version); only the newest entry's
/// state is read, and in a `canopy/6` file it is always version 3 (the upgrade rewrites it).
///
/// *Changes unknown* marks an entry that carries the state but not the commit's changes, which a reader of
/// notifications treats as a gap (reload), never as "nothing changed": the format upgrade's, for a state whose commit
/// the old log no longer held, and a bulk commit's — one that changed more than ``maximumLoggedKeys`` rows.
///
/// Why a bulk commit lists no keys: its list is large (17 bytes a key and more: 1.7 MB for 100,000 rows), written in
/// the commit and freed in one piece when the log is pruned. LMDB reuses a freed page only for a later commit's
/// copies, a commit's worth at a time, each commit adding its own freed pages as one more record of its free list; so
/// after such a free the free list holds hundreds of records for good, two levels deep, and every later small commit
/// writes two pages more (a one-row commit 9 instead of 7: measured with `Benchmarks/InstructionCounts`'
/// `small-write-pages` and `layout-*` workloads). Up to the limit a list takes at most about 300 KB, whose pages, freed,
/// keep the free list within one leaf. Other processes reload after a bigger commit (a view resets above 4,096 changed
/// rows anyway); this process's observers and connections still get the whole notification from memory.
struct CommitLogEntry: Sendable, Hashable {
    /// What the commit changed (its snapshot is the entry's).
    var notification: CommitNotification
    /// The store's state after the commit; `nil` in a version-1 entry (written before `canopy/5`). A version-2 entry's
    /// has no extension state records (they were in `canopy.info`).
    var state: StoreState?
    /// Whether the changes of the commit are unknown (see the type's description).
    var changesUnknown = false

    /// The version this build writes (`canopy/6`).
    static let version: UInt8 = 3
    /// The version of `canopy/5`'s entries (the state without the extensions' state records).
    static let versionWithoutExtensionStates: UInt8 = 2
    /// The most row changes (changed objects, changed metadata and removed keys together) a commit's entry lists; a
    /// commit with more is logged with its state only, its changes unknown (see the type's description).
    static let maximumLoggedKeys = 16_384
    /// The version of `canopy/4`'s entries (a notification without the state).
    static let versionWithoutState: UInt8 = 1

    private static let removedAllFlag: UInt8 = 1
    private static let changesUnknownFlag: UInt8 = 2

    /// The entry's bytes (always version 3; `state` must be present, its snapshot the notification's).
    var encoded: [UInt8] { Self.encode(notification, state: state ?? StoreState(), changesUnknown: changesUnknown) }

    /// The bytes of the entry of `notification` with `state` (version 3).
    static func encode(_ notification: CommitNotification, state: StoreState, changesUnknown: Bool = false) -> [UInt8] {
        let keySets = notification.keySets
        if keySets.keyCount > maximumLoggedKeys && !changesUnknown {
            return encode(CommitNotification(snapshot: notification.snapshot), state: state, changesUnknown: true)
        }
        var out = ByteWriter(capacity: 96)
        out.append(byte: Self.version)
        out.append(bigEndian: notification.snapshot)
        out.append(byte: (notification.removedAll ? Self.removedAllFlag : 0) | (changesUnknown ? Self.changesUnknownFlag : 0))
        // By extension name, not in the dictionaries' order (which differs between processes, and between two
        // dictionaries of the same contents): equal states are equal bytes. (The dictionaries are walked only when
        // they hold something: a store without extensions, the commonest small commit, pays two count bytes.)
        out.append(varint: UInt64(state.extensionSnapshots.count))
        if !state.extensionSnapshots.isEmpty {
            Self.forEachByName(state.extensionSnapshots) { name, snapshot in
                out.append(string: name)
                out.append(varint: snapshot)
            }
        }
        out.append(varint: UInt64(state.extensionStates.count))
        if !state.extensionStates.isEmpty {
            Self.forEachByName(state.extensionStates) { name, record in
                out.append(string: name)
                out.append(blob: record)
            }
        }
        // The keys as the commit's change log holds them (a bulk commit's sets of strings are not built for the
        // bytes); the same bytes as from the sets, but for the order of keys, which is not part of the format.
        for kind in CommitKeySets.Kind.allCases { Self.append(keySets, kind, to: &out) }
        out.append(varint: UInt64(notification.removedCollections.count))
        if notification.removedCollections.count > 1 {
            for collection in notification.removedCollections.sorted() { out.append(string: collection) }
        } else {
            for collection in notification.removedCollections { out.append(string: collection) }
        }
        if let customPayload = notification.customPayload {
            out.append(byte: 1)
            out.append(blob: customPayload)
        } else {
            out.append(byte: 0)
        }
        out.append(varint: UInt64(notification.extensionPayloads.count))
        Self.forEachByName(notification.extensionPayloads) { name, payload in
            out.append(string: name)
            out.append(blob: payload)
        }
        return out.bytes
    }

    /// Calls `body` with the entries of `entries` by ascending name. A store has a few extensions: two are compared
    /// once, up to ``namesWalkedInPlace`` walked again for each next name, allocating nothing. (Counted with
    /// `Benchmarks/InstructionCounts`' `update-2-views-observed`, against the dictionaries' order: sorted copies cost
    /// 2,650 instructions per observed update with two views, 1%; a walk per name 1,650; this 770, 0.3%.)
    static func forEachByName<Value>(_ entries: [String: Value], _ body: (String, Value) -> Void) {
        guard entries.count > 1 else {
            for (name, value) in entries { body(name, value) }
            return
        }
        if entries.count == 2 {  // (two views, the commonest store: one comparison)
            var iterator = entries.makeIterator()
            guard let first = iterator.next(), let second = iterator.next() else { return }
            let (low, high) = first.key < second.key ? (first, second) : (second, first)
            body(low.key, low.value)
            body(high.key, high.value)
            return
        }
        guard entries.count <= namesWalkedInPlace else {
            for (name, value) in entries.sorted(by: { $0.key < $1.key }) { body(name, value) }
            return
        }
        var previous: String?
        for _ in 0..<entries.count {
            var next: (key: String, value: Value)?
            for entry in entries where previous.map({ entry.key > $0 }) ?? true {
                if next.map({ entry.key < $0.key }) ?? true { next = entry }
            }
            guard let next else { return }
            body(next.key, next.value)
            previous = next.key
        }
    }

    /// The most entries ``forEachByName(_:_:)`` orders without sorting a copy.
    static let namesWalkedInPlace = 8

    private static func append(_ keySets: CommitKeySets, _ kind: CommitKeySets.Kind, to out: inout ByteWriter) {
        out.append(varint: UInt64(keySets.partCount(kind)))
        keySets.forEachPart(kind) { part in
            out.append(string: part.collection)
            out.append(varint: UInt64(part.count))
            part.forEach { out.append(string: $0) }
        }
    }

    init(notification: CommitNotification, state: StoreState?, changesUnknown: Bool = false) {
        self.notification = notification
        self.state = state
        self.changesUnknown = changesUnknown
    }

    /// Decodes an entry of either version.
    /// - Throws: ``CanopyError/Code/corruptStore`` when the bytes are malformed; ``CanopyError/Code/incompatibleFormat``
    ///   for a version this build does not read.
    init(decoding bytes: UnsafeRawBufferPointer) throws {
        do {
            var reader = ByteReader(bytes)
            let version = try reader.readByte()
            let snapshot = try reader.readBigEndianUInt64()
            let flags = try reader.readByte()
            switch version {
            case Self.version, Self.versionWithoutExtensionStates:
                self.state = try Self.readState(&reader, snapshot: snapshot, version: version)
                self.changesUnknown = flags & Self.changesUnknownFlag != 0
            case Self.versionWithoutState:
                self.state = nil
            default:
                throw Self.unknownVersion(version)
            }
            let changedObjects = try Self.readMap(&reader)
            let changedMetadata = try Self.readMap(&reader)
            let removedKeys = try Self.readMap(&reader)
            var removedCollections: Set<String> = []
            for _ in 0..<(try reader.readVarint()) { removedCollections.insert(try reader.readString()) }
            let customPayload = try reader.readByte() != 0 ? try reader.readBlob() : nil
            var extensionPayloads: [String: [UInt8]] = [:]
            for _ in 0..<(try reader.readVarint()) {
                let name = try reader.readString()
                extensionPayloads[name] = try reader.readBlob()
            }
            notification = CommitNotification(
                snapshot: snapshot, changedObjects: changedObjects, changedMetadata: changedMetadata, removedKeys: removedKeys,
                removedCollections: removedCollections, removedAll: flags & Self.removedAllFlag != 0, customPayload: customPayload,
                extensionPayloads: extensionPayloads)
        } catch let error as CanopyError {
            throw error
        } catch {
            throw CanopyError(.corruptStore, "a commit log entry is malformed", underlying: error)
        }
    }

    private static func readMap(_ reader: inout ByteReader) throws -> [String: Set<String>] {
        var map: [String: Set<String>] = [:]
        for _ in 0..<(try reader.readVarint()) {
            let collection = try reader.readString()
            let keyCount = try reader.readVarint()
            var keys = Set<String>(minimumCapacity: Int(min(keyCount, 1 << 20)))
            for _ in 0..<keyCount { keys.insert(try reader.readString()) }
            map[collection] = keys
        }
        return map
    }

    /// Reads the state that follows the flags of a version-2 or version-3 entry (`reader` is past the flags).
    private static func readState(_ reader: inout ByteReader, snapshot: UInt64, version: UInt8) throws -> StoreState {
        var state = StoreState()
        state.snapshot = snapshot
        for _ in 0..<(try reader.readVarint()) {
            let name = try reader.readString()
            state.extensionSnapshots[name] = try reader.readVarint()
        }
        guard version == Self.version else { return state }
        for _ in 0..<(try reader.readVarint()) {
            let name = try reader.readString()
            state.extensionStates[name] = try reader.readBlob()
        }
        return state
    }

    private static func unknownVersion(_ version: UInt8) -> CanopyError {
        CanopyError(.incompatibleFormat, "commit log entry has format \(version); this build reads \(Self.versionWithoutState) to \(Self.version)")
    }

    /// The state a version-2 or version-3 entry carries, decoded without its changes; `nil` for a version-1 entry.
    /// - Throws: ``ByteReader/Malformed`` or ``CanopyError/Code/incompatibleFormat`` as ``init(decoding:)``.
    static func state(decoding bytes: UnsafeRawBufferPointer) throws -> StoreState? {
        var reader = ByteReader(bytes)
        let version = try reader.readByte()
        guard version == Self.version || version == Self.versionWithoutExtensionStates else {
            if version == Self.versionWithoutState { return nil }
            throw unknownVersion(version)
        }
        let snapshot = try reader.readBigEndianUInt64()
        _ = try reader.readByte()
        return try readState(&reader, snapshot: snapshot, version: version)
    }

    /// The version of an entry's bytes (its first byte), or `nil` when there are none.
    static func version(of bytes: UnsafeRawBufferPointer) -> UInt8? { bytes.first }

    /// The snapshot of an entry's bytes, read without decoding the rest; `nil` when they are too short.
    static func snapshot(in bytes: UnsafeRawBufferPointer) -> UInt64? {
        guard bytes.count >= 9 else { return nil }
        return bytes.loadBigEndianUInt64(at: 1)
    }
}
