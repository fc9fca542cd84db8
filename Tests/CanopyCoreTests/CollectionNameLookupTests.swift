@testable import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Testing

private struct Item: Codable, Sendable { var title: String }
private let items = TypedCollection<Item, NoMetadata>("items")

/// A damaged record's error names its collection by looking the collection's number up in the database open in this
/// process. That lookup must not depend on what other threads are doing: under a loaded parallel test run, another
/// test opening a database held the registry's lock for its open and the message said "#1" instead of the name.
@Suite("Error messages find the collection's name while other threads open databases")
struct CollectionNameLookupTests {
    @Test func nameIsFoundWhileAnotherDatabaseOpens() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn in try txn.set(Item(title: "a"), forKey: "a", in: items) }
            let core = try #require(DatabaseCore.openCore(path: database.path))
            let id = try #require(core.state.withLock { $0.collections["items"]?.id })
            let name = DatabaseCore.whileOpening { DatabaseCore.collectionName(id: id, path: database.path) }
            #expect(name == "items")
            #expect(DatabaseCore.whileOpening { DatabaseCore.collectionName(id: id &+ 1000, path: database.path) } == nil)
        }
    }
}
