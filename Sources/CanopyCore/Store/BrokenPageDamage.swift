import LMDB

/// Says where LMDB met damage in its own pages (not in a record's bytes, which checksums cover): a crash inside LMDB
/// that the LMDB layer contained, a call refused after one, a key or value that runs past the end of the file, a page
/// of the wrong kind or beyond the last one.
enum BrokenPageDamage {
    /// Whether `code` means LMDB met a broken page (the errors ``error(_:path:collection:key:)`` explains).
    static func isBrokenPage(_ code: LMDBError.Code) -> Bool {
        code == .crashContained || code == .environmentDamaged || code == .valueOutsideFile || code == .corrupted || code == .pageNotFound
    }

    /// The ``CanopyError/Code/corruptStore`` for `lmdb`, naming the table (and the row or record when LMDB's error has
    /// its key), what LMDB met, and what to do.
    static func error(_ lmdb: LMDBError, path: String?, collection: String? = nil, key: String? = nil) -> CanopyError {
        let place = StoredRecordDamage.Place(table: lmdb.database ?? "(main)", key: lmdb.key, path: path)
        let damage = lmdb.damage.map { " (\($0))" } ?? ""
        let what: String
        switch lmdb.code {
        case .crashContained:
            what = "LMDB crashed on a broken page reading \(place.text)\(damage), and the crash was contained. Nothing more is read or written through this database in this process"
        case .environmentDamaged:
            what = "an earlier LMDB call crashed on a broken page\(damage), and the crash was contained. Nothing more is read or written through this database in this process"
        case .valueOutsideFile:
            what = "a broken page holds \(place.text), whose size or place runs past the end of the file\(damage). Nothing was read from it"
        case .corrupted:
            what = "LMDB met a broken page (of the wrong kind) reading \(place.text)"
        default:
            what = "LMDB found a page missing (past the last one) reading \(place.text)"
        }
        // A refused call names no place of its own: the damage is where the first crash was.
        let named: StoredRecordDamage.Place? = lmdb.code == .environmentDamaged ? nil : place
        return CanopyError(
            .corruptStore,
            "the database is damaged: \(what). Restore the database from a backup (`canopy verify` on a copy tells what is still readable)",
            path: path, collection: named?.collection ?? collection, key: named?.rowKey ?? key, extensionName: named?.extensionName,
            underlying: lmdb)
    }
}
