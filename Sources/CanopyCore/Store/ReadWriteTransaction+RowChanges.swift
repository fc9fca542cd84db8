import LMDB

// The one write path of a row mutation, shared by every mutation: read the row's record once, hand the change to the
// extensions' writers, write the record once.

extension ReadWriteTransaction {
    /// A row's record as a mutation finds it.
    struct PreviousRecord {
        var hasMetadata: Bool
        /// The attachments region (empty when the record carries none).
        var attachments: [UInt8]
        /// The object's bytes, when asked for.
        var object: [UInt8]?
    }

    /// The record of the row at `rowKey` before the mutation, or `nil` when there is no such row.
    /// - Throws: ``CanopyError/Code/corruptStore`` when the record is malformed.
    func previousRecord(_ rowKey: UnsafeRawBufferPointer, id: RowID, withObject: Bool) throws -> PreviousRecord? {
        try storage.withValue(forKey: rowKey, in: tables.objects) { value -> PreviousRecord? in
            try value.map { try parsePreviousRecord($0, id: id, withObject: withObject) }
        }
    }

    /// ``previousRecord(_:id:withObject:)`` read through the transaction's row cursor (``rowCursor()``), which it
    /// leaves where a put of `rowKey` through it starts (``putNewRecord(_:hasMetadata:edits:object:)``): the put then
    /// finds the leaf page from the cursor's, without a second descent of the rows' tree (about 1,500 instructions a
    /// row of a bulk insert).
    func previousRecordAtCursor(_ rowKey: UnsafeRawBufferPointer, id: RowID) throws -> PreviousRecord? {
        let cursor = try rowCursor()
        return try guardedRead { try cursor.seek(key: rowKey).map { try parsePreviousRecord($0, id: id, withObject: false) } }
    }

    /// What a write without extensions keeps of the record it replaces: its metadata flag, and its attachments when
    /// their region can be read. A malformed record is not an error there: the write replaces it whole and so heals
    /// the row (the attachments belong to extensions not registered in this process, stale after the write anyway).
    static func replacedRecord(_ value: UnsafeRawBufferPointer) -> PreviousRecord {
        let flags = value.first ?? 0
        let region = flags & StoredRecord.hasAttachments != 0 ? StoredRecord.attachmentBytes(value) : nil
        return PreviousRecord(hasMetadata: flags & StoredRecord.hasMetadata != 0, attachments: region.map { Array($0) } ?? [], object: nil)
    }

    private func parsePreviousRecord(_ value: UnsafeRawBufferPointer, id: RowID, withObject: Bool) throws -> PreviousRecord {
        guard let flags = value.first, let region = StoredRecord.attachmentBytes(value), let object = StoredRecord.objectBytes(value) else {
            throw CanopyError(.corruptStore, "a row's stored record is malformed", path: core.path, collection: id.collection, key: id.key)
        }
        return PreviousRecord(hasMetadata: flags & StoredRecord.hasMetadata != 0, attachments: region.isEmpty ? [] : Array(region),
                              object: withObject ? Array(object) : nil)
    }

    /// The cursor over the rows' table that a row's write reads the previous record with and writes the new one
    /// through, kept for the transaction (the LMDB transaction closes it before it ends).
    func rowCursor() throws -> Cursor {
        if let rowCursorStorage { return rowCursorStorage }
        let cursor = try guarded { try writeStorage.keptCursor(in: tables.objects) }
        rowCursorStorage = cursor
        return cursor
    }

    /// Hands `change` to every extension's writer, in registration order (dependencies first), recording each
    /// writer's attachment edit on the change at the extension's slot (assigned at registration; here only for an
    /// extension whose registration was a read on a database recorded before slots were assigned at registration).
    ///
    /// An error leaves the transaction unable to commit (``interruptedChange``): the writers before the one that threw
    /// have written their tables for a change the store does not write.
    func tellWriters(_ change: RowChange) throws {
        try tellEachWriter(change)
    }

    /// ``tellWriters(_:)`` for a change that holds values the caller lent (``HeldValue``): the loan ends before this
    /// returns (or throws), so that no writer reads the caller's frame afterwards. A writer that kept the change gets
    /// copies (the change is then not uniquely referenced).
    func tellWriters(lending change: inout RowChange) throws {
        defer {
            // Asked before the call: `change.endLoans(…)` holds a reference to `change` while its argument is evaluated.
            let kept = !isKnownUniquelyReferenced(&change)
            change.endLoans(kept: kept)
        }
        try tellEachWriter(change)
    }

    private func tellEachWriter(_ change: RowChange) throws {
        do {
            for position in writers.indices {
                let edit = try writers[position].writer.handle(change)
                if case .keep = edit { continue }
                if change.kind == .remove { continue }
                change.record(edit, at: try writerSlot(at: position))
            }
        } catch {
            if interruptedChange == nil { interruptedChange = error }
            throw error
        }
    }

