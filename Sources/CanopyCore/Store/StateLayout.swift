/// Where a store keeps its state (``StoreState``: the snapshot, each extension's consistent snapshot) and the
/// extensions' state records, by format. This build writes ``inLog``; it reads the other two as they are in a file
/// opened read-only, and upgrades them in place when it opens one read-write (``FormatUpgrade``).
///
/// | format | the store's state | an extension's state record |
/// | --- | --- | --- |
/// | `canopy/4` (``records``) | `canopy.info`'s `state` | `canopy.info`'s `ext.<name>.state` |
/// | `canopy/5` (``storeStateInLog``) | the commit log's newest entry (version 2) | `canopy.info`'s `ext.<name>.state` |
/// | `canopy/6` (``inLog``) | the commit log's newest entry (version 3) | the same entry |
///
/// Each step took a record out of `canopy.info`, which a commit otherwise dirtied beside the rows and the log: one
/// page and its root's record in LMDB's main table. An upgraded file keeps a one-byte marker in place of each moved
/// record (``StoreTables/movedStateRecord``, ``StoreTables/movedExtensionStateRecord``), so a process of an older
/// build that still has it open fails on a malformed record (``CanopyError/Code/corruptStore``) rather than read a
/// stale one.
enum StateLayout: CaseIterable, Sendable {
    /// `canopy/4`: the state and the extensions' records are records of `canopy.info`.
    case records
    /// `canopy/5`: the state is the commit log's newest entry; the extensions' records are records of `canopy.info`.
    case storeStateInLog
    /// `canopy/6`: the commit log's newest entry holds the state and every extension's record.
    case inLog

    /// The format tag of a store of this layout, with or without value checksums.
    func formatTag(checksummed: Bool) -> String {
        let tag: String
        switch self {
        case .records: tag = "canopy/4"
        case .storeStateInLog: tag = "canopy/5"
        case .inLog: tag = "canopy/6"
        }
        return checksummed ? tag : tag + "-without-checksums"
    }

    /// Whether the store's state is the commit log's newest entry.
    var storeStateInLog: Bool { self != .records }

    /// The version of the commit-log entries this layout's commits write (the newest entry's, which is the state).
    var newestEntryVersion: UInt8 {
        self == .inLog ? CommitLogEntry.version : CommitLogEntry.versionWithoutExtensionStates
    }
}
