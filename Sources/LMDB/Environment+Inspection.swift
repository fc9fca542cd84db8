import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One slot of the environment's reader table (`mdb_reader_list`): a process with a read transaction, or with a
/// slot it keeps for reuse.
public struct ReaderSlot: Sendable, Hashable {
    /// The process that holds the slot.
    public var processID: Int32
    /// The thread that holds the slot (with `MDB_NOTLS`, the thread that began the transaction), as LMDB prints it.
    public var thread: String
    /// The transaction ID the reader sees, or `nil` when the slot is idle (kept for reuse, no transaction open).
    public var transactionID: Int?
    /// Whether the process is still running (`kill(pid, 0)`); a slot of a dead process is stale: it keeps old pages
    /// from being reused until ``Environment/readerCheck()`` clears it.
    public var processIsAlive: Bool
}

/// Free space in the data file, from LMDB's free list (the database with handle 0).
public struct FreePages: Sendable, Hashable {
    /// The number of free-list records (one per write transaction that freed pages).
    public var records: Int
    /// The number of pages they hold: pages that later writes reuse before growing the file.
    public var pages: Int
}

extension Environment {
    /// The reader table: every slot in use by some process (`mdb_reader_list`).
    ///
    /// - Throws: ``LMDBError`` when LMDB cannot list the table.
    public func readers() throws -> [ReaderSlot] {
        final class Lines {
            var text = ""
        }
        let lines = Lines()
        let rc = withExtendedLifetime(lines) {
            mdb_reader_list(handle, { message, context in
                guard let message, let context else { return 0 }
                Unmanaged<Lines>.fromOpaque(context).takeUnretainedValue().text += String(cString: message)
                return 0
            }, Unmanaged.passUnretained(lines).toOpaque())
        }
        if rc < 0 { throw makeError(rc, "mdb_reader_list", path: path, database: nil) }
        var slots: [ReaderSlot] = []
        for line in lines.text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 3, let pid = Int32(fields[0]) else { continue }  // the header, or "(no active readers)"
            let alive = kill(pid, 0) == 0 || errno == EPERM
            slots.append(ReaderSlot(processID: pid, thread: String(fields[1]), transactionID: Int(fields[2]), processIsAlive: alive))
        }
        return slots
    }
}

extension ReadTransaction {
    /// The names of the named databases, from the main (unnamed) database, in key order.
    public func databaseNames() throws -> [String] {
        let main = try openDatabase(named: nil)
        var names: [String] = []
        try forEach(in: main) { key, _ in
            names.append(String(decoding: key, as: UTF8.self))
            return true
        }
        return names
    }

    /// The pages in LMDB's free list as this transaction sees it (what `mdb_stat -f` reports).
    public func freePages() throws -> FreePages {
        var result = FreePages(records: 0, pages: 0)
        try forEach(in: Database(handle: 0, name: "(free list)")) { _, value in
            result.records += 1
            // Each record is a list of page numbers (size_t) whose first element is their count.
            if value.count >= MemoryLayout<Int>.size {
                result.pages += value.loadUnaligned(as: Int.self)
            }
            return true
        }
        return result
    }

    /// B-tree figures of the free list (handle 0), as ``statistics(of:)`` gives for other databases.
    public func freeListStatistics() throws -> DatabaseStatistics {
        try statistics(of: Database(handle: 0, name: "(free list)"))
    }
}