    /// The attachment slot of the writer at `position` of ``writers``: ``writableAttachmentSlot(for:)`` of its name,
    /// kept in ``writerSlots`` while the slots stay as they are (a registration inserts writers: the name is compared).
    private func writerSlot(at position: Int) throws -> UInt32 {
        let name = writers[position].name
        if position < writerSlots.count, let known = writerSlots[position], known.name == name { return known.slot }
        let slot = try writableAttachmentSlot(for: name).number
        if writerSlots.count < writers.count { writerSlots += Array(repeating: nil, count: writers.count - writerSlots.count) }
        writerSlots[position] = (name, slot)
        return slot
    }

    /// The slots of extensions that are registered (attachments of other slots are dropped when a record is written).
    func liveAttachmentSlots() throws -> Set<UInt32> {
        try attachmentSlots().live
    }

    /// Writes a row's record: flags, attachments, object.
    func putRecord(_ rowKey: UnsafeRawBufferPointer, hasMetadata: Bool, attachments: [UInt8], object: UnsafeRawBufferPointer) throws {
        let value = StoredRecord.value(hasMetadata: hasMetadata, attachments: attachments, object: object)
        try guarded { try value.withUnsafeBytes { try writeStorage.put($0, forKey: rowKey, in: tables.objects) } }
    }

    /// Writes a row's metadata (`metadataBytes`), or removes the row's metadata record when it had one and the write
    /// gives none.
    func writeMetadata(_ metadataBytes: [UInt8]?, of rowKey: UnsafeRawBufferPointer, hadMetadata: Bool) throws {
        try guarded {
            if let metadataBytes {
                try metadataBytes.withUnsafeBytes { try writeStorage.put($0, forKey: rowKey, in: tables.metadata) }
            } else if hadMetadata {
                try writeStorage.delete(rowKey, in: tables.metadata)
            }
        }
    }

    /// Writes a row's record (flags, attachments, object) through `cursor` (over the rows' table), which a seek of
    /// `rowKey` left at the row's place: reserved and written in place in the map (no array for a
    /// record without attachments). Byte for byte what ``putRecord(_:hasMetadata:attachments:object:)`` writes.
    func putRecord(_ rowKey: UnsafeRawBufferPointer, at cursor: Cursor, hasMetadata: Bool, attachments: [UInt8], object: UnsafeRawBufferPointer) throws {
        guard attachments.isEmpty else {
            let value = StoredRecord.value(hasMetadata: hasMetadata, attachments: attachments, object: object)
            try guarded { try value.withUnsafeBytes { bytes in try cursor.putReserving(bytes.count, forKey: rowKey) { $0.copyMemory(from: bytes) } } }
            return
        }
        try guarded {
            try cursor.putReserving(1 + object.count, forKey: rowKey) { out in
                out.storeBytes(of: hasMetadata ? StoredRecord.hasMetadata : 0, as: UInt8.self)
                UnsafeMutableRawBufferPointer(rebasing: out[1...]).copyMemory(from: object)
            }
        }
    }

    /// Writes, through the row cursor, the record of `change`'s row when it carried no attachments before (``RowChange/hadNoAttachments``: a new
    /// row, most of all): flags, the region of the writers' edits, the object, reserved and written in place in the map
    /// (one copy of each part, no array for the region and none for the record: about 600 instructions a row of a
    /// bulk insert with two views). Byte for byte what ``putRecord(_:hasMetadata:attachments:object:)`` writes with
    /// ``RowChange/attachmentsAfter(live:)``.
    func putNewRecord(_ rowKey: UnsafeRawBufferPointer, hasMetadata: Bool, edits change: RowChange, object: UnsafeRawBufferPointer) throws {
        let regionSize = change.editsRegionSize
        let header = 1 + (regionSize == 0 ? 0 : VarInt.size(of: UInt64(regionSize)))
        try guarded {
            // Through the row cursor, which ``previousRecordAtCursor(_:id:)`` left at the row's place.
            try rowCursor().putReserving(header + regionSize + object.count, forKey: rowKey) { out in
                guard let base = out.baseAddress else { return }
                base.storeBytes(of: (hasMetadata ? StoredRecord.hasMetadata : 0) | (regionSize == 0 ? 0 : StoredRecord.hasAttachments), as: UInt8.self)
                if regionSize > 0 {
                    _ = VarInt.write(UInt64(regionSize), to: base + 1)
                    change.writeEditsRegion(to: base + header)
                }
                if let source = object.baseAddress, !object.isEmpty {
                    (base + header + regionSize).copyMemory(from: source, byteCount: object.count)
                }
            }
        }
    }

    /// Writes the attachment edits a catch-up returned (each missed row that still exists, once).
    func writeCatchUpEdits(_ edits: [StoredRowKey: AttachmentEdit], of name: String) throws {
        let changed = edits.filter { if case .keep = $0.value { false } else { true } }
        guard !changed.isEmpty else { return }
        let slot = try writableAttachmentSlot(for: name)
        let rows = changed.keys.sorted().map { key -> (StoredRowKey, [UInt8]?) in
            if case .set(let bytes) = changed[key], !bytes.isEmpty { return (key, bytes) }
            return (key, nil)
        }
        try setAttachments(at: slot, rows)
    }
}
