extension ViewReader {
    /// Checks the view's storage against itself and against the rows, and returns the problems found (empty when all
    /// is well): page counts add up to group counts, entries are in order within and across pages, every entry's row
    /// exists and its record's entry points back at it, and every row the grouping includes is present exactly once in the
    /// right place. Reads the whole view and all rows of its collections: for tests and `verify` tools.
    public func checkInvariants() throws -> [String] {
        var (problems, seen) = try storedStructureProblems()
        try checkAgainstClosures(seen: seen, into: &problems)
        return problems
    }

    /// The checks of the stored structure alone (see ``checkInvariants()``), and the number of entries seen.
    func storedStructureProblems() throws -> (problems: [String], seen: Int) {
        let index = try self.index
        var problems: [String] = []
        var seen = 0
        var rowsInPages = Set<[UInt8]>()  // group id (4 B) + row key: a row is in a group once
        let slot = try attachmentSlot()
        for (name, group) in index.groups {
            var groupCount = 0
            var previous: [UInt8]?
            for (c, chunk) in group.chunks.enumerated() {
                var chunkCount = 0
                guard !chunk.pages.isEmpty else {
                    problems.append("group '\(name)' chunk \(c) is empty")
                    continue
                }
                for ref in chunk.pages {
                    let page = try page(ref.id)
                    if page.count != ref.count { problems.append("page \(ref.id) holds \(page.count) entries, directory says \(ref.count)") }
                    if page.count == 0 { problems.append("page \(ref.id) is empty") }
                    if index.groupNames[page.groupID] != name { problems.append("page \(ref.id) belongs to another group") }
                    if page.count > 0 && page.orderBytes(at: 0) != ref.first { problems.append("page \(ref.id) first entry differs from the directory") }
                    // Past the entry bound is damage (no writer makes such a page). Past the byte bound is not: an entry
                    // larger than a page has one of its own, and views written before pages were cut by bytes hold
                    // pages of several long entries, which read right (the next insert there cuts them).
                    if page.count > ViewPage.maxEntries {
                        problems.append("page \(ref.id) holds \(page.count) entries, more than a page holds (\(ViewPage.maxEntries))")
                    }
                    for i in 0..<page.count {
                        let order = page.orderBytes(at: i)
                        if let previous, !previous.lexicographicallyPrecedes(order) {
                            problems.append("group '\(name)' is out of order at page \(ref.id) entry \(i)")
                        }
                        previous = order
                        guard let rowKey = StoredRowKey(page.rowKey(at: i)) else {
                            problems.append("an entry of group '\(name)' has a malformed row key")
                            continue
                        }
                        if !rowsInPages.insert(withUnsafeBytes(of: page.groupID.bigEndian, Array.init) + rowKey.bytes).inserted {
                            problems.append("a row appears twice in group '\(name)' of the view")
                        }
                        guard let storedRow = try transaction.storedRow(for: rowKey) else {
                            problems.append("an entry of group '\(name)' points at a missing row")
                            continue
                        }
                        let stored = try slot.map {
                            try view.storedEntries(try storedRow.attachment(at: $0), rowKey: rowKey, tables: tables, index: index, in: transaction)
                        } ?? []
                        if !stored.contains(where: { $0.groupID == page.groupID && $0.order(rowKey: rowKey) == order }) {
                            problems.append("the row's record does not point back at an entry of group '\(name)'")
                        }
                    }
                    chunkCount += page.count
                }
                if chunkCount != chunk.total { problems.append("group '\(name)' chunk \(c) total \(chunk.total) != \(chunkCount)") }
                groupCount += chunkCount
            }
            if groupCount != group.count { problems.append("group '\(name)' count \(group.count) != \(groupCount)") }
            seen += groupCount
        }
        // Every row whose record carries an entry of the view is in the pages (no entry left behind).
        if let slot {
            var attached = 0
            var skipped = 0
            let manyGroups = view.rowsInManyGroups(in: transaction)
            try transaction.scanRows { row in
                let attachment = try row.attachment(at: slot)
                if attachment == ViewTables.skippedMarker {
                    skipped += 1
                } else if attachment != nil {
                    let entries: [ViewTables.RowEntry]
                    do { entries = try view.storedEntries(attachment, rowKey: row.storedKey, tables: tables, index: index, in: transaction) } catch {
                        problems.append("the entries of row \(row.id) are malformed")
                        return true
                    }
                    if entries.count > 1, !manyGroups { problems.append("row \(row.id) has \(entries.count) entries in a view with one group per row") }
                    if Set(entries.map(\.groupID)).count != entries.count { problems.append("row \(row.id) has two entries in one group") }
                    attached += entries.count
                }
                return true
            }
            if attached != seen { problems.append("\(attached) entries are carried by the rows of the view, the pages hold \(seen)") }
            let recorded = try transaction.skippedRows(ofExtension: view.name)?.count ?? 0
            if skipped != recorded {
                problems.append("\(skipped) rows are marked as skipped (cannot decode), the view's record counts \(recorded)")
            }
        } else if seen > 0 {
            problems.append("the pages hold \(seen) entries but no row carries one")
        }
        // In a read-write transaction, pages the view's writer has not flushed yet count as stored.
        let pagesTableCount = try tables.pages.count(in: transaction) + (writer?.unflushedPageDelta() ?? 0)
        let directoryPages = index.groups.values.reduce(0) { $0 + $1.chunks.reduce(0) { $0 + $1.pages.count } }
        if pagesTableCount != directoryPages { problems.append("the pages table has \(pagesTableCount) pages, the directory \(directoryPages)") }
        return (problems, seen)
    }

