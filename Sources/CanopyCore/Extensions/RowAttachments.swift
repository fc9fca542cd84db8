import LMDB

/// Where an extension's per-row record lives inside each row's stored record (see `StoredRecord`): a number the
/// store assigns to the extension, new each time the extension is rebuilt, so that records of an older state are never
/// read as current ones.
///
/// Get it once per transaction — ``ReadTransaction/attachmentSlot(for:)`` to read,
/// ``ReadWriteTransaction/writableAttachmentSlot(for:)`` to write — and use it for every row of that transaction.
public struct AttachmentSlot: Hashable, Sendable {
    let number: UInt32

    init(number: UInt32) { self.number = number }

    /// The slot `number`: for testing a writer without a database (``RowChange/init(id:storedKey:kind:codecName:objectChanged:metadataChanged:removesCollection:previousAttachments:object:objectBytes:metadata:metadataBytes:)``).
    /// Real slots come from the store.
    public init(testing number: UInt32) { self.number = number }
}

/// The attachment slots of the database: extension name → slot, and the next slot number (slots are never reused).
/// Stored under `attachment-slots` in `canopy.info`: `varint(next)`, then `string(name) varint(slot)` pairs.
struct AttachmentSlots: Sendable, Hashable {
    var next: UInt32 = 1
    var slots: [String: UInt32] = [:]

    init() {}

    init?(decoding bytes: UnsafeRawBufferPointer) {
        var reader = ByteReader(bytes)
        guard let next = try? reader.readVarint(), next <= UInt64(UInt32.max) else { return nil }
        self.next = UInt32(next)
        while !reader.isAtEnd {
            guard let name = try? reader.readString(), let slot = try? reader.readVarint(), slot < next else { return nil }
            slots[name] = UInt32(slot)
        }
    }

    var encoded: [UInt8] {
        var out = ByteWriter()
        out.append(varint: UInt64(next))
        for (name, slot) in slots.sorted(by: { $0.value < $1.value }) {
            out.append(string: name)
            out.append(varint: UInt64(slot))
        }
        return out.bytes
    }

    var live: Set<UInt32> { Set(slots.values) }
}

extension ReadTransaction {
    func attachmentSlots() throws -> AttachmentSlots {
        if let attachmentSlotsCache { return attachmentSlotsCache }
        let storage = try storage
        let slots = try guardedRead {
            try StoreInfoRecords.attachmentSlots.value(in: storage, info: tables.info, path: core.path, cache: core.attachmentSlotsCache)
                ?? AttachmentSlots()
        }
        attachmentSlotsCache = slots
        return slots
    }

    /// The attachment slot of extension `name`, or `nil` when it has never attached anything since it was last
    /// rebuilt.
    public func attachmentSlot(for name: String) throws -> AttachmentSlot? {
        try attachmentSlots().slots[name].map(AttachmentSlot.init(number:))
    }

    /// The attachment at `slot` of the row `key`, or `nil` when the row has none (or does not exist).
    /// - Throws: ``CanopyError/Code/corruptStore`` when the row's record is malformed.
    public func attachment(at slot: AttachmentSlot, forRow key: StoredRowKey) throws -> [UInt8]? {
        let storage = try storage
        return try guardedRead {
            try storage.withValue(forKey: key.bytes, in: tables.objects) { value -> [UInt8]? in
                guard let value else { return nil }
                guard let region = StoredRecord.attachmentBytes(value) else {
                    throw CanopyError(.corruptStore, "a row's stored record is malformed", path: core.path, key: key.key)
                }
                guard let attachment = StoredRecord.attachment(slot: slot.number, in: region) else {
                    throw CanopyError(.corruptStore, "a row's attachments are malformed", path: core.path, key: key.key)
                }
                return attachment.map { Array($0) }
            }
        }
    }
}

extension ReadWriteTransaction {
    /// The attachment slot of extension `name`, assigned now when it has none.
    public func writableAttachmentSlot(for name: String) throws -> AttachmentSlot {
        var slots = try attachmentSlots()
        if let slot = slots.slots[name] { return AttachmentSlot(number: slot) }
        let slot = slots.next
        slots.next += 1
        slots.slots[name] = slot
        try writeAttachmentSlots(slots)
        return AttachmentSlot(number: slot)
    }

    /// Forgets the slot of extension `name` (it is rebuilt, or dropped): its attachments in rows become garbage,
    /// dropped whenever those rows are written again.
    func retireAttachmentSlot(of name: String) throws {
        var slots = try attachmentSlots()
        guard slots.slots.removeValue(forKey: name) != nil else { return }
        try writeAttachmentSlots(slots)
    }

    /// Rewrites every row record that carries attachments of retired slots without them (one cursor walk; records
    /// without such attachments are only read). Run when an extension's storage is dropped.
    /// - Returns: how many records were rewritten.
    @discardableResult
    func stripRetiredAttachments() throws -> Int {
        let storage = try writeStorage
        let live = try attachmentSlots().live
        var rewritten = 0
        try guarded {
            try storage.withCursor(in: tables.objects) { cursor in
                var entry = try cursor.first()
                while let current = entry {
                    if let flags = current.value.first, flags & StoredRecord.hasAttachments != 0,
                       let region = StoredRecord.attachmentBytes(current.value), let attachments = StoredRecord.attachments(region),
                       attachments.keys.contains(where: { !live.contains($0) }), let key = StoredRowKey(current.key) {
                        // Slot 0 is never assigned: only the filtering to live slots changes the record.
                        let updated = try Self.record(current.value, setting: nil, at: 0, live: live, key: key)
                        try cursor.replaceCurrent(with: updated, key: key)
                        rewritten += 1
                    }
                    entry = try cursor.next()
                }
            }
        }
        if rewritten > 0 { didWrite = true }
        return rewritten
    }

