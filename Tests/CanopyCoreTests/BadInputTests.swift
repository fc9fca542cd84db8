import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import LMDB
import Testing

@Suite("Bad input gives typed errors and loses nothing")
struct BadInputTests {
    /// Overwrites the stored bytes of every row of the objects table with `bytes` (after the flag byte), with valid
    /// checksums: what the decoders make of bytes that are not their type's (a flipped byte fails its checksum first).
    func corruptEveryRow(of database: CanopyCore.Database, with bytes: [UInt8]) throws {
        let table = try database.environment.openDatabase(named: "canopy.objects").withChecksums
        try database.environment.write { txn throws in
            var keys: [[UInt8]] = []
            try txn.forEach(in: table) { key, _ in keys.append(Array(key)); return true }
            for key in keys { try txn.put([0] + bytes, forKey: key, in: table) }
        }
    }

    @Test(arguments: ["binary", "json"])
    func corruptStoredBytesNameCollectionAndKey(codecName: String) throws {
        try withDatabase { database, _ in
            let collection = codecName == "json" ? jsonNotes : notes
            try database.newConnection().readWrite { txn throws in try txn.set(Note(title: "fine"), forKey: "victim", in: collection) }
            try corruptEveryRow(of: database, with: [0xFF, 0x13, 0x37, 0x00, 0x42])
            let error = #expect(throws: CanopyError.self) {
                try database.newConnection().read { txn throws in try txn.object(forKey: "victim", in: collection) }
            }
            #expect(error?.code == .decodingFailed)
            #expect(error?.collection == collection.name)
            #expect(error?.key == "victim")
            // The database still works: the row can be overwritten and read back.
            try database.newConnection().readWrite { txn throws in try txn.set(Note(title: "healed"), forKey: "victim", in: collection) }
            try database.newConnection().read { txn throws in #expect(try txn.object(forKey: "victim", in: collection)?.title == "healed") }
        }
    }

