import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import LMDB
import Synchronization
import Testing

/// An extension that depends on another one and records what the store told it.
private final class Dependent: StoreExtension, @unchecked Sendable {
    // @unchecked: mutated only by the writer (one write transaction at a time).
    let name = "dependent"
    let kind = "dependent"
    let versionTag = "1"
    let options = "{}"
    let dependencies: [String]
    var reasons: [String] = []
    var resets: [Bool] = []
    var parentSawRowFirst: [Bool] = []

    init(on parent: String) { dependencies = [parent] }

    func prepare(in transaction: ReadWriteTransaction, context: ExtensionRegistrationContext) throws {
        if let reason = context.rebuildReason { reasons.append(reason) }
    }

    func beginWrite(_ transaction: ReadWriteTransaction) throws -> Writer { Writer(owner: self, transaction: transaction) }

    func dropStorage(in transaction: ReadWriteTransaction) throws {}

    final class Writer: ExtensionTransaction {
        let owner: Dependent
        let transaction: ReadWriteTransaction
        init(owner: Dependent, transaction: ReadWriteTransaction) {
            self.owner = owner
            self.transaction = transaction
        }
        func handle(_ row: RowChange) throws -> AttachmentEdit {
            guard row.kind == .insert else { return .keep }
            // The dependency's per-transaction state is found through the interface and has already seen the row.
            let counter = transaction.registeredExtension(named: owner.dependencies[0], as: RowCounter.self)
            let parent = counter.flatMap { transaction.writer(of: $0) }
            let counted = try counter?.count(row.collection, in: transaction) ?? 0
            owner.parentSawRowFirst.append(parent != nil && counted > 0)
            return .keep
        }
        func prepareCommit(_ commit: ExtensionCommit) throws -> ExtensionPayload? {
            owner.resets.append(commit.isReset)
            return nil
        }
        func didCommit(snapshot: UInt64) {}
        func didRollback() {}
    }
}

@Suite("Extension interface")
struct ExtensionInterfaceTests {
    @Test func dependenciesRegisterFirstHearFirstAndRebuildTheirDependents() throws {
        try withDatabase { database, _ in
            let dependent = Dependent(on: "counter")
            let missing = #expect(throws: CanopyError.self) { try database.register(dependent) }
            #expect(missing?.code == .extensionDependencyMissing)
            #expect(missing?.message.contains("'counter'") == true)

            let counter = RowCounter()
            try database.register(counter)
            try database.register(dependent)
            #expect(dependent.reasons == ["first registration"])
            let connection = database.newConnection()
            try connection.readWrite { txn in try txn.set(Note(title: "a"), forKey: "a", in: notes) }
            #expect(dependent.parentSawRowFirst == [true])
            #expect(counter.resets.last == false && dependent.resets.last == false)

            // The dependency registered again with a new version tag is rebuilt, and so is its dependent, in the same
            // transaction; both are told at commit that they were reset.
            try database.unregisterExtension(named: "counter")
            let counter2 = RowCounter(versionTag: "2")
            dependent.resets.removeAll()
            try database.register(counter2)
            #expect(dependent.reasons.last == "its dependency 'counter' was rebuilt")
            #expect(counter2.resets == [true])
            #expect(dependent.resets == [true])
            // The re-registered dependency still hears of each change before its dependent.
            try connection.readWrite { txn in try txn.set(Note(title: "b"), forKey: "b", in: CanopyCore.TypedCollection<Note, NoteInfo>("fresh")) }
            #expect(dependent.parentSawRowFirst.last == true)
        }
    }

