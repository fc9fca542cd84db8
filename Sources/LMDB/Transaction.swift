import CLMDB
import CLMDBGuard

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A read-only LMDB transaction: a consistent snapshot of the environment.
///
/// Obtained only inside ``Environment/read(_:)`` (or as the base class of a ``WriteTransaction``), and valid only
/// inside that closure. Any values it hands out as raw buffers point into the memory map and are valid only until the
/// transaction ends (for a write transaction, until the next write); copy what you keep.
///
/// Not `Sendable`: a transaction is used by one thread at a time. Because the environment is opened with
/// `MDB_NOTLS`, a read transaction may move between threads as long as only one uses it at once.
public class ReadTransaction {
    // Without the runtime's exclusivity check (`swift_beginAccess` on every get, put and cursor step): a transaction is
    // used by one thread at a time, and no access to the handle overlaps another (none is held across a call).
    @usableFromInline @exclusivity(unchecked) var handle: OpaquePointer?
    /// The environment this transaction belongs to.
    public let environment: Environment

    init(environment: Environment, parent: ReadTransaction?, flags: UInt32) throws {
        self.environment = environment
        isChild = parent != nil
        isReadOnly = flags & UInt32(MDB_RDONLY) != 0
        try begin(parent: parent, flags: flags)
    }

    /// Begins the LMDB transaction into `handle`, counted as one of the environment's open transactions.
    private func begin(parent: ReadTransaction?, flags: UInt32) throws {
        // Counted before it begins, so that `setMapSize` (which checks the count under the same lock) cannot remap
        // the memory under a transaction that is starting on another thread.
        if parent == nil { environment.transactionBegan() }
        var txn: OpaquePointer?
        var rc = canopy_mdb_txn_begin(environment.containment, parent?.handle, flags, &txn)
        // Another process grew the map beyond ours: adopt its size and retry. Remapping waits for this process's other
        // uses of the map to end (see `AccessGate`); open read transactions carry on. The other process may grow it
        // again between the adoption and the retry (a writer filling the map doubles it in quick steps): each retry
        // adopts the newest size, up to `mapResizeRetries` times.
        var retries = 0
        while rc == MDB_MAP_RESIZED && retries < Self.mapResizeRetries {
            retries += 1
            do {
                try environment.adoptResizedMap()
            } catch {
                if parent == nil { environment.transactionEnded() }
                throw error
            }
            environment.afterAdoptingResizedMap?()
            rc = canopy_mdb_txn_begin(environment.containment, parent?.handle, flags, &txn)
        }
        if rc != 0 {
            if parent == nil { environment.transactionEnded() }
            throw environment.failure(rc, "mdb_txn_begin", database: nil)
        }
        handle = txn
    }

    /// How many times beginning a transaction adopts a map that another process grew before giving up with
    /// `mapResized` (each growth at least doubles the map, so a few suffice for any real sequence of growths).
    static let mapResizeRetries = 8

    let isChild: Bool
    @usableFromInline let isReadOnly: Bool
    /// Whether this transaction opened a database handle: LMDB closes such handles when a read transaction is reset
    /// (``renew()``), so it is ended the usual way instead (which keeps them).
    private var openedDatabase = false

    deinit {
        if handle != nil { abort() }
    }

    /// Whether the transaction is still open.
    public var isOpen: Bool { handle != nil }

