import CLMDB
import CLMDBGuard

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What was contained: the errors of guarded calls (see ``Environment``, "Crashes inside LMDB") and the bounds check of
/// the keys and values LMDB hands out.
extension Environment {
    /// Whether an LMDB call of this environment crashed on a damaged page in this process (then every call throws
    /// ``LMDBError/Code/environmentDamaged``).
    public var isDamaged: Bool { canopy_lmdb_guard_damage(containment).damaged != 0 }

    /// Whether crashes inside LMDB are contained in this process (`false` with `CANOPY_LMDB_CONTAINMENT=off`).
    public static var containsCrashes: Bool { canopy_lmdb_containment_enabled() != 0 }

    /// The error for `rc`, returned by a call of this environment: for a contained crash or a refused call, with what
    /// crashed and where.
    @usableFromInline
    func failure(_ rc: Int32, _ operation: String, database: String?) -> LMDBError {
        let code = LMDBError.Code(rawValue: rc)
        guard code == .crashContained || code == .environmentDamaged else {
            return makeError(rc, operation, path: path, database: database)
        }
        let first = state.withLock { state in
            if state.firstCrash == nil, code == .crashContained { state.firstCrash = (operation, database) }
            return state.firstCrash
        }
        var crash = damageDescription
        if let first { crash += ", in \(first.operation)" + (first.database.map { " of database '\($0)'" } ?? "") }
        let what = code == .crashContained
            ? "LMDB crashed in this call on a broken page (\(crash)); the crash was contained and the transaction ended"
            : "an earlier LMDB call crashed on a broken page (\(crash))"
        return LMDBError(
            code: code, operation: operation, path: path, database: database,
            hint: "The database is damaged: \(what). Nothing is read or written through this environment again in this process. Restore the database from a backup (`canopy verify` on a copy tells what is still readable)",
            damage: crash)
    }

    /// The first contained crash, for a message: the signal and the page, or LMDB's assertion.
    var damageDescription: String {
        let damage = canopy_lmdb_guard_damage(containment)
        guard damage.damaged != 0 else { return "no crash recorded" }
        if damage.fault_signal == 0 {
            let message = damage.assertion.map { String(cString: $0) } ?? ""
            return "a failed assertion: \(message)"
        }
        let name = damage.fault_signal == SIGBUS ? "SIGBUS" : damage.fault_signal == SIGSEGV ? "SIGSEGV" : "signal \(damage.fault_signal)"
        if damage.fault_in_map == 0 {
            return "\(name) at address \(damage.fault_offset), a null pointer LMDB followed from a damaged page"
        }
        let pageSize = max(1, containment.pointee.page_size)
        let offset = Int(clamping: damage.fault_offset)
        let fileSize = Int(clamping: containment.pointee.file_end)
        let place = offset >= fileSize
            ? "reading byte \(offset) of data.mdb, past its end (\(fileSize) bytes)"
            : "reading page \(offset / pageSize) of data.mdb"
        return "\(name) \(place)"
    }

    /// Throws ``LMDBError/Code/valueOutsideFile`` when `bytes`, a key or value LMDB returned from a page, would run past the end
    /// of the data file (a damaged node's size or offset): reading them would end the process with SIGBUS or SIGSEGV.
    /// `writing`: in a write transaction, values of pages it changed live in its own memory and pass.
    @inlinable @inline(__always)
    func checkReadable(
        _ bytes: MDB_val, writing: Bool, _ what: @autoclosure () -> String, _ operation: String, database: Database?,
        key: @autoclosure () -> [UInt8]?
    ) throws(LMDBError) {
        if canopy_lmdb_guard_readable(containment, bytes.mv_data, bytes.mv_size, writing ? 1 : 0) == 0 {
            throw unreadable(bytes, what(), operation, database: database, key: key())
        }
    }

    @usableFromInline
    func unreadable(_ bytes: MDB_val, _ what: String, _ operation: String, database: Database?, key: [UInt8]?) -> LMDBError {
        let offset = Int(bitPattern: bytes.mv_data) &- Int(bitPattern: UnsafeRawPointer(containment.pointee.map_start))
        let fileSize = Int(clamping: containment.pointee.file_end)
        let pageSize = max(1, containment.pointee.page_size)
        let place = offset >= 0 && offset < fileSize ? "at page \(offset / pageSize)" : "outside the file"
        let damage = "a \(what) \(place) claims \(bytes.mv_size) bytes, past the end of data.mdb (\(fileSize) bytes)"
        return LMDBError(
            code: .valueOutsideFile, operation: operation, path: path, database: database?.name,
            hint: "The database is damaged: \(damage); nothing was read from it. Restore the database from a backup (`canopy verify` on a copy tells what is still readable)",
            key: key.flatMap { $0.count <= 511 ? $0 : nil },  // longer: the key itself is damaged
            damage: damage)
    }

    /// Releases the write lock of a write transaction abandoned after a contained crash (see
    /// `ReadTransaction.abort()`), so that other processes can write; where that is impossible (another C library,
    /// another platform), it is released when the thread ends.
    func releaseWriteLockAfterCrash() {
        _ = canopy_lmdb_guard_release_write_lock(containment)
    }
}
