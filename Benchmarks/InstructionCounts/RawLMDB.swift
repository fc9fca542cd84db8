import CLMDBBench
import Foundation

/// The raw baseline: LMDB's C API called from Swift, doing what `lmdb_bench.c` does (one unnamed database, 16-byte
/// keys, 100-byte values, map size 8 GiB) with no wrapper in between.
final class RawEnvironment {
    let directory: String
    let env: OpaquePointer
    let dbi: MDB_dbi
    /// Scratch buffers for one key and one value, like the C program's stack arrays.
    let keyBuffer = UnsafeMutableRawPointer.allocate(byteCount: Workload.rawKeySize, alignment: 8)
    let valueBuffer = UnsafeMutableRawPointer.allocate(byteCount: Workload.rawValueSize, alignment: 8)
    /// Keeps the reads from being optimized away.
    var sink: UInt64 = 0

    /// Opens (creating) an environment in `directory` with LMDB environment `flags` (0, `MDB_NOSYNC`, ...).
    init(directory: String, flags: Int32 = 0) {
        self.directory = directory
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var env: OpaquePointer?
        check(mdb_env_create(&env), "mdb_env_create")
        self.env = env!
        check(mdb_env_set_mapsize(env, 8 << 30), "mdb_env_set_mapsize")
        check(mdb_env_open(env, directory, UInt32(flags), 0o644), "mdb_env_open")
        var txn: OpaquePointer?
        var dbi = MDB_dbi()
        check(mdb_txn_begin(env, nil, 0, &txn), "mdb_txn_begin")
        check(mdb_dbi_open(txn, nil, 0, &dbi), "mdb_dbi_open")
        check(mdb_txn_commit(txn), "mdb_txn_commit")
        self.dbi = dbi
    }

    deinit {
        mdb_env_close(env)
        keyBuffer.deallocate()
        valueBuffer.deallocate()
    }

    /// Writes the raw key of row `index` into the key buffer (`make_key`).
    @inline(__always)
    func makeKey(_ index: UInt64) {
        keyBuffer.storeBytes(of: index.bigEndian, as: UInt64.self)
        keyBuffer.storeBytes(of: mix(index), toByteOffset: 8, as: UInt64.self)
    }

    /// Writes the raw value of row `index` into the value buffer (`make_val`).
    @inline(__always)
    func makeValue(_ index: UInt64) {
        var s = mix(index ^ 0x1234567)
        var offset = 0
        while offset + 8 <= Workload.rawValueSize {
            s = mix(s)
            valueBuffer.storeBytes(of: s, toByteOffset: offset, as: UInt64.self)
            offset += 8
        }
        s = mix(s)
        withUnsafeBytes(of: s) { tail in
            (valueBuffer + offset).copyMemory(from: tail.baseAddress!, byteCount: Workload.rawValueSize - offset)
        }
    }

    /// Puts `order.count` rows, in that order, in one write transaction (the `ins_rand` phase).
    func insert(_ order: [Int]) {
        var txn: OpaquePointer?
        check(mdb_txn_begin(env, nil, 0, &txn), "mdb_txn_begin")
        var key = MDB_val(mv_size: Workload.rawKeySize, mv_data: keyBuffer)
        var value = MDB_val(mv_size: Workload.rawValueSize, mv_data: valueBuffer)
        for index in order {
            makeKey(UInt64(index))
            makeValue(UInt64(index))
            key.mv_size = Workload.rawKeySize
            value.mv_size = Workload.rawValueSize
            check(mdb_put(txn, dbi, &key, &value, 0), "mdb_put")
        }
        check(mdb_txn_commit(txn), "mdb_txn_commit")
    }