    /// Found in issue 19's review: the key listing and the row scan skipped a record they could not parse (empty, or
    /// an attachments length past its end), so a tool listed fewer keys and an extension populated without the row,
    /// and nothing said so; the typed scan threw. Without the fix `keys` returned ["a", "c"] and the scan visited
    /// two rows.
    @Test("A malformed row record is corruptStore naming it in every scan, never skipped", arguments: [[UInt8](), [0x02, 0x7F, 0x01]])
    func malformedRecordFailsEveryScan(damage: [UInt8]) throws {
        try withDatabase { database, _ in
            try database.newConnection().readWrite { txn throws in
                for key in ["a", "b", "c"] { try txn.set(Note(title: key), forKey: key, in: notes) }
            }
            let table = try database.environment.openDatabase(named: "canopy.objects").withChecksums
            try database.environment.write { txn throws in  // valid checksums: the record parser's turn
                var victim: [UInt8]?
                try txn.forEach(in: table) { key, _ in
                    if key.last == UInt8(ascii: "b") { victim = Array(key) }
                    return true
                }
                try txn.put(damage, forKey: try #require(victim), in: table)
            }
            try database.newConnection().read { txn throws in
                let scans: [(String, () throws -> Void)] = [
                    ("keys", { _ = try txn.keys(inCollection: "notes") }),
                    ("enumerateKeys", { try txn.enumerateKeys(inCollection: "notes") { _ in true } }),
                    ("enumerateObjects", { try txn.enumerateObjects(in: notes) { _, _ in true } }),
                    ("enumerateStoredRows", { try txn.enumerateStoredRows(inCollection: "notes") { _, _, _ in true } }),
                    ("scanRows", { try txn.scanRows { _ in true } }),
                ]
                for (name, scan) in scans {
                    let error = #expect(throws: CanopyError.self, "\(name)") { try scan() }
                    #expect(error?.code == .corruptStore, "\(name): \(String(describing: error))")
                    #expect(error?.collection == "notes", "\(name)")
                    #expect(error?.key == "b", "\(name)")
                }
            }
            // Nothing lost: the row can be written again, and every scan sees the three rows.
            try database.newConnection().readWrite { txn throws in try txn.set(Note(title: "b"), forKey: "b", in: notes) }
            try database.newConnection().read { txn throws in
                #expect(try txn.keys(inCollection: "notes") == ["a", "b", "c"])
                var scanned = 0
                try txn.scanRows { _ in scanned += 1; return true }
                #expect(scanned == 3)
            }
        }
    }

    /// A row's attachments region whose entry runs past the region (the record's own lengths are valid) is
    /// `corruptStore` wherever an attachment is read by slot, as ``RowChange`` reads it; before, the lookup gave `nil`
    /// for it, and an extension read the row as one without its record. (Without the fix the three reads below returned
    /// `nil`, and the expectations of a thrown error failed.)
    @Test func malformedAttachmentsAreCorruptStoreNotAbsent() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn throws in
                for key in ["a", "b", "c", "d", "e"] { try txn.set(Note(title: key), forKey: key, in: notes) }
            }
            let slot = AttachmentSlot(testing: 1)
            let table = try database.environment.openDatabase(named: "canopy.objects").withChecksums
            /// Rewrites row `key`'s record with `region` as its attachments, keeping its object.
            func attach(_ region: [UInt8], toRow key: String) throws {
                try database.environment.write { txn throws in
                    var victim: ([UInt8], [UInt8])?
                    try txn.forEach(in: table) { rowKey, value in
                        if rowKey.last == key.utf8.last { victim = (Array(rowKey), Array(value)) }
                        return true
                    }
                    let (rowKey, value) = try #require(victim)
                    #expect(value.first == 0, "the row was written without metadata or attachments")
                    try txn.put([2, UInt8(region.count)] + region + value.dropFirst(), forKey: rowKey, in: table)
                }
            }
            // Row a: slot 1 holds [7, 8]. Row b: an entry of slot 1 whose length (127) runs past the region.
            try attach([1, 2, 7, 8], toRow: "a")
            try attach([1, 0x7F, 7, 8], toRow: "b")
            // A slot listed twice: row c's slot 1 next to itself, row d's around slot 2. (Before the check, a read found
            // the first entry and the parse a write merges with kept the last.) Row e's slots are out of order, never
            // written so but read as they are.
            try attach([1, 1, 7, 1, 1, 9], toRow: "c")
            try attach([1, 1, 7, 2, 1, 8, 1, 1, 9], toRow: "d")
            try attach([2, 1, 7, 1, 1, 9], toRow: "e")
            try database.newConnection().read { txn throws in
                let a = try #require(try txn.storedRowKey(for: RowID(collection: "notes", key: "a")))
                let b = try #require(try txn.storedRowKey(for: RowID(collection: "notes", key: "b")))
                #expect(try txn.attachment(at: slot, forRow: a) == [7, 8])
                #expect(try txn.attachment(at: AttachmentSlot(testing: 2), forRow: a) == nil, "absent is nil")
                #expect(try txn.storedRow(for: a)?.attachment(at: slot) == [7, 8])
                #expect(try txn.object(forKey: "b", in: notes)?.title == "b", "the object is intact")

                let byKey = #expect(throws: CanopyError.self) { try txn.attachment(at: slot, forRow: b) }
                #expect(byKey?.code == .corruptStore)
                #expect(byKey?.key == "b")
                let stored = #expect(throws: CanopyError.self) { try txn.storedRow(for: b)?.attachment(at: slot) }
                #expect(stored?.code == .corruptStore)
                #expect(stored?.key == "b")
                var scanned: [String: Result<[UInt8]?, any Error>] = [:]
                try txn.scanRows { row in
                    scanned[row.id.key] = Result { try row.attachment(at: slot) }
                    return true
                }
                #expect(try scanned["a"]?.get() == [7, 8])
                let inScan = #expect(throws: CanopyError.self, "the scan's row b") { try scanned["b"]?.get() }
                #expect(inScan?.code == .corruptStore)

                let c = try #require(try txn.storedRowKey(for: RowID(collection: "notes", key: "c")))
                let d = try #require(try txn.storedRowKey(for: RowID(collection: "notes", key: "d")))
                let e = try #require(try txn.storedRowKey(for: RowID(collection: "notes", key: "e")))
                for row in [c, d] {
                    let twice = #expect(throws: CanopyError.self, "\(row.key)'s slot 1") { try txn.attachment(at: slot, forRow: row) }
                    #expect(twice?.code == .corruptStore)
                }
                // (A slot listed once reads as it is.)
                #expect(try txn.attachment(at: AttachmentSlot(testing: 2), forRow: d) == [8])
                let twiceInScan = #expect(throws: CanopyError.self, "the scan's row c") { try scanned["c"]?.get() }
                #expect(twiceInScan?.code == .corruptStore)
                #expect(try txn.attachment(at: slot, forRow: e) == [9])
                #expect(try txn.attachment(at: AttachmentSlot(testing: 2), forRow: e) == [7])
            }
            // Setting an attachment of row b during a read-write scan fails as corruptStore, and ends the row's
            // access as a successful set does: a write that failed part way may have changed the lent bytes. (Without
            // the fix the row's object bytes were still handed out.)
            try database.newConnection().readWrite { txn throws in
                try txn.scanRows { row in
                    guard row.id.key == "b" else { return true }
                    let set = #expect(throws: CanopyError.self) { try row.setAttachment([9], at: slot) }
                    #expect(set?.code == .corruptStore)
                    let after = #expect(throws: CanopyError.self) { try row.objectBytes() }
                    #expect(after?.code == .transactionEnded)
                    return true
                }
            }
        }
    }

    @Test func wrongTypeIsADecodingError() throws {
        struct Other: Codable, Sendable { var count: [Int] }
        try withDatabase { database, _ in
            try database.newConnection().readWrite { txn throws in try txn.set(Note(title: "n"), forKey: "k", in: notes) }
            let error = #expect(throws: CanopyError.self) {
                try database.newConnection().read { txn throws in try txn.object(forKey: "k", in: TypedCollection<Other, NoMetadata>("notes")) }
            }
            #expect(error?.code == .decodingFailed)
            #expect(error?.description.contains("Other") == true)
        }
    }

    @Test func wrongCodecIsACodecMismatch() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn throws in try txn.set(Note(title: "binary"), forKey: "k", in: notes) }
            let asJSON = TypedCollection<Note, NoteInfo>("notes", codec: JSONCodec())
            for attempt in 0..<2 {
                let error = #expect(throws: CanopyError.self) {
                    if attempt == 0 {
                        _ = try database.newConnection().read { txn throws in try txn.object(forKey: "k", in: asJSON) }
                    } else {
                        try connection.readWrite { txn throws in try txn.set(Note(title: "json"), forKey: "k2", in: asJSON) }
                    }
                }
                #expect(error?.code == .codecMismatch)
                #expect(error?.collection == "notes")
            }
            try connection.read { txn throws in
                #expect(try txn.object(forKey: "k", in: notes)?.title == "binary")
                #expect(try !txn.exists(key: "k2", in: notes))
            }
        }
    }

    @Test func missingParentDirectory() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let error = #expect(throws: CanopyError.self) { _ = try Database(path: directory.appending("no/such/db")) }
        #expect(error?.code == .cannotOpen)
        #expect(error?.description.contains("parent directory") == true)
    }

    @Test func readOnlyLocation() throws {
        // As root, permission bits are not enforced, so use a location no one can create files in.
        let error = #expect(throws: CanopyError.self) { _ = try Database(path: "/proc/self/canopy-db") }
        #expect(error?.code == .cannotOpen)
    }

    @Test func readOnlyDatabaseRefusesWritesAndReadsData() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        do {
            let database = try Database(path: path)
            try database.newConnection().readWrite { txn throws in try txn.set(Note(title: "x"), forKey: "k", in: notes) }
        }
        let readOnly = try Database(path: path, options: .init(readOnly: true))
        try readOnly.newConnection().read { txn throws in #expect(try txn.object(forKey: "k", in: notes)?.title == "x") }
        let error = #expect(throws: CanopyError.self) {
            try readOnly.newConnection().readWrite { txn throws in try txn.set(Note(title: "y"), forKey: "k", in: notes) }
        }
        #expect(error?.code == .readOnly)
    }

    @Test func aFileThatIsNotAnLMDBDatabase() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        let garbage = Data((0..<65_536).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try garbage.write(to: URL(fileURLWithPath: path).appendingPathComponent("data.mdb"))
        let error = #expect(throws: CanopyError.self) { _ = try Database(path: path) }
        #expect(error?.code == .cannotOpen)
        #expect(error?.lmdbError?.code == .invalid)
        // Nothing was overwritten.
        #expect(try Data(contentsOf: URL(fileURLWithPath: path).appendingPathComponent("data.mdb")) == garbage)
    }

    @Test func aPathThatIsAFile() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("file")
        try Data("hello".utf8).write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: CanopyError.self) { _ = try Database(path: path) }
        #expect(error?.code == .cannotOpen)
    }

    @Test(arguments: [507, 508, 5_000])
    func keyLength(bytes: Int) throws {
        try withDatabase { database, _ in
            let key = String(repeating: "k", count: bytes)
            let connection = database.newConnection()
            try connection.readWrite { txn throws in try txn.set(Note(title: "before"), forKey: "ok", in: notes) }
            if bytes <= 507 {
                try connection.readWrite { txn throws in try txn.set(Note(title: "long"), forKey: key, in: notes) }
                try connection.read { txn throws in #expect(try txn.object(forKey: key, in: notes)?.title == "long") }
            } else {
                let error = #expect(throws: CanopyError.self) {
                    try connection.readWrite { txn throws in try txn.set(Note(title: "long"), forKey: key, in: notes) }
                }
                #expect(error?.code == .keyTooLong)
                #expect(error?.collection == "notes")
                // Reads with the long key are errors too, not crashes; the rest is intact.
                #expect(throws: CanopyError.self) { try connection.read { txn throws in try txn.object(forKey: key, in: notes) } }
                try connection.read { txn throws in #expect(try txn.object(forKey: "ok", in: notes)?.title == "before") }
            }
        }
    }

    @Test func mapGrowsUpToItsMaximumThenFailsWithoutLosingData() throws {
        let options = DatabaseOptions(durability: .none, initialMapSize: 1 << 20, maximumMapSize: 4 << 20)
        try withDatabase(options: options) { database, _ in
            let connection = database.newConnection()
            let big = String(repeating: "x", count: 50_000)
            var committed = 0
            var failure: CanopyError?
            for batch in 0..<200 {
                do {
                    try connection.readWrite { txn throws in
                        for i in 0..<4 { try txn.set(Note(title: "\(batch)-\(i)", body: big), forKey: "b\(batch)-\(i)", in: notes) }
                    }
                    committed += 1
                } catch let error as CanopyError {
                    failure = error
                    break
                }
            }
            #expect(failure?.code == .databaseFull)
            #expect(committed > 5)  // the map grew past its initial 1 MiB
            #expect(database.environment.mapSize == 4 << 20)
            try connection.read { txn throws in
                #expect(try txn.count(inCollection: "notes") == committed * 4)
                #expect(try txn.object(forKey: "b0-0", in: notes)?.title == "0-0")
            }
            // Removing data makes room again.
            try connection.readWrite { txn throws in _ = try txn.removeAll(inCollection: "notes") }
            try connection.readWrite { txn throws in try txn.set(Note(title: "after"), forKey: "after", in: notes) }
        }
    }
}
