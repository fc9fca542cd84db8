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
    /// its key) and what to do.
    static func error(_ lmdb: LMDBError, path: String?, collection: String? = nil, key: String? = nil) -> CanopyError {
        let place = StoredRecordDamage.Place(table: lmdb.database ?? "(main)", key: lmdb.key, path: path)
        let what: String
        switch lmdb.code {
        case .crashContained:
            what = "LMDB crashed on a broken page reading \(place.text), and the crash was contained"
        case .environmentDamaged:
            what = "an earlier LMDB call crashed on a broken page of this database, so \(place.text) is not read"
        case .valueOutsideFile:
            what = "a broken page holds \(place.text), whose size or place runs past the end of the file"
        case .corrupted:
            what = "LMDB met a broken page reading \(place.text)"
        default:
            what = "LMDB found a page missing reading \(place.text)"
        }
        var detail = ""
        if let hint = lmdb.hint {
            // The LMDB layer's hint: what crashed and where (its own advice is repeated below).
            let cause = hint.split(separator: ". Restore", maxSplits: 1).first.map(String.init) ?? hint
            detail = " (\(cause.replacingOccurrences(of: "The database is damaged: ", with: "")))"
        }
        let closed = lmdb.code == .crashContained || lmdb.code == .environmentDamaged
            ? " Nothing more is read or written through this database in this process; close it." : ""
        return CanopyError(
            .corruptStore,
            "the database is damaged: \(what)\(detail).\(closed) Restore the database from a backup (`canopy verify` on a copy tells what is still readable)",
            path: path, collection: place.collection ?? collection, key: place.rowKey ?? key, extensionName: place.extensionName,
            underlying: lmdb)
    }
}
