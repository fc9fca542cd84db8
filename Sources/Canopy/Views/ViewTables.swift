import LMDB

/// The LMDB tables of one view (all named `ext.<view>.<table>`).
///
/// - `pages`: page id (8 bytes big-endian) → a ``ViewPage``.
/// - `rows`: row key (collection id + key) → group id (4 bytes) + varint(sort key length) + order bytes: where each row
///   of the view is, to find and move it without scanning.
/// - `groups`: group id (4 bytes) → group name.
///
/// The view's state — version (random 8 bytes, new for every commit that changes the view), next page id (8 bytes),
/// next group id (4 bytes) — is one value under `ext.<view>.state` in the store's own `canopy.info` table, which every
/// commit writes anyway: a table of its own would add a page (and a main-database record) to every commit's writes.
struct ViewTables: Sendable {
    let pages: LMDB.Database
    let rows: LMDB.Database
    let groups: LMDB.Database
    /// The store's `canopy.info` table, which holds the view's state record.
    let info: LMDB.Database
    /// The key of the view's state record in ``info``.
    let stateKey: [UInt8]

    static func open(in txn: ReadWriteTransaction, view: String) throws -> ViewTables {
        ViewTables(
            pages: try txn.extensionTable(named: "pages", for: view),
            rows: try txn.extensionTable(named: "rows", for: view),
            groups: try txn.extensionTable(named: "groups", for: view),
            info: txn.tables.info,
            stateKey: Array("ext.\(view).state".utf8))
    }

    /// (version, next page id, next group id), or zeros for an empty view.
    func readState(_ txn: LMDB.ReadTransaction) throws -> (version: UInt64, nextPageID: UInt64, nextGroupID: UInt32) {
        try txn.withValue(forKey: stateKey, in: info) { bytes in
            guard let bytes, bytes.count == 20 else { return (0, 1, 1) }
            return (bytes.loadBigEndianUInt64(at: 0), bytes.loadBigEndianUInt64(at: 8), bytes.loadBigEndianUInt32(at: 16))
        }
    }

    func readVersion(_ txn: LMDB.ReadTransaction) throws -> UInt64 {
        try readState(txn).version
    }

    func writeInfo(_ index: ViewIndex, in txn: LMDB.WriteTransaction) throws {
        var out = ByteWriter(capacity: 20)
        out.append(bigEndian: index.version)
        out.append(bigEndian: index.nextPageID)
        out.append(bigEndian: index.nextGroupID)
        try txn.put(out.bytes, forKey: stateKey, in: info)
    }

    func emptyAll(in txn: LMDB.WriteTransaction) throws {
        for table in [pages, rows, groups] { try txn.empty(table) }
        _ = try txn.delete(stateKey, in: info)
    }

    func dropAll(in txn: LMDB.WriteTransaction) throws {
        for table in [pages, rows, groups] { try txn.drop(table) }
        _ = try txn.delete(stateKey, in: info)
    }

    /// Rebuilds the in-memory index from the tables, as they are in `txn`.
    func loadIndex(_ txn: LMDB.ReadTransaction, viewName: String) throws -> ViewIndex {
        var index = ViewIndex()
        (index.version, index.nextPageID, index.nextGroupID) = try readState(txn)
        try txn.forEach(in: groups) { key, value in
            guard key.count == 4 else { throw corrupt(viewName, "a group id is malformed") }
            let id = key.loadBigEndianUInt32(at: 0)
            let name = String(decoding: value, as: UTF8.self)
            index.groupIDs[name] = id
            index.groupNames[id] = name
            return true
        }
        var pagesByGroup: [UInt32: [ViewIndex.PageRef]] = [:]
        try txn.forEach(in: pages) { key, value in
            guard key.count == 8 else { throw corrupt(viewName, "a page id is malformed") }
            let page: ViewPage
            do { page = try ViewPage(decoding: value) } catch { throw corrupt(viewName, "page \(key.loadBigEndianUInt64(at: 0)) is malformed") }
            guard page.count > 0 else { return true }
            pagesByGroup[page.groupID, default: []].append(
                ViewIndex.PageRef(id: key.loadBigEndianUInt64(at: 0), count: page.count, first: page.orderBytes(at: 0)))
            return true
        }
        for (groupID, refs) in pagesByGroup {
            guard let name = index.groupNames[groupID] else { throw corrupt(viewName, "pages refer to unknown group \(groupID)") }
            for ref in refs.sorted(by: { $0.first.lexicographicallyPrecedes($1.first) }) {
                index.appendPage(ref, to: name, groupID: groupID)
            }
        }
        return index
    }

    func readPage(_ id: UInt64, _ txn: LMDB.ReadTransaction, viewName: String) throws -> ViewPage {
        try SnapshotKey.bytes(id).withUnsafeBytes { key in
            try txn.withValue(forKey: key, in: pages) { bytes in
                guard let bytes else { throw corrupt(viewName, "page \(id) is missing") }
                do { return try ViewPage(decoding: bytes) } catch { throw corrupt(viewName, "page \(id) is malformed") }
            }
        }
    }

    /// Whether page `id` is stored.
    func hasPage(_ id: UInt64, _ txn: LMDB.ReadTransaction) throws -> Bool {
        try SnapshotKey.bytes(id).withUnsafeBytes { key in try txn.withValue(forKey: key, in: pages) { $0 != nil } }
    }

    func writePage(_ page: ViewPage, id: UInt64, _ txn: LMDB.WriteTransaction, append: Bool = false) throws {
        try txn.put(page.encoded, forKey: SnapshotKey.bytes(id), in: pages, flags: append ? .append : [])
    }

    func deletePage(_ id: UInt64, _ txn: LMDB.WriteTransaction) throws {
        try txn.delete(SnapshotKey.bytes(id), in: pages)
    }

    /// The stored entry of a row: group id and order bytes, with the sort key's length.
    struct RowEntry: Hashable {
        var groupID: UInt32
        var sortKeyLength: Int
        var order: [UInt8]

        var encoded: [UInt8] {
            var out = ByteWriter(capacity: 8 + order.count)
            out.append(bigEndian: groupID)
            out.append(varint: UInt64(sortKeyLength))
            out.bytes.append(contentsOf: order)
            return out.bytes
        }

        init(groupID: UInt32, sortKeyLength: Int, order: [UInt8]) {
            self.groupID = groupID
            self.sortKeyLength = sortKeyLength
            self.order = order
        }

        init(decoding bytes: UnsafeRawBufferPointer) throws {
            var reader = ByteReader(bytes)
            groupID = try reader.readBigEndianUInt32()
            sortKeyLength = Int(clamping: try reader.readVarint())
            order = Array(bytes[reader.offset...])
        }
    }

    func readRow(_ rowKey: [UInt8], _ txn: LMDB.ReadTransaction, viewName: String) throws -> RowEntry? {
        try txn.withValue(forKey: rowKey, in: rows) { bytes in
            guard let bytes else { return nil }
            do { return try RowEntry(decoding: bytes) } catch { throw corrupt(viewName, "a row entry is malformed") }
        }
    }
}

func corrupt(_ view: String, _ message: String) -> CanopyError {
    CanopyError(.corruptStore, "view storage is corrupt: \(message); unregister the view with dropStorage and register it again to rebuild",
                extensionName: view)
}
