import Canopy
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// A written value reaches the caches and the views as every later read returns it: through the type's hand-written
/// `init(from:)`, not as passed to `set`. (Found trying issue 14's work as a user: a note written with the tag "LOUD"
/// whose `init(from:)` lowercases it read back as "LOUD" in the writing process — from its cache — and as "loud" in
/// every other; its view grouped it under "LOUD", so every later registration's spot check rebuilt the view, saying
/// "the closures changed without a new version tag".)
@Suite("Writes: caches and views see values as reads return them")
struct TransformingWriteTests {
    static func byName() -> View {
        View(name: "by-name",
             grouping: .byObject(transformingTags) { _, tag in tag.name },
             sorting: .byObject(transformingTags) { _, _, tag in SortKey(.ascending(tag.count)) })
    }

    static func byLevel() -> View {
        View(name: "by-level",
             grouping: .byObject(transformingLevels) { _, level in "level \(level.level)" },
             sorting: .byObject(transformingLevels) { _, key, _ in SortKey(.ascending(key)) })
    }

    static func open(_ directory: TemporaryDirectory) throws -> Database {
        try Database(path: directory.appending("db"), options: .init(durability: .none))
    }

    @Test("The writing connection reads what init(from:) returns, after set and replace, as a fresh process does")
    func cacheHoldsTheDecodedValue() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn throws in
                try txn.set(LowercasedTag(name: "LOUD", count: 1), forKey: "t", in: transformingTags)
                try txn.set(ClampedLevel(label: "x", level: 77), forKey: "l", in: transformingLevels)
                // Inside the writing transaction too.
                #expect(try txn.object(forKey: "t", in: transformingTags) == LowercasedTag(name: "loud", count: 1))
            }
            try connection.read { txn throws in
                #expect(try txn.object(forKey: "t", in: transformingTags) == LowercasedTag(name: "loud", count: 1))
                #expect(try txn.object(forKey: "l", in: transformingLevels) == ClampedLevel(label: "x", level: 10))
            }
            try connection.readWrite { txn throws in
                try txn.replace(LowercasedTag(name: "MiXeD", count: 2), forKey: "t", in: transformingTags)
            }
            try connection.read { txn throws in
                #expect(try txn.object(forKey: "t", in: transformingTags) == LowercasedTag(name: "mixed", count: 2))
            }
        }
    }

    @Test("A view groups a written row as its decoded value; a later registration finds it current, not changed")
    func viewSeesTheDecodedValue() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        do {
            let database = try Self.open(directory)
            #expect(try database.register(Self.byName()) == .rebuilt(.firstRegistration))
            #expect(try database.register(Self.byLevel()) == .rebuilt(.firstRegistration))
            try database.newConnection().readWrite { txn throws in
                try txn.set(LowercasedTag(name: "LOUD", count: 1), forKey: "a", in: transformingTags)
                try txn.set(LowercasedTag(name: "quiet", count: 2), forKey: "b", in: transformingTags)
                try txn.set(ClampedLevel(label: "x", level: -4), forKey: "c", in: transformingLevels)
            }
            try database.newConnection().read { txn throws in
                #expect(try txn.view("by-name").groups() == ["loud", "quiet"])
                #expect(try txn.view("by-level").groups() == ["level 0"])
                #expect(try txn.view("by-name").checkInvariants() == [])
            }
        }
        // A new start of the app: the spot check recomputes the groups from the decoded rows and agrees.
        let database = try Self.open(directory)
        #expect(try database.register(Self.byName()) == .current)
        #expect(try database.register(Self.byLevel()) == .current)
    }

    /// Rejects, in `init(from:)`, an empty title — which `encode(to:)` writes without complaint.
    struct NonEmptyTitle: Codable, Sendable, Equatable {
        var title: String
        init(title: String) { self.title = title }
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            title = try container.decode(String.self, forKey: .title)
            guard !title.isEmpty else {
                throw DecodingError.dataCorruptedError(forKey: .title, in: container, debugDescription: "an empty title")
            }
        }
    }

    @Test("A value its own init(from:) rejects is refused at the write with decodingFailed, and nothing is written")
    func valueThatCannotBeReadBackIsRefused() throws {
        try withDatabase { database, _ in
            let titles = TypedCollection<NonEmptyTitle, NoMetadata>("titles")
            let connection = database.newConnection()
            try connection.readWrite { txn throws in try txn.set(NonEmptyTitle(title: "kept"), forKey: "k", in: titles) }
            let before = try database.currentSnapshot()
            try connection.readWrite { txn throws in
                let error = #expect(throws: CanopyError.self) { try txn.set(NonEmptyTitle(title: ""), forKey: "k", in: titles) }
                #expect(error?.code == .decodingFailed)
                #expect(error?.key == "k")
                #expect(error?.message.contains("cannot be read back") == true)
            }
            try connection.read { txn throws in #expect(try txn.object(forKey: "k", in: titles) == NonEmptyTitle(title: "kept")) }
            #expect(try database.currentSnapshot() == before)
        }
    }
}
