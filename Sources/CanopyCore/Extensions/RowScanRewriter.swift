import LMDB

/// Rewrites the records a read-write transaction's row scan visits, in place through the scan's cursor
/// (``StoredRow/setAttachment(_:at:)`` during a visit): one per scan, with the arrays a record is rebuilt in kept from
/// one row to the next. A closure per row, and two arrays per rewritten record, cost a population about 600
/// instructions a row.
///
/// Lives only inside the scan's cursor closure: rows hold it during their visit, and a row's access ends with it.
final class RowScanRewriter {
    private let cursor: Cursor
    private let live: Set<UInt32>
    private var buffers = RecordRewriteBuffers()

    init(cursor: Cursor, live: Set<UInt32>) {
        self.cursor = cursor
        self.live = live
    }

    /// Puts `record` (the visited row's stored bytes, under `key`) back with its attachment at `slot` set to `bytes`.
    func setAttachment(_ bytes: [UInt8]?, at slot: AttachmentSlot, record: UnsafeRawBufferPointer, key: StoredRowKey) throws {
        try ReadWriteTransaction.record(record, setting: bytes, at: slot.number, live: live, key: key, into: &buffers)
        try cursor.replaceCurrent(with: buffers.record, key: key)
    }
}

extension Cursor {
    /// Replaces the record at the cursor (row `key`) with `record`: reserved in the map and copied there once, sealed
    /// in place (a put of the bytes would first copy them into a new array with their checksum trailer: an allocation
    /// and a free per row, 1,300 instructions a row of a population). `record` is an array of the caller's, never
    /// bytes of the map the put changes.
    func replaceCurrent(with record: [UInt8], key: StoredRowKey) throws {
        try record.withUnsafeBytes { value in
            try key.bytes.withUnsafeBytes { rowKey in
                try putReserving(value.count, forKey: rowKey, flags: .current) { stored in
                    if let source = value.baseAddress, let target = stored.baseAddress {
                        target.copyMemory(from: source, byteCount: value.count)
                    }
                }
            }
        }
    }
}

/// The arrays a record's rewrite builds in (its attachments region, then the record), reused from row to row.
struct RecordRewriteBuffers {
    var region: [UInt8] = []
    var record: [UInt8] = []
}
