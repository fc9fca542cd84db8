import Foundation

extension View {
    /// One row's place, collected during population: order bytes live in a shared arena.
    private struct Item {
        var groupID: UInt32
        var sortKeyLength: Int32
        var start: Int
        var length: Int32
    }

    /// Builds the view from scratch in bulk: each row is decoded once, entries are sorted in memory, and pages are
    /// written in order with `MDB_APPEND`.
    func populate(in transaction: ReadWriteTransaction, tables: ViewTables, reason: String) throws -> ViewIndex {
        try tables.emptyAll(in: transaction)
        var index = ViewIndex()
        var arena: [UInt8] = []
        var items: [Item] = []
        var examined = 0

        func add(group: String, sortKeyLength: Int, order: [UInt8]) {
            let groupID = index.groupID(for: group)
            let start = arena.count
            arena.append(contentsOf: order)
            items.append(Item(groupID: groupID, sortKeyLength: Int32(sortKeyLength), start: start, length: Int32(arena.count - start)))
        }

        /// Attaches each row's entry to its record (one cursor walk; in stored-key order for the closures' scan).
        func attachEntries() throws {
            let slot = try transaction.writableAttachmentSlot(for: name)
            let entries = items.lazy.compactMap { item -> (StoredRowKey, [UInt8]?)? in
                let order = arena[item.start..<(item.start + Int(item.length))]
                let sortKeyLength = Int(item.sortKeyLength)
                guard let rowKey = StoredRowKey(order[(order.startIndex + sortKeyLength)...]) else { return nil }
                let entry = ViewTables.RowEntry(groupID: item.groupID, sortKey: Array(order[order.startIndex..<(order.startIndex + sortKeyLength)]))
                return (rowKey, entry.encoded)
            }
            try transaction.setAttachments(at: slot, entries)
        }

        switch source {
        case .closures, .manual:
            let total = try transaction.count()
            let slot = try transaction.writableAttachmentSlot(for: name)
            // The row scan visits rows in stored-key order and attaches each row's entry to its record as it goes.
            try transaction.scanRows(inCollections: viewOptions.allowedCollections) { stored in
                examined += 1
                if examined % 10_000 == 0 { progress?(examined, total) }
                let row = ViewRow(stored)
                // The row's object bytes point into the map, valid only during this visit: the row refuses loads
                // afterwards (a closure that kept it gets a typed error, not bytes of a page LMDB may have reused).
                defer { row.endAccess() }
                guard let place = try self.place(of: row, rowKey: stored.storedKey, in: transaction) else { return true }
                add(group: place.group, sortKeyLength: place.sortKeyLength, order: place.order)
                // The entry goes into the visited record at once (the scan's cursor rewrites it in place).
                let groupID = index.groupID(for: place.group)
                try stored.setAttachment(ViewTables.RowEntry(groupID: groupID, sortKey: Array(place.order[..<place.sortKeyLength])).encoded, at: slot)
                return true
            }
            items.sort { lhs, rhs in
                if lhs.groupID != rhs.groupID { return lhs.groupID < rhs.groupID }
                return arena.withUnsafeBufferPointer { buffer in
                    let a = UnsafeBufferPointer(rebasing: buffer[lhs.start..<(lhs.start + Int(lhs.length))])
                    let b = UnsafeBufferPointer(rebasing: buffer[rhs.start..<(rhs.start + Int(rhs.length))])
                    let common = min(a.count, b.count)
                    if common > 0, let pa = a.baseAddress, let pb = b.baseAddress {
                        let result = memcmp(pa, pb, common)
                        if result != 0 { return result < 0 }
                    }
                    return a.count < b.count
                }
            }
        case .filtered(let parentName, _):
            guard let parent = transaction.registeredExtension(named: parentName, as: View.self) else {
                throw CanopyError(.extensionDependencyMissing, "the parent view '\(parentName)' is not registered", extensionName: name)
            }
            let parentWriter = transaction.viewWriter(named: parentName)
            let parentIndex = try parentWriter?.currentIndex() ?? parent.index(in: transaction)
            let parentTables = try parent.tables
            let total = parentIndex.totalCount
            // The parent's entries come in group and sort order: walk them, filter, append (no sorting needed).
            for groupName in parentIndex.groups.sorted(by: { $0.value.id < $1.value.id }).map(\.key) {
                guard let group = parentIndex.groups[groupName] else { continue }
                for chunk in group.chunks {
                    for ref in chunk.pages {
                        // The parent's writer holds the pages this transaction changed.
                        let page = try parentWriter?.page(ref.id) ?? parentTables.readPage(ref.id, transaction)
                        for i in 0..<page.count {
                            examined += 1
                            if examined % 10_000 == 0 { progress?(examined, total) }
                            guard let rowKey = StoredRowKey(page.rowKey(at: i)), let stored = try transaction.storedRow(for: rowKey) else { continue }
                            let row = ViewRow(stored)
                            guard viewOptions.allows(row.collection), try filterAccepts(group: groupName, row) else { continue }
                            let order = page.orderBytes(at: i)
                            add(group: groupName, sortKeyLength: order.count - rowKey.bytes.count, order: order)
                        }
                    }
                }
            }
            // Group ids were assigned in the parent's group order, so items are already sorted.
            try attachEntries()
        }

        // Write pages in order and full: two full pages fill an LMDB page (see ViewPage), and an insert splits a page once.
        let fillEntries = ViewPage.maxEntries
        let fillBytes = ViewPage.maxBytes
        var page: ViewPage?
        var pageCount = 0
        func flush() throws {
            guard let current = page, current.count > 0 else { return }
            let id = index.newPageID()
            try tables.writePage(current, id: id, transaction, append: true)
            guard let name = index.groupNames[current.groupID] else { return }
            index.appendPage(ViewIndex.PageRef(id: id, count: current.count, first: current.orderBytes(at: 0)), to: name, groupID: current.groupID)
            pageCount += 1
            page = nil
        }
        for item in items {
            if let current = page,
               current.groupID != item.groupID || current.count >= fillEntries
                || current.byteSize + ViewPage.entrySize(orderLength: Int(item.length)) > fillBytes {
                try flush()
            }
            if page == nil { page = ViewPage(groupID: item.groupID) }
            page?.append(order: arena[item.start..<(item.start + Int(item.length))], sortKeyLength: Int(item.sortKeyLength))
        }
        try flush()
        for (name, id) in index.groupIDs {
            try tables.groups.put(name, forKey: id, in: transaction)
        }
        index.version = UInt64.random(in: 1..<(1 << 63))  // writes use the snapshot with the top bit set
        try tables.writeState(index, in: transaction)
        transaction.markWritten()
        progress?(examined, examined)
        let report = PopulationReport(reason: reason, rowsExamined: examined, rowsIndexed: items.count, groups: index.groups.count, pages: pageCount)
        state.withLock { $0.lastPopulation = report }
        return index
    }

    func filterAccepts(group: String, _ row: ViewRow) throws -> Bool {
        guard case .filtered(_, let filter) = source else { return true }
        return try filter(group, row)
    }
}
