import Canopy
import CanopyCLI
import CanopyTestSupport
import Foundation
import Testing

/// A view sorted by memos' whole texts, some of them kilobytes long (an entry larger than a view page has a page of
/// its own): `canopy verify` finds the healthy database healthy, and `canopy view` lists the rows in order.
@Suite("canopy: views with long sort keys")
struct LongSortKeyCLITests {
    /// Writes `rounds` of rows after registering a view sorted by text (the write path, a transaction per round),
    /// then registers a second view over the same rows (population).
    static func write(_ rounds: [[(String, String, String)]], at path: String) throws {
        let database = try Database(path: path, options: .init(durability: .none))
        let byText = View(name: "by-text", grouping: .byObject(memos) { _, memo in memo.tags.first ?? "none" },
                          sorting: .byObject(memos) { _, _, memo in SortKey(.ascending(memo.text)) }, versionTag: "1")
        try database.register(byText)
        for round in rounds {
            try database.newConnection().readWrite { txn in
                for (key, text, group) in round { try txn.set(Memo(text: text, tags: [group]), forKey: key, in: memos) }
            }
        }
        try database.register(View(name: "by-text-populated", grouping: .byObject(memos) { _, _ in "all" },
                                   sorting: .byObject(memos) { _, _, memo in SortKey(.ascending(memo.text)) }, versionTag: "1"))
    }

    @Test("verify accepts a view whose sort keys are 1 KB to 100 KB, in one group and spread; view lists them in order")
    func verifyLongKeys() async throws {
        let directory = try TemporaryDirectory(prefix: "canopy-cli-test")
        defer { directory.remove() }
        let path = directory.appending("db")
        let lengths = [1_000, 2_000, 4_000, 100_000, 12, 3_000, 40]
        // Three rounds of rows: (key, text, group).
        let rounds = (0..<3).map { round in
            lengths.enumerated().map { number, length in
                ("m\(round)-\(number)", String(UnicodeScalar(UInt8(97 + (number * 7 + round * 3) % 26))) + String(repeating: "x", count: length),
                 number % 2 == 0 ? "shop" : "home")
            }
        }
        var expected: [String: [(text: String, key: String)]] = [:]
        for row in rounds.joined() { expected[row.2, default: []].append((row.1, row.0)) }
        try Self.write(rounds, at: path)
        let verify = await canopy("verify", path)
        #expect(verify.status == 0, "\(verify.output)\(verify.errors)")
        let json = try await canopy("verify", path, "--json").json()
        #expect(json["ok"] == .bool(true), "\(json)")
        let listed = try await canopy("view", path, "by-text", "--group", "shop", "--json").json()
        let keys = listed["rows"]?.elements.compactMap { $0["key"]?.stringValue }
        let order = expected["shop", default: []].sorted { $0.text == $1.text ? $0.key < $1.key : $0.text.utf8.lexicographicallyPrecedes($1.text.utf8) }
        #expect(keys == order.map(\.key), "\(String(describing: keys))")
    }
}
