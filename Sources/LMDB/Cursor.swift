import CLMDB
import CLMDBGuard
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A position in one database of a transaction, for ordered reads, range scans and in-place writes.
///
/// Obtained only inside ``ReadTransaction/withCursor(in:_:)`` and valid only inside it. The buffers of an ``Entry``
/// point into the memory map: they are valid until the transaction ends or (in a write transaction) the next write.
public final class Cursor {
    /// A key and its value, as buffers into the memory map.
    public struct Entry {
        /// The key's bytes.
        public let key: UnsafeRawBufferPointer
        /// The value's bytes.
        public let value: UnsafeRawBufferPointer

        @usableFromInline
        init(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
            self.key = key
            self.value = value
        }
    }

    // Without the runtime's exclusivity check on every step (see ReadTransaction.handle): one thread at a time.
    @usableFromInline @exclusivity(unchecked) var handle: OpaquePointer?
    /// The database the cursor moves in.
    public let database: Database
    @usableFromInline let transaction: ReadTransaction
    /// The environment's guard, and the checks each step makes (`CANOPY_LMDB_CHECK_*`): read once here, so that a
    /// step touches no reference-counted object.
    @usableFromInline let containment: UnsafeMutablePointer<canopy_lmdb_guard>
    @usableFromInline let checks: Int32

    init(transaction: ReadTransaction, database: Database) throws {
        var cursor: OpaquePointer?
        let rc = canopy_mdb_cursor_open(transaction.environment.containment, try transaction.liveHandle, database.handle, &cursor)
        if rc != 0 { throw transaction.failure(rc, "mdb_cursor_open", database) }
        self.handle = cursor
        self.database = database
        self.transaction = transaction
        containment = transaction.environment.containment
        checks = transaction.entryChecks(database)
    }

    /// The open handle, or `nil` once the cursor is closed.
    var openHandle: OpaquePointer? { handle }

    func close() {
        // After a contained crash, a write transaction's cursor list may hold a cursor of the crashed call's stack
        // frame, which closing would walk: the cursor is left to the abandoned transaction (see `abort()`).
        if let handle, transaction.isReadOnly || !transaction.environment.isDamaged { mdb_cursor_close(handle) }
        handle = nil
    }

    deinit { close() }

    @usableFromInline
    func get(_ op: MDB_cursor_op, key: UnsafeRawBufferPointer? = nil, value: UnsafeRawBufferPointer? = nil) throws -> Entry? {
        guard let handle else {
            throw LMDBError(code: .badTransaction, operation: "mdb_cursor_get", path: transaction.environment.path,
                            database: database.name, hint: "The cursor is closed")
        }
        return try step(handle, op, key: key, value: value)
    }

    /// ``get(_:key:value:)`` on the cursor's open `handle`: for a loop that reads the handle once (a class property's
    /// read is an exclusivity check at run time, on every row of a scan otherwise). One C call moves the cursor and
    /// checks what it found: key and value inside the data file, the value's checksum.
    @inlinable @inline(__always)
    func step(_ handle: OpaquePointer, _ op: MDB_cursor_op, key: UnsafeRawBufferPointer? = nil, value: UnsafeRawBufferPointer? = nil) throws -> Entry? {
        var k = MDB_val(mv_size: key?.count ?? 0, mv_data: UnsafeMutableRawPointer(mutating: key?.baseAddress))
        var v = MDB_val(mv_size: value?.count ?? 0, mv_data: UnsafeMutableRawPointer(mutating: value?.baseAddress))
        let rc = canopy_mdb_cursor_get_checked(containment, handle, &k, &v, op, checks)
        if rc == 0 {
            return Entry(key: UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size), value: UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
        }
        if rc == MDB_NOTFOUND { return nil }
        // LMDB answers EINVAL for the current entry of a cursor that was never positioned (or whose database lost
        // its last entry): there is no current entry.
        if rc == LMDBError.Code.invalidArgument.rawValue && op == MDB_GET_CURRENT { return nil }
        throw transaction.checkedReadFailure(rc, "mdb_cursor_get", database, key: k, value: v, lookupKey: nil)
    }

    /// The value of `key`, or `nil` when there is none, leaving the cursor at the first entry at or after `key`
    /// (where a put of `key` through the cursor starts: LMDB checks the cursor's page before descending the tree).
    /// Only the value of `key` is checked (inside the data file, its checksum): a neighbour the cursor stops on is
    /// not read.
    /// - Throws: ``LMDBError/Code/checksumMismatch`` when the value of `key` fails its check.
    public func seek(key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        guard let handle else {
            throw LMDBError(code: .badTransaction, operation: "mdb_cursor_get", path: transaction.environment.path,
                            database: database.name, hint: "The cursor is closed")
        }
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val()
        // Positioned without the checksum's check (the entry found may be a neighbour, whose value is not read), then
        // the key's own entry read with it.
        let rc = canopy_mdb_cursor_get_checked(containment, handle, &k, &v, MDB_SET_RANGE, checks & ~CANOPY_LMDB_CHECK_CHECKSUMMED)
        if rc == MDB_NOTFOUND { return nil }
        if rc != 0 { throw transaction.checkedReadFailure(rc, "mdb_cursor_get", database, key: k, value: v, lookupKey: nil) }
        guard k.mv_size == key.count, let found = k.mv_data, let wanted = key.baseAddress, memcmp(found, wanted, key.count) == 0 else { return nil }
        return try step(handle, MDB_GET_CURRENT)?.value
    }

