import LMDB

extension ReadTransaction {
    /// Visits the rows of `collection` in key order, as stored (object and metadata bytes in the collection's codec,
    /// see ``codecName(ofCollection:)``), starting after `after`, while `body` returns `true`. For tools that export or
    /// check rows without the app's types.
    ///
    /// The buffers are valid only inside `body`.
    /// - Throws: ``CanopyError/Code/corruptStore`` when a row says it has metadata and none is stored; what `body`
    ///   throws.
    public func enumerateStoredRows(
        inCollection collection: String, after: String? = nil,
        _ body: (_ key: String, _ object: UnsafeRawBufferPointer, _ metadata: UnsafeRawBufferPointer?) throws -> Bool
    ) throws {
        guard let record = try collectionRecord(collection) else { return }
        let prefix = RowKey.prefix(collectionID: record.id)
        let start = after.map { prefix + Array($0.utf8) + [0] } ?? prefix
        try guardedRead { try storage.forEach(in: tables.objects, from: start) { rowKey, value in
            guard rowKey.starts(with: prefix) else { return false }
            let key = RowKey.key(of: rowKey)
            guard let flags = value.first else {
                throw CanopyError(.corruptStore, "the stored row is empty", path: core.path, collection: collection, key: key)
            }
            guard let object = StoredRecord.objectBytes(value) else {
                throw CanopyError(.corruptStore, "the stored row is malformed", path: core.path, collection: collection, key: key)
            }
            if flags & 1 == 0 { return try body(key, object, nil) }
            return try storage.withValue(forKey: rowKey, in: tables.metadata) { metadata in
                guard let metadata else {
                    throw CanopyError(.corruptStore, "the row is marked as having metadata but none is stored", path: core.path,
                                      collection: collection, key: key)
                }
                return try body(key, object, metadata)
            }
        } }
    }

