import CanopyCore
import Synchronization

/// A secondary index: the rows of some collections by a value computed from each row, with lookups by value and by
/// range of values.
///
/// It is an extension built only on CanopyCore's public extension interface (typed tables, the row scan, written
/// rows), as views are, and is kept up to date inside every write transaction. Its tables:
///
/// - `entries`: escaped value bytes + the row's stored key → nothing. The escaping (each 0x00 byte of the value
///   becomes 0x00 0xFF, and 0x00 0x00 ends it) keeps entries in value order, then row order, for values of any
///   length, so a range lookup is one cursor walk.
/// - `rows`: the row's stored key → its escaped value, to find the old entry when the row changes or goes.
///
/// ```swift
/// let byDue = SecondaryIndex<Int64OrderedCoding>.byObject(name: "by-due", reminders) { _, reminder in
///     Int64(reminder.due.timeIntervalSince1970)
/// }
/// try database.register(byDue)
/// let dueToday = try connection.read { txn in try byDue.rowIDs(in: startOfDay...endOfDay, in: txn) }
/// ```
///
/// The value coding must preserve order (its bytes compare as its values do): ``Int64OrderedCoding``,
/// `UInt64BigEndianCoding`, `UInt32BigEndianCoding` and `StringUTF8Coding` (byte order) do.
public final class SecondaryIndex<ValueCoding: TableCoding>: StoreExtension, Sendable where ValueCoding.Value: Comparable {
    /// The indexed value of a row, or `nil` to leave the row out.
    public typealias Indexer = @Sendable (_ row: IndexedRow) throws -> ValueCoding.Value?

    /// The index's name, unique among the database's extensions.
    public let name: String
    /// `"secondary-index"`.
    public let kind = "secondary-index"
    /// Changing it rebuilds the index at registration.
    public let versionTag: String
    /// The collections indexed, or `nil` for all.
    public let collections: Set<String>?
    private let indexer: Indexer
    private let dependsOnObject: Bool
    private let dependsOnMetadata: Bool
    private let tables = Mutex<Tables?>(nil)

    struct Tables: Sendable {
        let entries: ExtensionTable<BytesCoding, BytesCoding>
        let rows: ExtensionTable<StoredRowKeyCoding, BytesCoding>
    }

    /// Creates an index whose values `indexer` computes from the row.
    /// - Parameters:
    ///   - name: the index's name, unique among the database's extensions.
    ///   - versionTag: change it whenever `indexer`'s results change (the index is rebuilt at registration).
    ///   - collections: the collections indexed, or `nil` for all.
    ///   - indexer: the row's value, or `nil` to leave the row out.
    ///   - dependsOnObject: whether the value depends on the object (an update of the object re-indexes the row).
    ///   - dependsOnMetadata: whether it depends on the metadata.
    public init(
        name: String, versionTag: String = "1", collections: Set<String>? = nil, dependsOnObject: Bool = true,
        dependsOnMetadata: Bool = false, indexer: @escaping Indexer
    ) {
        self.name = name
        self.versionTag = versionTag
        self.collections = collections
        self.indexer = indexer
        self.dependsOnObject = dependsOnObject
        self.dependsOnMetadata = dependsOnMetadata
    }

    /// An index of the objects of `collection` (and only of them), by the value `value` returns (`nil` leaves the row
    /// out). For rows of several collections, use ``init(name:versionTag:collections:dependsOnObject:dependsOnMetadata:indexer:)``
    /// and decode each row by its collection (``/CanopyCore/ExtensionRow/object(in:)``).
    public static func byObject<Object, Metadata>(
        name: String, versionTag: String = "1", _ collection: TypedCollection<Object, Metadata>,
        _ value: @escaping @Sendable (_ key: String, _ object: Object) throws -> ValueCoding.Value?
    ) -> SecondaryIndex where ValueCoding.Value: SendableMetatype {
        SecondaryIndex(name: name, versionTag: versionTag, collections: [collection.name]) { row in
            try row.withObject(in: collection) { object in try value(row.key, object) }
        }
    }

    /// What the index declares besides its indexer — the collections indexed, what the value reads — recorded as
    /// JSON with sorted keys (through `Codable`); a difference at registration rebuilds the index, as a new version
    /// tag does.
    public var options: SecondaryIndexDefinition {
        SecondaryIndexDefinition(collections: collections?.sorted(), dependsOnObject: dependsOnObject, dependsOnMetadata: dependsOnMetadata)
    }

    /// How many indexed rows (the first in stored-key order) and rows of the indexed collections the registration's
    /// check recomputes.
    static var spotCheckRows: Int { 256 }

    func openedTables() throws -> Tables {
        guard let tables = tables.withLock({ $0 }) else {
            throw CanopyError(.extensionNotRegistered, "the index is not registered; register it with Database.register(_:)", extensionName: name)
        }
        return tables
    }

