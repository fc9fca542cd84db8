#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a commit's write came up short. LMDB reports a write that wrote only part of its pages as `EIO`; when the
/// file reached the process's size limit or the file system has no room left, the cause is a full disk (or limit),
/// not a failing disk, and the caller should say so.
enum ShortWriteCause {
    /// `EFBIG` when the data file is at the process's file size limit (`RLIMIT_FSIZE`), `ENOSPC` when its file system
    /// has no block left for this user, `nil` otherwise.
    static func diskFullCode(dataFile: String, pageSize: Int) -> Int32? {
        var status = stat()
        if stat(dataFile, &status) == 0 {
            var limit = rlimit()
            if getrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max,
               Int(status.st_size) + pageSize > Int(clamping: limit.rlim_cur) {
                return EFBIG
            }
        }
        var space = statvfs()
        if statvfs(dataFile, &space) == 0, Int(space.f_bavail) * Int(space.f_frsize) < 4 * pageSize {
            return ENOSPC
        }
        return nil
    }
}
