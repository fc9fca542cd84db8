@testable import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// A record whose type promises synthesized decoding: a write lends the very value passed to `set` to the extensions
/// (no decode, no copy), which is what these tests need to reach the lent path.
private struct Card: Codable, Sendable, Equatable, BinaryCodecSynthesizedDecoding {
    var title: String
    var tags: [String]
    var rank: Int
}

/// The same stored fields as `Card` without the tags: decodable from a card's bytes, so a closure can ask a row for
/// another type than the one the write lent.
private struct CardTitle: Codable, Sendable, Equatable {
    var title: String
}

private struct CardLabel: Codable, Sendable, Equatable, BinaryCodecSynthesizedDecoding {
    var label: String
}

private let cards = TypedCollection<Card, CardLabel>("cards")

/// A card whose first 16 bytes are two integers: a value's storage, once freed, starts with the allocator's free-list
/// links, so a string there would read as garbage (a crash), where an integer reads as a wrong number (a failed
/// expectation). Its strings are long enough to live on the heap.
private struct RankedCard: Codable, Sendable, Equatable, BinaryCodecSynthesizedDecoding {
    var rank: Int
    var order: Int
    var title: String
    var tags: [String]
}

private let rankedCards = TypedCollection<RankedCard, CardLabel>("ranked")

/// Strings of `lengths` (each several times) made of `#`: they take heap blocks of the sizes strings of those lengths
/// use, among them any such block freed just before (the allocator hands back the last block freed of a size first).
private func occupyFreedStringBlocks(lengths: ClosedRange<Int>) -> [String] {
    lengths.flatMap { length in (0..<4).map { _ in String(repeating: "#", count: length) } }
}

/// An extension whose writer keeps every change it is handed (which the interface allows, though a change is valid
/// only while it is handled) and reads each one again at commit, after the mutations that lent their values returned.
private final class ChangeKeeper: StoreExtension, @unchecked Sendable {
    // @unchecked: `reads` is only touched by the writer (one write transaction at a time) and the test after it.
    let name = "keeper"
    let kind = "change-keeper"
    let versionTag = "1"
    let options = "{}"
    var reads: [String] = []
    var readsDuringHandling: [String] = []

    func prepare(in transaction: ReadWriteTransaction, context: ExtensionRegistrationContext) throws {}
    func beginWrite(_ transaction: ReadWriteTransaction) throws -> Writer { Writer(owner: self) }
    func dropStorage(in transaction: ReadWriteTransaction) throws {}

    final class Writer: ExtensionTransaction {
        let owner: ChangeKeeper
        var kept: [RowChange] = []
        init(owner: ChangeKeeper) { self.owner = owner }

        func handle(_ change: RowChange) throws -> AttachmentEdit {
            guard change.kind != .remove else { return .keep }
            kept.append(change)
            let row = ExtensionRow(change)
            // Read in place, then asked again as another type while the in-place read is under way: the row must not
            // replace (and so free) the value it lends.
            let both = try row.withObject(in: cards) { card in
                let title = try row.object(as: CardTitle.self).title
                return "\(card.title)|\(card.tags.joined(separator: ","))|\(card.rank)|\(title)"
            }
            owner.readsDuringHandling.append("\(change.key) \(both)")
            return .keep
        }

        func prepareCommit(_ commit: ExtensionCommit) throws -> ExtensionPayload? {
            for change in kept {
                let row = ExtensionRow(change)
                let card = try row.object(in: cards)
                let inPlace = try row.withObject(in: cards) { "\($0.title)|\($0.tags.joined(separator: ","))|\($0.rank)" }
                let label = try row.metadata(in: cards)?.label ?? "-"
                owner.reads.append("\(change.key) \(card.title)|\(card.tags.joined(separator: ","))|\(card.rank) \(inPlace) \(label)")
            }
            kept = []
            return nil
        }
        func catchUp(_ missed: MissedWrites) throws -> [StoredRowKey: AttachmentEdit]? { nil }
    }
}

