import LMDB

extension ReadWriteTransaction {
    /// Stores a row from bytes already encoded with the collection's codec, without the Swift types: for tools that
    /// import rows (`canopy import`). Registered extensions hear of the write as of any other; extensions recorded in
    /// the database but not registered in this process miss it and are rebuilt at their next registration.
    ///
    /// - Parameters:
    ///   - objectBytes: the object, as `codecName` encodes it.
    ///   - metadataBytes: the metadata, or `nil` for none (existing metadata is removed).
    ///   - key: the key.
    ///   - collection: the collection; created and bound to `codecName` when it was never written.
    ///   - codecName: the codec that produced the bytes: "binary" or "json".
    /// - Throws: ``CanopyError/Code/codecMismatch`` when `codecName` is not a built-in codec or the collection is
    ///   stored with another one; ``CanopyError/Code/decodingFailed`` when the bytes are not a valid encoding;
    ///   ``CanopyError/Code/keyTooLong``.
    public func setStoredRow(
        objectBytes: [UInt8], metadataBytes: [UInt8]?, forKey key: String, inCollection collection: String, codecName: String
    ) throws {
        guard let codec = Codecs.named(codecName) else {
            throw CanopyError(.codecMismatch, "'\(codecName)' is not a built-in codec (\"binary\" or \"json\")", path: core.path,
                              collection: collection, key: key)
        }
        for bytes in [objectBytes, metadataBytes].compactMap({ $0 }) {
            do {
                _ = try bytes.withUnsafeBytes { try Codecs.jsonText(from: $0, codecName: codecName) }
            } catch {
                throw CanopyError(.decodingFailed, "the bytes are not a valid '\(codecName)' encoding", path: core.path,
                                  collection: collection, key: key, underlying: error)
            }
        }
        let record = try collectionRecordForWriting(collection, codec: codec)
        try writeRow(record: record, id: RowID(collection: collection, key: key), objectBytes: objectBytes,
                     metadataBytes: metadataBytes, object: .none, metadata: .none)
        // No typed values to cache: a later read decodes the bytes.
        cacheState.objectCache.remove(key: key, in: collection)
        cacheState.metadataCache.remove(key: key, in: collection)
    }
}