    /// Moves this read-only transaction to the latest committed snapshot, as ending it and beginning a new one would,
    /// but keeping its reader slot: `mdb_txn_reset` then `mdb_txn_renew`, where a new transaction takes the reader
    /// table's lock, scans it for a free slot and allocates the transaction (about 9,000 instructions, for a pinned
    /// snapshot that moves at every commit). The transaction's earlier buffers are invalid afterwards, as after an
    /// end. When it opened a database handle (which a reset would close), or the renewal fails (another process grew
    /// the map: `MDB_MAP_RESIZED`), it is ended and a new one begun, adopting the larger map. An ended transaction
    /// begins anew.
    ///
    /// Use it inside ``Environment/withAccess(_:)``, as every use of a long-lived reader.
    /// - Throws: ``LMDBError`` `.badTransaction` for a write or nested transaction; the renewal's other failures and
    ///   what beginning a transaction throws, the transaction then ended (the next call begins it anew).
    package func renew() throws {
        guard isReadOnly, !isChild else {
            throw LMDBError(code: .badTransaction, operation: "mdb_txn_renew", path: environment.path,
                            hint: "only a top-level read-only transaction can be renewed")
        }
        if let handle {
            if !openedDatabase && !environment.isDamaged {
                mdb_txn_reset(handle)
                let rc = canopy_mdb_txn_renew(environment.containment, handle)
                if rc == 0 { return }
                // Reset and not renewed (its slot is still held): abort frees it and releases the slot.
                mdb_txn_abort(handle)
                self.handle = nil
                environment.transactionEnded()
                if rc != MDB_MAP_RESIZED { throw failure(rc, "mdb_txn_renew", nil) }
            } else {
                abort()
            }
        }
        openedDatabase = false
        try begin(parent: nil, flags: UInt32(MDB_RDONLY))
    }

    @usableFromInline var liveHandle: OpaquePointer {
        get throws(LMDBError) {
            guard let handle else {
                throw LMDBError(code: .badTransaction, operation: "transaction", path: environment.path,
                                hint: "The transaction has already ended")
            }
            return handle
        }
    }

    /// The LMDB transaction ID: the number of the last committed write transaction this one sees (or will commit).
    public var id: Int {
        guard let handle else { return 0 }
        return Int(mdb_txn_id(handle))
    }

    /// Ends the transaction, discarding its changes (if it is a write transaction). Ending twice does nothing.
    package func abort() {
        closeKeptCursors()
        guard let handle else { return }
        if !isReadOnly && environment.isDamaged {
            // A crash inside LMDB was contained: it may have left a cursor of the crashed call's stack frame in this
            // transaction's list, which mdb_txn_abort would free. The transaction is abandoned instead (its memory is
            // not freed) and, by the top-level one, the write lock released.
            if !isChild { environment.releaseWriteLockAfterCrash() }
        } else if isReadOnly && !environment.isDamaged {
            // mdb_txn_abort would close the database handles this reader opened (see `mdb_dbi_open`);
            // mdb_txn_commit keeps them in the environment and otherwise ends a reader the same way.
            mdb_txn_commit(handle)
        } else {
            mdb_txn_abort(handle)
        }
        self.handle = nil
        if !isChild { environment.transactionEnded() }
    }

    @usableFromInline
    func failure(_ rc: Int32, _ operation: String, _ database: Database?) -> LMDBError {
        environment.failure(rc, operation, database: database?.name)
    }

    /// The checks a read of `database` makes of what it finds (`CANOPY_LMDB_CHECK_*`, for the C reads that make them).
    @usableFromInline
    func entryChecks(_ database: Database) -> Int32 {
        (isReadOnly ? 0 : CANOPY_LMDB_CHECK_WRITING) | (database.checksummed ? CANOPY_LMDB_CHECK_CHECKSUMMED : 0)
    }