    @Test func typedTablesRefuseMalformedBytesWithTheirNames() throws {
        final class Raw: StoreExtension, @unchecked Sendable {
            // @unchecked: set once in prepare, read by the test after registration.
            let name = "raw"; let kind = "raw"; let versionTag = "1"; let options = "{}"
            var table: ExtensionTable<StringUTF8Coding, UInt64BigEndianCoding>?
            func prepare(in transaction: ReadWriteTransaction, context: ExtensionRegistrationContext) throws {
                let table = try transaction.openTable("numbers", of: name, keys: StringUTF8Coding.self, values: UInt64BigEndianCoding.self)
                // Three bytes where eight are expected, written through the same table read as raw bytes.
                try table.recoded(keys: StringUTF8Coding.self, values: BytesCoding.self).put([1, 2, 3], forKey: "bad", in: transaction)
                try table.put(42, forKey: "good", in: transaction)
                self.table = table
            }
            func beginWrite(_ transaction: ReadWriteTransaction) throws -> Silent { Silent() }
            func dropStorage(in transaction: ReadWriteTransaction) throws {}
        }
        try withDatabase { database, _ in
            let raw = Raw()
            try database.register(raw)
            try database.newConnection().read { txn in
                #expect(try raw.table?.value(forKey: "good", in: txn) == 42)
                #expect(try raw.table?.value(forKey: "missing", in: txn) == nil)
                let error = #expect(throws: CanopyError.self) { try raw.table?.value(forKey: "bad", in: txn) }
                #expect(error?.code == .corruptStore)
                #expect(error?.extensionName == "raw")
                #expect(error?.message.contains("'numbers'") == true)
                // Another process's view of the same table, opened by name without registering.
                let existing = try txn.existingTable("numbers", of: "raw", keys: StringUTF8Coding.self, values: UInt64BigEndianCoding.self)
                #expect(try existing?.value(forKey: "good", in: txn) == 42)
                #expect(try txn.existingTable("absent", of: "raw", keys: StringUTF8Coding.self, values: BytesCoding.self) == nil)
            }
        }
    }

    @Test func scannedRowsRefuseToBeReadAfterTheirVisit() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn in
                try txn.set(Note(title: "a"), forKey: "a", in: notes, metadata: NoteInfo(color: "red"))
                try txn.set(Note(title: "b"), forKey: "b", in: notes)
            }
            var kept: [StoredRow] = []
            try connection.read { txn in
                try txn.scanRows { row throws in
                    #expect(try row.objectBytes().isEmpty == false)
                    kept.append(row)
                    return true
                }
                #expect(kept.map(\.id.key) == ["a", "b"])
                #expect(kept.map(\.hasMetadata) == [true, false])
                let error = #expect(throws: CanopyError.self) { try kept[0].objectBytes() }
                #expect(error?.code == .transactionEnded)
                // The metadata too, though it is read through the transaction rather than lent by the scan: every
                // read of a kept row fails alike. (Without the fix this returned the metadata's bytes.)
                let metadataError = #expect(throws: CanopyError.self) { try kept[0].metadataBytes() }
                #expect(metadataError?.code == .transactionEnded)
                let attachmentError = #expect(throws: CanopyError.self) { try kept[0].attachment(at: AttachmentSlot(testing: 1)) }
                #expect(attachmentError?.code == .transactionEnded)
                // A row read by stored key owns its bytes.
                let owned = try txn.storedRow(for: kept[1].storedKey)
                #expect(owned?.id == RowID(collection: "notes", key: "b"))
                #expect(try txn.rowID(for: kept[0].storedKey) == RowID(collection: "notes", key: "a"))
                #expect(try txn.storedRowKey(for: RowID(collection: "never-written", key: "x")) == nil)
            }
        }
    }

    @Test func anOlderStoreFormatIsATypedErrorThatSaysWhatToDo() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        // Rewrite the format record as a canopy/2 database has it, with LMDB directly.
        try withOneNoteRewritten(path) { txn in
            let info = try txn.openDatabase(named: "canopy.info")
            try txn.put(Array("canopy/2".utf8), forKey: Array("format".utf8), in: info)
        }
        let error = #expect(throws: CanopyError.self) { _ = try Database(path: path) }
        #expect(error?.code == .incompatibleFormat)
        #expect(error?.message.contains("canopy/2") == true)
        #expect(error?.message.contains("canopy export") == true)
    }
}