    /// Moves to the first entry. `nil` when the database is empty.
    public func first() throws -> Entry? { try get(MDB_FIRST) }
    /// Moves to the last entry. `nil` when the database is empty.
    public func last() throws -> Entry? { try get(MDB_LAST) }
    /// Moves to the next entry. `nil` past the end.
    @inlinable @inline(__always)
    public func next() throws -> Entry? {
        // (Not through `get`: a scan's step, without its optional arguments.)
        guard let handle else { return try get(MDB_NEXT) }
        return try step(handle, MDB_NEXT)
    }
    /// Moves to the previous entry. `nil` before the start.
    public func previous() throws -> Entry? { try get(MDB_PREV) }
    /// The entry at the cursor, or `nil` when the cursor is not positioned.
    public func current() throws -> Entry? { try get(MDB_GET_CURRENT) }

    /// Moves to `key` exactly. `nil` (cursor unpositioned) when it is absent.
    public func seek(exactly key: UnsafeRawBufferPointer) throws -> Entry? { try get(MDB_SET_KEY, key: key) }
    /// Moves to `key` exactly. `nil` when it is absent.
    public func seek(exactly key: [UInt8]) throws -> Entry? { try key.withUnsafeBytes { try seek(exactly: $0) } }

    /// Moves to the first key `>= key`. `nil` when there is none.
    public func seek(atOrAfter key: UnsafeRawBufferPointer) throws -> Entry? {
        // LMDB rejects an empty search key (MDB_BAD_VALSIZE), but every key is >= the empty one.
        if key.isEmpty { return try first() }
        return try get(MDB_SET_RANGE, key: key)
    }
    /// Moves to the first key `>= key`. `nil` when there is none.
    public func seek(atOrAfter key: [UInt8]) throws -> Entry? { try key.withUnsafeBytes { try seek(atOrAfter: $0) } }

    /// Moves to the last key `<= key`. `nil` when there is none.
    public func seekLast(atOrBefore key: [UInt8]) throws -> Entry? {
        if let entry = try seek(atOrAfter: key) {
            if entry.key.elementsEqual(key) { return entry }
            return try previous()
        }
        return try last()
    }

    /// Writes `value` for `key` through the cursor, leaving the cursor on the new entry.
    public func put(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer, flags: PutFlags = []) throws {
        guard let handle, transaction is WriteTransaction else {
            throw LMDBError(code: .invalidArgument, operation: "mdb_cursor_put", path: transaction.environment.path,
                            database: database.name, hint: "Cursor writes need an open write transaction")
        }
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        guard database.checksummed else {
            var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
            let rc = canopy_mdb_cursor_put(transaction.environment.containment, handle, &k, &v, flags.rawValue)
            if rc != 0 { throw transaction.failure(rc, "mdb_cursor_put", database) }
            return
        }
        let sealed = ValueChecksum.sealed(value, key: key)
        let rc = sealed.withUnsafeBytes { bytes in
            var v = MDB_val(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
            return canopy_mdb_cursor_put(transaction.environment.containment, handle, &k, &v, flags.rawValue)
        }
        if rc != 0 { throw transaction.failure(rc, "mdb_cursor_put", database) }
    }

    /// Writes a value of `count` bytes for `key` through the cursor, letting `fill` write it in place in the map
    /// (`MDB_RESERVE`): no intermediate buffer for a checksummed database's trailer, which is sealed after `fill`.
    /// Leaves the cursor on the entry. `fill` must not read the map (the put may have moved or overwritten what the
    /// cursor lent before): pass it bytes of your own.
    /// - Throws: what ``put(_:forKey:flags:)`` throws; what `fill` throws (the entry then holds unsealed bytes: throw
    ///   on, so that the transaction aborts).
    public func putReserving(_ count: Int, forKey key: UnsafeRawBufferPointer, flags: PutFlags = [],
                             _ fill: (UnsafeMutableRawBufferPointer) throws -> Void) throws {
        guard let handle, transaction is WriteTransaction else {
            throw LMDBError(code: .invalidArgument, operation: "mdb_cursor_put", path: transaction.environment.path,
                            database: database.name, hint: "Cursor writes need an open write transaction")
        }
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        let checksummed = database.checksummed
        var v = MDB_val(mv_size: checksummed ? count + ValueChecksum.size : count, mv_data: nil)
        let rc = canopy_mdb_cursor_put(transaction.environment.containment, handle, &k, &v, flags.rawValue | UInt32(MDB_RESERVE))
        if rc != 0 { throw transaction.failure(rc, "mdb_cursor_put", database) }
        try fill(UnsafeMutableRawBufferPointer(start: v.mv_data, count: count))
        if checksummed { ValueChecksum.seal(UnsafeMutableRawBufferPointer(start: v.mv_data, count: v.mv_size), key: key) }
    }

    /// Deletes the entry at the cursor. The cursor then stands on the following entry (read it with ``current()``).
    public func deleteCurrent() throws {
        guard let handle, transaction is WriteTransaction else {
            throw LMDBError(code: .invalidArgument, operation: "mdb_cursor_del", path: transaction.environment.path,
                            database: database.name, hint: "Cursor writes need an open write transaction")
        }
        let rc = canopy_mdb_cursor_del(transaction.environment.containment, handle, 0)
        if rc != 0 { throw transaction.failure(rc, "mdb_cursor_del", database) }
    }
}
