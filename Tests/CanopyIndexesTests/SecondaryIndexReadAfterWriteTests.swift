import CanopyCore
import CanopyCoreTestFixtures
import CanopyIndexes
import CanopyTestSupport
import Testing

private struct Priced: Codable, Sendable, Equatable {
    var price: Int64
}

private let priced = TypedCollection<Priced, NoMetadata>("priced")

/// Lookups of a secondary index inside a write transaction read its writes so far: the index keeps no read object
/// (no directory copied when a lookup starts), so a lookup after a write in the same transaction sees it.
@Suite("Secondary index: lookups after writes in the same transaction")
struct SecondaryIndexReadAfterWriteTests {
    @Test("rowIDs, value and count after inserts, moves and removals in the transaction that made them")
    func readsItsWrites() throws {
        try withDatabase { database, _ in
            let byPrice = SecondaryIndex<Int64OrderedCoding>.byObject(name: "by-price", priced) { _, row in row.price }
            try database.register(byPrice)
            try database.newConnection().readWrite { txn in
                for number in 0..<10 { try txn.set(Priced(price: Int64(number)), forKey: "p\(number)", in: priced) }
            }
            try database.newConnection().readWrite { txn in
                #expect(try byPrice.rowIDs(in: 0...3, in: txn).map(\.key) == ["p0", "p1", "p2", "p3"])
                try txn.set(Priced(price: 2), forKey: "new", in: priced)
                try txn.set(Priced(price: 50), forKey: "p1", in: priced)
                _ = try txn.remove(key: "p3", in: priced)
                #expect(try byPrice.rowIDs(in: 0...3, in: txn).map(\.key) == ["p0", "new", "p2"])
                #expect(try byPrice.value(of: RowID(collection: "priced", key: "p1"), in: txn) == 50)
                #expect(try byPrice.value(of: RowID(collection: "priced", key: "p3"), in: txn) == nil)
                #expect(try byPrice.count(in: txn) == 10)
                #expect(try byPrice.rowIDs(in: 0..<100, in: txn, limit: -1).isEmpty)
            }
        }
    }
}
