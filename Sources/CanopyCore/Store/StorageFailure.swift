import LMDB

/// The message of a ``CanopyError/Code/storage`` error: for each LMDB return code a user can meet, what happened in
/// Canopy's terms and what to do about it (LMDB's own text, kept in ``CanopyError/underlying``, says only what
/// happened). Codes with a remedy of their own (a full map or disk, a permission, damage) become other codes first
/// (``CanopyError/wrap(_:path:collection:key:)``).
enum StorageFailure {
    /// The message for `lmdb`.
    static func message(for lmdb: LMDBError) -> String {
        switch lmdb.code {
        case .keyExists:
            return "an `appending` put was given a key that does not sort after every key of its table (or a put that may not overwrite, a key already there); nothing was written. Put the value without `appending`, or remove the key first"
        case .badValueSize:
            return "a key LMDB cannot store: keys (an extension table's too) are 1 to 511 bytes; nothing was written. Use a shorter, non-empty key (a hash of a long one)"
        case .readersFull:
            return "too many read transactions are open at once: LMDB's reader table (DatabaseOptions.maxReaders, shared by every process of the database) is full; nothing was read. End long-lived reads (pinned connections, observers, transactions kept open), clear the slots of dead processes (`canopy readers --clear-stale`), or have every process open the database with a larger maxReaders after they all closed it (the first to open it sets the size)"
        case .transactionFull:
            return "the write transaction changed more pages than LMDB holds in one transaction (about 131,000 pages, 512 MiB); it was rolled back and nothing was written. Split the work into several smaller transactions"
        case .databasesFull:
            return "the database needs more tables than it was opened with (each view, index or extension opens a few); nothing was written. Open the database with a larger DatabaseOptions.maxTables"
        case .mapResized:
            return "another process grew the database beyond this process's map; nothing was written. Retry: the next transaction adopts the new size"
        case .readOnlyFileSystem:
            return "the database's file system is read-only; nothing was written. Open the database with DatabaseOptions.readOnly to read it, or move it to a writable file system"
        case .panic:
            return "LMDB failed fatally earlier in this process and refuses every call on the database; nothing was written. Close every connection and open the database again (check the disk if it happens again)"
        case .badReaderSlot:
            return "a read transaction was used from another thread than the one that began it; Canopy opens its databases with MDB_NOTLS, so a transaction must have left its closure. Use a transaction only inside its read { } or readWrite { } closure"
        case .badDatabase, .incompatible:
            return "a table's handle or flags do not match the table in the file (a table dropped or recreated by another process, or a file another program wrote); nothing was written. Open the database again; if it persists, check the file with `canopy verify`"
        case .threadLocalStorageFull:
            return "the process has too many LMDB environments open; nothing was read or written. Close databases it no longer uses"
        case .outOfMemory:
            return "the system could not map the database (out of memory or address space); nothing was written. Close other databases, or lower DatabaseOptions.maximumMapSize"
        case .busy:
            return "a file of the database is busy (another process holds it); nothing was written. Retry once the other process is done"
        case .noSuchFile:
            return "a file of the database is missing (its directory was moved or removed while it was open); nothing was written. Close the database and open it again at its current place"
        case .notFound, .cursorFull, .pageFull, .invalid, .versionMismatch:
            return "LMDB met the database's structure in a state it does not expect (\(lmdb.code)); nothing was written. Check a copy of the file with `canopy verify`, and restore a backup if it reports damage"
        default:
            return "\(lmdb.description). The transaction was rolled back and nothing was written; if it persists, check a copy of the file with `canopy verify`"
        }
    }
}
