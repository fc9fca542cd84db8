/// Fills a view's pages in order, each as full as a page may be (``ViewPage/maxEntries`` entries,
/// ``ViewPage/maxBytes`` bytes): population writes every page of a view this way, and a writer the new entries of a
/// group that had no pages (``ViewWriter/insertPendingEntries()``). Full pages: two fill one LMDB leaf (see
/// ``ViewPage``), and a later insert splits a page once.
///
/// Entries come sorted by group id, then order bytes; a page ends where the group changes or where the next entry
/// would not fit. The caller writes each page handed back, in order.
struct ViewPageFiller {
    private var page = ViewPage(groupID: 0)

    /// Adds the next entry. Returns the page it closed when the entry starts a new one (the previous page is full,
    /// or of another group), or `nil`.
    mutating func append(groupID: UInt32, order: ArraySlice<UInt8>, sortKeyLength: Int) -> ViewPage? {
        var closed: ViewPage?
        if page.count == 0 {
            page.groupID = groupID
        } else if page.groupID != groupID || page.count >= ViewPage.maxEntries
                    || page.byteSize + ViewPage.entrySize(orderLength: order.count) > ViewPage.maxBytes {
            closed = page
            page = ViewPage(groupID: groupID)
        }
        page.append(order: order, sortKeyLength: sortKeyLength)
        return closed
    }

    /// Closes the last page: returns it, or `nil` when no entry came after the last page handed back.
    mutating func finish() -> ViewPage? {
        guard page.count > 0 else { return nil }
        defer { page = ViewPage(groupID: 0) }
        return page
    }
}
