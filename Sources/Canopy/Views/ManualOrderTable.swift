/// A manual view's `order` table (`ext.<view>.order`): row key → order key (8 bytes, big-endian).
///
/// The table is the list's membership and order: the view's pages are derived from it (a row's sort key is its order
/// key), so a rebuild of the view from the row scan finds every row in its place again. Order keys leave gaps between
/// neighbours; an insertion where no gap is left renumbers a few rows around it (``OrderRelabeling``).
struct ManualOrderTable: Sendable {
    let table: ExtensionTable<StoredRowKeyCoding, UInt64BigEndianCoding>

    static func open(in transaction: ReadWriteTransaction, view: String) throws -> ManualOrderTable {
        ManualOrderTable(table: try transaction.openTable("order", of: view, keys: StoredRowKeyCoding.self, values: UInt64BigEndianCoding.self))
    }

    static func existing(in transaction: ReadTransaction, view: String) throws -> ManualOrderTable? {
        try transaction.existingTable("order", of: view, keys: StoredRowKeyCoding.self, values: UInt64BigEndianCoding.self)
            .map(ManualOrderTable.init(table:))
    }

    /// The sort key of an order key: its 8 big-endian bytes (byte order is numeric order).
    static func sortKey(_ order: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: order >> (56 - 8 * $0)) }
    }

    /// The order key in the first 8 bytes of a manual view's order bytes.
    static func order(fromOrderBytes bytes: [UInt8], view: String) throws -> UInt64 {
        guard bytes.count >= 8 else { throw corrupt(view, "an entry's order key is shorter than 8 bytes") }
        return bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// Removes the order keys of rows that are no longer in the store, and of rows whose record was replaced since
    /// the list last attached its entry at `previousSlot` (removed and written again by a process without the list:
    /// the new record lacks the entry).
    func removeMissingRows(in transaction: ReadWriteTransaction, previousSlot: AttachmentSlot?) throws {
        var missing: [StoredRowKey] = []
        try table.forEach(in: transaction) { rowKey, _ in
            if let id = try transaction.rowID(for: rowKey), try transaction.exists(key: id.key, inCollection: id.collection),
               try previousSlot.map({ try transaction.attachment(at: $0, forRow: rowKey) != nil }) ?? true {
                return true
            }
            missing.append(rowKey)
            return true
        }
        for rowKey in missing { _ = try table.remove(rowKey, in: transaction) }
    }
}