/// Creates a database at `path` holding one note, closes it, then changes its files with LMDB directly in `rewrite`.
private func withOneNoteRewritten(_ path: String, _ rewrite: (LMDB.WriteTransaction) throws -> Void) throws {
    do {
        let database = try Database(path: path, options: .init(durability: .none))
        try database.newConnection().readWrite { txn in try txn.set(Note(title: "a"), forKey: "a", in: notes) }
    }
    let environment = try Environment(path: path, options: EnvironmentOptions(maxDatabases: 64))
    try environment.write { txn in try rewrite(txn) }
}

private final class Silent: ExtensionTransaction {
    func handle(_ change: RowChange) throws -> AttachmentEdit { .keep }
    func prepareCommit(_ commit: ExtensionCommit) throws -> ExtensionPayload? { nil }
}

@Suite("In-process commit wake-ups")
struct InProcessWakeupTests {
    /// A wake-up runs on the committing thread before `readWrite` returns (no wait needed), once per commit, and not
    /// after its token is removed.
    @Test func wakeupsRunBeforeTheWriteReturns() throws {
        try withDatabase { database, _ in
            let count = Mutex(0)
            let token = database.addCommitWakeup { count.withLock { $0 += 1 } }
            let connection = database.newConnection()
            for i in 0..<3 {
                try connection.readWrite { txn in try txn.set(Note(title: "\(i)"), forKey: "\(i)", in: notes) }
                #expect(count.withLock { $0 } == i + 1)
            }
            try connection.readWrite { _ in }  // writes nothing: no commit, no wake-up
            #expect(count.withLock { $0 } == 3)
            database.removeObserver(token)
            try connection.readWrite { txn in try txn.set(Note(title: "x"), forKey: "x", in: notes) }
            #expect(count.withLock { $0 } == 3)
        }
    }
}

/// An extension that keeps, per row, the length of the note's title in the row's own record (an attachment).
private final class TitleLength: StoreExtension, @unchecked Sendable {
    // @unchecked: mutated only by the writer (one write transaction at a time).
    let name = "title-length"
    let kind = "title-length"
    let versionTag: String
    let options = "{}"
    var removedLengths: [Int] = []

    init(versionTag: String = "1") { self.versionTag = versionTag }

    func prepare(in transaction: ReadWriteTransaction, context: ExtensionRegistrationContext) throws {
        guard context.needsRebuild else { return }
        let slot = try transaction.writableAttachmentSlot(for: name)
        try transaction.scanRows(inCollections: ["notes"]) { row in
            let note = try transaction.decodeStoredValue(Note.self, from: try row.objectBytes(), codecName: row.codecName, id: row.id)
            try row.setAttachment([UInt8(note.title.utf8.count)], at: slot)
            return true
        }
    }

    func beginWrite(_ transaction: ReadWriteTransaction) throws -> Writer { Writer(owner: self, transaction: transaction) }
    func dropStorage(in transaction: ReadWriteTransaction) throws {}

    static func length(of key: String, in txn: CanopyCore.ReadTransaction) throws -> Int? {
        guard let slot = try txn.attachmentSlot(for: "title-length"),
              let rowKey = try txn.storedRowKey(for: RowID(collection: "notes", key: key)) else { return nil }
        return try txn.attachment(at: slot, forRow: rowKey).flatMap { $0.first.map(Int.init) }
    }

    final class Writer: ExtensionTransaction {
        let owner: TitleLength
        let transaction: ReadWriteTransaction
        init(owner: TitleLength, transaction: ReadWriteTransaction) {
            self.owner = owner
            self.transaction = transaction
        }
        func attach(_ row: RowChange) throws -> AttachmentEdit {
            guard row.collection == "notes" else { return .keep }
            return .set([UInt8(try row.object(as: Note.self).title.utf8.count)])
        }
        func handle(_ row: RowChange) throws -> AttachmentEdit {
            switch row.kind {
            case .insert: return try attach(row)
            case .update: return row.objectChanged ? try attach(row) : .keep
            case .touch: return .keep
            case .remove:
                if let slot = try transaction.attachmentSlot(for: owner.name), let length = try row.previousAttachment(at: slot)?.first {
                    owner.removedLengths.append(Int(length))
                }
                return .keep
            }
        }
        func prepareCommit(_ commit: ExtensionCommit) throws -> ExtensionPayload? { nil }
    }
}

