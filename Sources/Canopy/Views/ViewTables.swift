/// The tables of one view, typed through the extension interface (all named `ext.<view>.<table>`).
///
/// - `pages`: page id → a ``ViewPage``.
/// - `groups`: group id → group name.
///
/// Where each row is — its ``RowEntry``: group id (varint) + sort key — is the view's attachment to the row's own
/// record (``AttachmentSlot``): writing a row and its place in the view descends one B-tree, not one per view, and
/// the row's key is stored once. The row's order bytes are the sort key followed by the row's stored key.
///
/// The view's state — version (8 bytes, new for every commit that changes the view), next page id (8 bytes), next
/// group id (4 bytes) — is the view's extension state record (``ReadWriteTransaction/setExtensionState(_:of:)``), part
/// of the store's state, which the commit's log entry carries (`canopy/6`): in the pages table it dirtied one more leaf
/// per commit, in `canopy.info` (until `canopy/5`) one more B-tree.
struct ViewTables: Sendable {
    let pages: ExtensionTable<UInt64BigEndianCoding, BytesCoding>
    let groups: ExtensionTable<UInt32BigEndianCoding, StringUTF8Coding>
    let viewName: String

    static func open(in txn: ReadWriteTransaction, view: String) throws -> ViewTables {
        ViewTables(
            pages: try txn.openTable("pages", of: view, keys: UInt64BigEndianCoding.self, values: BytesCoding.self),
            groups: try txn.openTable("groups", of: view, keys: UInt32BigEndianCoding.self, values: StringUTF8Coding.self),
            viewName: view)
    }

    /// The tables of a view recorded in the database, for reading without registering it; `nil` when they are missing.
    static func existing(in txn: ReadTransaction, view: String) throws -> ViewTables? {
        guard let pages = try txn.existingTable("pages", of: view, keys: UInt64BigEndianCoding.self, values: BytesCoding.self),
              let groups = try txn.existingTable("groups", of: view, keys: UInt32BigEndianCoding.self, values: StringUTF8Coding.self)
        else { return nil }
        return ViewTables(pages: pages, groups: groups, viewName: view)
    }

    /// (version, next page id, next group id), or zeros for an empty view.
    func readState(_ txn: ReadTransaction) throws -> (version: UInt64, nextPageID: UInt64, nextGroupID: UInt32) {
        try txn.withExtensionState(of: viewName) { bytes in
            guard let bytes else { return (0, 1, 1) }
            guard bytes.count == 20 else { throw corrupt(viewName, "the state record is malformed") }
            return (bytes.loadBigEndianUInt64(at: 0), bytes.loadBigEndianUInt64(at: 8), bytes.loadBigEndianUInt32(at: 16))
        }
    }

    func readVersion(_ txn: ReadTransaction) throws -> UInt64 {
        try readState(txn).version
    }

    func writeState(_ index: ViewIndex, in txn: ReadWriteTransaction) throws {
        var out = ByteWriter(capacity: 20)
        out.append(bigEndian: index.version)
        out.append(bigEndian: index.nextPageID)
        out.append(bigEndian: index.nextGroupID)
        try txn.setExtensionState(out.bytes, of: viewName)
    }

    func emptyAll(in txn: ReadWriteTransaction) throws {
        try pages.removeAll(in: txn)
        try groups.removeAll(in: txn)
        try txn.setExtensionState(nil, of: viewName)
    }

    func dropAll(in txn: ReadWriteTransaction) throws {
        try pages.drop(in: txn)
        try groups.drop(in: txn)
        try txn.setExtensionState(nil, of: viewName)
    }