    /// The error of a checked read (`canopy_mdb_get_checked`, `canopy_mdb_cursor_get_checked`) that returned `rc`,
    /// neither 0 nor `MDB_NOTFOUND`: a key or value past the end of the data file, a checksum that does not match, or
    /// LMDB's error. `key` and `value` are what LMDB returned; `lookupKey` the key a `mdb_get` was given.
    @usableFromInline @inline(never)
    func checkedReadFailure(
        _ rc: Int32, _ operation: String, _ database: Database, key: MDB_val, value: MDB_val, lookupKey: UnsafeRawBufferPointer?
    ) -> LMDBError {
        // (The key was checked before the value: it can be read when the value is the one outside.)
        let foundKey = lookupKey ?? UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size)
        switch rc {
        case CANOPY_LMDB_KEY_OUTSIDE:
            return environment.unreadable(key, "key", operation, database: database, key: nil)
        case CANOPY_LMDB_VALUE_OUTSIDE:
            return environment.unreadable(value, "value", operation, database: database, key: Array(foundKey))
        case CANOPY_LMDB_CHECKSUM_MISMATCH:
            return ValueChecksum.mismatch(operation, path: environment.path, database: database, key: foundKey)
        default:
            return failure(rc, operation, database)
        }
    }

    // MARK: Databases

    /// Opens a named database (or the unnamed one with `name == nil`) in this transaction.
    ///
    /// The handle becomes usable by transactions that begin after this one commits (for a read transaction: after it
    /// ends). A handle opened in a write transaction that aborts is closed.
    ///
    /// With `checksummed`, each value carries a CRC32C trailer, written and checked by this handle (see
    /// ``Database/checksummed``), unless the environment was opened without value checksums.
    public func openDatabase(named name: String?, flags: Database.Flags = [], checksummed: Bool = false) throws -> Database {
        if checksummed && flags.contains(.duplicateSort) {
            throw LMDBError(code: .invalidArgument, operation: "mdb_dbi_open", path: environment.path, database: name,
                            hint: "A duplicateSort database cannot carry value checksums (they would change how values sort)")
        }
        var dbi: MDB_dbi = 0
        let rc = canopy_mdb_dbi_open(environment.containment, try liveHandle, name, flags.rawValue, &dbi)
        if rc != 0 { throw failure(rc, "mdb_dbi_open", Database(handle: 0, name: name ?? "(main)")) }
        openedDatabase = true
        return Database(handle: dbi, name: name, checksummed: checksummed && environment.valueChecksums)
    }

    /// B-tree figures of `database` (`mdb_stat`).
    public func statistics(of database: Database) throws -> DatabaseStatistics {
        var stat = MDB_stat()
        let rc = canopy_mdb_stat(environment.containment, try liveHandle, database.handle, &stat)
        if rc != 0 { throw failure(rc, "mdb_stat", database) }
        return DatabaseStatistics(stat)
    }

    /// The number of entries in `database`.
    public func count(of database: Database) throws -> Int {
        try statistics(of: database).entries
    }

    // MARK: Reading

    /// Calls `body` with the value stored for `key`, or `nil` when there is none, without copying it.
    ///
    /// The buffer points into the memory map and is valid only inside `body`.
    /// - Throws: ``LMDBError/Code/checksumMismatch`` when `database` is checksummed and the value fails its check.
    @inlinable
    public func withValue<R>(
        forKey key: UnsafeRawBufferPointer, in database: Database, _ body: (UnsafeRawBufferPointer?) throws -> R
    ) throws -> R {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val()
        // One C call finds the value and checks it (inside the data file; its checksum, which is cut off).
        let rc = canopy_mdb_get_checked(environment.containment, try liveHandle, database.handle, &k, &v, entryChecks(database))
        if rc == 0 { return try body(UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)) }
        if rc == MDB_NOTFOUND { return try body(nil) }
        throw checkedReadFailure(rc, "mdb_get", database, key: k, value: v, lookupKey: key)
    }

    /// The value stored for `key`, or `nil` when there is none, as a buffer into the memory map (no copy): valid
    /// until the transaction ends or (in a write transaction) its next write, as a cursor's ``Cursor/Entry`` is — use
    /// it at once. For a read that hands the bytes straight to a decoder, without a closure around it.
    /// - Throws: ``LMDBError/Code/checksumMismatch`` when `database` is checksummed and the value fails its check.
    @inlinable
    public func unsafeValue(forKey key: UnsafeRawBufferPointer, in database: Database) throws -> UnsafeRawBufferPointer? {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val()
        let rc = canopy_mdb_get_checked(environment.containment, try liveHandle, database.handle, &k, &v, entryChecks(database))
        if rc == 0 { return UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size) }
        if rc == MDB_NOTFOUND { return nil }
        throw checkedReadFailure(rc, "mdb_get", database, key: k, value: v, lookupKey: key)
    }

    /// Calls `body` with the value stored for `key`, or `nil`, without copying it.
    @inlinable
    public func withValue<R>(
        forKey key: [UInt8], in database: Database, _ body: (UnsafeRawBufferPointer?) throws -> R
    ) throws -> R {
        try key.withUnsafeBytes { try withValue(forKey: $0, in: database, body) }
    }

    /// A copy of the value stored for `key`, or `nil` when there is none.
    public func value(forKey key: [UInt8], in database: Database) throws -> [UInt8]? {
        try withValue(forKey: key, in: database) { $0.map { Array($0) } }
    }

    /// Whether `database` holds `key`.
    public func contains(_ key: [UInt8], in database: Database) throws -> Bool {
        try withValue(forKey: key, in: database) { $0 != nil }
    }

    // MARK: Cursors

    /// Cursors kept for the rest of the transaction (``WriteTransaction/keptCursor(in:)``), closed before it ends.
    @exclusivity(unchecked) var keptCursors: [Cursor] = []

    /// Closes the kept cursors: LMDB frees a write transaction's cursors when it ends, so they are closed first (a
    /// close afterwards would free them twice).
    func closeKeptCursors() {
        guard !keptCursors.isEmpty else { return }
        for cursor in keptCursors { cursor.close() }
        keptCursors = []
    }

    /// Runs `body` with a cursor over `database`, closing the cursor when `body` returns.
    public func withCursor<R>(in database: Database, _ body: (Cursor) throws -> R) throws -> R {
        let cursor = try Cursor(transaction: self, database: database)
        defer { cursor.close() }
        return try body(cursor)
    }

    /// Visits the entries of `database` in key order (or reverse order), starting at `start` (the first key
    /// `>= start`, or with `reverse` the last key `<= start`), while `body` returns `true`.
    ///
    /// The buffers are valid only inside `body`.
    public func forEach(
        in database: Database, from start: [UInt8]? = nil, reverse: Bool = false,
        _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try withCursor(in: database) { cursor in
            var entry: Cursor.Entry?
            if let start {
                entry = reverse ? try cursor.seekLast(atOrBefore: start) : try cursor.seek(atOrAfter: start)
            } else {
                entry = reverse ? try cursor.last() : try cursor.first()
            }
            guard let handle = cursor.openHandle else { return }
            let step = reverse ? MDB_PREV : MDB_NEXT
            while let current = entry {
                guard try body(current.key, current.value) else { return }
                entry = try cursor.step(handle, step)
            }
        }
    }

    /// Visits, in key order (or reverse), the entries of `database` whose key starts with `prefix`, while `body`
    /// returns `true`.
    public func forEach(
        in database: Database, prefix: [UInt8], reverse: Bool = false,
        _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try withCursor(in: database) { cursor in
            var entry: Cursor.Entry?
            if reverse {
                if let upper = prefixSuccessor(prefix) {
                    entry = try cursor.seek(atOrAfter: upper) != nil ? try cursor.previous() : try cursor.last()
                } else {
                    entry = try cursor.last()
                }
            } else {
                entry = try cursor.seek(atOrAfter: prefix)
            }
            guard let handle = cursor.openHandle else { return }
            let step = reverse ? MDB_PREV : MDB_NEXT
            try prefix.withUnsafeBytes { prefix in
                while let current = entry, Self.key(current.key, startsWith: prefix) {
                    guard try body(current.key, current.value) else { return }
                    entry = try cursor.step(handle, step)
                }
            }
        }
    }
}

