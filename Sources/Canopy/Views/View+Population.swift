import Foundation

extension View {
    /// Builds the view from scratch in bulk: each row is decoded once, entries are sorted in memory, and pages are
    /// written in order with `MDB_APPEND`.
    func populate(in transaction: ReadWriteTransaction, tables: ViewTables, reason: String) throws -> ViewIndex {
        try tables.emptyAll(in: transaction)
        var index = ViewIndex()
        // The state below is captured only by closures that do not escape (no boxed variable, no run-time
        // exclusivity check per row).
        var batch = ViewEntryBatch()
        var groups = RecentGroups()
        var examined = 0
        var skipped = SkippedRows()
        var skippedKeys: [StoredRowKey] = []
        var attachment: [UInt8] = []
        let manyGroups = rowsInManyGroups(in: transaction)

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
                        let groupID = groups.id(of: place.group) { index.groupID(for: $0) }
                        batch.add(groupID: groupID, order: place.order, sortKeyLength: place.sortKeyLength)
                        entries.append(ViewTables.RowEntry(groupID: groupID, sortKey: Array(place.order[..<place.sortKeyLength])))
                    }
                    if !entries.isEmpty { try stored.setAttachment(ViewTables.attachment(holding: entries), at: slot) }
                    return true
                }
                let found: (group: String, sortKey: [UInt8])?
                do {
                    found = try self.groupAndSortKey(of: row, rowKey: stored.storedKey, in: transaction)
                } catch {
                    guard let undecodable = skippable(error) else { throw error }
                    // One row of an older model does not fail the registration: it is left out and recorded.
                    skipped.add(stored.id, error: undecodable.message)
                    try stored.setAttachment(ViewTables.skippedMarker, at: slot)
                    return true
                }
                guard let (group, sortKey) = found else { return true }
                let groupID = groups.id(of: group) { index.groupID(for: $0) }
                batch.add(groupID: groupID, sortKey: sortKey, rowKey: stored.storedKey.bytes)
                // The entry goes into the visited record at once (the scan's cursor rewrites it in place); a manual
                // list's rows carry only its mark (their order keys are in its order table).
                if case .manual = source {
                    try stored.setAttachment(ViewTables.listedMarker, at: slot)
                } else {
                    // Encoded into one array for the whole scan: the rewrite copies it into the record and keeps
                    // nothing, so the array is unshared again at the next row.
                    attachment.removeAll(keepingCapacity: true)
                    ViewTables.RowEntry.encode(groupID: groupID, sortKey: sortKey, into: &attachment)
                    try stored.setAttachment(attachment, at: slot)
                }
                return true
            }
            batch.sort()
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
                            let groupID = groups.id(of: groupName) { index.groupID(for: $0) }
                            batch.add(groupID: groupID, order: order, sortKeyLength: order.count - rowKey.bytes.count)
                        }
                    }
                }
            }
            if manyGroups, !skippedKeys.isEmpty {
                // A row skipped in one group has no entry in any (as the writer does): drop those it got elsewhere.
                let skippedSet = Set(skippedKeys.map(\.bytes))
                let kept = batch
                batch.removeAll { skippedSet.contains(Array(kept.rowKey(of: $0))) }
            }
            // Group ids were assigned in the parent's group order, so entries are already sorted.
            try attachFilteredEntries(batch, manyGroups: manyGroups, in: transaction)
            if !skippedKeys.isEmpty {
                let slot = try transaction.writableAttachmentSlot(for: name)
                try transaction.setAttachments(at: slot, skippedKeys.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }.map { ($0, ViewTables.skippedMarker) })
            }
        }

        // Write pages in order and full: two full pages fill an LMDB page (see ViewPage), and an insert splits a page once.
        var filler = ViewPageFiller()
        var pageCount = 0
        func write(_ page: ViewPage) throws {
            let id = index.newPageID()
            try tables.writePage(page, id: id, transaction, append: true)
            guard let name = index.groupNames[page.groupID] else { return }
            index.appendPage(ViewIndex.PageRef(id: id, count: page.count, first: page.orderBytes(at: 0)), to: name, groupID: page.groupID)
            pageCount += 1
        }
        for entry in batch.entries {
            if let page = filler.append(groupID: entry.groupID, order: batch.order(of: entry), sortKeyLength: Int(entry.sortKeyLength)) {
                try write(page)
            }
        }
        if let page = filler.finish() { try write(page) }
        for (name, id) in index.groupIDs {
            try tables.groups.put(name, forKey: id, in: transaction)
        }
        index.version = UInt64.random(in: 1..<(1 << 63))  // writes use the snapshot with the top bit set
        try tables.writeState(index, in: transaction)
        transaction.markWritten()
        progress?(examined, examined)
        try transaction.setSkippedRows(skipped, ofExtension: name)
        var report = PopulationReport(reason: reason, rowsExamined: examined, rowsIndexed: batch.count, groups: index.groups.count, pages: pageCount)
        report.rowsSkipped = skipped.count
        state.withLock { $0.lastPopulation = report }
        return index
    }

    /// Attaches each entry of a filtered view's population to its row's record (one cursor walk over the rows, in
    /// stored-key order).
    private func attachFilteredEntries(_ batch: ViewEntryBatch, manyGroups: Bool, in transaction: ReadWriteTransaction) throws {
        let slot = try transaction.writableAttachmentSlot(for: name)
        if manyGroups {
            // A row in several groups has an entry per group: its attachment holds them all.
            var byRow: [StoredRowKey: [ViewTables.RowEntry]] = [:]
            for entry in batch.entries {
                guard let rowKey = StoredRowKey(batch.rowKey(of: entry)) else { continue }
                byRow[rowKey, default: []].append(ViewTables.RowEntry(groupID: entry.groupID, sortKey: Array(batch.sortKey(of: entry))))
            }
            let rows = byRow.sorted { $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) }
            try transaction.setAttachments(at: slot, rows.lazy.map { ($0.key, ViewTables.attachment(holding: $0.value)) })
            return
        }
        let attachments = batch.entries.lazy.compactMap { entry -> (StoredRowKey, [UInt8]?)? in
            guard let rowKey = StoredRowKey(batch.rowKey(of: entry)) else { return nil }
            return (rowKey, ViewTables.RowEntry.encoded(groupID: entry.groupID, sortKey: batch.sortKey(of: entry)))
        }
        try transaction.setAttachments(at: slot, attachments)
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