    /// Rebuilds the in-memory index from the tables, as they are in `txn`.
    func loadIndex(_ txn: ReadTransaction) throws -> ViewIndex {
        var index = ViewIndex()
        (index.version, index.nextPageID, index.nextGroupID) = try readState(txn)
        try groups.forEach(in: txn) { id, name in
            index.groupIDs[name] = id
            index.groupNames[id] = name
            return true
        }
        var pagesByGroup: [UInt32: [ViewIndex.PageRef]] = [:]
        try pages.forEachBytes(in: txn) { key, value in
            guard key.count == 8 else { throw corrupt(viewName, "a page id is malformed") }
            let id = key.loadBigEndianUInt64(at: 0)
            let page: ViewPage
            do { page = try ViewPage(decoding: value) } catch { throw corrupt(viewName, "page \(id) is malformed") }
            guard page.count > 0 else { return true }
            pagesByGroup[page.groupID, default: []].append(ViewIndex.PageRef(id: id, count: page.count, first: page.orderBytes(at: 0)))
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

    func readPage(_ id: UInt64, _ txn: ReadTransaction) throws -> ViewPage {
        try pages.withValue(forKey: id, in: txn) { bytes in
            guard let bytes else { throw corrupt(viewName, "page \(id) is missing") }
            do { return try ViewPage(decoding: bytes) } catch { throw corrupt(viewName, "page \(id) is malformed") }
        }
    }

    /// Whether page `id` is stored.
    func hasPage(_ id: UInt64, _ txn: ReadTransaction) throws -> Bool {
        try pages.contains(id, in: txn)
    }

    func writePage(_ page: ViewPage, id: UInt64, _ txn: ReadWriteTransaction, append: Bool = false) throws {
        if append {
            try pages.put(page.encoded, forKey: id, in: txn, appending: true)
        } else {
            try pages.put(reserving: page.byteSize, forKey: id, in: txn) { page.write(into: $0) }
        }
    }

    func deletePage(_ id: UInt64, _ txn: ReadWriteTransaction) throws {
        try pages.remove(id, in: txn)
    }

    /// The stored entry of a row: its group id and sort key. The row's order bytes are the sort key followed by the
    /// row's stored key.
    struct RowEntry: Hashable {
        var groupID: UInt32
        var sortKey: [UInt8]

        var encoded: [UInt8] { Self.encoded(groupID: groupID, sortKey: sortKey[...]) }

        /// The one-entry attachment of group `groupID` and `sortKey` (one array, sized once).
        static func encoded(groupID: UInt32, sortKey: ArraySlice<UInt8>) -> [UInt8] {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(5 + sortKey.count)
            encode(groupID: groupID, sortKey: sortKey, into: &bytes)
            return bytes
        }

        /// ``encoded(groupID:sortKey:)`` made in `sortKey`'s own array: the group id goes in front of the sort key,
        /// in place when the array is not shared and has room (a sort key is made with room to spare), so that a new
        /// row's attachment takes no array of its own (an allocation, a copy and a free per row and view).
        static func encoded(groupID: UInt32, taking sortKey: consuming [UInt8]) -> [UInt8] {
            var bytes = sortKey
            if groupID < 0x80 {
                bytes.insert(UInt8(groupID), at: 0)
            } else {
                var head: [UInt8] = []
                VarInt.append(UInt64(groupID), to: &head)
                bytes.insert(contentsOf: head, at: 0)
            }
            return bytes
        }

        /// Appends the one-entry attachment of group `groupID` and `sortKey` to `bytes` (the encoding:
        /// ``encoded(groupID:sortKey:)`` is this into a new array; ``encoded(groupID:taking:)`` writes the same bytes
        /// in the sort key's array, which RowEntryEncodingTests holds to this).
        static func encode(groupID: UInt32, sortKey: some Collection<UInt8>, into bytes: inout [UInt8]) {
            VarInt.append(UInt64(groupID), to: &bytes)
            bytes.append(contentsOf: sortKey)
        }

        init(groupID: UInt32, sortKey: [UInt8]) {
            self.groupID = groupID
            self.sortKey = sortKey
        }

        init(decoding bytes: UnsafeRawBufferPointer) throws {
            var reader = ByteReader(bytes)
            let id = try reader.readVarint()
            guard id <= UInt64(UInt32.max) else { throw ByteReader.Malformed(offset: 0) }
            groupID = UInt32(id)
            sortKey = Array(bytes[reader.offset...])
        }

        /// The order bytes of the row with stored key `rowKey`.
        func order(rowKey: StoredRowKey) -> [UInt8] { sortKey + rowKey.bytes }
    }

    /// The attachment of a row the view skipped because its closures could not decode it (see ``SkippedRows``): one
    /// byte that no entry starts with alone (a varint byte with its continuation bit set needs another byte).
    static let skippedMarker: [UInt8] = [0xFF]

    /// The attachment of a row in a manual list (``ManualView``): a mark that the row is in it, the same wherever the
    /// row stands, so moving the row writes only the list's `order` table and pages, never the row. The mark tells a
    /// catch-up that the record is the one the list holds: a record removed and written again by a process without
    /// the list lacks it. A varint byte with its continuation bit set and nothing after it, so it is no entry.
    static let listedMarker: [UInt8] = [0xFE]

    /// The entry a row's attachment holds; `nil` for none, and for a row the view skipped. For a row in several groups
    /// of a view whose rows can be in many, see ``rowEntries(_:)``.
    /// - Throws: ``CanopyError/Code/corruptStore`` when the attachment is malformed, or holds several entries (the caller
    ///   expected a view with one group per row).
    func rowEntry(_ attachment: [UInt8]?) throws -> RowEntry? {
        guard let attachment, attachment != Self.skippedMarker else { return nil }
        guard attachment.first != Self.entryListMarker else { throw corrupt(viewName, "a row holds several entries in a view with one group per row") }
        do { return try attachment.withUnsafeBytes { try RowEntry(decoding: $0) } } catch {
            throw corrupt(viewName, "a row's entry is malformed")
        }
    }

    /// The first byte of an attachment holding several entries (a row in several groups, see
    /// ``ViewGrouping/manyByRow(_:)``): a one-entry attachment starts with its group id as a varint, and group ids start
    /// at 1, so no one-entry attachment starts with a zero byte. The layout is `0x00 varint(count)` then, per entry by
    /// group id, `varint(group id) varint(sort key length) sort key`. A row in one group keeps the one-entry layout in
    /// every view, so the attachments of views written before rows could be in many groups read unchanged.
    static let entryListMarker: UInt8 = 0

    /// The entries a row's attachment holds, by group id: none (no attachment, or a skipped row), one, or several.
    /// - Throws: ``CanopyError/Code/corruptStore`` when the attachment is malformed.
    func rowEntries(_ attachment: [UInt8]?) throws -> [RowEntry] {
        guard let attachment, attachment != Self.skippedMarker else { return [] }
        do {
            return try attachment.withUnsafeBytes { bytes in
                guard bytes.first == Self.entryListMarker else { return [try RowEntry(decoding: bytes)] }
                var reader = ByteReader(bytes)
                _ = try reader.readByte()
                let count = try reader.readVarint()
                // Each entry takes at least two bytes: a count beyond the bytes left is malformed, not an allocation.
                guard count >= 1, count <= UInt64(bytes.count) else { throw ByteReader.Malformed(offset: 1) }
                var entries: [RowEntry] = []
                entries.reserveCapacity(Int(count))
                for _ in 0..<count {
                    let id = try reader.readVarint()
                    guard id >= 1, id <= UInt64(UInt32.max) else { throw ByteReader.Malformed(offset: reader.offset) }
                    entries.append(RowEntry(groupID: UInt32(id), sortKey: try reader.readBlob()))
                }
                guard reader.offset == bytes.count else { throw ByteReader.Malformed(offset: reader.offset) }
                return entries
            }
        } catch {
            throw corrupt(viewName, "a row's entries are malformed")
        }
    }

    /// The attachment holding `entries` (any order): `nil` for none, the one-entry layout for one, the entry list
    /// (``entryListMarker``) for several.
    static func attachment(holding entries: [RowEntry]) -> [UInt8]? {
        switch entries.count {
        case 0: return nil
        case 1: return entries[0].encoded
        default:
            let sorted = entries.sorted { $0.groupID < $1.groupID }
            var out = ByteWriter(capacity: 2 + sorted.reduce(0) { $0 + 10 + $1.sortKey.count })
            out.append(byte: entryListMarker)
            out.append(varint: UInt64(sorted.count))
            for entry in sorted {
                out.append(varint: UInt64(entry.groupID))
                out.append(varint: UInt64(entry.sortKey.count))
                out.bytes.append(contentsOf: entry.sortKey)
            }
            return out.bytes
        }
    }
}

func corrupt(_ view: String, _ message: String) -> CanopyError {
    CanopyError(.corruptStore, "view storage is corrupt: \(message); unregister the view with dropStorage and register it again to rebuild",
                extensionName: view)
}
