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

extension Environment {
    /// The process that holds the environment's write lock now (it has a write transaction open), read from the lock
    /// file; `nil` when no process holds it, or when it cannot be told.
    ///
    /// LMDB does not say who holds its writer mutex. On Linux with glibc, a robust POSIX mutex in the shared lock file
    /// records its owner's thread id; this reads it there (checking the lock file's magic number first) and maps the
    /// thread to its process through `/proc`. Elsewhere, and with ``EnvironmentOptions/Flags/noLock``, it is `nil`.
    public func writeLockHolder() -> Int32? {
        guard !flags.contains(.noLock) else { return nil }
        return Self.writeLockHolder(lockFile: flags.contains(.noSubdirectory) ? path + "-lock" : path + "/lock.mdb")
    }

    /// ``writeLockHolder()`` for the environment whose lock file is `lockFile`, without opening it (for a process
    /// whose open itself waits for the write lock).
    public static func writeLockHolder(lockFile: String) -> Int32? {
        #if os(Linux) && (arch(x86_64) || arch(arm64))
        let descriptor = open(lockFile, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        // MDB_txninfo: magic (4), format (4), reader mutex (40), txnid (8), reader count (4), padded to a 64-byte cache
        // line; then the writer mutex, whose glibc layout is lock (4), count (4), owner thread id (4).
        var header = [UInt8](repeating: 0, count: 76)
        guard pread(descriptor, &header, header.count, 0) == header.count else { return nil }
        let magic = header.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 0, as: UInt32.self) }
        guard magic == 0xBEEF_C0DE else { return nil }
        let owner = header.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 72, as: Int32.self) } & 0x3FFF_FFFF
        guard owner > 0 else { return nil }
        // The thread's process: the Tgid line of /proc/<tid>/status.
        guard let status = try? readText("/proc/\(owner)/status"),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Tgid:") }),
              let process = Int32(line.dropFirst(5).trimmingPrefix(while: { $0 == " " || $0 == "\t" })) else { return owner }
        return process
        #else
        return nil
        #endif
    }
}

/// The text of a small file (a /proc entry), or nil.
private func readText(_ path: String) throws -> String? {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var bytes = [UInt8](repeating: 0, count: 4096)
    let count = read(descriptor, &bytes, bytes.count)
    guard count > 0 else { return nil }
    return String(decoding: bytes.prefix(count), as: UTF8.self)
}