    /// Puts `order.count` rows in one write transaction, each with two more puts standing for two view entries: the
    /// row (16-byte key, 100-byte value), then two 17-byte index keys (a tag byte and the row's key) with 8-byte
    /// values — the LMDB work of a store that keeps two indexes, with none of their logic.
    func insertWithTwoIndexes(_ order: [Int]) {
        var txn: OpaquePointer?
        check(mdb_txn_begin(env, nil, 0, &txn), "mdb_txn_begin")
        let indexKey = UnsafeMutableRawPointer.allocate(byteCount: Workload.rawKeySize + 1, alignment: 8)
        defer { indexKey.deallocate() }
        var key = MDB_val(mv_size: Workload.rawKeySize, mv_data: keyBuffer)
        var value = MDB_val(mv_size: Workload.rawValueSize, mv_data: valueBuffer)
        for index in order {
            makeKey(UInt64(index))
            makeValue(UInt64(index))
            key.mv_size = Workload.rawKeySize
            value.mv_size = Workload.rawValueSize
            check(mdb_put(txn, dbi, &key, &value, 0), "mdb_put")
            for tag in [UInt8(0xA0), 0xB0] {
                indexKey.storeBytes(of: tag, as: UInt8.self)
                (indexKey + 1).copyMemory(from: keyBuffer, byteCount: Workload.rawKeySize)
                var entryKey = MDB_val(mv_size: Workload.rawKeySize + 1, mv_data: indexKey)
                var entryValue = MDB_val(mv_size: 8, mv_data: valueBuffer)
                check(mdb_put(txn, dbi, &entryKey, &entryValue, 0), "mdb_put")
            }
        }
        check(mdb_txn_commit(txn), "mdb_txn_commit")
    }

    /// `count` random point reads of rows `0..<rowCount` (picked by `generator`, or from `hotRows` when given) in one
    /// read transaction (the `get_rand` phase).
    func pointReads(_ count: Int, generator: inout XorShift, hotRows: [Int]? = nil) {
        var txn: OpaquePointer?
        check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "mdb_txn_begin")
        var key = MDB_val(mv_size: Workload.rawKeySize, mv_data: keyBuffer)
        var value = MDB_val()
        var sink = self.sink
        let rows = UInt64(Workload.rowCount)
        for _ in 0..<count {
            let index: UInt64
            if let hotRows {
                index = UInt64(hotRows[Int(generator.next() % UInt64(hotRows.count))])
            } else {
                index = generator.next() % rows
            }
            makeKey(index)
            check(mdb_get(txn, dbi, &key, &value), "mdb_get")
            sink &+= UInt64(value.mv_data.load(fromByteOffset: value.mv_size - 1, as: UInt8.self))
        }
        mdb_txn_abort(txn)
        self.sink = sink
    }

    /// Visits every row with a cursor in one read transaction (the `scan` phase). Returns the number of rows.
    @discardableResult
    func scan() -> Int {
        var txn: OpaquePointer?
        var cursor: OpaquePointer?
        check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "mdb_txn_begin")
        check(mdb_cursor_open(txn, dbi, &cursor), "mdb_cursor_open")
        var key = MDB_val()
        var value = MDB_val()
        var count = 0
        var sink = self.sink
        var rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST)
        while rc == 0 {
            sink &+= UInt64(value.mv_data.load(as: UInt8.self)) &+ UInt64(key.mv_size)
            count += 1
            rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
        }
        if rc != MDB_NOTFOUND { check(rc, "mdb_cursor_get") }
        mdb_cursor_close(cursor)
        mdb_txn_abort(txn)
        self.sink = sink
        return count
    }

    /// `count` write transactions of one put each, overwriting random existing rows (the `txn_*` phases).
    func smallTransactions(_ count: Int, generator: inout XorShift, round: Int) {
        var key = MDB_val(mv_size: Workload.rawKeySize, mv_data: keyBuffer)
        var value = MDB_val(mv_size: Workload.rawValueSize, mv_data: valueBuffer)
        let rows = UInt64(Workload.rowCount)
        for j in 0..<count {
            let index = generator.next() % rows
            makeKey(index)
            makeValue(index &+ UInt64(round * count + j) &+ 1)
            key.mv_size = Workload.rawKeySize
            value.mv_size = Workload.rawValueSize
            var txn: OpaquePointer?
            check(mdb_txn_begin(env, nil, 0, &txn), "mdb_txn_begin")
            check(mdb_put(txn, dbi, &key, &value, 0), "mdb_put")
            check(mdb_txn_commit(txn), "mdb_txn_commit")
        }
    }
}

/// Stops the benchmark with LMDB's message when `rc` is an error (the C program's `CHECK`).
@inline(__always)
func check(_ rc: Int32, _ operation: @autoclosure () -> String) {
    if rc != 0 {
        fatalError("\(operation()): \(String(cString: mdb_strerror(rc)))")
    }
}
