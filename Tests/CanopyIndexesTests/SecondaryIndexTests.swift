import CanopyCore
import CanopyCoreTestFixtures
import CanopyIndexes
import CanopyTestSupport
import Testing

/// A row for the secondary-index tests: indexed by `score` (which may be negative) or by `name`.
private struct Scored: Codable, Sendable, Equatable {
    var score: Int64
    var name: String
}

private let scored = TypedCollection<Scored, NoMetadata>("scored")
private let others = TypedCollection<Scored, NoMetadata>("others")

@Suite("Secondary index")
struct SecondaryIndexTests {
    /// The secondary index against a model, over random inserts, updates (moving values), removals and a
    /// collection-wide removal, with lookups by value and by range after every commit; then a fresh registration over
    /// the same rows (population from the row scan) must answer the same.
    @Test(arguments: [UInt64(0x5EC0_0001), 0x5EC0_0002, 0x5EC0_0003])
    func secondaryIndexAnswersLikeAModel(seed: UInt64) throws {
        try withDatabase { database, _ in
            var random = SeededRandom(seed: seed)
            let byScore = SecondaryIndex<Int64OrderedCoding>.byObject(name: "by-score", scored) { _, row in
                row.score == 0 ? nil : row.score  // 0 leaves the row out
            }
            try database.register(byScore)
            let connection = database.newConnection()
            var model: [String: Int64] = [:]
            var history: [String] = []
            func check(_ index: SecondaryIndex<Int64OrderedCoding>) throws {
                try connection.read { txn in
                    #expect(try index.count(in: txn) == model.count, "seed \(seed): \(history.suffix(5))")
                    for _ in 0..<6 {
                        let a = Int64.random(in: -20...20, using: &random)
                        let b = a + Int64.random(in: 0...15, using: &random)
                        let expected = model.filter { $0.value >= a && $0.value <= b }
                            .sorted { ($0.value, $0.key) < ($1.value, $1.key) }.map(\.key)
                        let found = try index.rowIDs(in: a...b, in: txn).map(\.key)
                        #expect(found == expected, "seed \(seed) range \(a)...\(b) after \(history.suffix(5))")
                        let equal = try index.rowIDs(equalTo: a, in: txn).map(\.key)
                        #expect(equal == model.filter { $0.value == a }.map(\.key).sorted(), "seed \(seed) value \(a)")
                        let open = try index.rowIDs(in: a..<b, in: txn, limit: 3).map(\.key)
                        #expect(open == Array(model.filter { $0.value >= a && $0.value < b }
                            .sorted { ($0.value, $0.key) < ($1.value, $1.key) }.map(\.key).prefix(3)), "seed \(seed)")
                    }
                }
            }
            for _ in 0..<60 {
                try connection.readWrite { txn in
                    for _ in 0..<Int.random(in: 1...4, using: &random) {
                        let key = "k\(Int.random(in: 0..<25, using: &random))"
                        switch Int.random(in: 0..<10, using: &random) {
                        case 0..<6:
                            let score = Int64.random(in: -20...20, using: &random)
                            try txn.set(Scored(score: score, name: key), forKey: key, in: scored)
                            model[key] = score == 0 ? nil : score
                            history.append("set \(key)=\(score)")
                        case 6..<8:
                            try txn.remove(key: key, in: scored)
                            model[key] = nil
                            history.append("remove \(key)")
                        case 8:
                            // Rows of another collection are not indexed.
                            try txn.set(Scored(score: 5, name: key), forKey: key, in: others)
                        default:
                            if Int.random(in: 0..<4, using: &random) == 0 {
                                try txn.removeAll(inCollection: "scored")
                                model.removeAll()
                                history.append("removeAll")
                            }
                        }
                    }
                }
                try check(byScore)
            }
            try connection.read { txn throws in
                for (key, value) in model { #expect(try byScore.value(of: RowID(collection: "scored", key: key), in: txn) == value) }
            }
            // Population from the row scan gives the same index.
            try database.unregisterExtension(named: "by-score", dropStorage: true)
            let rebuilt = SecondaryIndex<Int64OrderedCoding>.byObject(name: "by-score", scored) { _, row in
                row.score == 0 ? nil : row.score
            }
            try database.register(rebuilt)
            try check(rebuilt)
        }
    }

    @Test func stringValuesKeepByteOrderAcrossLengths() throws {
        try withDatabase { database, _ in
            let byName = SecondaryIndex<StringUTF8Coding>.byObject(name: "by-name", scored) { _, row in row.name }
            try database.register(byName)
            let names = ["ab", "a", "abc", "b", "a\u{0}z", "", "aa"]
            try database.newConnection().readWrite { txn in
                for (i, name) in names.enumerated() { try txn.set(Scored(score: 0, name: name), forKey: "r\(i)", in: scored) }
            }
            try database.newConnection().read { txn in
                let ordered = try byName.rowIDs(in: ""..."zzz", in: txn).map { names[Int($0.key.dropFirst())!] }
                #expect(ordered == names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
                #expect(try byName.rowIDs(equalTo: "a", in: txn).map(\.key) == ["r1"])
                #expect(try byName.rowIDs(in: "a"..<"ab", in: txn).map(\.key).sorted() == ["r1", "r4", "r6"])
            }
        }
    }
}
