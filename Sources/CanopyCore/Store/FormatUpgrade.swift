import LMDB

/// Upgrades a `canopy/3` store to `canopy/4` in place: every value of the store's tables (`canopy.*`) and of the
/// extensions' tables (`ext.*`) gets its CRC32C trailer, the format record says `canopy/4`.
///
/// Runs in the write transaction that opens the database, so the upgrade commits whole or not at all (a process
/// killed during it leaves the `canopy/3` file as it was). Values are rewritten as they are, trailers aside: rows,
/// attachments, view pages and the commit log keep their meaning, so nothing is rebuilt and observers' snapshots
/// carry on. A read-only open of a `canopy/3` file is refused instead (``CanopyError/Code/incompatibleFormat`` naming
/// `canopy upgrade`).
enum FormatUpgrade {
    /// Seals every value and writes the new format record. Returns the number of values sealed.
    ///
    /// - Throws: ``CanopyError/Code/incompatibleFormat`` when LMDB refuses a transaction that large
    ///   (`MDB_TXN_FULL`); nothing is changed.
    @discardableResult
    static func upgrade(_ txn: LMDB.WriteTransaction, tables: StoreTables, path: String) throws -> Int {
        do {
            return try sealEverything(txn, tables: tables)
        } catch let error as LMDBError where error.code == .transactionFull {
            throw CanopyError(
                .incompatibleFormat,
                "the store format is '\(StoreTables.upgradableFormatTag)' and upgrading it rewrites every record in one transaction, which LMDB refused as too large (MDB_TXN_FULL). Nothing was changed: export the data with the `canopy export` of the release that wrote it, then `canopy import` it into a new database with this one",
                path: path, underlying: error)
        }
    }

    private static func sealEverything(_ txn: LMDB.WriteTransaction, tables: StoreTables) throws -> Int {
        let main = try txn.openDatabase(named: nil)
        var names: [String] = []
        try txn.forEach(in: main) { key, _ in
            let name = String(decoding: key, as: UTF8.self)
            if StoreTableName.isCanopyTable(name) { names.append(name) }
            return true
        }
        var sealed = 0
        for name in names {
            let database = try txn.openDatabase(named: name)
            let skipsFormat = name == StoreTableName.info  // rewritten last, sealed
            try txn.withCursor(in: database) { cursor in
                var entry = try cursor.first()
                while let current = entry {
                    let key = Array(current.key)
                    if !(skipsFormat && key == StoreInfoKey.format) {
                        let value = key.withUnsafeBytes { ValueChecksum.sealed(current.value, key: $0) }
                        try key.withUnsafeBytes { key in
                            try value.withUnsafeBytes { try cursor.put($0, forKey: key, flags: .current) }
                        }
                        sealed += 1
                    }
                    entry = try cursor.next()
                }
            }
        }
        try tables.writeFormat(in: txn)
        return sealed
    }
}
