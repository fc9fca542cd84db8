import CanopyTestSupport
import LMDB
import Testing

/// A kept cursor (``WriteTransaction/keptCursor(in:)``) seeks a key, other writes change the same table (puts and
/// deletes through the transaction, splitting and merging pages), then the cursor writes the key: the write lands at
/// the key's place whatever the cursor's page became, and the cursor is refused once the transaction ended.
@Suite struct KeptCursorTests {
    @Test(arguments: [UInt64(1), 2, 3])
    func keptCursorWritesTheRightPlaceAfterOtherWritesOfTheTable(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        try withEnvironment(.init(maxDatabases: 4)) { env, _ in
            let table = try env.openDatabase(named: "rows", create: true).withChecksums
            var model: [[UInt8]: [UInt8]] = [:]
            var keptAfterCommit: Cursor?
            try env.write { txn in
                let cursor = try txn.keptCursor(in: table)
                keptAfterCommit = cursor
                for step in 0..<3_000 {
                    let k = key(Int.random(in: 0..<800, using: &random))
                    let found = try k.withUnsafeBytes { try cursor.seek(key: $0).map { Array($0) } }
                    #expect(found == model[k] as [UInt8]?, "seed \(seed) step \(step): seek of key \(k) found \(found?.count ?? -1) bytes, expected \(model[k]?.count ?? -1)")
                    // Other writes of the same table between the read and the write, as a writer's own writes would.
                    for _ in 0..<Int.random(in: 0..<4, using: &random) {
                        let other = key(Int.random(in: 0..<800, using: &random))
                        if Bool.random(using: &random) {
                            let v = value(step, count: Int.random(in: 1..<600, using: &random))
                            try txn.put(v, forKey: other, in: table)
                            model[other] = v
                        } else {
                            _ = try txn.delete(other, in: table)
                            model[other] = nil
                        }
                    }
                    let v = value(step &+ 1, count: Int.random(in: 1..<600, using: &random))
                    try k.withUnsafeBytes { kb in try cursor.putReserving(v.count, forKey: kb) { $0.copyBytes(from: v) } }
                    model[k] = v
                }
            }
            #expect(try env.read { try entries(of: table, in: $0) } == model, "seed \(seed)")
            // Closed with its transaction: a typed error, not a freed cursor.
            #expect(throws: LMDBError.self) { try key(1).withUnsafeBytes { _ = try keptAfterCommit?.seek(key: $0) } }
        }
    }
}
