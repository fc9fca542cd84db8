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
        var skipped = SkippedRows()
        var skippedKeys: [StoredRowKey] = []
        let manyGroups = rowsInManyGroups(in: transaction)

        // The groups met lately with their ids, found by comparing names rather than hashing each row's group.
        var recentGroups: [(name: String, id: UInt32)] = []
        func groupID(for group: String) -> UInt32 {
            for recent in recentGroups where recent.name == group { return recent.id }
            let id = index.groupID(for: group)
            if recentGroups.count >= 16 { recentGroups.removeFirst() }
            recentGroups.append((group, id))
            return id
        }

        @discardableResult
        func add(group: String, sortKeyLength: Int, order: [UInt8]) -> UInt32 {
            let groupID = groupID(for: group)
            let start = arena.count
            arena.append(contentsOf: order)
            items.append(Item(groupID: groupID, sortKeyLength: Int32(sortKeyLength), start: start, length: Int32(arena.count - start)))
            return groupID
        }

        /// Attaches each row's entry to its record (one cursor walk; in stored-key order for the closures' scan).
        func attachEntries() throws {
            let slot = try transaction.writableAttachmentSlot(for: name)
            if manyGroups {
                // A row in several groups has an item per group: its attachment holds them all.
                var byRow: [StoredRowKey: [ViewTables.RowEntry]] = [:]
                for item in items {
                    let order = arena[item.start..<(item.start + Int(item.length))]
                    let sortKeyLength = Int(item.sortKeyLength)
                    guard let rowKey = StoredRowKey(order[(order.startIndex + sortKeyLength)...]) else { continue }
                    byRow[rowKey, default: []].append(ViewTables.RowEntry(
                        groupID: item.groupID, sortKey: Array(order[order.startIndex..<(order.startIndex + sortKeyLength)])))
                }
                let rows = byRow.sorted { $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) }
                try transaction.setAttachments(at: slot, rows.lazy.map { ($0.key, ViewTables.attachment(holding: $0.value)) })
                return
            }
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
                // The row's object bytes point into the map, valid only during this visit: the scan ends the row's
                // access afterwards (a closure that kept it gets a typed error, not bytes of a page LMDB may have
                // reused).
                let row = ExtensionRow(stored)
                if manyGroups {
                    let places: [Place]
                    do {
                        places = try self.places(of: row, rowKey: stored.storedKey, in: transaction)
                    } catch {
                        guard let undecodable = skippable(error) else { throw error }
                        skipped.add(stored.id, error: undecodable.message)
                        try stored.setAttachment(ViewTables.skippedMarker, at: slot)
                        return true
                    }
                    var entries: [ViewTables.RowEntry] = []
                    for place in places {
                        let groupID = add(group: place.group, sortKeyLength: place.sortKeyLength, order: place.order)
                        entries.append(ViewTables.RowEntry(groupID: groupID, sortKey: Array(place.order[..<place.sortKeyLength])))
                    }
                    if !entries.isEmpty { try stored.setAttachment(ViewTables.attachment(holding: entries), at: slot) }
                    return true
                }
                let found: Place?
                do {
                    found = try self.place(of: row, rowKey: stored.storedKey, in: transaction)
                } catch {
                    guard let undecodable = skippable(error) else { throw error }
                    // One row of an older model does not fail the registration: it is left out and recorded.
                    skipped.add(stored.id, error: undecodable.message)
                    try stored.setAttachment(ViewTables.skippedMarker, at: slot)
                    return true
                }
                guard let place = found else { return true }
                let groupID = add(group: place.group, sortKeyLength: place.sortKeyLength, order: place.order)
                // The entry goes into the visited record at once (the scan's cursor rewrites it in place); a manual
                // list's rows carry only its mark (their order keys are in its order table).
                if case .manual = source {
                    try stored.setAttachment(ViewTables.listedMarker, at: slot)
                } else {
                    try stored.setAttachment(ViewTables.RowEntry.encoded(groupID: groupID, sortKey: place.order[..<place.sortKeyLength]), at: slot)
                }
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
            let parentWriter = transaction.writer(of: parent)
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
                            let row = ExtensionRow(stored)
                            guard viewOptions.allows(row.collection) else { continue }
                            let accepted: Bool
                            do {
                                accepted = try filterAccepts(group: groupName, row)
                            } catch {
                                guard let undecodable = skippable(error) else { throw error }
                                // A row in several groups of the parent is met once per group: skipped once.
                                if manyGroups, skippedKeys.contains(rowKey) { continue }
                                skipped.add(stored.id, error: undecodable.message)
                                skippedKeys.append(rowKey)
                                continue
                            }
                            guard accepted else { continue }
                            let order = page.orderBytes(at: i)
                            add(group: groupName, sortKeyLength: order.count - rowKey.bytes.count, order: order)
                        }
                    }
                }
            }
            if manyGroups, !skippedKeys.isEmpty {
                // A row skipped in one group has no entry in any (as the writer does): drop those it got elsewhere.
                let skippedSet = Set(skippedKeys.map(\.bytes))
                items.removeAll { item in
                    let order = arena[item.start..<(item.start + Int(item.length))]
                    return skippedSet.contains(Array(order[(order.startIndex + Int(item.sortKeyLength))...]))
                }
            }
            // Group ids were assigned in the parent's group order, so items are already sorted.
            try attachEntries()
            if !skippedKeys.isEmpty {
                let slot = try transaction.writableAttachmentSlot(for: name)
                try transaction.setAttachments(at: slot, skippedKeys.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }.map { ($0, ViewTables.skippedMarker) })
            }
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
        try transaction.setSkippedRows(skipped, ofExtension: name)
        var report = PopulationReport(reason: reason, rowsExamined: examined, rowsIndexed: items.count, groups: index.groups.count, pages: pageCount)
        report.rowsSkipped = skipped.count
        state.withLock { $0.lastPopulation = report }
        return index
    }

    /// The decoding error to skip the row for, or `nil` when `error` must fail the population or the write (another
    /// error, or a view with ``ViewOptions/strictDecoding``).
    func skippable(_ error: any Error) -> CanopyError? {
        guard !viewOptions.strictDecoding, let canopy = error as? CanopyError, canopy.code == .decodingFailed else { return nil }
        return canopy
    }

    func filterAccepts(group: String, _ row: ViewRow) throws -> Bool {
        guard case .filtered(_, let filter) = source else { return true }
        return try filter(group, row)
    }
}
