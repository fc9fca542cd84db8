extension ViewCommitChanges {
    static let encodingVersion: UInt8 = 1

    /// The bytes a view adds to a commit notification.
    public var encoded: [UInt8] {
        var out = ByteWriter(capacity: 16 + rows.count * 64)
        out.append(byte: Self.encodingVersion)
        // Bit 0: reset; bit 1: records per group. A reader that predates bit 1 takes any non-zero byte for a reset,
        // so it reloads rather than misread per-group records.
        out.append(byte: (isReset ? 1 : 0) | (recordsPerGroup ? 2 : 0))
        out.append(varint: UInt64(rows.count))
        for row in rows {
            out.append(string: row.id.collection)
            out.append(string: row.id.key)
            var flags: UInt8 = 0
            if row.objectChanged { flags |= 1 }
            if row.metadataChanged { flags |= 2 }
            if row.reinserted { flags |= 4 }
            if row.original != nil { flags |= 8 }
            if row.final != nil { flags |= 16 }
            out.append(byte: flags)
            // (Not through an array of the two: one allocation per row.)
            if let original = row.original {
                out.append(string: original.group)
                out.append(blob: original.orderBytes)
            }
            if let final = row.final {
                out.append(string: final.group)
                out.append(blob: final.orderBytes)
            }
        }
        return out.bytes
    }

    /// Decodes the bytes a view added to a commit notification.
    /// - Throws: ``/CanopyCore/CanopyError/Code/corruptStore`` when they are malformed.
    public static func decode(_ bytes: [UInt8]) throws -> ViewCommitChanges {
        do {
            return try bytes.withUnsafeBytes { buffer in
                var reader = ByteReader(buffer)
                let version = try reader.readByte()
                guard version == encodingVersion else {
                    throw CanopyError(.incompatibleFormat, "view changes have format \(version); this build reads \(encodingVersion)")
                }
                let kind = try reader.readByte()
                guard kind & ~3 == 0 else {
                    throw CanopyError(.incompatibleFormat, "view changes have flags \(kind); this build reads bits 0 and 1")
                }
                let isReset = kind & 1 != 0
                let count = try reader.readVarint()
                var rows: [ViewRowChange] = []
                rows.reserveCapacity(Int(min(count, 1 << 20)))
                for _ in 0..<count {
                    let collection = try reader.readString()
                    let key = try reader.readString()
                    let flags = try reader.readByte()
                    var original: ViewEntry?
                    var final: ViewEntry?
                    if flags & 8 != 0 { original = ViewEntry(group: try reader.readString(), orderBytes: try reader.readBlob()) }
                    if flags & 16 != 0 { final = ViewEntry(group: try reader.readString(), orderBytes: try reader.readBlob()) }
                    rows.append(ViewRowChange(
                        id: RowID(collection: collection, key: key), original: original, final: final,
                        objectChanged: flags & 1 != 0, metadataChanged: flags & 2 != 0, reinserted: flags & 4 != 0))
                }
                return ViewCommitChanges(rows: rows, isReset: isReset, recordsPerGroup: kind & 2 != 0)
            }
        } catch let error as CanopyError {
            throw error
        } catch {
            throw CanopyError(.corruptStore, "a view's commit changes are malformed", underlying: error)
        }
    }
}

extension ViewCommitChanges {
    /// How a view's commit changes go into the persisted commit log and come back (declared once): observers in the
    /// committing process get the ``ViewCommitChanges`` value itself; other processes decode these bytes.
    public enum PayloadCoding: ExtensionPayloadCoding {
        /// ``ViewCommitChanges/encoded``.
        public static func encode(_ value: ViewCommitChanges) -> [UInt8] { value.encoded }
        /// ``ViewCommitChanges/decode(_:)``.
        public static func decode(_ bytes: [UInt8]) throws -> ViewCommitChanges { try ViewCommitChanges.decode(bytes) }
    }
}