@Suite("Row values lent to the extensions")
struct LentRowValueTests {
    /// Without the end of the loan (a change kept past its handling still pointing at the mutation's frame), the reads
    /// at commit found the stack slots of later writes: other rows' values, or freed strings.
    @Test("A change a writer keeps reads the values written, after the write returned")
    func keptChangeReadsItsValues() throws {
        let seed: UInt64 = 0x5EED_14
        var random = SeededRandom(seed: seed)
        try withDatabase { database, _ in
            let keeper = ChangeKeeper()
            try database.register(keeper)
            var expected: [String] = []
            var expectedDuring: [String] = []
            try database.newConnection().readWrite { txn throws in
                for index in 0..<200 {
                    let key = "c\(index % 150)"
                    let card = Card(title: "title \(index) \(String(repeating: "x", count: Int.random(in: 0...40, using: &random)))",
                                    tags: (0..<Int.random(in: 0...4, using: &random)).map { "tag\($0)-\(index)" },
                                    rank: Int.random(in: -1_000...1_000, using: &random))
                    let described = "\(card.title)|\(card.tags.joined(separator: ","))|\(card.rank)"
                    switch index % 4 {
                    case 0, 1:
                        try txn.set(card, forKey: key, in: cards)
                        expected.append("\(key) \(described) \(described) -")
                    case 2:
                        let label = CardLabel(label: "label \(index)")
                        try txn.set(card, forKey: key, in: cards, metadata: label)
                        expected.append("\(key) \(described) \(described) \(label.label)")
                    default:
                        guard try txn.replace(card, forKey: key, in: cards) else {
                            try txn.set(card, forKey: key, in: cards)
                            expected.append("\(key) \(described) \(described) -")
                            expectedDuring.append("\(key) \(described)|\(card.title)")
                            continue
                        }
                        // A replaced object keeps the row's metadata.
                        let label = try txn.metadata(forKey: key, in: cards)?.label ?? "-"
                        expected.append("\(key) \(described) \(described) \(label)")
                    }
                    expectedDuring.append("\(key) \(described)|\(card.title)")
                }
            }
            #expect(keeper.readsDuringHandling == expectedDuring, "seed \(seed)")
            #expect(keeper.reads == expected, "seed \(seed)")
        }
    }

    /// A row of the scan decodes its object once and lends it in place to every closure; asked for another type on the
    /// way, it decodes that one without dropping the value it lends. Read in place as the views read it
    /// (`withObjectInPlace`, `inout`: no copy, which a closure taking the value by parameter may make first in a debug
    /// build): had the row replaced the lent value, and so freed it (its holder destroys what it replaces), the
    /// closure would read the allocator's free-list links as the rank and order — in a normal build, not only under a
    /// sanitizer — and the strings made meanwhile in place of the freed strings.
    @Test("A scanned row lends its decoded object, and answers another type meanwhile")
    func scannedRowLendsItsObject() throws {
        // Long enough to live on the heap (a small string is stored inline and would survive its storage's release).
        let longPart = String(repeating: "-", count: 40)
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn throws in
                for index in 0..<50 {
                    try txn.set(RankedCard(rank: index, order: -index, title: "t\(index)\(longPart)", tags: ["a\(index)\(longPart)", "b\(longPart)"]),
                                forKey: "k\(index)", in: rankedCards)
                }
            }
            var seen: [String] = []
            try connection.read { txn throws in
                try txn.scanRows(inCollections: ["ranked"]) { stored in
                    let row = ExtensionRow(stored)
                    let inPlace = try stored.withObjectInPlace(as: RankedCard.self) { card -> String in
                        let title = try row.object(as: CardTitle.self).title
                        let fillers = occupyFreedStringBlocks(lengths: 30...60)
                        defer { withExtendedLifetime(fillers) {} }
                        // The integers first: a string read from freed storage could end the process instead of failing.
                        guard (0..<50).contains(card.rank), card.order == -card.rank else { return "freed: \(card.rank) \(card.order)" }
                        return "\(card.rank) \(card.order) \(card.title) \(card.tags) \(title)"
                    }
                    let again = try row.withObject(in: rankedCards) { card in
                        let title = try row.object(as: CardTitle.self).title
                        return "\(card.title) \(card.tags) \(card.rank) \(title)"
                    }
                    let copy = try row.object(in: rankedCards)
                    seen.append("\(inPlace) / \(again) / \(copy.title) \(copy.tags) \(copy.rank)")
                    return true
                }
            }
            let expected = (0..<50).sorted { "k\($0)" < "k\($1)" }.map { index in
                let title = "t\(index)\(longPart)", tags = "[\"a\(index)\(longPart)\", \"b\(longPart)\"]"
                return "\(index) \(-index) \(title) \(tags) \(title) / \(title) \(tags) \(index) \(title) / \(title) \(tags) \(index)"
            }
            #expect(seen == expected)
        }
    }

    /// A change made without a database holds its values itself: `withObject` reads them, and a row of another
    /// collection or codec is refused before any value is read.
    @Test("withObject(in:) checks the collection and codec as object(in:) does")
    func withObjectChecksTheCollection() throws {
        let change = RowChange(
            id: RowID(collection: "cards", key: "k"), storedKey: try #require(StoredRowKey(bytes: [0, 0, 0, 1, 0x6B])), kind: .insert,
            objectChanged: true, metadataChanged: false, object: Card(title: "lent", tags: ["x"], rank: 3))
        let row = ExtensionRow(change)
        #expect(try row.withObject(in: cards) { $0.title } == "lent")
        #expect(try change.withObject(as: Card.self) { $0.rank } == 3)
        let other = TypedCollection<Card, CardLabel>("other")
        #expect(throws: CanopyError.self) { try row.withObject(in: other) { $0.title } }
        let json = TypedCollection<Card, CardLabel>("cards", codec: JSONCodec())
        #expect(throws: CanopyError.self) { try row.withObject(in: json) { $0.title } }
    }
}