extension ReadTransaction {
    /// Whether `key` starts with `prefix`: a prefix of 4 bytes (a Canopy collection's rows) is compared as one word,
    /// without a call to `memcmp` on every entry of a scan.
    @inlinable @inline(__always)
    public static func key(_ key: UnsafeRawBufferPointer, startsWith prefix: UnsafeRawBufferPointer) -> Bool {
        guard key.count >= prefix.count else { return false }
        switch prefix.count {
        case 0: return true
        case 4: return key.loadUnaligned(as: UInt32.self) == prefix.loadUnaligned(as: UInt32.self)
        default: return memcmp(key.baseAddress!, prefix.baseAddress!, prefix.count) == 0
        }
    }
}

/// The smallest byte string greater than every string starting with `prefix`, or `nil` if there is none.
package func prefixSuccessor(_ prefix: [UInt8]) -> [UInt8]? {
    var bytes = prefix
    while let last = bytes.last {
        if last < 0xFF {
            bytes[bytes.count - 1] = last + 1
            return bytes
        }
        bytes.removeLast()
    }
    return nil
}

/// A read-write LMDB transaction. Everything a ``ReadTransaction`` does, plus writes.
///
/// Obtained only inside ``Environment/write(_:)``, valid only inside that closure and on its thread. It commits when
/// the closure returns and aborts when it throws. After an LMDB error such as ``LMDBError/Code/mapFull`` the
/// transaction can only be aborted: rethrow the error.
public final class WriteTransaction: ReadTransaction {
    // MARK: Writing

