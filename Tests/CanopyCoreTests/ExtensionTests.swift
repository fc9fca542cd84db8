import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// A test extension: keeps, in its own typed table, the number of rows per collection, and reports every hook call.
/// Written against the extension interface only (no `import LMDB`): a typed table, the row count API for its rebuild,
/// the reset flag at commit.
final class RowCounter: StoreExtension, @unchecked Sendable {
    // @unchecked: `events`/`table`/`rebuilds` are only touched by the writer (one write transaction at a time).
    let name: String
    let kind = "row-counter"
    let versionTag: String
    let options = "{}"
    var table: ExtensionTable<StringUTF8Coding, UInt64BigEndianCoding>?
    var rebuildReasons: [String] = []
    var resets: [Bool] = []
    var events: [String] = []

    init(name: String = "counter", versionTag: String = "1") {
        self.name = name
        self.versionTag = versionTag
    }

    func prepare(in transaction: ReadWriteTransaction, context: ExtensionRegistrationContext) throws {
        let table = try transaction.openTable("counts", of: name, keys: StringUTF8Coding.self, values: UInt64BigEndianCoding.self)
        self.table = table
        if let reason = context.rebuildReason {
            rebuildReasons.append(reason)
            try table.removeAll(in: transaction)
            for collection in try transaction.collectionNames() {
                try table.put(UInt64(try transaction.count(inCollection: collection)), forKey: collection, in: transaction)
            }
        }
    }

    func count(_ collection: String, in txn: ReadTransaction) throws -> Int {
        guard let table else { return -1 }
        return Int(try table.value(forKey: collection, in: txn) ?? 0)
    }

    func beginWrite(_ transaction: ReadWriteTransaction) throws -> Writer {
        Writer(owner: self, transaction: transaction)
    }

    func dropStorage(in transaction: ReadWriteTransaction) throws {
        try table?.drop(in: transaction)
        table = nil
    }

    final class Writer: ExtensionTransaction {
        let owner: RowCounter
        let transaction: ReadWriteTransaction
        var touched: [String] = []

        init(owner: RowCounter, transaction: ReadWriteTransaction) {
            self.owner = owner
            self.transaction = transaction
        }

        func adjust(_ collection: String, by delta: Int) throws {
            guard let table = owner.table else { return }
            let current = Int(try table.value(forKey: collection, in: transaction) ?? 0)
            try table.put(UInt64(max(0, current + delta)), forKey: collection, in: transaction)
        }

        /// Rows removed with their whole collection, by collection, reported together at commit.
        var removedWithCollection: [String: [String]] = [:]

        func handle(_ row: RowChange) throws -> AttachmentEdit {
            switch row.kind {
            case .insert:
                owner.events.append("insert \(row.id) \(try row.object(as: Note.self).title)")
                try adjust(row.collection, by: 1)
            case .update:
                owner.events.append("update \(row.id) object=\(row.objectChanged) metadata=\(row.metadataChanged) \(try row.object(as: Note.self).title)")
            case .touch:
                owner.events.append("touch \(row.id)")
            case .remove where row.removesCollection:
                removedWithCollection[row.collection, default: []].append(row.key)
                try adjust(row.collection, by: -1)
            case .remove:
                owner.events.append("remove \(row.id)")
                try adjust(row.collection, by: -1)
            }
            return .keep
        }
        func prepareCommit(_ commit: ExtensionCommit) throws -> ExtensionPayload? {
            for (collection, keys) in removedWithCollection.sorted(by: { $0.key < $1.key }) {
                owner.events.append("removeAll \(collection) \(keys.sorted())")
            }
            removedWithCollection = [:]
            owner.resets.append(commit.isReset)
            return ExtensionPayload(bytes: Array("payload \(commit.snapshot)".utf8))
        }
        func didCommit(snapshot: UInt64) { owner.events.append("commit \(snapshot)") }
        func didRollback() { owner.events.append("rollback") }
    }
}