    private func writeAttachmentSlots(_ slots: AttachmentSlots) throws {
        let storage = try writeStorage
        try guarded { try StoreInfoRecords.attachmentSlots.put(slots, in: storage, info: tables.info) }
        attachmentSlotsCache = slots
        writerSlots = []  // a writer's slot may have changed: found again by name
        didWrite = true
    }

    /// Sets (or with `nil` removes) the attachment at `slot` of the existing row `key`, rewriting its record. Returns
    /// `false` when there is no such row.
    @discardableResult
    public func setAttachment(_ bytes: [UInt8]?, at slot: AttachmentSlot, forRow key: StoredRowKey) throws -> Bool {
        try setAttachments(at: slot, [(key, bytes)]) == 1
    }

    /// Sets the attachments at `slot` of many existing rows, given in stored-key order (population): one cursor walks
    /// the rows' records and rewrites each in place. Returns how many rows were found.
    @discardableResult
    public func setAttachments(at slot: AttachmentSlot, _ rows: some Sequence<(StoredRowKey, [UInt8]?)>) throws -> Int {
        let storage = try writeStorage
        let live = try attachmentSlots().live
        var found = 0
        var buffers = RecordRewriteBuffers()
        try guarded {
            try storage.withCursor(in: tables.objects) { cursor in
                for (key, bytes) in rows {
                    guard let entry = try cursor.seek(exactly: key.bytes) else { continue }
                    try Self.record(entry.value, setting: bytes, at: slot.number, live: live, key: key, into: &buffers)
                    try cursor.replaceCurrent(with: buffers.record, key: key)
                    found += 1
                }
            }
        }
        didWrite = true
        return found
    }

    /// `value` with the attachment at `slot` replaced, and attachments of retired slots dropped.
    static func record(_ value: UnsafeRawBufferPointer, setting bytes: [UInt8]?, at slot: UInt32, live: Set<UInt32>, key: StoredRowKey) throws -> [UInt8] {
        var buffers = RecordRewriteBuffers()
        try record(value, setting: bytes, at: slot, live: live, key: key, into: &buffers)
        return buffers.record
    }

    /// ``record(_:setting:at:live:key:)`` written into `buffers.record`, through `buffers.region`: arrays kept from one
    /// row to the next (a population or a bulk attachment rewrites every row's record).
    static func record(
        _ value: UnsafeRawBufferPointer, setting bytes: [UInt8]?, at slot: UInt32, live: Set<UInt32>, key: StoredRowKey,
        into buffers: inout RecordRewriteBuffers
    ) throws {
        guard let flags = value.first, let region = StoredRecord.attachmentBytes(value), let object = StoredRecord.objectBytes(value) else {
            throw CanopyError(.corruptStore, "a row's stored record is malformed", key: key.key)
        }
        // One pass over the region (ascending slots), copying the live attachments and putting `bytes` at its slot's
        // place: no dictionary of attachments per row (a population rewrites every row this way).
        var out = ByteWriter(capacity: 0)
        swap(&out.bytes, &buffers.region)
        defer { swap(&out.bytes, &buffers.region) }
        out.bytes.removeAll(keepingCapacity: true)
        out.bytes.reserveCapacity(region.count + (bytes?.count ?? 0) + 4)
        var placed = false
        var offset = 0
        var previous: Int?
        while offset < region.count {
            guard let found = StoredRecord.readVarint(region, &offset), found <= Int(UInt32.max),
                  let length = StoredRecord.readVarint(region, &offset), length <= region.count - offset else {
                throw CanopyError(.corruptStore, "a row's attachments are malformed", key: key.key)
            }
            // Slots out of order (never written so): rebuilt through a dictionary, in order.
            if let previous, found <= previous {
                buffers.record = try recordRebuilt(value, flags: flags, region: region, object: object, setting: bytes, at: slot, live: live, key: key)
                return
            }
            previous = found
            let current = UInt32(found)
            let start = offset
            offset += length
            if !placed, current >= slot {
                if let bytes { StoredRecord.appendAttachment(bytes, slot: slot, to: &out) }
                placed = true
                if current == slot { continue }
            }
            guard live.contains(current), length > 0 else { continue }
            out.append(varint: UInt64(current))
            out.append(varint: UInt64(length))
            out.bytes.append(contentsOf: region[start..<offset])
        }
        if !placed, let bytes { StoredRecord.appendAttachment(bytes, slot: slot, to: &out) }
        StoredRecord.write(hasMetadata: flags & StoredRecord.hasMetadata != 0, attachments: out.bytes, object: object, into: &buffers.record)
    }

    private static func recordRebuilt(
        _ value: UnsafeRawBufferPointer, flags: UInt8, region: UnsafeRawBufferPointer, object: UnsafeRawBufferPointer,
        setting bytes: [UInt8]?, at slot: UInt32, live: Set<UInt32>, key: StoredRowKey
    ) throws -> [UInt8] {
        guard var attachments = StoredRecord.attachments(region) else {
            throw CanopyError(.corruptStore, "a row's stored record is malformed", key: key.key)
        }
        attachments = attachments.filter { live.contains($0.key) }
        attachments[slot] = bytes
        return StoredRecord.value(hasMetadata: flags & StoredRecord.hasMetadata != 0, attachments: StoredRecord.encode(attachments), object: object)
    }
}
