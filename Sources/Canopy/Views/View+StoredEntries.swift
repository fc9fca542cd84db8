extension View {
    /// The entries (group id and sort key) that a row's attachment to the view stands for: those it holds, for a view
    /// computed by closures or filtered; for a manual list, whose rows carry only ``ViewTables/listedMarker``, the
    /// list's group and the row's order key from the `order` table (so a move rewrites no row).
    ///
    /// - Parameters:
    ///   - attachment: the row's attachment at the view's slot.
    ///   - index: the view's index as the caller sees it (its group ids).
    /// - Throws: ``CanopyError/Code/corruptStore`` when the attachment is malformed, or a list's row carries the mark
    ///   without an order key, or an entry of another format.
    func storedEntries(_ attachment: [UInt8]?, rowKey: StoredRowKey, tables: ViewTables, index: ViewIndex,
                       in transaction: ReadTransaction) throws -> [ViewTables.RowEntry] {
        guard case .manual(let group) = source else { return try tables.rowEntries(attachment) }
        guard let attachment else { return [] }
        guard attachment == ViewTables.listedMarker else {
            throw corrupt(name, "a row of the manual list carries an entry in another format than the list's mark")
        }
        guard let order = try manualOrder.table.value(forKey: rowKey, in: transaction) else {
            throw corrupt(name, "a row carries the list's mark but has no order key")
        }
        guard let groupID = index.groupIDs[group] else { throw corrupt(name, "a row carries the list's mark but the list has no group") }
        return [ViewTables.RowEntry(groupID: groupID, sortKey: ManualOrderTable.sortKey(order))]
    }
}