    /// A cursor over `database` kept for the rest of the transaction: for a writer that reads a key and then writes
    /// it, row after row, so that the write starts from the page the read found (``Cursor/seek(key:)``, then
    /// ``Cursor/putReserving(_:forKey:flags:_:)``: LMDB checks the cursor's page before descending the tree again).
    /// The transaction closes it when it commits or aborts (LMDB frees a write transaction's cursors then); do not
    /// use it afterwards (it throws ``LMDBError/Code/badTransaction``).
    public func keptCursor(in database: Database) throws -> Cursor {
        let cursor = try Cursor(transaction: self, database: database)
        keptCursors.append(cursor)
        return cursor
    }

    /// Stores `value` for `key`.
    /// - Throws: ``LMDBError`` `.keyExists` with `.noOverwrite` when the key exists; `.badValueSize` for an empty
    ///   key or one longer than ``Environment/maxKeySize``; `.mapFull` when the map is full.
    @inlinable
    public func put(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer, in database: Database, flags: PutFlags = []) throws {
        if database.checksummed {
            // Reserved in the map, then copied once and sealed there (no intermediate buffer).
            return try putReserving(value.count, forKey: key, in: database, flags: flags) { stored in
                if value.count > 0 { stored.baseAddress!.copyMemory(from: value.baseAddress!, byteCount: value.count) }
            }
        }
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        let rc = canopy_mdb_put(environment.containment, try liveHandle, database.handle, &k, &v, flags.rawValue)
        if rc != 0 { throw failure(rc, "mdb_put", database) }
    }

    /// Stores `value` for `key`.
    @inlinable
    public func put(_ value: [UInt8], forKey key: [UInt8], in database: Database, flags: PutFlags = []) throws {
        try key.withUnsafeBytes { k in try value.withUnsafeBytes { v in try put(v, forKey: k, in: database, flags: flags) } }
    }

