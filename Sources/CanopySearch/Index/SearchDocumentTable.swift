import CanopyCore

/// The `documents` table: which row each document number is (a result's row), 64 numbers to a value.
///
/// Key: the block, `document / 64` (8 bytes, big-endian). Value: for each number of the block in order, up to the
/// last one that has a row, `varint(size)` and the row's stored key (size 0: no row has that number; numbers are
/// never given twice, so a removed row's stays empty). Numbers only ascend: a transaction's new rows fill the last
/// block and append new ones (``append(_:first:in:)``), a value per 64 rows instead of one per row (each value is
/// checksummed, as every table's).
struct SearchDocumentTable: Sendable {
    let table: ExtensionTable<UInt64BigEndianCoding, BytesCoding>
    /// The index, named in errors.
    let index: String

    static let blockSize: UInt64 = 64

    /// The stored key of the row numbered `document`, or `nil`.
    func rowKey(of document: UInt64, in transaction: ReadTransaction) throws -> StoredRowKey? {
        try table.withValue(forKey: document / Self.blockSize, in: transaction) { value in
            guard let value else { return nil }
            var found: StoredRowKey?
            try forEachSlot(value) { slot, key in
                guard slot == document % Self.blockSize else { return slot < document % Self.blockSize }
                found = key.isEmpty ? nil : StoredRowKey(key)
                return false
            }
            return found
        }
    }

    /// Forgets the row numbered `document`.
    func remove(_ document: UInt64, in transaction: ReadWriteTransaction) throws {
        let block = document / Self.blockSize
        guard var keys = try slots(of: block, in: transaction) else { return }
        let slot = Int(document % Self.blockSize)
        guard slot < keys.count else { return }
        keys[slot] = nil
        try write(leadingEmpty: 0, keys[...], block: block, appending: false, in: transaction)
    }

    /// Stores the rows numbered `first`, `first + 1`, … (`nil`: a number whose row was removed again), all above every
    /// number stored: the table's last block is filled, then new blocks are appended.
    /// - Throws: `corruptStore` when a number is not above every stored one (a damaged counter): nothing is overwritten.
    func append(_ rows: [StoredRowKey?], first: UInt64, in transaction: ReadWriteTransaction) throws {
        guard !rows.isEmpty else { return }
        var index = 0
        let firstBlock = first / Self.blockSize
        if let last = try lastBlock(from: firstBlock, in: transaction) {
            guard last == firstBlock else { throw corrupt("its next row number (\(first)) is not above its last (block \(last) holds rows)") }
            // The stored block is continued: its slots read back, the new rows placed after them.
            var keys = try slots(of: firstBlock, in: transaction) ?? []
            let start = Int(first % Self.blockSize)
            if keys[min(start, keys.count)...].contains(where: { $0 != nil }) {
                throw corrupt("its next row number (\(first)) is not above its last")
            }
            let end = min(rows.count, Int(Self.blockSize) - start)
            for offset in 0..<end {
                let slot = start + offset
                if keys.count < slot { keys.append(contentsOf: repeatElement(nil, count: slot - keys.count)) }
                keys.append(rows[offset])
            }
            try write(leadingEmpty: 0, keys[...], block: firstBlock, appending: false, in: transaction)
            index = end
        }
        // The next blocks are new (above every stored one): each written from its rows, appended.
        while index < rows.count {
            let document = first + UInt64(index)
            let slot = Int(document % Self.blockSize)
            let end = min(rows.count, index + Int(Self.blockSize) - slot)
            try write(leadingEmpty: slot, rows[index..<end], block: document / Self.blockSize, appending: true, in: transaction)
            index = end
        }
    }

    /// Calls `body` with each stored row key, in number order, while it returns `true`.
    func forEachRowKey(in transaction: ReadTransaction, _ body: (UnsafeRawBufferPointer) throws -> Bool) throws {
        try table.forEachBytes(in: transaction) { _, value in
            var goOn = true
            try forEachSlot(value) { _, key in
                if !key.isEmpty { goOn = try body(key) }
                return goOn
            }
            return goOn
        }
    }

