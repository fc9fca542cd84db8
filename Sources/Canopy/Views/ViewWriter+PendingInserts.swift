#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A view writer's new entries, kept out of the pages until something needs the pages: a bulk write places every
/// row as it is written (its attachment holds its group and sort key, and the row log its entry), but inserts the
/// entries of rows that had none all at once, sorted — into a group that had no pages, as full pages appended in
/// order (as population writes them); into a group that has pages, one by one in order, each next to the last.
///
/// One entry at a time, each insert located its page in the directory, decoded and spliced it, and split it when
/// full (leaving pages half full): about 3,500 instructions a row per view in a bulk insert. The pending entries are
/// inserted before anything reads or changes the view's pages or directory in this transaction — a read through the
/// view (``currentIndex()``, ``page(_:)``), a removal or a move of an entry, a filtered view's population, the
/// invariant check — and at commit, so nothing ever sees the view without them. Group names and ids are assigned when
/// an entry is deferred (a filtered view reads its parent's group names while the parent's entries wait).
extension ViewWriter {
    /// An entry placed by this transaction for a row that had none, not yet in the pages.
    struct PendingInsert {
        var groupID: UInt32
        var sortKeyLength: Int32
        /// The order bytes' first eight bytes, big-endian, zero-padded: most comparisons end there.
        var prefix: UInt64
        var order: [UInt8]
    }

    /// Gives `entry` its group id (a new group is recorded in the groups table, as
    /// ``insertEntry(_:sortKeyLength:)`` does) and keeps the entry for ``insertPendingEntries()``. Returns the group id.
    func deferInsert(_ entry: ViewEntry, sortKeyLength: Int) throws -> UInt32 {
        dirty = true
        let groupID = try recentGroupID(entry.group) ?? withLoadedIndex { index -> UInt32 in
            let id: UInt32
            if let known = index.groupIDs[entry.group] {
                id = known
            } else {
                id = index.groupID(for: entry.group)
                try tables.groups.put(entry.group, forKey: id, in: transaction)
            }
            if recentGroups.count >= Self.recentGroupLimit { recentGroups.removeFirst() }
            recentGroups.append((entry.group, id))
            return id
        }
        if pendingInserts.isEmpty { pendingInserts.reserveCapacity(256) }
        pendingInserts.append(PendingInsert(groupID: groupID, sortKeyLength: Int32(sortKeyLength), prefix: Self.prefix(of: entry.orderBytes),
                                            order: entry.orderBytes))
        return groupID
    }

    /// How many groups ``recentGroups`` keeps (a view with more groups hashes the others' names).
    static let recentGroupLimit = 16

    /// The id of `group` when a pending entry went to it lately. A group's id never changes (ids are kept even when a
    /// group empties), so a remembered id stays right for the writer's life.
    private func recentGroupID(_ group: String) -> UInt32? {
        for recent in recentGroups where recent.name == group { return recent.id }
        return nil
    }

    /// Inserts the pending entries into the pages and the directory, group by group in order.
    /// - Throws: ``/CanopyCore/CanopyError/Code/corruptStore`` when an entry's group has no name, or a page read fails.
    func insertPendingEntries() throws {
        var pending = pendingInserts
        pendingInserts = []
        pending.sort(by: Self.precedes)
        var start = pending.startIndex
        while start < pending.endIndex {
            let groupID = pending[start].groupID
            var end = start + 1
            while end < pending.endIndex, pending[end].groupID == groupID { end += 1 }
            // (The directory is read in a closure, so that no copy of it is held while the inserts change it.)
            let (name, hasPages) = try { () throws -> (String, Bool) in
                let index = try loadedIndex()
                guard let name = index.groupNames[groupID] else { throw corrupt(view.name, "new entries name group \(groupID), which has no name") }
                return (name, index.groups[name] != nil)
            }()
            if !hasPages {
                try appendPages(of: pending[start..<end], toEmptyGroup: name, groupID: groupID)
            } else {
                for item in pending[start..<end] {
                    try insertEntry(ViewEntry(group: name, orderBytes: item.order), sortKeyLength: Int(item.sortKeyLength))
                }
            }
            start = end
        }
    }

    /// Writes `entries` (sorted, one group's) as the pages of that group, which has none: full pages, in order.
    private func appendPages(of entries: ArraySlice<PendingInsert>, toEmptyGroup group: String, groupID: UInt32) throws {
        var page = ViewPage(groupID: groupID)
        var previous: [UInt8]?
        func finishPage() throws {
            guard page.count > 0 else { return }
            let first = page.orderBytes(at: 0)
            let id = try withLoadedIndex { $0.newPageID() }
            try store(page, id: id)
            let count = page.count
            try withLoadedIndex { $0.appendPage(ViewIndex.PageRef(id: id, count: count, first: first), to: group, groupID: groupID) }
            page = ViewPage(groupID: groupID)
        }
        for item in entries {
            // One row has one entry in a view of one group per row: two equal entries would be two rows under one key.
            if let previous, previous == item.order {
                throw corrupt(view.name, "a transaction placed the same entry twice in group '\(group)'")
            }
            previous = item.order
            if page.count >= ViewPage.maxEntries || page.byteSize + ViewPage.entrySize(orderLength: item.order.count) > ViewPage.maxBytes {
                try finishPage()
            }
            page.append(order: item.order[...], sortKeyLength: Int(item.sortKeyLength))
        }
        try finishPage()
    }

    /// Byte order of (group id, order bytes): the pages' order within a group.
    private static func precedes(_ a: PendingInsert, _ b: PendingInsert) -> Bool {
        if a.groupID != b.groupID { return a.groupID < b.groupID }
        if a.prefix != b.prefix { return a.prefix < b.prefix }
        return a.order.withUnsafeBufferPointer { x in
            b.order.withUnsafeBufferPointer { y in
                let common = min(x.count, y.count)
                if common > 0, let p = x.baseAddress, let q = y.baseAddress {
                    let result = memcmp(p, q, common)
                    if result != 0 { return result < 0 }
                }
                return x.count < y.count
            }
        }
    }

    /// The first eight bytes of `bytes` as a big-endian integer, zero-padded: comparing two of these orders the bytes
    /// as byte order does, or ties.
    private static func prefix(of bytes: [UInt8]) -> UInt64 {
        var value: UInt64 = 0
        for i in 0..<min(8, bytes.count) { value |= UInt64(bytes[i]) << UInt64(56 - 8 * i) }
        return value
    }
}
