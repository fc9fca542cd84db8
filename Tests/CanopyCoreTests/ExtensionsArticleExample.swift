import CanopyCore
import CanopyTestSupport
import Synchronization
import Foundation
import Testing

// The example of the Extensions article (CanopyCore.docc/Extensions.md, "Read and write contexts"), verbatim: the test
// below checks that the article's block is this code, and runs it.

final class RowTally: StoreExtension {
    let name = "row-tally"
    let kind = "row-tally"
    let versionTag = "1"
    let options = "{}"
    private let counts = Mutex<ExtensionTable<StringUTF8Coding, UInt64BigEndianCoding>?>(nil)

    func prepare(in transaction: ReadWriteTransaction, context: ExtensionRegistrationContext) throws {
        let table = try transaction.openTable("counts", of: name, keys: StringUTF8Coding.self, values: UInt64BigEndianCoding.self)
        counts.withLock { $0 = table }
        guard context.needsRebuild else { return }
        try table.removeAll(in: transaction)
        for collection in try transaction.collectionNames() {
            try table.put(UInt64(try transaction.count(inCollection: collection)), forKey: collection, in: transaction)
        }
    }

    func beginWrite(_ transaction: ReadWriteTransaction) throws -> Writer {
        Writer(table: try table(), transaction: transaction)
    }

    func dropStorage(in transaction: ReadWriteTransaction) throws {
        try table().drop(in: transaction)
    }

    /// Rows of `collection` as `transaction` sees them: in a write, with the rows it counted so far.
    func count(of collection: String, in transaction: ReadTransaction) throws -> UInt64 {
        if let pending = transaction.writer(of: self)?.pending[collection] { return pending }
        return try table().value(forKey: collection, in: transaction) ?? 0
    }

    private func table() throws -> ExtensionTable<StringUTF8Coding, UInt64BigEndianCoding> {
        guard let table = counts.withLock({ $0 }) else {
            throw CanopyError(.extensionNotRegistered, "register the tally first", extensionName: name)
        }
        return table
    }

    final class Writer: ExtensionTransaction {
        let table: ExtensionTable<StringUTF8Coding, UInt64BigEndianCoding>
        let transaction: ReadWriteTransaction
        /// Counts changed in this transaction, written at commit.
        var pending: [String: UInt64] = [:]

        init(table: ExtensionTable<StringUTF8Coding, UInt64BigEndianCoding>, transaction: ReadWriteTransaction) {
            self.table = table
            self.transaction = transaction
        }

        func handle(_ change: RowChange) throws -> AttachmentEdit {
            let delta: Int64 = switch change.kind {
            case .insert: 1
            case .remove: -1
            case .update, .touch: 0
            }
            guard delta != 0 else { return .keep }
            let current = try pending[change.collection] ?? table.value(forKey: change.collection, in: transaction) ?? 0
            pending[change.collection] = UInt64(max(0, Int64(current) + delta))
            return .keep
        }

        func prepareCommit(_ commit: ExtensionCommit) throws -> ExtensionPayload? {
            for (collection, count) in pending { try table.put(count, forKey: collection, in: transaction) }
            pending = [:]
            return nil
        }
    }
}

private struct Tallied: Codable, Sendable { var title: String }
private let tallied = TypedCollection<Tallied, NoMetadata>("tallied")

@Suite("Extensions article example")
struct ExtensionsArticleExampleTests {
    @Test("The article's block is this file's RowTally")
    func articleBlockIsCompiled() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
        let article = try String(contentsOf: root.appendingPathComponent("Sources/CanopyCore/CanopyCore.docc/Extensions.md"), encoding: .utf8)
        let compiled = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        let block = try #require(article.components(separatedBy: "```swift\n").dropFirst().first?.components(separatedBy: "\n```").first)
        #expect(compiled.contains(block + "\n"), "copy the Extensions article's swift block into this file")
    }

    @Test("RowTally: a read in a write sees the writer's count; after commit, the table's; a rebuild counts the rows")
    func rowTallyRuns() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let connection = database.newConnection()
        try connection.readWrite { txn in try txn.set(Tallied(title: "before"), forKey: "0", in: tallied) }
        let tally = RowTally()
        try database.register(tally)
        try connection.readWrite { txn in
            #expect(try tally.count(of: "tallied", in: txn) == 1)  // counted by the rebuild
            try txn.set(Tallied(title: "a"), forKey: "a", in: tallied)
            try txn.set(Tallied(title: "b"), forKey: "b", in: tallied)
            #expect(try tally.count(of: "tallied", in: txn) == 3)  // the writer's count, not yet written
            _ = try txn.remove(key: "0", in: tallied)
        }
        #expect(try connection.read { txn in try tally.count(of: "tallied", in: txn) } == 2)
        try connection.read { txn in #expect(txn.writer(of: tally) == nil) }
    }
}
