import CLMDB
import CLMDBGuard

extension Cursor {
    /// Entries a scan reads ahead of its position in one call into LMDB (``Cursor/readAhead(into:prefix:)``): up to
    /// `capacity` of them, each checked as a single step checks it (key and value inside the data file, the value's
    /// checksum). A scan's step otherwise costs a call from Swift and a `sigsetjmp` per entry.
    ///
    /// The entries' buffers point into the memory map, valid as those of ``Entry`` are. An entry that fails its checks
    /// is not in the batch: its error is kept and thrown by the next ``Cursor/readAhead(into:prefix:)``, so that a scan meets
    /// it where a step would have, after the entries before it. So is a crash contained while reading ahead, with one
    /// difference: the environment is damaged from then on (``Environment/isDamaged``), so a call the scan's user
    /// makes while it handles the entries before it throws ``LMDBError/Code/environmentDamaged``.
    public struct ReadAhead: ~Copyable {
        @usableFromInline let keys: UnsafeMutablePointer<MDB_val>
        @usableFromInline let values: UnsafeMutablePointer<MDB_val>
        /// The most entries one read fills.
        public let capacity: Int
        /// The entries the last read filled.
        public private(set) var count = 0
        /// The error met after the last entry, thrown by the next read.
        var pending: LMDBError?
        /// Whether the cursor has gone past its last entry (nothing left to read).
        var exhausted = false
        /// How many entries the next read asks for: a few at first, doubling up to `capacity`, so that a scan that
        /// stops after a few entries reads (and checks) few beyond them.
        var nextCapacity: Int

        /// An empty batch that reads up to `capacity` (at least 1) entries at a time.
        public init(capacity: Int) {
            self.capacity = max(1, capacity)
            nextCapacity = min(4, self.capacity)
            keys = .allocate(capacity: self.capacity)
            keys.initialize(repeating: MDB_val(), count: self.capacity)
            values = .allocate(capacity: self.capacity)
            values.initialize(repeating: MDB_val(), count: self.capacity)
        }

        deinit {
            keys.deallocate()
            values.deallocate()
        }

        /// Entry `index` of the last read, or `nil` outside `0..<count`.
        @inlinable
        public func entry(at index: Int) -> Entry? {
            guard index >= 0 && index < count else { return nil }
            let key = keys[index], value = values[index]
            return Entry(key: UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size),
                         value: UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size))
        }

        mutating func filled(_ count: Int) { self.count = count }
    }

    /// Reads the entries after the current one into `batch` (replacing what it held), as ``next()`` would read them one
    /// by one. Returns `false` when there is none left.
    ///
    /// With a `prefix`, the first entry whose key does not start with it is the last one read (the batch ends with it,
    /// and the next read returns `false`): a scan of a prefix reads, and checks, nothing past the entry where a scan
    /// stepping with ``next()`` stops — damage further on stays for a scan that gets there.
    ///
    /// In a write transaction it reads one entry at a time (a write the caller makes between two entries could move
    /// the pages later entries point into), so it can be used wherever a step can.
    /// - Throws: what ``next()`` throws, when the scan reaches the entry that fails (the entries before it are
    ///   returned first).
    public func readAhead(into batch: inout ReadAhead, prefix: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)) throws -> Bool {
        if let pending = batch.pending {
            batch.pending = nil
            batch.filled(0)
            throw pending
        }
        guard !batch.exhausted else {
            batch.filled(0)
            return false
        }
        guard let handle else {
            throw LMDBError(code: .badTransaction, operation: "mdb_cursor_get", path: transaction.environment.path,
                            database: database.name, hint: "The cursor is closed")
        }
        let capacity = transaction.isReadOnly ? batch.nextCapacity : 1
        batch.nextCapacity = min(batch.capacity, 2 * batch.nextCapacity)
        var filled: Int32 = 0
        let rc = canopy_mdb_cursor_get_batch_checked(
            containment, handle, batch.keys, batch.values, Int32(capacity), MDB_NEXT, checks, prefix.baseAddress, prefix.count, &filled)
        let count = Int(filled)
        batch.filled(count)
        if rc == MDB_NOTFOUND {
            batch.exhausted = true
        } else if rc != 0 {
            let failure = transaction.checkedReadFailure(rc, "mdb_cursor_get", database, key: batch.keys[count], value: batch.values[count], lookupKey: nil)
            guard count > 0 else { throw failure }
            batch.pending = failure
        }
        return count > 0
    }
}