    /// Checks that every row the view's closures include is there, in the right place, and no other row is.
    func checkAgainstClosures(seen: Int, into problems: inout [String]) throws {
        let index = try self.index

        // Every row the view's closures include is there, in the right place; no other row is.
        var expected = 0
        var rowKeys: [StoredRowKey] = []
        try transaction.scanRows(inCollections: view.viewOptions.allowedCollections) { row in
            rowKeys.append(row.storedKey)
            return true
        }
        for rowKey in rowKeys {
            // Read again with its bytes owned: the closures may run nested reads of the transaction.
            guard let storedRow = try transaction.storedRow(for: rowKey) else { continue }
            let row = ExtensionRow(storedRow)
            let attachment = try attachmentSlot().flatMap { try storedRow.attachment(at: $0) }
            let places: [View.Place]
            do {
                places = try view.places(of: row, rowKey: rowKey, in: transaction)
            } catch {
                guard view.skippable(error) != nil else { throw error }
                if attachment != ViewTables.skippedMarker { problems.append("row \(row.id) does not decode but is not marked as skipped") }
                continue
            }
            if attachment == ViewTables.skippedMarker { problems.append("row \(row.id) is marked as skipped but its closures decode it") }
            let stored = try view.storedEntries(attachment, rowKey: rowKey, tables: tables, index: index, in: transaction)
            expected += places.count
            switch (places.isEmpty, stored.isEmpty) {
            case (true, true): continue
            case (true, false): problems.append("row \(row.id) is in the view but its grouping leaves it out")
            case (false, true): problems.append("row \(row.id) is missing from the view")
            case (false, false):
                let storedPlaces = Set(stored.map { ViewEntry(group: index.groupNames[$0.groupID] ?? "?", orderBytes: $0.order(rowKey: rowKey)) })
                if storedPlaces != Set(places.map { ViewEntry(group: $0.group, orderBytes: $0.order) }) {
                    problems.append(places.count == 1 && stored.count == 1 ? "row \(row.id) is in the wrong place"
                                    : "row \(row.id) is in the wrong groups or places")
                }
            }
        }
        if expected != seen { problems.append("the view holds \(seen) entries; its closures give \(expected)") }
    }
}
