import LMDB
#if canImport(Glibc)
import Glibc
#endif

/// Says which stored record failed its checksum, in the store's own terms: a row by collection and key, a view page
/// by table and page number, another record by table and key.
enum StoredRecordDamage {
    /// The ``CanopyError/Code/corruptStore`` for a value that failed its checksum (``LMDBError/Code/checksumMismatch``).
    /// `collectionNames` names collections by id (else the ones this process has read are used).
    static func error(_ lmdb: LMDBError, path: String?, collectionNames: [UInt32: String] = [:]) -> CanopyError {
        let record = Place(table: lmdb.database ?? "(main)", key: lmdb.key ?? [], path: path, collectionNames: collectionNames)
        return CanopyError(
            .corruptStore,
            "\(record.text) does not match its checksum: the file was changed outside Canopy (a damaged disk, a copy cut short or edited). Nothing was read from it; restore a backup (`canopy verify` lists every damaged record)",
            path: path, collection: record.collection, key: record.rowKey, extensionName: record.extensionName, underlying: lmdb)
    }

    /// A stored record in the store's terms: a row by collection and key, a view page by table and page number,
    /// another record by table and key (or the table alone, without a key).
    struct Place {
        var text: String
        var collection: String?
        var rowKey: String?
        var extensionName: String?

        init(table: String, key: [UInt8]?, path: String?, collectionNames: [UInt32: String] = [:]) {
            let keyBytes = key ?? []
            text = key == nil ? "table '\(table)'" : "table '\(table)', key \(describe(keyBytes))"
            if key != nil, table == StoreTableName.objects || table == StoreTableName.metadata, let id = keyBytes.withUnsafeBytes({ RowKey.collectionID(of: $0) }) {
                let name = collectionNames[id] ?? path.flatMap { DatabaseCore.collectionName(id: id, path: $0) } ?? "#\(id)"
                // A key read from a damaged page may be any bytes: shown as text only when it is printable.
                var keyText = keyBytes.withUnsafeBytes { RowKey.key(of: $0) }
                if keyText.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || $0 == "\u{FFFD}" }) || keyText.utf8.count > 507 {
                    keyText = describe(Array(keyBytes.dropFirst(4)))
                }
                (collection, rowKey) = (name, keyText)
                text = "the \(table == StoreTableName.objects ? "row" : "metadata") of collection '\(name)', key '\(keyText)' (table '\(table)')"
            } else if keyBytes.count == 8, table.hasPrefix(ExtensionTableName.prefix) || table == StoreTableName.commits {
                let number = keyBytes.withUnsafeBytes { $0.loadBigEndianUInt64(at: 0) }
                text = table == StoreTableName.commits ? "the commit log entry of snapshot \(number)" : "table '\(table)', page \(number)"
            }
            if table == StoreTableName.extensions, key != nil {
                extensionName = String(decoding: keyBytes, as: UTF8.self)
            } else if table.hasPrefix(ExtensionTableName.prefix),
                      // `ext.<extension>.<table>`: extension names may hold dots, table names never do
                      // (``ExtensionTableName/check(_:of:path:)``), so the last dot ends the extension's name.
                      let dot = table.dropFirst(ExtensionTableName.prefix.count).lastIndex(of: ".") {
                extensionName = String(table[table.index(table.startIndex, offsetBy: ExtensionTableName.prefix.count)..<dot])
            } else if table == StoreTableName.info, let name = String(validating: keyBytes, as: UTF8.self), name.hasPrefix(ExtensionTableName.prefix), name.hasSuffix(".state") {
                extensionName = String(name.dropFirst(ExtensionTableName.prefix.count).dropLast(".state".count))
            }
        }
    }

    /// A key for a message: its text when it is printable UTF-8, otherwise hexadecimal.
    static func describe(_ key: [UInt8]) -> String {
        if let text = String(validating: key, as: UTF8.self), !text.isEmpty,
           text.unicodeScalars.allSatisfy({ $0.properties.isAlphabetic || $0.properties.numericType != nil || "._-/:@".unicodeScalars.contains($0) }) {
            return "'\(text)'"
        }
        return key.prefix(32).map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined() + (key.count > 32 ? "…" : "")
    }
}

extension DatabaseCore {
    /// The name of collection `id` in the database open at `path` in this process, when it is known (read at least once).
    ///
    /// Only ever tries the state's lock (this runs on error paths, some of which may hold it), but tries it again for a
    /// while: another thread holding it briefly (a commit, an observer) must not cost the error its collection's name.
    static func collectionName(id: UInt32, path: String) -> String? {
        guard let core = openCore(path: path) else { return nil }
        for _ in 0..<10_000 {
            if let found = core.state.withLockIfAvailable({ state in state.collections.first { $0.value.id == id }?.key }) {
                return found
            }
            sched_yield()
        }
        return nil
    }
}
