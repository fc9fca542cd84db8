import CLMDB

/// B-tree figures of one database, from `mdb_stat` / `mdb_env_stat`.
public struct DatabaseStatistics: Sendable, Hashable {
    /// The size of a page in bytes.
    public var pageSize: Int
    /// The depth of the B-tree.
    public var depth: Int
    /// The number of internal (non-leaf) pages.
    public var branchPages: Int
    /// The number of leaf pages.
    public var leafPages: Int
    /// The number of overflow pages (values larger than about half a page).
    public var overflowPages: Int
    /// The number of key/data pairs.
    public var entries: Int

    /// The bytes taken by all the pages of this database.
    public var totalBytes: Int { pageSize * (branchPages + leafPages + overflowPages) }

    init(_ stat: MDB_stat) {
        pageSize = Int(stat.ms_psize)
        depth = Int(stat.ms_depth)
        branchPages = stat.ms_branch_pages
        leafPages = stat.ms_leaf_pages
        overflowPages = stat.ms_overflow_pages
        entries = stat.ms_entries
    }
}

/// Figures of the whole environment, from `mdb_env_info`.
public struct EnvironmentInfo: Sendable, Hashable {
    /// The size of the memory map in bytes.
    public var mapSize: Int
    /// The ID of the last page used in the data file.
    public var lastPage: Int
    /// The ID of the last committed transaction.
    public var lastTransactionID: Int
    /// The maximum number of reader slots.
    public var maxReaders: Int
    /// The number of reader slots used so far: a high-water mark, since slots that ended readers free are reused
    /// rather than subtracted.
    public var readersInUse: Int

    init(_ info: MDB_envinfo) {
        mapSize = info.me_mapsize
        lastPage = info.me_last_pgno
        lastTransactionID = info.me_last_txnid
        maxReaders = Int(info.me_maxreaders)
        readersInUse = Int(info.me_numreaders)
    }
}

