import Foundation
import LMDB

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
    func populate(in transaction: ReadWriteTransaction, tables: ViewTables, reason: String, registeringParent: View? = nil) throws -> ViewIndex {
        let storage = transaction.lmdbWriteTransaction
        try transaction.guarded { try tables.emptyAll(in: storage) }
        var index = ViewIndex()
        var arena: [UInt8] = []
        var items: [Item] = []
        var examined = 0

        func add(group: String, sortKeyLength: Int, order: some Collection<UInt8>, rowKey: some Collection<UInt8>) throws {
            let groupID = index.groupID(for: group)
            let start = arena.count
            arena.append(contentsOf: order)
            items.append(Item(groupID: groupID, sortKeyLength: Int32(sortKeyLength), start: start, length: Int32(arena.count - start)))
            let entry = ViewTables.RowEntry(groupID: groupID, sortKeyLength: sortKeyLength, order: Array(order))
            try transaction.guarded { try storage.put(entry.encoded, forKey: Array(rowKey), in: tables.rows) }
        }

        switch source {
        case .closures:
            let names = try transaction.collectionNamesByID()
            let total = try transaction.count()
            try transaction.storage.forEach(in: transaction.tables.objects) { rowKey, value in
                examined += 1
                if examined % 10_000 == 0 { progress?(examined, total) }
                guard let collectionID = RowKey.collectionID(of: rowKey), let collection = names[collectionID]?.name,
                      viewOptions.allows(collection), let flags = value.first else { return true }
                let id = RowID(collection: collection, key: RowKey.key(of: rowKey))
                let keyBytes = Array(rowKey)
                let objectBytes = UnsafeRawBufferPointer(rebasing: value.dropFirst())
                let row = ViewRow(
                    id: id, codecName: names[collectionID]?.codec ?? "", object: nil, metadata: flags & 1 == 0 ? .some(nil) : nil,
                    loadObject: { Array(objectBytes) },
                    loadMetadata: { try transaction.storage.value(forKey: keyBytes, in: transaction.tables.metadata) })
                // `objectBytes` points into the map, valid only during this visit: the row refuses loads afterwards
                // (a closure that kept it gets a typed error, not bytes of a page LMDB may have reused).
                defer { row.endAccess() }
                guard let place = try self.place(of: row, rowKey: keyBytes, in: transaction) else { return true }
                try add(group: place.group, sortKeyLength: place.sortKeyLength, order: place.order, rowKey: keyBytes)
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
            // A parent that is registering in this transaction passes itself (see `rebuildFilteredViews(in:)`).
            guard let parent = registeringParent ?? transaction.core.registeredExtension(named: parentName) as? View else {
                throw CanopyError(.extensionDependencyMissing, "the parent view '\(parentName)' is not registered", extensionName: name)
            }
            let parentIndex = try parent.index(in: transaction.storage)
            let parentTables = try parent.tables
            let names = try transaction.collectionNamesByID()
            let total = parentIndex.totalCount
            // The parent's entries come in group and sort order: walk them, filter, append (no sorting needed).
            for groupName in parentIndex.groups.sorted(by: { $0.value.id < $1.value.id }).map(\.key) {
                guard let group = parentIndex.groups[groupName] else { continue }
                for chunk in group.chunks {
                    for ref in chunk.pages {
                        // The parent's writer holds the pages this transaction changed.
                        let page = try transaction.viewWriter(named: parentName)?.page(ref.id)
                            ?? parentTables.readPage(ref.id, transaction.storage, viewName: parentName)
                        for i in 0..<page.count {
                            examined += 1
                            if examined % 10_000 == 0 { progress?(examined, total) }
                            let rowKey = Array(page.rowKey(at: i))
                            let row = try transaction.viewRow(forRowKey: rowKey, names: names)
                            guard let row, viewOptions.allows(row.collection), try filterAccepts(group: groupName, row) else { continue }
                            let order = page.orderBytes(at: i)
                            try add(group: groupName, sortKeyLength: order.count - rowKey.count, order: order, rowKey: rowKey)
                        }
                    }
                }
            }
            // Group ids were assigned in the parent's group order, so items are already sorted.
        }

        // Write pages in order, filling them to three quarters so that early inserts don't split at once.
        let fillEntries = ViewPage.maxEntries * 3 / 4
        let fillBytes = ViewPage.maxBytes * 3 / 4
        var page: ViewPage?
        var pageCount = 0
        func flush() throws {
            guard let current = page, current.count > 0 else { return }
            let id = index.newPageID()
            try transaction.guarded { try tables.writePage(current, id: id, storage, append: true) }
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
            try transaction.guarded { try storage.put(Array(name.utf8), forKey: withUnsafeBytes(of: id.bigEndian) { Array($0) }, in: tables.groups) }
        }
        index.version = UInt64.random(in: 1...UInt64.max)
        try transaction.guarded { try tables.writeInfo(index, in: storage) }
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

extension ReadTransaction {
    /// Collection records by id (for turning row keys back into collection names).
    func collectionNamesByID() throws -> [UInt32: (name: String, codec: String)] {
        var result: [UInt32: (name: String, codec: String)] = [:]
        try storage.forEach(in: tables.collections) { key, value in
            if let record = CollectionRecord(decoding: value) {
                result[record.id] = (String(decoding: key, as: UTF8.self), record.codec)
            }
            return true
        }
        if let rw = self as? ReadWriteTransaction {
            for (name, record) in rw.newCollections { result[record.id] = (name, record.codec) }
        }
        return result
    }

    /// The collection name and codec of a collection id, using the connection's and database's caches.
    func collection(forID id: UInt32) throws -> (name: String, codec: String)? {
        if let hit = cacheState.collections.first(where: { $0.value.id == id }) { return (hit.key, hit.value.codec) }
        let all = try collectionNamesByID()
        for (recordID, entry) in all {
            cacheState.collections[entry.name] = CollectionRecord(id: recordID, codec: entry.codec)
        }
        return all[id]
    }

    /// The row id of a row key.
    func rowID(forRowKey rowKey: some Collection<UInt8>) throws -> RowID? {
        let bytes = Array(rowKey)
        guard bytes.count >= 4 else { return nil }
        let id = bytes.withUnsafeBytes { $0.loadBigEndianUInt32(at: 0) }
        guard let collection = try collection(forID: id) else { return nil }
        return RowID(collection: collection.name, key: String(decoding: bytes[4...], as: UTF8.self))
    }

    /// A ``ViewRow`` reading the stored row of `rowKey`, or `nil` when the row does not exist.
    func viewRow(forRowKey rowKey: [UInt8], names: [UInt32: (name: String, codec: String)]? = nil) throws -> ViewRow? {
        guard rowKey.count >= 4 else { return nil }
        let collectionID = rowKey.withUnsafeBytes { $0.loadBigEndianUInt32(at: 0) }
        guard let collection = try names?[collectionID] ?? collection(forID: collectionID) else { return nil }
        guard let stored = try storage.value(forKey: rowKey, in: tables.objects), let flags = stored.first else { return nil }
        let id = RowID(collection: collection.name, key: String(decoding: rowKey[4...], as: UTF8.self))
        let metadataTable = tables.metadata
        // Reads its metadata through this transaction (which refuses to be used once its closure has returned).
        return ViewRow(
            id: id, codecName: collection.codec, object: nil, metadata: flags & 1 == 0 ? .some(nil) : nil,
            loadObject: { Array(stored[1...]) },
            loadMetadata: { [self] in try self.storage.value(forKey: rowKey, in: metadataTable) })
    }
}