    /// Checks every stored row and record of the store (not the views' structure; see `ViewReader.checkStructure()` in Canopy)
    /// and returns the problems found, at most `limit` of them (empty when all is well): every value of the store's
    /// tables and of the extensions' tables matches its checksum; the format and state records decode; every
    /// collection record decodes; every row's collection id is recorded; every object and metadata value decodes with
    /// its collection's recorded codec; metadata flags agree with the metadata table; every commit-log entry decodes.
    /// A damaged record is reported and the check carries on. `progress` is called with the rows checked so far every
    /// 10,000 rows.
    public func checkStoredRows(limit: Int = 1000, progress: ((Int) -> Void)? = nil) throws -> (rows: Int, problems: [String]) {
        var problems: [String] = []
        func report(_ problem: String) { if problems.count < limit { problems.append(problem) } }
        let storage = try storage
        if let format = try tables.format(in: storage), format != tables.expectedFormatTag {
            report("the format record is '\(format)', not '\(tables.expectedFormatTag)'")
        }
        var collections: [UInt32: (name: String, codec: String)] = [:]
        try storage.forEach(in: tables.collections.withoutChecksums) { key, stored in
            let name = String(decoding: key, as: UTF8.self)
            guard let value = ValueChecksum.payload(of: stored, key: key) else { return true }  // reported below
            if let record = CollectionRecord(decoding: value) {
                if Codecs.named(record.codec) == nil { report("collection '\(name)' is recorded with unknown codec '\(record.codec)'") }
                collections[record.id] = (name, record.codec)
            } else {
                report("the record of collection '\(name)' is malformed")
            }
            return true
        }
        let names = collections.mapValues(\.name)
        for problem in try checkChecksums(collectionNames: names) { report(problem) }
        do { _ = try DatabaseCore.readState(storage, tables) } catch let error as LMDBError where error.code == .checksumMismatch {
            // A checksum failure: reported above.
        } catch {
            report("the store's state record is malformed")
        }
        func check(_ bytes: UnsafeRawBufferPointer, _ what: String, _ label: String, codec: String) {
            guard Codecs.named(codec) != nil else { return }
            do { _ = try Codecs.jsonText(from: bytes, codecName: codec) } catch {
                report("the \(what) of \(label) does not decode with codec '\(codec)': \(error)")
            }
        }
        var rows = 0
        try storage.forEach(in: tables.objects.withoutChecksums) { rowKey, stored in
            rows += 1
            if rows % 10_000 == 0 { progress?(rows) }
            guard let value = ValueChecksum.payload(of: stored, key: rowKey) else { return true }  // reported above
            guard let id = RowKey.collectionID(of: rowKey), let collection = collections[id] else {
                report("a row (key '\(RowKey.key(of: rowKey))') names an unknown collection id")
                return true
            }
            let label = "\(collection.name)/\(RowKey.key(of: rowKey))"
            guard let flags = value.first else {
                report("the row \(label) is empty")
                return true
            }
            if let object = StoredRecord.objectBytes(value) {
                check(object, "object", label, codec: collection.codec)
            } else {
                report("row \(label): the stored record is malformed")
            }
            let hasMetadata = try storage.withValue(forKey: rowKey, in: tables.metadata.withoutChecksums) { stored -> Bool in
                if let stored, let metadata = ValueChecksum.payload(of: stored, key: rowKey) {
                    check(metadata, "metadata", label, codec: collection.codec)
                }
                return stored != nil
            }
            if hasMetadata != (flags & 1 != 0) {
                report("the row \(label) says it has \(flags & 1 != 0 ? "" : "no ")metadata, but the metadata table \(hasMetadata ? "holds" : "lacks") it")
            }
            return true
        }
        try storage.forEach(in: tables.metadata.withoutChecksums) { rowKey, _ in
            if try storage.withValue(forKey: rowKey, in: tables.objects.withoutChecksums, { $0 == nil }) {
                let name = RowKey.collectionID(of: rowKey).flatMap { collections[$0]?.name } ?? "?"
                report("metadata for \(name)/\(RowKey.key(of: rowKey)) has no row")
            }
            return true
        }
        try storage.forEach(in: tables.commits.withoutChecksums) { key, stored in
            if let feedSnapshot = FeedRecord.snapshot(ofKey: key) {
                guard let value = ValueChecksum.payload(of: stored, key: key) else { return true }  // reported above
                do { _ = try FeedRecord.decode(value, snapshot: feedSnapshot, path: core.path) } catch {
                    report("the change feed record of snapshot \(feedSnapshot) is malformed")
                }
                return true
            }
            let snapshot = key.count == 8 ? key.loadBigEndianUInt64(at: 0) : 0
            guard let value = ValueChecksum.payload(of: stored, key: key) else { return true }  // reported above
            do { _ = try CommitNotification(decoding: value) } catch { report("the commit log entry of snapshot \(snapshot) is malformed") }
            return true
        }
        return (rows, problems)
    }

    /// Checks the checksum of every value of the store's tables (`canopy.*`) and of the
    /// extensions' tables (`ext.*`), and describes each one that fails: a row by collection and key, a page by table
    /// and number.
    func checkChecksums(collectionNames: [UInt32: String]) throws -> [String] {
        let storage = try storage
        let main = try storage.openDatabase(named: nil)
        var names: [String] = []
        try storage.forEach(in: main) { key, _ in
            let name = String(decoding: key, as: UTF8.self)
            if StoreTableName.isCanopyTable(name) { names.append(name) }
            return true
        }
        var problems: [String] = []
        for name in names {
            let database: LMDB.Database
            do { database = try storage.openDatabase(named: name) } catch {
                problems.append("table \(name) cannot be opened: \(error)")
                continue
            }
            try storage.forEach(in: database) { key, stored in
                if ValueChecksum.payload(of: stored, key: key) == nil {
                    let damage = LMDBError(code: .checksumMismatch, operation: "verify", database: name, key: Array(key))
                    var message = StoredRecordDamage.error(damage, path: nil, collectionNames: collectionNames).message
                    if let end = message.range(of: ": the file was changed") { message = String(message[..<end.lowerBound]) }
                    problems.append(message)
                }
                return true
            }
        }
        return problems
    }
}