    /// Calls `body` with each stored number and its row's stored key, in number order, while it returns `true` (the
    /// check of a stored index).
    /// - Throws: `corruptStore` for a malformed block or key.
    func forEachDocument(in transaction: ReadTransaction, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        try table.forEachBytes(in: transaction) { key, value in
            guard key.count == 8 else { throw corrupt("a documents key is \(key.count) bytes long") }
            let (first, overflow) = UInt64(bigEndian: key.loadUnaligned(as: UInt64.self)).multipliedReportingOverflow(by: Self.blockSize)
            guard !overflow else { throw corrupt("a documents key is out of range") }
            var goOn = true
            try forEachSlot(value) { slot, rowKey in
                if !rowKey.isEmpty { goOn = try body(first + slot, rowKey) }
                return goOn
            }
            return goOn
        }
    }

    // MARK: Blocks

    /// The block's rows by slot (`nil`: none), up to its last row; `nil` when the block is not stored.
    private func slots(of block: UInt64, in transaction: ReadTransaction) throws -> [StoredRowKey?]? {
        try table.withValue(forKey: block, in: transaction) { value in
            guard let value else { return nil }
            var keys: [StoredRowKey?] = []
            try forEachSlot(value) { _, key in
                keys.append(key.isEmpty ? nil : StoredRowKey(key))
                return true
            }
            return keys
        }
    }

    /// The last stored block at or after `block`, or `nil`.
    private func lastBlock(from block: UInt64, in transaction: ReadTransaction) throws -> UInt64? {
        var last: UInt64?
        try table.forEachBytes(in: transaction, from: block) { key, _ in
            guard key.count == 8 else { throw corrupt("a documents key is \(key.count) bytes long") }
            last = UInt64(bigEndian: key.loadUnaligned(as: UInt64.self))
            return true
        }
        return last
    }

    /// Writes block `block` holding `leadingEmpty` empty slots then `keys` (without trailing empty slots; none left:
    /// the block is removed), in place in the map.
    private func write(
        leadingEmpty: Int, _ keys: ArraySlice<StoredRowKey?>, block: UInt64, appending: Bool, in transaction: ReadWriteTransaction
    ) throws {
        var end = keys.endIndex
        while end > keys.startIndex, keys[end - 1] == nil { end -= 1 }
        guard end > keys.startIndex else {
            try table.remove(block, in: transaction)
            return
        }
        let kept = keys[..<end]
        var size = leadingEmpty
        for key in kept { size += VarInt.size(of: UInt64(key?.bytes.count ?? 0)) + (key?.bytes.count ?? 0) }
        try table.put(reserving: size, forKey: block, in: transaction, appending: appending) { value in
            guard let out = value.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
            // (An empty slot is a length of 0: one zero byte.)
            for slot in 0..<leadingEmpty { out[slot] = 0 }
            var offset = leadingEmpty
            for key in kept {
                guard let key else {
                    out[offset] = 0
                    offset += 1
                    continue
                }
                offset += VarInt.write(UInt64(key.bytes.count), to: out + offset)
                key.bytes.withUnsafeBufferPointer { bytes in
                    if let from = bytes.baseAddress { (out + offset).update(from: from, count: bytes.count) }
                }
                offset += key.bytes.count
            }
        }
    }

    /// Calls `visit` with each slot of a block's value and its row key bytes (empty: no row), while it returns `true`.
    private func forEachSlot(_ value: UnsafeRawBufferPointer, _ visit: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        var reader = SearchBytes.Reader(value)
        var slot: UInt64 = 0
        do {
            while !reader.isAtEnd {
                guard slot < Self.blockSize else { throw SearchBytes.Malformed("a documents block of more than \(Self.blockSize) rows") }
                let size = try reader.int()
                let start = reader.offset
                try reader.skip(size)
                guard try visit(slot, UnsafeRawBufferPointer(rebasing: value[start..<(start + size)])) else { return }
                slot += 1
            }
        } catch let error as SearchBytes.Malformed {
            throw corrupt("a documents block is malformed (\(error))")
        }
    }

    private func corrupt(_ message: String) -> CanopyError {
        CanopyError(.corruptStore, "the search index is corrupt: \(message); unregister it with dropStorage and register it again to rebuild",
                    extensionName: index)
    }
}
