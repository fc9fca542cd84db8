import Canopy
import CanopyTestSupport
import Foundation
import RemindersKit
import Testing

/// A `reminders` database written by the build before manual lists kept their order out of the rows (aa2a645: five
/// reminders with tags, a focus list of #4 #1 #3 after an add, a move and a removal), kept gzipped next to the canopy/3
/// fixture. Its focus list and its by-tag view are recorded with the kind `view`.
func extractListsFixture(into directory: TemporaryDirectory) throws -> String {
    try unpackGzippedDatabase(
        URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../CanopyTests/Fixtures/canopy4-lists-aa2a645.data.mdb.gz").standardizedFileURL,
        into: directory)
}

/// What an older build does before it reads a view without its closures, kept here as the rule it applies: it reads
/// only extensions recorded with these kinds as views (`PersistedView.kinds` and the `canopy` commands' filters of
/// aa2a645 and earlier); any other kind is "no view named … is recorded".
let kindsAnOlderBuildReads: Set<String> = ["view", "filtered-view"]

/// How an older build reads a row's entry in a one-group view from the row's attachment (`ViewTables.rowEntry` of
/// aa2a645 and earlier): a varint group id, then the sort key; `nil` when the bytes are not an entry.
func entryAnOlderBuildReads(_ bytes: [UInt8]) -> (groupID: UInt64, sortKey: [UInt8])? {
    var value: UInt64 = 0
    var shift: UInt64 = 0
    for (offset, byte) in bytes.enumerated() {
        guard shift < 64 else { return nil }
        value |= UInt64(byte & 0x7F) << shift
        if byte & 0x80 == 0 { return (value, Array(bytes[(offset + 1)...])) }
        shift += 7
    }
    return nil
}

@Suite("Manual and many-group views written by an older build: read as they are, upgraded at registration")
struct ListFormatUpgradeTests {
    @Test("The focus list and by-tag view of aa2a645 read without closures, then the first open upgrades them in place; older builds refuse the new kinds")
    func upgradeInPlace() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try extractListsFixture(into: directory)
        func tagGroups(_ txn: ReadTransaction) throws -> [String: [String]] {
            let byTag = try txn.persistedView("by-tag")
            return try Dictionary(uniqueKeysWithValues: byTag.groups().map { ($0, try byTag.rowIDs(inGroup: $0).map(\.key)) })
        }
        // A tool reads the old format as it is: the list's order keys are in the rows' records there.
        let tagsBefore = try Database(path: path, options: .init(readOnly: true)).newConnection().read { txn in
            let records = try txn.extensionRecords()
            #expect(records.first { $0.name == "focus" }?.kind == "view")
            #expect(records.first { $0.name == "by-tag" }?.kind == "view")
            let focus = try txn.persistedView("focus")
            #expect(try focus.rowIDs(inGroup: "focus").map(\.key) == ["4", "1", "3"])
            #expect(try focus.position(ofKey: "3", inCollection: "reminders")?.index == 2)
            #expect(try focus.checkStructure() == [])
            let byTag = try txn.persistedView("by-tag")
            #expect(try byTag.positions(of: RowID(collection: "reminders", key: "1")).map(\.group) == ["home", "shop"])
            return try tagGroups(txn)
        }
        #expect(tagsBefore["work"] == ["2", "3"])
        // The first open registers the views: the kinds changed, so both are rebuilt in the registration's transaction.
        #expect(FocusTests.focusIDs(path) == ["4", "1", "3"])
        try Database(path: path, options: .init(readOnly: true)).newConnection().read { txn in
            let records = try txn.extensionRecords()
            let focusKind = try #require(records.first { $0.name == "focus" }?.kind)
            let byTagKind = try #require(records.first { $0.name == "by-tag" }?.kind)
            #expect(focusKind == View.manualKind)
            #expect(byTagKind == View.manyGroupsKind)
            // An older build does not take either for a view: it refuses them rather than read them wrongly.
            #expect(!kindsAnOlderBuildReads.contains(focusKind) && !kindsAnOlderBuildReads.contains(byTagKind))
            let focus = try txn.persistedView("focus")
            #expect(focus.kind == View.manualKind)
            #expect(try focus.rowIDs(inGroup: "focus").map(\.key) == ["4", "1", "3"])
            #expect(try focus.position(ofKey: "3", inCollection: "reminders")?.index == 2)
            #expect(try focus.checkStructure() == [])
            #expect(try txn.persistedView("by-tag").checkStructure() == [])
            #expect(try tagGroups(txn) == tagsBefore)
            // The rows in the list carry the list's mark, which the older build's entry rule does not read as an entry.
            let slot = try #require(try txn.attachmentSlot(for: "focus"))
            for key in ["4", "1", "3"] {
                let rowKey = try #require(try txn.storedRowKey(for: RowID(collection: "reminders", key: key)))
                let mark = try #require(try txn.attachment(at: slot, forRow: rowKey))
                #expect(entryAnOlderBuildReads(mark) == nil, "\(mark)")
            }
        }
        // The upgraded list moves and keeps its order across opens.
        #expect(reminders(["focus", "move", "3", "1", "--db", path]).status == 0)
        #expect(FocusTests.focusIDs(path) == ["3", "4", "1"])
        #expect(reminders(["focus", "add", "2", "--db", path]).status == 0)
        #expect(FocusTests.focusIDs(path) == ["3", "4", "1", "2"])
    }
}
