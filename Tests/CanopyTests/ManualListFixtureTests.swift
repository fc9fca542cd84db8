import Canopy
import CanopyTestSupport
import Foundation
import Testing

/// A chore of the manual-list fixture.
private struct FixtureChore: Codable, Sendable, Equatable {
    var title: String
}

private let fixtureChores = TypedCollection<FixtureChore, NoMetadata>("chores")

/// A database written by main 7ed013c (format `canopy/6`; the list recorded with the kind `manual-view`: the order
/// keys in its `order` table, a mark on each listed row's record), kept gzipped in Fixtures/: the list `focus` over
/// `chores` holds c5 c6 c1 c3 c4 (appends, a move, a removal, an insertion), then a process that does not register
/// the list removed c3 and wrote it again in one transaction, updated c4 and removed c5. The list lags by those two
/// commits: the open that registers it catches it up. A later format of the list must upgrade this one in place and
/// keep what it says (see the ManualLists article, session 16).
private func extractManualListFixture(into directory: TemporaryDirectory) throws -> String {
    try unpackGzippedDatabase(
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/canopy6-manual-list-7ed013c.data.mdb.gz"),
        into: directory)
}

@Suite("A manual list written by an older build, with writes it has not seen")
struct ManualListFixtureTests {
    static let focus = ManualView.make(name: "focus", collections: [fixtureChores.name])

    static func keys(_ txn: ReadTransaction) throws -> [String] {
        try txn.view("focus").rowIDs(inGroup: "focus").map(\.key)
    }

    /// Saw it fail with both of the list's mark checks removed (`catchUpManualList` keeping every row that still
    /// exists, and `removeMissingRows` ignoring the retired slot: with only one removed, the other still drops c3):
    /// the list then held c3, which the other process had removed and written again.
    @Test("Registering the fixture's list catches it up: the replaced and the removed row leave it, the updated one keeps its place; moves persist")
    func registersAndCatchesUp() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try extractManualListFixture(into: directory)
        // As written: the list's kind, and the mark on a listed row's record.
        try Database(path: path, options: .init(readOnly: true)).newConnection().read { txn throws in
            #expect(try txn.extensionRecords().first { $0.name == "focus" }?.kind == View.manualKind)
            let slot = try #require(try txn.attachmentSlot(for: "focus"))
            let rowKey = try #require(try txn.storedRowKey(for: RowID(collection: fixtureChores.name, key: "c1")))
            #expect(try txn.attachment(at: slot, forRow: rowKey) != nil)
            #expect(try txn.object(forKey: "c3", in: fixtureChores) == FixtureChore(title: "c3 again"))
        }
        do {
            let database = try Database(path: path, options: .init(durability: .none))
            try database.register(Self.focus)
            try database.newConnection().read { txn throws in
                #expect(try Self.keys(txn) == ["c6", "c1", "c4"])
                #expect(try txn.view("focus").checkInvariants() == [])
                #expect(try txn.object(forKey: "c4", in: fixtureChores) == FixtureChore(title: "c4 updated"))
            }
            try database.newConnection().readWrite { txn throws in
                let list = try txn.manualList("focus")
                try list.move(from: 2, to: 0)
                try list.append(key: "c3", inCollection: fixtureChores.name)
            }
        }
        let reopened = try Database(path: path, options: .init(durability: .none))
        try reopened.register(Self.focus)
        try reopened.newConnection().read { txn throws in
            #expect(try Self.keys(txn) == ["c4", "c6", "c1", "c3"])
            #expect(try txn.view("focus").checkInvariants() == [])
        }
    }

    /// Writes the fixture into the directory `CANOPY_WRITE_MANUAL_LIST_FIXTURE` names (then
    /// `gzip -9 -c DIR/db/data.mdb > Fixtures/canopy6-manual-list-<commit>.data.mdb.gz`), with the build at hand.
    @Test("write the fixture (for a new fixture)", .enabled(if: ProcessInfo.processInfo.environment["CANOPY_WRITE_MANUAL_LIST_FIXTURE"] != nil))
    func writeFixture() throws {
        let path = try #require(ProcessInfo.processInfo.environment["CANOPY_WRITE_MANUAL_LIST_FIXTURE"]) + "/db"
        do {
            let database = try Database(path: path, options: .init(durability: .full))
            try database.register(Self.focus)
            try database.newConnection().readWrite { txn throws in
                for number in 1...6 { try txn.set(FixtureChore(title: "c\(number)"), forKey: "c\(number)", in: fixtureChores) }
                let list = try txn.manualList("focus")
                for number in 1...5 { try list.append(key: "c\(number)", inCollection: fixtureChores.name) }
            }
            try database.newConnection().readWrite { txn throws in
                let list = try txn.manualList("focus")
                try list.move(from: 4, to: 0)                                      // c5 c1 c2 c3 c4
                _ = try list.remove(key: "c2", inCollection: fixtureChores.name)    // c5 c1 c3 c4
                try list.insert(key: "c6", inCollection: fixtureChores.name, at: 1) // c5 c6 c1 c3 c4
            }
            try database.newConnection().read { txn throws in #expect(try Self.keys(txn) == ["c5", "c6", "c1", "c3", "c4"]) }
        }
        // A process that does not register the list (a tool, an import).
        let tool = try Database(path: path, options: .init(durability: .full))
        try tool.newConnection().readWrite { txn throws in
            _ = try txn.remove(key: "c3", in: fixtureChores)
            try txn.set(FixtureChore(title: "c3 again"), forKey: "c3", in: fixtureChores)
        }
        try tool.newConnection().readWrite { txn throws in
            try txn.set(FixtureChore(title: "c4 updated"), forKey: "c4", in: fixtureChores)
            _ = try txn.remove(key: "c5", in: fixtureChores)
        }
    }
}
