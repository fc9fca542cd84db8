/// The stored form of a ``FeedCommit`` in the commit log, `canopy.commits` (``key(_:)`` → record): the one place the
/// feed's records and keys are encoded and decoded.
///
/// `version (1 B) · snapshot (8 B) · varint(change count) · changes`, each change
/// `kind (1 B) · string(collection) · string(key)`, and for a `set` also
/// `string(codec) · blob(object) · has-metadata (1 B) [· blob(metadata)]` (strings and blobs are `varint(length)`
/// + bytes, as in the commit log).
enum FeedRecord {
    static let version: UInt8 = 1
    /// The byte after the snapshot in a feed record's key (a notification's key is the snapshot alone).
    static let keySuffix: UInt8 = 0x46  // "F"

    /// The key of snapshot `snapshot`'s record: the snapshot (8 bytes big-endian), then ``keySuffix``.
    static func key(_ snapshot: UInt64) -> [UInt8] {
        SnapshotKey.bytes(snapshot) + [keySuffix]
    }

    /// The snapshot of a feed record's key; `nil` for another key of the commit log.
    static func snapshot(ofKey key: UnsafeRawBufferPointer) -> UInt64? {
        guard key.count == 9, key[8] == keySuffix else { return nil }
        return key.loadBigEndianUInt64(at: 0)
    }

    private static func byte(of kind: FeedChange.Kind) -> UInt8 {
        switch kind {
        case .set: 1
        case .remove: 2
        case .removeCollection: 3
        case .removeAll: 4
        }
    }

    static func encode(_ commit: FeedCommit) -> [UInt8] {
        var out = ByteWriter(capacity: 64)
        out.append(byte: version)
        out.append(bigEndian: commit.snapshot)
        out.append(varint: UInt64(commit.changes.count))
        for change in commit.changes {
            out.append(byte: byte(of: change.kind))
            out.append(string: change.collection)
            out.append(string: change.key)
            guard change.kind == .set else { continue }
            out.append(string: change.codec)
            out.append(blob: change.objectBytes ?? [])
            if let metadata = change.metadataBytes {
                out.append(byte: 1)
                out.append(blob: metadata)
            } else {
                out.append(byte: 0)
            }
        }
        return out.bytes
    }

    /// - Throws: ``CanopyError/Code/corruptStore`` when the bytes are malformed or disagree with `snapshot` (their
    ///   key); ``CanopyError/Code/incompatibleFormat`` for a record version this build does not read.
    static func decode(_ bytes: UnsafeRawBufferPointer, snapshot expected: UInt64, path: String?) throws -> FeedCommit {
        do {
            var reader = ByteReader(bytes)
            let version = try reader.readByte()
            guard version == Self.version else {
                throw CanopyError(.incompatibleFormat, "change feed record \(expected) has format \(version); this build reads \(Self.version)",
                                  path: path)
            }
            let snapshot = try reader.readBigEndianUInt64()
            guard snapshot == expected else {
                throw CanopyError(.corruptStore, "change feed record \(expected) says it is snapshot \(snapshot)", path: path)
            }
            let count = try reader.readVarint()
            var changes: [FeedChange] = []
            changes.reserveCapacity(Int(min(count, 1 << 16)))
            for _ in 0..<count {
                let kindByte = try reader.readByte()
                let kind: FeedChange.Kind
                switch kindByte {
                case 1: kind = .set
                case 2: kind = .remove
                case 3: kind = .removeCollection
                case 4: kind = .removeAll
                default:
                    throw CanopyError(.corruptStore, "change feed record \(expected) has a change of unknown kind \(kindByte)", path: path)
                }
                let collection = try reader.readString()
                let key = try reader.readString()
                guard kind == .set else {
                    changes.append(FeedChange(kind: kind, collection: collection, key: key))
                    continue
                }
                let codec = try reader.readString()
                let object = try reader.readBlob()
                let metadata = try reader.readByte() != 0 ? try reader.readBlob() : nil
                changes.append(FeedChange(kind: .set, collection: collection, key: key, codec: codec, objectBytes: object, metadataBytes: metadata))
            }
            guard reader.isAtEnd else {
                throw CanopyError(.corruptStore, "change feed record \(expected) has bytes after its last change", path: path)
            }
            return FeedCommit(snapshot: snapshot, changes: changes)
        } catch let error as CanopyError {
            throw error
        } catch {
            throw CanopyError(.corruptStore, "change feed record \(expected) is malformed: \(error)", path: path, underlying: error)
        }
    }
}