    // MARK: StoreExtension

    /// Opens the tables; rebuilds them from the row scan when the context asks.
    public func prepare(in transaction: ReadWriteTransaction, context: ExtensionRegistrationContext) throws {
        let opened = Tables(
            entries: try transaction.openTable("entries", of: name, keys: BytesCoding.self, values: BytesCoding.self),
            rows: try transaction.openTable("rows", of: name, keys: StoredRowKeyCoding.self, values: BytesCoding.self))
        tables.withLock { $0 = opened }
        guard context.needsRebuild else { return }
        try opened.entries.removeAll(in: transaction)
        try opened.rows.removeAll(in: transaction)
        var found: [(StoredRowKey, [UInt8])] = []
        var skipped = SkippedRows()
        try transaction.scanRows(inCollections: collections) { stored in
            let row = IndexedRow(stored)
            do {
                if let value = try indexer(row) { found.append((stored.storedKey, Self.escaped(value))) }
            } catch let error as CanopyError where error.code == .decodingFailed {
                // A row the indexer cannot decode is left out and recorded, rather than failing the registration;
                // its `rows` entry marks it so that a rewrite takes it back.
                skipped.add(stored.id, error: error.message)
                found.append((stored.storedKey, Self.skippedMarker))
            }
            return true
        }
        // The scan is in row-key order: the rows table is written in order (appending); entries are sorted first.
        for (rowKey, value) in found { try opened.rows.put(value, forKey: rowKey, in: transaction, appending: true) }
        for key in found.filter({ $0.1 != Self.skippedMarker }).map({ $0.1 + $0.0.bytes }).sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            try opened.entries.put([], forKey: key, in: transaction, appending: true)
        }
        try transaction.setSkippedRows(skipped, ofExtension: name)
        transaction.markWritten()
    }

    /// Opens the stored tables without writing and recomputes the value of the first rows (in stored-key order) of
    /// the indexed collections: a stored value that differs, or a row indexed that the indexer now leaves out (or the
    /// reverse), means the indexer changed without a new version tag, and the registration rebuilds the index. Rows
    /// whose indexer throws are skipped.
    public func checkStoredState(in transaction: ReadTransaction) throws -> StoredStateCheck {
        let opened: Tables
        if transaction.writer(of: self) != nil, let existing = tables.withLock({ $0 }) {
            opened = existing
        } else {
            guard let entries = try transaction.existingTable("entries", of: name, keys: BytesCoding.self, values: BytesCoding.self),
                  let rows = try transaction.existingTable("rows", of: name, keys: StoredRowKeyCoding.self, values: BytesCoding.self) else {
                return .rebuild(because: "its tables are missing")
            }
            opened = Tables(entries: entries, rows: rows)
            tables.withLock { $0 = opened }
        }
        var checked = 0
        var problem: String?
        try transaction.scanRows(inCollections: collections) { stored in
            checked += 1
            let row = IndexedRow(stored)
            let value: ValueCoding.Value?
            do { value = try indexer(row) } catch { return checked < Self.spotCheckRows }  // cannot be compared: skipped
            let storedValue = try opened.rows.value(forKey: stored.storedKey, in: transaction)
            if storedValue != value.map({ Self.escaped($0) }) {
                problem = value == nil ? "row \(stored.id) is indexed but the indexer now leaves it out"
                    : "row \(stored.id) has another value than the indexer gives"
            }
            return problem == nil && checked < Self.spotCheckRows
        }
        return problem.map { .rebuild(because: $0) } ?? .usable
    }

    /// The `rows` value of a row the indexer could not decode (an escaped value is never empty: it ends with 0, 0).
    static var skippedMarker: [UInt8] { [] }

    /// The per-transaction writer.
    public func beginWrite(_ transaction: ReadWriteTransaction) throws -> Writer {
        Writer(index: self, tables: try openedTables(), transaction: transaction)
    }

    /// Drops the tables.
    public func dropStorage(in transaction: ReadWriteTransaction) throws {
        let opened = try openedTables()
        try opened.entries.drop(in: transaction)
        try opened.rows.drop(in: transaction)
        tables.withLock { $0 = nil }
    }

    // MARK: Lookups

    /// The rows whose value is `value`, in row-key order.
    public func rowIDs(equalTo value: ValueCoding.Value, in transaction: ReadTransaction) throws -> [RowID] {
        try rowIDs(from: value, through: value, in: transaction, limit: .max)
    }

    /// The rows whose value is in `range`, by value then row-key order, at most `limit`.
    public func rowIDs(in range: ClosedRange<ValueCoding.Value>, in transaction: ReadTransaction, limit: Int = .max) throws -> [RowID] {
        try rowIDs(from: range.lowerBound, through: range.upperBound, in: transaction, limit: limit)
    }

    /// The rows whose value is in `range` (upper bound excluded), by value then row-key order, at most `limit`.
    public func rowIDs(in range: Range<ValueCoding.Value>, in transaction: ReadTransaction, limit: Int = .max) throws -> [RowID] {
        try entries(from: range.lowerBound, in: transaction, limit: limit) { $0 < range.upperBound }.map(\.id)
    }

    /// The value indexed for row `id`, or `nil` when the row is not in the index.
    public func value(of id: RowID, in transaction: ReadTransaction) throws -> ValueCoding.Value? {
        try transaction.requireCurrentExtension(named: name)
        guard let rowKey = try transaction.storedRowKey(for: id), let escaped = try openedTables().rows.value(forKey: rowKey, in: transaction),
              escaped != Self.skippedMarker else {
            return nil
        }
        return try decodeValue(escaped[...]).value
    }

    /// The number of rows in the index (not counting those it skipped because it could not decode them).
    public func count(in transaction: ReadTransaction) throws -> Int {
        try transaction.requireCurrentExtension(named: name)
        return try openedTables().rows.count(in: transaction) - (try transaction.skippedRows(ofExtension: name)?.count ?? 0)
    }

    private func rowIDs(from lower: ValueCoding.Value, through upper: ValueCoding.Value, in transaction: ReadTransaction, limit: Int) throws -> [RowID] {
        try entries(from: lower, in: transaction, limit: limit) { $0 <= upper }.map(\.id)
    }

    /// The entries from the first one whose value is `>= lower`, while `accept` holds for their value.
    func entries(
        from lower: ValueCoding.Value, in transaction: ReadTransaction, limit: Int, while accept: (ValueCoding.Value) -> Bool
    ) throws -> [(value: ValueCoding.Value, id: RowID)] {
        try transaction.requireCurrentExtension(named: name)
        var result: [(ValueCoding.Value, RowID)] = []
        guard limit > 0 else { return [] }
        let start = Self.escaped(lower)
        var failure: Error?
        try openedTables().entries.forEachBytes(in: transaction, from: start) { key, _ in
            do {
                let (value, rest) = try decodeValue(Array(key)[...])
                guard accept(value) else { return false }
                guard let rowKey = StoredRowKey(rest), let id = try transaction.rowID(for: rowKey) else {
                    throw corrupt("an entry names an unknown row")
                }
                result.append((value, id))
                return result.count < limit
            } catch {
                failure = error
                return false
            }
        }
        if let failure { throw failure }
        return result
    }

    // MARK: Encoding

    /// The value's bytes with 0x00 escaped as 0x00 0xFF, ended by 0x00 0x00.
    static func escaped(_ value: ValueCoding.Value) -> [UInt8] {
        ValueCoding.withBytes(of: value) { bytes in
            var out = [UInt8]()
            out.reserveCapacity(bytes.count + 2)
            for byte in bytes {
                out.append(byte)
                if byte == 0 { out.append(0xFF) }
            }
            out.append(0)
            out.append(0)
            return out
        }
    }

    /// Reads an escaped value at the start of `bytes`; returns it and the bytes after it.
    func decodeValue(_ bytes: ArraySlice<UInt8>) throws -> (value: ValueCoding.Value, rest: ArraySlice<UInt8>) {
        var raw: [UInt8] = []
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let byte = bytes[i]
            if byte == 0 {
                guard i + 1 < bytes.endIndex else { break }
                if bytes[i + 1] == 0 {
                    let value = try raw.withUnsafeBytes { buffer in
                        do { return try ValueCoding.decode(buffer) } catch { throw corrupt("an indexed value does not decode (\(error))") }
                    }
                    return (value, bytes[(i + 2)...])
                }
                guard bytes[i + 1] == 0xFF else { break }
                raw.append(0)
                i += 2
                continue
            }
            raw.append(byte)
            i += 1
        }
        throw corrupt("an indexed value is not terminated")
    }

    func corrupt(_ message: String) -> CanopyError {
        CanopyError(.corruptStore, "the secondary index is corrupt: \(message); unregister it with dropStorage and register it again to rebuild",
                    extensionName: name)
    }

    func indexes(_ collection: String) -> Bool { collections?.contains(collection) ?? true }

    func valueDepends(onObject object: Bool, metadata: Bool) -> Bool {
        (object && dependsOnObject) || (metadata && dependsOnMetadata)
    }

    func indexedValue(of row: IndexedRow) throws -> ValueCoding.Value? { try indexer(row) }

    /// Keeps the index up to date in one write transaction.
    /// The index's ``/CanopyCore/StoreExtension/Writer`` in one write transaction; the store alone calls its methods.
    public final class Writer: ExtensionTransaction {
        let index: SecondaryIndex
        let tables: Tables
        let transaction: ReadWriteTransaction

        init(index: SecondaryIndex, tables: Tables, transaction: ReadWriteTransaction) {
            self.index = index
            self.tables = tables
            self.transaction = transaction
        }

        /// Re-indexes the row (its `entries` and `rows` records); the index keeps no attachment.
        public func handle(_ change: RowChange) throws -> AttachmentEdit {
            switch change.kind {
            case .insert: try reindex(change)
            case .update: if index.valueDepends(onObject: change.objectChanged, metadata: change.metadataChanged) { try reindex(change) }
            case .touch: break
            case .remove: if index.indexes(change.collection) { try remove(change.storedKey, id: change.id) }
            }
            return .keep
        }

        /// Re-indexes each missed row from its current values (the `rows` table finds its old entry); whole
        /// collections removed in the gap: a rebuild.
        public func catchUp(_ missed: MissedWrites) throws -> [StoredRowKey: AttachmentEdit]? {
            if missed.removedEverything || missed.removedCollections.contains(where: { index.indexes($0) }) { return nil }
            for row in missed.rows where index.indexes(row.id.collection) {
                if let current = row.current { try reindex(current) } else { try remove(row.storedKey, id: row.id) }
            }
            return [:]
        }

        /// Rows skipped (`error` set) or taken back (`nil`) in this transaction, applied to the record at commit.
        private var skippedChanges: [(row: RowID, error: String?)] = []

        /// Records the rows skipped or taken back in the transaction; no payload.
        public func prepareCommit(_ commit: ExtensionCommit) throws -> ExtensionPayload? {
            guard !skippedChanges.isEmpty else { return nil }
            var record = try transaction.skippedRows(ofExtension: index.name) ?? SkippedRows()
            for change in skippedChanges {
                if let error = change.error { record.add(change.row, error: error) } else { record.remove(change.row) }
            }
            try transaction.setSkippedRows(record, ofExtension: index.name)
            skippedChanges = []
            return nil
        }
        private func reindex(_ row: RowChange) throws {
            guard index.indexes(row.collection) else { return }
            let rowKey = row.storedKey
            var old = try tables.rows.value(forKey: rowKey, in: transaction)
            let value: ValueCoding.Value?
            do {
                value = try index.indexedValue(of: IndexedRow(row))
            } catch let error as CanopyError where error.code == .decodingFailed {
                // Left out and recorded, as at population (a row written as bytes by a tool, say).
                guard old != SecondaryIndex.skippedMarker else { return }
                if let old { try tables.entries.remove(old + rowKey.bytes, in: transaction) }
                try tables.rows.put(SecondaryIndex.skippedMarker, forKey: rowKey, in: transaction)
                skippedChanges.append((row.id, error.message))
                return
            }
            if old == SecondaryIndex.skippedMarker {
                // Rewritten so that it decodes: taken back.
                skippedChanges.append((row.id, nil))
                try tables.rows.remove(rowKey, in: transaction)
                old = nil
            }
            let escaped = value.map { SecondaryIndex.escaped($0) }
            guard old != escaped else { return }
            if let old { try tables.entries.remove(old + rowKey.bytes, in: transaction) }
            if let escaped {
                try tables.rows.put(escaped, forKey: rowKey, in: transaction)
                try tables.entries.put([], forKey: escaped + rowKey.bytes, in: transaction)
            } else {
                try tables.rows.remove(rowKey, in: transaction)
            }
        }

        private func remove(_ rowKey: StoredRowKey, id: RowID) throws {
            guard let old = try tables.rows.value(forKey: rowKey, in: transaction) else { return }
            if old == SecondaryIndex.skippedMarker {
                skippedChanges.append((id, nil))
            } else {
                try tables.entries.remove(old + rowKey.bytes, in: transaction)
            }
            try tables.rows.remove(rowKey, in: transaction)
        }
    }
}

/// A row as a ``SecondaryIndex``'s indexer sees it: its address and its object or metadata, decoded on demand.
///
/// The one row type of every extension, ``/CanopyCore/ExtensionRow``, under the name indexers have always used (kept
/// so that code written against `IndexedRow` compiles unchanged).
public typealias IndexedRow = ExtensionRow

/// An `Int64` as 8 big-endian bytes with the sign bit flipped, so that the bytes sort as the numbers do (negative
/// before positive).
public enum Int64OrderedCoding: TableCoding {
    /// Calls `body` with the 8 order-preserving bytes of `value`.
    public static func withBytes<R>(of value: Int64, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(of: (UInt64(bitPattern: value) ^ (1 << 63)).bigEndian, body)
    }

    /// Reads 8 order-preserving bytes.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws -> Int64 {
        guard bytes.count == 8 else { throw TableCodingError("expected 8 bytes for an Int64, found \(bytes.count)") }
        return Int64(bitPattern: bytes.loadUnaligned(as: UInt64.self).bigEndian ^ (1 << 63))
    }
}
