import LMDB

/// A table of an extension: an LMDB database named `ext.<extension>.<table>` whose keys and values are encoded by
/// the ``TableCoding``s declared once, in its type.
///
/// Open it in ``StoreExtension/prepare(in:context:)`` with ``ReadWriteTransaction/openTable(_:of:keys:values:)`` and
/// keep it; a process that reads an extension it did not register opens its tables with
/// ``ReadTransaction/existingTable(_:of:keys:values:)``. Every read takes the transaction to read in (a read-write
/// transaction reads its own writes); every write takes a ``ReadWriteTransaction``, so the table's state commits or
/// rolls back with the rows. Byte buffers handed to closures point into the memory map and are valid only inside the
/// closure. Errors: malformed stored bytes throw ``CanopyError/Code/corruptStore`` naming the extension and table; a
/// full map is grown by the connection as for any write; a key longer than LMDB's limit throws
/// ``CanopyError/Code/keyTooLong``.
public struct ExtensionTable<KeyCoding: TableCoding, ValueCoding: TableCoding>: Sendable {
    @usableFromInline let database: LMDB.Database
    /// The table's name within its extension.
    public let name: String
    /// The extension the table belongs to.
    public let extensionName: String

    init(database: LMDB.Database, name: String, extensionName: String) {
        self.database = database
        self.name = name
        self.extensionName = extensionName
    }

    /// The same table read with other codings (for a table whose values have two readings, such as raw bytes and a
    /// decoded form).
    public func recoded<K: TableCoding, V: TableCoding>(keys: K.Type, values: V.Type) -> ExtensionTable<K, V> {
        ExtensionTable<K, V>(database: database, name: name, extensionName: extensionName)
    }

    @usableFromInline
    func malformed(_ what: String, _ error: Error) -> CanopyError {
        CanopyError(.corruptStore, "a stored \(what) of table '\(name)' is malformed (\(error)); unregister the extension with dropStorage and register it again to rebuild",
                    extensionName: extensionName, underlying: error)
    }

    // MARK: Reading

    /// The value stored for `key`, decoded, or `nil`.
    @inlinable
    public func value(forKey key: KeyCoding.Value, in transaction: ReadTransaction) throws -> ValueCoding.Value? {
        try withValue(forKey: key, in: transaction) { bytes in
            guard let bytes else { return nil }
            do { return try ValueCoding.decode(bytes) } catch { throw malformed("value", error) }
        }
    }

    /// Calls `body` with the stored bytes of `key`'s value (or `nil`), without copying them.
    @inlinable
    public func withValue<R>(forKey key: KeyCoding.Value, in transaction: ReadTransaction, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        let storage = try transaction.storage
        return try transaction.guardedRead {
            try KeyCoding.withBytes(of: key) { keyBytes in try storage.withValue(forKey: keyBytes, in: database, body) }
        }
    }

    /// Whether the table holds `key`.
    @inlinable
    public func contains(_ key: KeyCoding.Value, in transaction: ReadTransaction) throws -> Bool {
        try withValue(forKey: key, in: transaction) { $0 != nil }
    }

    /// The number of entries.
    public func count(in transaction: ReadTransaction) throws -> Int {
        let storage = try transaction.storage
        return try transaction.guardedRead { try storage.count(of: database) }
    }

    /// Visits the entries in key order, decoded, from the first key `>= start` (or the first), while `body` returns
    /// `true`.
    public func forEach(
        in transaction: ReadTransaction, from start: KeyCoding.Value? = nil,
        _ body: (KeyCoding.Value, ValueCoding.Value) throws -> Bool
    ) throws {
        try forEachBytes(in: transaction, from: start) { keyBytes, valueBytes in
            let key: KeyCoding.Value
            let value: ValueCoding.Value
            do { key = try KeyCoding.decode(keyBytes) } catch { throw malformed("key", error) }
            do { value = try ValueCoding.decode(valueBytes) } catch { throw malformed("value", error) }
            return try body(key, value)
        }
    }

    /// Visits the entries' stored bytes in key order, from the first key `>= start` (or the first), while `body`
    /// returns `true`. The buffers are valid only inside `body`.
    public func forEachBytes(
        in transaction: ReadTransaction, from start: KeyCoding.Value? = nil,
        _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        let storage = try transaction.storage
        let startBytes = start.map { KeyCoding.withBytes(of: $0) { Array($0) } }
        try transaction.guardedRead { try storage.forEach(in: database, from: startBytes, body) }
    }

