/// The value of a row in `canopy.objects`, and the extensions' attachments it carries.
///
/// Layout: a flags byte (bit 0: the row has metadata; bit 1: attachments follow), then, with bit 1,
/// `varint(length)` and that many bytes of attachments, then the object's bytes. Attachments are
/// `varint(slot) varint(length) bytes`, by ascending slot: each extension that keeps a per-row record (a view's entry
/// for the row) keeps it here, in the row's own record, so that writing a row and its entries descends one B-tree
/// instead of one per extension, and the row's key is stored once.
///
/// Parsing never traps: malformed bytes give `nil` (callers throw ``CanopyError/Code/corruptStore``).
enum StoredRecord {
    static let hasMetadata: UInt8 = 1
    static let hasAttachments: UInt8 = 2

    /// The object's bytes within a stored value, or `nil` when the value is malformed.
    @inline(__always)
    static func objectBytes(_ value: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard let flags = value.first else { return nil }
        guard flags & hasAttachments != 0 else { return UnsafeRawBufferPointer(rebasing: value[1...]) }
        var offset = 1
        guard let length = readVarint(value, &offset), length <= value.count - offset else { return nil }
        return UnsafeRawBufferPointer(rebasing: value[(offset + length)...])
    }

    /// The attachments region of a stored value (empty when it has none), or `nil` when the value is malformed.
    static func attachmentBytes(_ value: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard let flags = value.first else { return nil }
        guard flags & hasAttachments != 0 else { return UnsafeRawBufferPointer(rebasing: value[1..<1]) }
        var offset = 1
        guard let length = readVarint(value, &offset), length <= value.count - offset else { return nil }
        return UnsafeRawBufferPointer(rebasing: value[offset..<(offset + length)])
    }

    /// The attachments of a region, by slot, or `nil` when malformed: an entry that runs past the region, or a slot
    /// listed twice (this parse and ``attachment(slot:in:)`` would read different entries). Slots out of order (never
    /// written so) are read.
    static func attachments(_ region: UnsafeRawBufferPointer) -> [UInt32: [UInt8]]? {
        var result: [UInt32: [UInt8]] = [:]
        var offset = 0
        while offset < region.count {
            guard let slot = readVarint(region, &offset), slot <= Int(UInt32.max), result[UInt32(slot)] == nil,
                  let length = readVarint(region, &offset), length <= region.count - offset else { return nil }
            result[UInt32(slot)] = Array(region[offset..<(offset + length)])
            offset += length
        }
        return result
    }

    /// The attachment of `slot` in a region: `.some(nil)` when the region has none, `nil` when it is malformed (an
    /// entry that runs past it, or `slot` listed twice). Absent and malformed are kept apart, so that a damaged region
    /// is reported (``CanopyError/Code/corruptStore``) rather than read as a row without the attachment. The whole
    /// region is read (a few entries): a slot listed twice would be read here as its first entry and by
    /// ``attachments(_:)``, which a write merges with, as its last.
    static func attachment(slot: UInt32, in region: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer?? {
        var offset = 0
        var attachment: UnsafeRawBufferPointer?
        while offset < region.count {
            guard let found = readVarint(region, &offset), let length = readVarint(region, &offset), length <= region.count - offset else {
                return nil
            }
            if found == Int(slot) {
                guard attachment == nil else { return nil }
                attachment = UnsafeRawBufferPointer(rebasing: region[offset..<(offset + length)])
            }
            offset += length
        }
        return .some(attachment)
    }

    /// Encodes attachments (ascending slots; empty ones are left out).
    static func encode(_ attachments: [UInt32: [UInt8]]) -> [UInt8] {
        var out = ByteWriter(capacity: attachments.values.reduce(0) { $0 + $1.count + 4 })
        for slot in attachments.keys.sorted() {
            guard let bytes = attachments[slot] else { continue }
            appendAttachment(bytes, slot: slot, to: &out)
        }
        return out.bytes
    }

    /// Appends one attachment, `varint(slot) varint(length) bytes`, to a region being built by ascending slot; an
    /// empty one is left out (it means none). The one encoder of an attachment.
    static func appendAttachment(_ bytes: [UInt8], slot: UInt32, to out: inout ByteWriter) {
        guard !bytes.isEmpty else { return }
        out.append(varint: UInt64(slot))
        out.append(varint: UInt64(bytes.count))
        out.bytes.append(contentsOf: bytes)
    }

    /// The attachments region holding only `bytes` at `slot` (what ``appendAttachment(_:slot:to:)`` writes into an
    /// empty region), written at once into an array of its size: a row written with one extension's attachment.
    static func attachmentRegion(holding bytes: [UInt8], slot: UInt32) -> [UInt8] {
        guard !bytes.isEmpty else { return [] }
        let size = VarInt.size(of: UInt64(slot)) + VarInt.size(of: UInt64(bytes.count)) + bytes.count
        return bytes.withUnsafeBufferPointer { source in
            [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
                guard let out = buffer.baseAddress, let from = source.baseAddress else { return }
                var offset = VarInt.write(UInt64(slot), to: out)
                offset += VarInt.write(UInt64(bytes.count), to: out + offset)
                (out + offset).initialize(from: from, count: bytes.count)
                count = offset + bytes.count
            }
        }
    }

    /// A stored value: flags (the attachments bit set from `attachments`), attachments, object.
    static func value(hasMetadata metadata: Bool, attachments: [UInt8], object: UnsafeRawBufferPointer) -> [UInt8] {
        var out = [UInt8]()
        write(hasMetadata: metadata, attachments: attachments, object: object, into: &out)
        return out
    }

    /// ``value(hasMetadata:attachments:object:)`` written into `out` (emptied first, its capacity kept): a population
    /// rewrites every row's record, one reused array for all of them.
    static func write(hasMetadata metadata: Bool, attachments: [UInt8], object: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        out.reserveCapacity(object.count + attachments.count + 6)
        out.append((metadata ? hasMetadata : 0) | (attachments.isEmpty ? 0 : hasAttachments))
        if !attachments.isEmpty {
            VarInt.append(UInt64(attachments.count), to: &out)
            out.append(contentsOf: attachments)
        }
        out.append(contentsOf: object)
    }

    @inline(__always)
    static func readVarint(_ bytes: UnsafeRawBufferPointer, _ offset: inout Int) -> Int? {
        VarInt.readInt(bytes, at: &offset)
    }
}