@Suite("Row attachments")
struct RowAttachmentTests {
    @Test func attachmentsFollowWritesRemovalsAndRebuilds() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn in
                try txn.set(Note(title: "abc"), forKey: "a", in: notes, metadata: NoteInfo(color: "red"))
                try txn.set(Note(title: "hello"), forKey: "b", in: notes)
            }
            let ext = TitleLength()
            try database.register(ext)  // population attaches through the scan
            try connection.read { txn throws in
                #expect(try TitleLength.length(of: "a", in: txn) == 3)
                #expect(try TitleLength.length(of: "b", in: txn) == 5)
                // The records still read as their objects and metadata.
                #expect(try txn.object(forKey: "a", in: notes)?.title == "abc")
                #expect(try txn.metadata(forKey: "a", in: notes)?.color == "red")
            }
            try connection.readWrite { txn in
                try txn.set(Note(title: "abcdef"), forKey: "a", in: notes, metadata: NoteInfo(color: "blue"))
                try txn.replace(Note(title: "hi"), forKey: "b", in: notes)
                _ = try txn.replaceMetadata(NoteInfo(color: "green"), forKey: "b", in: notes)
            }
            try connection.read { txn throws in
                #expect(try TitleLength.length(of: "a", in: txn) == 6)
                #expect(try TitleLength.length(of: "b", in: txn) == 2)
                #expect(try txn.object(forKey: "b", in: notes)?.title == "hi")
                #expect(try txn.metadata(forKey: "b", in: notes)?.color == "green")
            }
            try connection.readWrite { txn in _ = try txn.remove(key: "a", in: notes) }
            #expect(ext.removedLengths == [6])

            // Rebuilt with a new version tag: a new slot, so what rows carry under the old one is not read.
            let before = try connection.read { txn throws in try txn.attachmentSlot(for: "title-length") }
            try database.unregisterExtension(named: "title-length")
            try database.register(TitleLength(versionTag: "2"))
            try connection.read { txn throws in
                #expect(try txn.attachmentSlot(for: "title-length") != before)
                #expect(try TitleLength.length(of: "b", in: txn) == 2)
                #expect(try txn.object(forKey: "b", in: notes)?.title == "hi")
            }
            // Dropping its storage strips what it attached from every row.
            try database.unregisterExtension(named: "title-length", dropStorage: true)
            let attachedRecords = try database.environment.read { txn -> Int in
                let objects = try txn.openDatabase(named: "canopy.objects")
                var count = 0
                try txn.forEach(in: objects) { _, value in
                    if (value.first ?? 0) & 2 != 0 { count += 1 }
                    return true
                }
                return count
            }
            #expect(attachedRecords == 0)
            try connection.read { txn throws in
                #expect(try txn.attachmentSlot(for: "title-length") == nil)
                #expect(try txn.object(forKey: "b", in: notes)?.title == "hi")
            }
        }
    }

    @Test func aMalformedRecordIsATypedErrorNotATrap() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        // The record says attachments follow, with a length past the end of the value.
        try withOneNoteRewritten(path) { txn in
            let objects = try txn.openDatabase(named: "canopy.objects", checksummed: true)  // a valid checksum: the parser's turn
            var key: [UInt8] = []
            try txn.forEach(in: objects) { rowKey, _ in
                key = Array(rowKey)
                return false
            }
            try txn.put([2, 0x7F, 1, 2], forKey: key, in: objects)
        }
        let database = try Database(path: path, options: .init(durability: .none))
        try database.newConnection().read { txn throws in
            let error = #expect(throws: CanopyError.self) { try txn.object(forKey: "a", in: notes) }
            #expect(error?.code == .corruptStore)
            #expect(try txn.checkStoredRows().problems.contains { $0.contains("malformed") })
        }
    }
}