    /// Calls `body` with the first entry whose key is `>= start` (`nil` when there is none) and the key of the entry
    /// before it (`nil` when there is none): one cursor, one descent and one step, for a caller that checks a value
    /// against its predecessor's key (ranges keyed by their end, which must not overlap). The buffers are valid only
    /// inside `body`.
    public func withEntry<R>(
        atOrAfter start: KeyCoding.Value, in transaction: ReadTransaction,
        _ body: (_ entry: (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)?, _ previousKey: UnsafeRawBufferPointer?) throws -> R
    ) throws -> R {
        let storage = try transaction.storage
        let startBytes = KeyCoding.withBytes(of: start) { Array($0) }
        return try transaction.guardedRead {
            try storage.withCursor(in: database) { cursor in
                let found = try cursor.seek(atOrAfter: startBytes)
                // (Stepping leaves the found entry's bytes in place: nothing is written meanwhile.)
                let previous = found != nil ? try cursor.previous() : try cursor.last()
                return try body(found.map { ($0.key, $0.value) }, previous?.key)
            }
        }
    }

    /// Visits, in key order, the entries whose stored key starts with `prefix`, while `body` returns `true`.
    public func forEachBytes(
        in transaction: ReadTransaction, prefix: [UInt8],
        _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        let storage = try transaction.storage
        try transaction.guardedRead { try storage.forEach(in: database, prefix: prefix, body) }
    }

    // MARK: Writing

    /// Stores `value` for `key`. With `appending`, the caller promises `key` sorts after every key of the table
    /// (population in order): LMDB then fills pages completely and skips the search (`MDB_APPEND`).
    @inlinable
    public func put(_ value: ValueCoding.Value, forKey key: KeyCoding.Value, in transaction: ReadWriteTransaction, appending: Bool = false) throws {
        let storage = try transaction.writeStorage
        try transaction.guarded {
            try KeyCoding.withBytes(of: key) { keyBytes in
                try ValueCoding.withBytes(of: value) { valueBytes in
                    try storage.put(valueBytes, forKey: keyBytes, in: database, flags: appending ? .append : [])
                }
            }
        }
    }

    /// Stores a value of `count` bytes for `key`, written in place in the map by `fill` (no intermediate buffer). With
    /// `appending`, as ``put(_:forKey:in:appending:)``.
    @inlinable
    public func put(
        reserving count: Int, forKey key: KeyCoding.Value, in transaction: ReadWriteTransaction, appending: Bool = false,
        _ fill: (UnsafeMutableRawBufferPointer) throws -> Void
    ) throws {
        let storage = try transaction.writeStorage
        try transaction.guarded {
            try KeyCoding.withBytes(of: key) { keyBytes in
                try storage.putReserving(count, forKey: keyBytes, in: database, flags: appending ? .append : [], fill)
            }
        }
    }

    /// Removes `key`. Returns whether it existed.
    @discardableResult
    @inlinable
    public func remove(_ key: KeyCoding.Value, in transaction: ReadWriteTransaction) throws -> Bool {
        let storage = try transaction.writeStorage
        return try transaction.guarded {
            try KeyCoding.withBytes(of: key) { keyBytes in try storage.delete(keyBytes, in: database) }
        }
    }

    /// Removes every entry (the table stays open).
    public func removeAll(in transaction: ReadWriteTransaction) throws {
        let storage = try transaction.writeStorage
        try transaction.guarded { try storage.empty(database) }
    }

    /// Deletes the table from the database; the handle must not be used afterwards.
    public func drop(in transaction: ReadWriteTransaction) throws {
        let storage = try transaction.writeStorage
        try transaction.guarded { try storage.drop(database) }
        transaction.core.forgetTable(named: ExtensionTableName.full(name, of: extensionName))
    }
}

enum ExtensionTableName {
    static let prefix = "ext."

    static func full(_ table: String, of extensionName: String) -> String {
        "\(prefix)\(extensionName).\(table)"
    }

    /// Refuses a table name that is empty or holds a dot: the full name's last dot must separate the extension's name
    /// (which may hold dots) from the table's, or two extensions' tables could be one (`tasks` + `done.pages`,
    /// `tasks.done` + `pages`).
    static func check(_ table: String, of extensionName: String, path: String) throws {
        guard table.isEmpty || table.contains(".") else { return }
        throw CanopyError(
            .invalidArgument,
            "the table name '\(table)' is \(table.isEmpty ? "empty" : "holding a dot"); an extension's table names have no dot (its tables are named 'ext.<extension>.<table>', and extension names may hold dots): name it without one",
            path: path, extensionName: extensionName)
    }

    /// The key of the record of the rows an extension skipped (``SkippedRows``) in `canopy.info`.
    static func skipped(of extensionName: String) -> String {
        "\(prefix)\(extensionName).skipped"
    }
}
