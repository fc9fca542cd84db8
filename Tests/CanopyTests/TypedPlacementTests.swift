import Canopy
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// A task whose type promises synthesized decoding: its writes lend the value itself to the views' closures.
private struct Chore: Codable, Sendable, Equatable, BinaryCodecSynthesizedDecoding {
    var title: String
    var room: String
    var minutes: Int
    var done: Bool
}

private struct ChoreNote: Codable, Sendable, Equatable {
    var pinned: Bool
}

private let chores = TypedCollection<Chore, ChoreNote>("chores")

/// Views whose typed closures read a row's object in place (lent by the write, or decoded once by the scan), one read
/// per view for both closures when both are `byObject` forms of one collection: whatever the path, every view holds
/// exactly the rows and order its closures give for the values a read returns.
@Suite("Views: typed closures read each row's object in place")
struct TypedPlacementTests {
    /// Five views on one collection (more attachments than a change keeps inline), in the forms that share one read
    /// (byObject + byObject), that do not (byObject + byRow, byRow + byObject typed, untyped byRow), and a metadata
    /// form; random sets, sets with metadata, replacements, metadata replacements, touches and removals, several per
    /// transaction; each view compared with what its closures compute from the rows read back.
    @Test("Random writes leave every typed view as its closures place the rows", .timeLimit(.minutes(2)))
    func randomWrites() throws {
        let seed: UInt64 = 0x7E_14_0C
        var random = SeededRandom(seed: seed)
        let byRoom = View(name: "by-room", grouping: .byObject(chores) { _, chore in chore.done ? nil : chore.room },
                          sorting: .byObject(chores) { _, _, chore in SortKey(.ascending(chore.minutes), .ascending(chore.title)) })
        let byState = View(name: "by-state", grouping: .byObject(chores) { _, chore in chore.done ? "done" : "open" },
                           sorting: .byObject(chores) { _, key, chore in SortKey(.descending(chore.title), .ascending(key)) })
        let mixed = View(name: "mixed", grouping: .byObject(chores) { _, chore in chore.minutes > 30 ? "long" : "short" },
                         sorting: .byRow(chores) { _, _, chore, note in SortKey(.ascending(note?.pinned ?? false), .ascending(chore.title)) })
        let untyped = View(name: "untyped", grouping: .byRow { row in try row.object(in: chores).room },
                           sorting: .byRow { _, row in try row.withObject(in: chores) { SortKey(.ascending($0.minutes)) } })
        let pinned = View(name: "pinned", grouping: .byMetadata(chores) { _, note in note?.pinned == true ? "pinned" : nil },
                          sorting: .byObject(chores) { _, _, chore in SortKey(.ascending(chore.title)) })
        let views = [byRoom, byState, mixed, untyped, pinned]
        try withDatabase { database, _ in
            let connection = database.newConnection()
            // A few rows before the views exist: their population reads them through the row scan.
            try connection.readWrite { txn throws in
                for index in 0..<20 { try txn.set(randomChore(index, &random), forKey: "k\(index)", in: chores) }
            }
            for view in views { try database.register(view) }
            for round in 0..<30 {
                try connection.readWrite { txn throws in
                    for _ in 0..<Int.random(in: 1...12, using: &random) {
                        let key = "k\(Int.random(in: 0..<40, using: &random))"
                        switch Int.random(in: 0..<7, using: &random) {
                        case 0, 1: try txn.set(randomChore(round, &random), forKey: key, in: chores)
                        case 2: try txn.set(randomChore(round, &random), forKey: key, in: chores, metadata: ChoreNote(pinned: Bool.random(using: &random)))
                        case 3: _ = try txn.replace(randomChore(round, &random), forKey: key, in: chores)
                        case 4: _ = try txn.replaceMetadata(Bool.random(using: &random) ? ChoreNote(pinned: true) : nil, forKey: key, in: chores)
                        case 5: _ = try txn.touchRow(forKey: key, inCollection: "chores")
                        default: _ = try txn.remove(key: key, in: chores)
                        }
                    }
                }
                try connection.read { txn throws in
                    var rows: [(key: String, chore: Chore, note: ChoreNote?)] = []
                    try txn.enumerateKeys(inCollection: "chores") { key in
                        if let chore = try txn.object(forKey: key, in: chores) { rows.append((key, chore, try txn.metadata(forKey: key, in: chores))) }
                        return true
                    }
                    func expected(_ group: (String, Chore, ChoreNote?) -> String?, _ order: (String, Chore, ChoreNote?) -> SortKey) -> [String: [String]] {
                        var groups: [String: [(SortKey, String)]] = [:]
                        for row in rows {
                            guard let name = group(row.key, row.chore, row.note) else { continue }
                            groups[name, default: []].append((order(row.key, row.chore, row.note), row.key))
                        }
                        // Ties break by the row key (one collection: by key bytes).
                        return groups.mapValues { $0.sorted { ($0.0.bytes, Array($0.1.utf8)) < ($1.0.bytes, Array($1.1.utf8)) }.map(\.1) }
                    }
                    func stored(_ view: View) throws -> [String: [String]] {
                        let reader = try txn.view(view.name)
                        var out: [String: [String]] = [:]
                        for group in try reader.groups() { out[group] = try reader.rowIDs(inGroup: group).map(\.key) }
                        return out
                    }
                    #expect(try stored(byRoom) == expected({ _, c, _ in c.done ? nil : c.room }, { _, c, _ in SortKey(.ascending(c.minutes), .ascending(c.title)) }),
                            "seed \(seed) round \(round)")
                    #expect(try stored(byState) == expected({ _, c, _ in c.done ? "done" : "open" }, { k, c, _ in SortKey(.descending(c.title), .ascending(k)) }),
                            "seed \(seed) round \(round)")
                    #expect(try stored(mixed) == expected({ _, c, _ in c.minutes > 30 ? "long" : "short" }, { _, c, n in SortKey(.ascending(n?.pinned ?? false), .ascending(c.title)) }),
                            "seed \(seed) round \(round)")
                    #expect(try stored(untyped) == expected({ _, c, _ in c.room }, { _, c, _ in SortKey(.ascending(c.minutes)) }), "seed \(seed) round \(round)")
                    #expect(try stored(pinned) == expected({ _, _, n in n?.pinned == true ? "pinned" : nil }, { _, c, _ in SortKey(.ascending(c.title)) }),
                            "seed \(seed) round \(round)")
                    for view in views { #expect(try txn.view(view.name).checkInvariants() == [], "seed \(seed) round \(round) view \(view.name)") }
                }
            }
        }
    }

    private func randomChore(_ round: Int, _ random: inout SeededRandom) -> Chore {
        let rooms = ["kitchen", "hall", "a room whose name is longer than fifteen bytes", "attic"]
        return Chore(title: "chore \(Int.random(in: 0..<25, using: &random)) \(round)", room: rooms[Int.random(in: 0..<rooms.count, using: &random)],
                     minutes: Int.random(in: 1...60, using: &random), done: Int.random(in: 0..<4, using: &random) == 0)
    }
}

private func < (lhs: ([UInt8], [UInt8]), rhs: ([UInt8], [UInt8])) -> Bool {
    lhs.0 == rhs.0 ? lhs.1.lexicographicallyPrecedes(rhs.1) : lhs.0.lexicographicallyPrecedes(rhs.0)
}
