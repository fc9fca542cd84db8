import LMDB

/// A walk of every table of an LMDB environment: every entry, and a byte of every 512 of each value, so that every
/// page (overflow pages too) is read. `canopy verify` runs it first; after a crash in a contained child, `canopy
/// walk-tables` (hidden) runs it alone to find where LMDB crashes (see ``CrashContainment``). Each step is recorded
/// in the ``Breadcrumb``.
struct TableWalk {
    var tables = 0
    var entries = 0
    var problems: [String] = []

    /// Walks `environment` in one read transaction.
    static func run(_ environment: Environment) throws -> TableWalk {
        var walk = TableWalk()
        try environment.read { txn in
            Breadcrumb.phase("reading the list of tables (LMDB's main table)")
            let names = try txn.databaseNames()
            for name in names {
                walk.tables += 1
                do {
                    Breadcrumb.phase("walking table '\(name)'")
                    let table = try txn.openDatabase(named: name)
                    let statistics = try txn.statistics(of: table)
                    Breadcrumb.table(entries: statistics.entries, leafPages: statistics.leafPages)
                    var checksum: UInt64 = 0
                    var read = 0
                    try txn.forEach(in: table) { key, value in
                        read += 1
                        Breadcrumb.entry(read, key: key)
                        var offset = 0
                        while offset < value.count {
                            checksum &+= UInt64(value[offset])
                            offset += 512
                        }
                        checksum &+= UInt64(key.count) &+ UInt64(value.last ?? 0)
                        return true
                    }
                    _ = checksum
                    walk.entries += read
                    if read != statistics.entries {
                        walk.problems.append("table \(name) holds \(read) entries, but its record says \(statistics.entries)")
                    }
                } catch {
                    walk.problems.append("table \(name) cannot be read: \(error)")
                }
            }
        }
        return walk
    }
}