    /// Stores a value for `key` unless the key exists; when it does, calls `existing` with the stored value
    /// (without copying it) and returns its result. Returns `nil` when the value was inserted.
    ///
    /// One B-tree descent tells an insert from an update: this is `mdb_put` with `MDB_NOOVERWRITE`.
    @inlinable
    public func insert<R>(
        _ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer, in database: Database,
        orExisting existing: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R? {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        let checksummed = database.checksummed
        var v = checksummed
            ? MDB_val(mv_size: value.count + ValueChecksum.size, mv_data: nil)
            : MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        let rc = canopy_mdb_put(environment.containment, try liveHandle, database.handle, &k, &v, UInt32(MDB_NOOVERWRITE) | (checksummed ? UInt32(MDB_RESERVE) : 0))
        if rc == 0 {
            if checksummed {
                let stored = UnsafeMutableRawBufferPointer(start: v.mv_data, count: v.mv_size)
                if value.count > 0 { stored.baseAddress!.copyMemory(from: value.baseAddress!, byteCount: value.count) }
                ValueChecksum.seal(stored, key: key)
            }
            return nil
        }
        if rc == MDB_KEYEXIST {
            try environment.checkReadable(v, writing: true, "value", "mdb_put", database: database, key: Array(key))
            let stored = UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
            guard checksummed else { return try existing(stored) }
            guard let payload = ValueChecksum.payload(of: stored, key: key) else {
                throw ValueChecksum.mismatch("mdb_put", path: environment.path, database: database, key: key)
            }
            return try existing(payload)
        }
        throw failure(rc, "mdb_put", database)
    }

    /// Reserves `count` bytes for `key` and lets `fill` write the value in place in the map (`MDB_RESERVE`).
    @inlinable
    public func putReserving(
        _ count: Int, forKey key: UnsafeRawBufferPointer, in database: Database, flags: PutFlags = [],
        _ fill: (UnsafeMutableRawBufferPointer) throws -> Void
    ) throws {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        let checksummed = database.checksummed
        var v = MDB_val(mv_size: checksummed ? count + ValueChecksum.size : count, mv_data: nil)
        let rc = canopy_mdb_put(environment.containment, try liveHandle, database.handle, &k, &v, flags.rawValue | UInt32(MDB_RESERVE))
        if rc != 0 { throw failure(rc, "mdb_put", database) }
        try fill(UnsafeMutableRawBufferPointer(start: v.mv_data, count: count))
        if checksummed { ValueChecksum.seal(UnsafeMutableRawBufferPointer(start: v.mv_data, count: v.mv_size), key: key) }
    }

    /// Deletes `key` (and all its values in a `duplicateSort` database). Returns whether it existed.
    @inlinable
    @discardableResult
    public func delete(_ key: UnsafeRawBufferPointer, in database: Database) throws -> Bool {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        let rc = canopy_mdb_del(environment.containment, try liveHandle, database.handle, &k, nil)
        if rc == 0 { return true }
        if rc == MDB_NOTFOUND { return false }
        throw failure(rc, "mdb_del", database)
    }

    /// Deletes `key`. Returns whether it existed.
    @inlinable
    @discardableResult
    public func delete(_ key: [UInt8], in database: Database) throws -> Bool {
        try key.withUnsafeBytes { try delete($0, in: database) }
    }

    /// Deletes one value of `key` in a `duplicateSort` database. Returns whether the pair existed.
    @discardableResult
    public func delete(_ key: [UInt8], value: [UInt8], in database: Database) throws -> Bool {
        try key.withUnsafeBytes { kb in
            try value.withUnsafeBytes { vb in
                var k = MDB_val(mv_size: kb.count, mv_data: UnsafeMutableRawPointer(mutating: kb.baseAddress))
                var v = MDB_val(mv_size: vb.count, mv_data: UnsafeMutableRawPointer(mutating: vb.baseAddress))
                let rc = canopy_mdb_del(environment.containment, try liveHandle, database.handle, &k, &v)
                if rc == 0 { return true }
                if rc == MDB_NOTFOUND { return false }
                throw failure(rc, "mdb_del", database)
            }
        }
    }

    /// Empties `database` (`mdb_drop` with 0), keeping its handle usable.
    public func empty(_ database: Database) throws {
        let rc = canopy_mdb_drop(environment.containment, try liveHandle, database.handle, 0)
        if rc != 0 { throw failure(rc, "mdb_drop", database) }
    }

    /// Deletes `database` from the environment and closes its handle (`mdb_drop` with 1).
    ///
    /// LMDB closes the handle at once, even if this transaction aborts later (the database then survives): reopen it
    /// with ``ReadTransaction/openDatabase(named:flags:checksummed:)`` rather than keep using the old handle.
    public func drop(_ database: Database) throws {
        let rc = canopy_mdb_drop(environment.containment, try liveHandle, database.handle, 1)
        if rc != 0 { throw failure(rc, "mdb_drop", database) }
    }

    /// Runs `body` in a nested (child) write transaction: its changes become part of this transaction when `body`
    /// returns and are discarded when it throws, leaving this transaction usable.
    public func nested<R>(_ body: (WriteTransaction) throws -> R) throws -> R {
        let child = try WriteTransaction(environment: environment, parent: self, flags: 0)
        do {
            let result = try body(child)
            try child.commit()
            return result
        } catch {
            child.abort()
            throw error
        }
    }

    /// Commits the transaction. After this call (whatever its outcome) the transaction is ended.
    package func commit() throws {
        closeKeptCursors()
        let txn = try liveHandle
        handle = nil
        if !isChild { environment.transactionEnded() }
        var rc = canopy_mdb_txn_commit(environment.containment, txn)
        if (rc == CANOPY_LMDB_CONTAINED || rc == CANOPY_LMDB_REFUSED) && !isChild {
            // Not committed, and not abortable (see `abort()`): abandoned, the write lock released.
            environment.releaseWriteLockAfterCrash()
        }
        if rc == EIO, let cause = ShortWriteCause.diskFullCode(
            dataFile: DataFileCheck.dataFilePath(environmentPath: environment.path, flags: environment.flags),
            pageSize: environment.statistics().pageSize) {
            rc = cause  // a write cut short by a full disk or the file size limit, not a failing disk
        }
        if rc != 0 { throw failure(rc, "mdb_txn_commit", nil) }
    }
}
