#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Checks a data file against what its meta pages claim before LMDB maps it: a file shorter than its last used page
/// (a copy cut short, a truncated file) would make the first read of a missing page end the process with SIGBUS.
///
/// LMDB's meta pages (pages 0 and 1; `mdb.c`, `MDB_meta` after a 16-byte page header): magic at byte 16, the page
/// size at byte 40 (`mm_dbs[FREE_DBI].md_pad`), the last used page at byte 136, the transaction id at byte 144, all
/// native-endian. LMDB uses the meta page with the larger transaction id; so does this check.
enum DataFileCheck {
    static let magic: UInt32 = 0xBEEF_C0DE
    static let pageHeaderSize = 16

    /// What the meta pages of a data file say.
    struct Meta: Equatable {
        var pageSize: Int
        var lastPage: UInt64
        var transactionID: UInt64
    }

    /// The data file of an environment opened at `path` with `flags`.
    static func dataFilePath(environmentPath path: String, flags: EnvironmentOptions.Flags) -> String {
        flags.contains(.noSubdirectory) ? path : path + "/data.mdb"
    }

    /// Throws ``LMDBError/Code/fileTruncated`` when the data file is shorter than the pages its newest meta page
    /// claims. A missing or empty file (a new environment) and a file whose meta pages are not LMDB's (LMDB itself
    /// answers `MDB_INVALID` for it) pass.
    static func check(environmentPath path: String, flags: EnvironmentOptions.Flags) throws {
        let file = dataFilePath(environmentPath: path, flags: flags)
        let descriptor = open(file, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }  // missing or unreadable: mdb_env_open reports it
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return }
        let size = Int(status.st_size)
        guard size > 0 else { return }
        afterSizeRead.withLock { $0 }?(file)
        guard let meta = try newestMeta(descriptor: descriptor, fileSize: size) else { return }
        let (pages, overflow) = meta.lastPage.addingReportingOverflow(1)
        let (needed, overflow2) = Int(clamping: pages).multipliedReportingOverflow(by: meta.pageSize)
        let required = overflow || overflow2 ? Int.max : max(needed, 2 * meta.pageSize)
        // Another process may have committed between the size and the meta page: its meta names pages past the size
        // read before it. LMDB writes a commit's pages before the meta page that names them, so a size read after
        // the meta covers them, unless the file really is short.
        if size < required, fstat(descriptor, &status) == 0, Int(status.st_size) >= required { return }
        if size < required {
            throw LMDBError(
                code: .fileTruncated, operation: "mdb_env_open", path: path,
                hint: "data.mdb is truncated: \(size) bytes, the database needs \(required == Int.max ? "more than can be addressed" : String(required)) (\(overflow ? "2^64" : String(pages)) pages of \(meta.pageSize) bytes); restore a backup")
        }
    }

    /// Called with the data file's path after ``check(environmentPath:flags:)`` read its size, before it reads the
    /// meta pages (tests only: another process committing at that moment).
    static let afterSizeRead = Mutex<(@Sendable (String) -> Void)?>(nil)

    /// The meta page LMDB would use, or `nil` when the file does not start with LMDB meta pages.
    static func newestMeta(descriptor: Int32, fileSize: Int) throws -> Meta? {
        guard let first = readMeta(descriptor: descriptor, offset: 0) else {
            // Cut within its first meta page, after LMDB's magic number: truncated (two pages at least are needed).
            if fileSize < 152, hasMagic(descriptor: descriptor) {
                return Meta(pageSize: Int(sysconf(Int32(_SC_PAGESIZE))), lastPage: 1, transactionID: 0)
            }
            return nil
        }
        guard first.pageSize >= 512, first.pageSize <= 65_536, first.pageSize & (first.pageSize - 1) == 0 else { return nil }
        guard fileSize >= 2 * first.pageSize, let second = readMeta(descriptor: descriptor, offset: first.pageSize) else {
            // The second meta page is missing: the file was cut within its first two pages.
            return Meta(pageSize: first.pageSize, lastPage: max(first.lastPage, 1), transactionID: first.transactionID)
        }
        return second.transactionID > first.transactionID ? Meta(pageSize: first.pageSize, lastPage: second.lastPage, transactionID: second.transactionID) : first
    }

    /// Whether the file starts with an LMDB page header and magic number.
    static func hasMagic(descriptor: Int32) -> Bool {
        var magicBytes: UInt32 = 0
        return pread(descriptor, &magicBytes, 4, off_t(pageHeaderSize)) == 4 && magicBytes == magic
    }

    /// The meta fields of the page at `offset`, or `nil` when it cannot be read or lacks LMDB's magic number.
    static func readMeta(descriptor: Int32, offset: Int) -> Meta? {
        var buffer = [UInt8](repeating: 0, count: 152)
        let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, off_t(offset)) }
        guard count == buffer.count else { return nil }
        return buffer.withUnsafeBytes { bytes -> Meta? in
            guard bytes.loadUnaligned(fromByteOffset: pageHeaderSize, as: UInt32.self) == magic else { return nil }
            return Meta(pageSize: Int(bytes.loadUnaligned(fromByteOffset: 40, as: UInt32.self)),
                        lastPage: bytes.loadUnaligned(fromByteOffset: 136, as: UInt64.self),
                        transactionID: bytes.loadUnaligned(fromByteOffset: 144, as: UInt64.self))
        }
    }
}
