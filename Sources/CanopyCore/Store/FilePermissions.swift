import Foundation

/// Which permission a database operation lacks, said in a sentence that names the file and what is needed: for
/// ``CanopyError/Code/permissionDenied`` (LMDB only reports `EACCES` without the file).
enum FilePermissions {
    /// The problem that makes `path` (or one of its parents) impossible to look into, if any: a directory without
    /// search permission makes every file below it look missing, which must not read as "no database".
    static func searchProblem(_ path: String) -> String? {
        var status = stat()
        guard stat(path, &status) != 0, errno == EACCES else { return nil }
        var directory = (path as NSString).deletingLastPathComponent
        while !directory.isEmpty && directory != "/" {
            if access(directory, X_OK) != 0 {
                return "permission denied: the directory \(directory) cannot be searched by this user (it needs x permission) to reach \(path)"
            }
            directory = (directory as NSString).deletingLastPathComponent
        }
        return "permission denied: \(path) cannot be reached by this user; check the permissions of its directories"
    }

    /// The sentence for an `EACCES`/`EPERM` from opening the database in `directory`.
    static func problem(inDatabase directory: String, readOnly: Bool) -> String {
        let data = directory + "/data.mdb"
        let lock = directory + "/lock.mdb"
        let remedy = "run as the user that owns the database, or change the permissions"
        if access(directory, X_OK) != 0 {
            return "permission denied: the directory \(directory) cannot be searched by this user (it needs x permission); \(remedy)"
        }
        if access(data, F_OK) == 0 && access(data, readOnly ? R_OK : R_OK | W_OK) != 0 {
            return "permission denied: \(data) cannot be \(readOnly ? "read" : "read and written") by this user (it needs \(readOnly ? "r" : "rw") permission); \(remedy)"
        }
        if access(lock, F_OK) == 0 {
            if access(lock, R_OK | W_OK) != 0 {
                return "permission denied: \(lock) cannot be written by this user; every process that opens the database, read-only ones too, writes its lock file (it needs rw permission). \(remedy.prefix(1).uppercased() + remedy.dropFirst()), or inspect a copy without the lock file (`canopy --no-lock`), safe only when no process writes"
            }
        } else if access(directory, W_OK) != 0 {
            return "permission denied: the lock file lock.mdb cannot be created in \(directory) (the directory needs w permission for this user); \(remedy), or inspect it without the lock file (`canopy --no-lock`), safe only when no process writes"
        }
        if !readOnly && access(directory, W_OK) != 0 {
            return "permission denied: \(directory) cannot be written by this user (it needs w permission); \(remedy), or open it read-only"
        }
        return "permission denied opening the files in \(directory) (an immutable file, or a security policy); \(remedy)"
    }
}