@Suite("Extension hook")
struct ExtensionTests {
    @Test func extensionHearsEveryChangeAndAddsAPayload() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn throws in try txn.set(Note(title: "before"), forKey: "b", in: notes) }
            let counter = RowCounter()
            try database.register(counter)
            #expect(counter.rebuildReasons == ["first registration"])
            try connection.read { txn throws in #expect(try counter.count("notes", in: txn) == 1) }
            counter.events.removeAll()

            let recorder = NotificationRecorder()
            database.addCommitObserver { recorder.record($0) }
            try connection.readWrite { txn throws in
                try txn.set(Note(title: "one"), forKey: "1", in: notes)
                try txn.set(Note(title: "one again"), forKey: "1", in: notes)
                _ = try txn.replaceMetadata(NoteInfo(color: "red"), forKey: "1", in: notes)
                _ = try txn.touchObject(forKey: "b", inCollection: "notes")
                _ = try txn.remove(key: "b", in: notes)
            }
            try connection.readWrite { txn throws in _ = try txn.removeAll(inCollection: "notes") }
            #expect(counter.events == [
                "insert notes/1 one",
                "update notes/1 object=true metadata=false one again",
                "update notes/1 object=false metadata=true one again",
                "touch notes/b",
                "remove notes/b",
                "commit 3",
                "removeAll notes [\"1\"]",
                "commit 4",
            ])
            try connection.read { txn throws in #expect(try counter.count("notes", in: txn) == 0) }
            let received = recorder.wait(for: 2)
            #expect(received.first?.extensionPayloads["counter"] == Array("payload 3".utf8))

            // A rolled-back transaction rolls back the extension's state too.
            struct Oops: Error {}
            _ = try? connection.readWrite { txn throws in
                try txn.set(Note(title: "x"), forKey: "x", in: notes)
                throw Oops()
            }
            #expect(counter.events.last == "rollback")
            try connection.read { txn throws in #expect(try counter.count("notes", in: txn) == 0) }

            let records = try database.recordedExtensions()
            #expect(records.map(\.name) == ["counter"])
            #expect(records.first?.kind == "row-counter")
            #expect(throws: CanopyError.self) { try database.register(RowCounter()) }
        }
    }

    @Test func registrationDetectsVersionChangesAndMissedWrites() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        do {
            let database = try Database(path: path)
            try database.newConnection().readWrite { txn throws in try txn.set(Note(title: "a"), forKey: "a", in: notes) }
            let counter = RowCounter()
            try database.register(counter)
            try database.newConnection().readWrite { txn throws in try txn.set(Note(title: "b"), forKey: "b", in: notes) }
        }
        do {
            // Same version, no writes in between: the stored state is used as it is.
            let database = try Database(path: path)
            let counter = RowCounter()
            try database.register(counter)
            #expect(counter.rebuildReasons.isEmpty)
            try database.newConnection().read { txn throws in #expect(try counter.count("notes", in: txn) == 2) }
        }
        do {
            // Written while the extension was not registered: detected, rebuilt.
            let database = try Database(path: path)
            try database.newConnection().readWrite { txn throws in try txn.set(Note(title: "c"), forKey: "c", in: notes) }
            let counter = RowCounter()
            try database.register(counter)
            #expect(counter.rebuildReasons.count == 1)
            #expect(counter.rebuildReasons.first?.contains("not registered") == true)
            try database.newConnection().read { txn throws in #expect(try counter.count("notes", in: txn) == 3) }
        }
        do {
            // A new version tag rebuilds.
            let database = try Database(path: path)
            let counter = RowCounter(versionTag: "2")
            try database.register(counter)
            #expect(counter.rebuildReasons.first?.contains("version tag") == true)
            try database.unregisterExtension(named: "counter", dropStorage: true)
            #expect(try database.recordedExtensions().isEmpty)
        }
    }
}
