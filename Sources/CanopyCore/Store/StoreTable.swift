import LMDB

/// One of the store's own tables, typed as an extension's tables are (``ExtensionTable``): the ``TableCoding``s of its
/// keys and values are declared once, in ``StoreTables``, and every read and write goes through them; no key or value
/// is assembled by hand at the call site.
///
/// Failure modes, for every table: a value that fails its checksum throws LMDB's `checksumMismatch` (turned into
/// ``CanopyError/Code/corruptStore`` naming the table and key by the store's error mapping); a value or key that does
/// not decode with the table's coding throws ``CanopyError/Code/corruptStore`` naming the table, the key and what to
/// do (`remedy`), never a trap and never a skipped entry; a write that fills the map throws LMDB's `mapFull`, which the
/// connection answers by growing the map and running the transaction again. Byte buffers handed to closures point
/// into the memory map and are valid only inside the closure.
struct StoreTable<KeyCoding: TableCoding, ValueCoding: TableCoding>: Sendable {
    /// The LMDB database (checksummed unless the store was opened without checksums).
    let database: LMDB.Database
    /// The table's name (``StoreTableName``).
    let name: String
    /// What to do about a malformed value, for the error's message.
    let remedy: String

    func malformed(_ what: String, key: KeyCoding.Value?, _ error: any Error, path: String?) -> CanopyError {
        let keyText = key.map { key in KeyCoding.withBytes(of: key) { StoredRecordDamage.describe(Array($0)) } } ?? "?"
        return CanopyError(.corruptStore, "the store's table '\(name)' holds a malformed \(what) at key \(keyText) (\(error)); \(remedy)",
                           path: path, underlying: error)
    }

    /// The value stored for `key`, decoded, or `nil`.
    @inline(__always)
    func value(forKey key: KeyCoding.Value, in txn: LMDB.ReadTransaction, path: String?) throws -> ValueCoding.Value? {
        try withValue(forKey: key, in: txn) { bytes in
            guard let bytes else { return nil }
            do { return try ValueCoding.decode(bytes) } catch { throw malformed("value", key: key, error, path: path) }
        }
    }

    /// Calls `body` with the stored bytes of `key`'s value (or `nil`), without copying them.
    @inline(__always)
    func withValue<R>(forKey key: KeyCoding.Value, in txn: LMDB.ReadTransaction, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        try KeyCoding.withBytes(of: key) { keyBytes in try txn.withValue(forKey: keyBytes, in: database, body) }
    }

    /// Visits the entries in key order, decoded, from the first key `>= start` (or the first), while `body` returns
    /// `true`.
    func forEach(
        in txn: LMDB.ReadTransaction, from start: KeyCoding.Value? = nil, path: String?,
        _ body: (KeyCoding.Value, ValueCoding.Value) throws -> Bool
    ) throws {
        let startBytes = start.map { KeyCoding.withBytes(of: $0) { Array($0) } }
        try txn.forEach(in: database, from: startBytes) { keyBytes, valueBytes in
            let key: KeyCoding.Value
            do { key = try KeyCoding.decode(keyBytes) } catch { throw malformed("key", key: nil, error, path: path) }
            let value: ValueCoding.Value
            do { value = try ValueCoding.decode(valueBytes) } catch { throw malformed("value", key: key, error, path: path) }
            return try body(key, value)
        }
    }

    /// Stores `value` for `key`.
    @inline(__always)
    func put(_ value: ValueCoding.Value, forKey key: KeyCoding.Value, in txn: LMDB.WriteTransaction) throws {
        try KeyCoding.withBytes(of: key) { keyBytes in
            try ValueCoding.withBytes(of: value) { valueBytes in try txn.put(valueBytes, forKey: keyBytes, in: database) }
        }
    }

    /// Removes `key`; returns whether it existed.
    @discardableResult
    func remove(_ key: KeyCoding.Value, in txn: LMDB.WriteTransaction) throws -> Bool {
        try KeyCoding.withBytes(of: key) { keyBytes in try txn.delete(keyBytes, in: database) }
    }
}

/// One record of the store's `canopy.info` table, typed: its key (``StoreInfoKey``) and the ``TableCoding`` of its
/// value, declared once (``StoreInfoRecords``). Failure modes are those of ``StoreTable``.
struct StoreInfoRecord<ValueCoding: TableCoding>: Sendable {
    let key: [UInt8]
    /// The extension whose state record this is, or `nil` for a record of the store's own (named by `fixedWhat`).
    private let extensionName: String?
    private let fixedWhat: String
    /// What to do about a malformed record.
    let remedy: String

    /// A record of the store's own: `what` says what it is, for messages ("the state record").
    init(key: [UInt8], what: String, remedy: String) {
        self.key = key
        self.extensionName = nil
        self.fixedWhat = what
        self.remedy = remedy
    }

    /// The state record of extension `name`. Its description is built only for an error message: every read and write
    /// of a view's state makes one of these, and an interpolated string per call cost more than the LMDB read.
    init(extensionStateOf name: String, key: [UInt8], remedy: String) {
        self.key = key
        self.extensionName = name
        self.fixedWhat = ""
        self.remedy = remedy
    }

    /// What the record is, for messages ("the state record").
    var what: String { extensionName.map { "the state record of extension '\($0)'" } ?? fixedWhat }

    private func table(_ info: LMDB.Database) -> StoreTable<BytesCoding, ValueCoding> {
        StoreTable(database: info, name: StoreTableName.info, remedy: remedy)
    }

    /// The record's value, decoded, or `nil` when there is none.
    func value(in txn: LMDB.ReadTransaction, info: LMDB.Database, path: String?) throws -> ValueCoding.Value? {
        try txn.withValue(forKey: key, in: info) { bytes in
            guard let bytes else { return nil }
            do { return try ValueCoding.decode(bytes) } catch {
                throw CanopyError(.corruptStore, "\(what) (key '\(String(decoding: key, as: UTF8.self))' of \(StoreTableName.info)) is malformed (\(error)); \(remedy)",
                                  path: path, underlying: error)
            }
        }
    }

    /// The record's value, or `nil` when there is none, decoded only when its bytes differ from those `cache` decoded
    /// last (see ``DecodedRecordCache``).
    func value(in txn: LMDB.ReadTransaction, info: LMDB.Database, path: String?, cache: DecodedRecordCache<ValueCoding.Value>) throws -> ValueCoding.Value?
    where ValueCoding.Value: Sendable {
        try txn.withValue(forKey: key, in: info) { bytes in
            guard let bytes else { return nil }
            return try cache.value(of: bytes) { bytes in
                do { return try ValueCoding.decode(bytes) } catch {
                    throw CanopyError(.corruptStore, "\(what) (key '\(String(decoding: key, as: UTF8.self))' of \(StoreTableName.info)) is malformed (\(error)); \(remedy)",
                                      path: path, underlying: error)
                }
            }
        }
    }

    /// Calls `body` with the record's stored bytes (or `nil`), without copying them.
    func withValue<R>(in txn: LMDB.ReadTransaction, info: LMDB.Database, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        try txn.withValue(forKey: key, in: info, body)
    }

    /// Stores the record.
    func put(_ value: ValueCoding.Value, in txn: LMDB.WriteTransaction, info: LMDB.Database) throws {
        try table(info).put(value, forKey: key, in: txn)
    }

    /// Removes the record.
    func remove(in txn: LMDB.WriteTransaction, info: LMDB.Database) throws {
        _ = try txn.delete(key, in: info)
    }
}
