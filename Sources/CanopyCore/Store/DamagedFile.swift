import Foundation
import LMDB

/// Tells a damaged Canopy file from another program's LMDB environment, so that a broken Canopy file is reported as
/// damaged (``CanopyError/Code/corruptStore``: restore a backup) and never as foreign (whose remedy, adopting it,
/// would write into the broken file).
///
/// The evidence is Canopy's own table names: the main table of every Canopy file holds `canopy.info` and
/// `canopy.objects` as keys, so their bytes are in the file even when the meta pages that lead to them are broken.
enum DamagedFile {
    /// The error for an environment that LMDB refused to open, when the refusal means damage: a truncated file, or
    /// meta pages LMDB does not accept in a file that holds Canopy's tables. `nil` for other failures.
    static func error(opening error: LMDBError, path: String) -> CanopyError? {
        switch error.code {
        case .fileTruncated:
            // (The hint is the whole story; the LMDB error would only repeat it.)
            return CanopyError(.corruptStore, error.hint ?? "data.mdb is truncated; restore a backup", path: path)
        case .invalid, .versionMismatch, .corrupted, .pageNotFound:
            guard holdsCanopyTables(path: path) else { return nil }
            return damaged("its LMDB header (the meta pages) is broken: \(error.code)", path: path, underlying: error)
        default:
            return nil
        }
    }

    /// The ``CanopyError/Code/corruptStore`` for a Canopy file whose structure is broken.
    static func damaged(_ what: String, path: String, underlying: (any Error)? = nil) -> CanopyError {
        CanopyError(
            .corruptStore,
            "data.mdb is a damaged Canopy database (it holds Canopy's tables, but \(what)). Nothing was changed; do not write into it or adopt it: restore a backup (`canopy verify` on a copy tells what is still readable)",
            path: path, underlying: underlying)
    }

    /// Whether the data file of the environment at `path` holds Canopy's table names (read in chunks, only when
    /// opening failed or found no Canopy records).
    static func holdsCanopyTables(path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path + "/data.mdb") else { return false }
        defer { try? handle.close() }
        let needles = [Array(StoreTableName.info.utf8), Array(StoreTableName.objects.utf8)]
        var found = [false, false]
        var carry: [UInt8] = []
        while let chunk = try? handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            let bytes = carry + chunk
            for (i, needle) in needles.enumerated() where !found[i] {
                found[i] = contains(bytes, needle)
            }
            if found.allSatisfy({ $0 }) { return true }
            carry = Array(bytes.suffix(16))
        }
        return false
    }

    private static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard let first = needle.first, haystack.count >= needle.count else { return false }
        var index = haystack.startIndex
        let last = haystack.count - needle.count
        while index <= last {
            guard let hit = haystack[index...last].firstIndex(of: first) else { return false }
            if haystack[hit..<(hit + needle.count)].elementsEqual(needle) { return true }
            index = hit + 1
        }
        return false
    }
}
