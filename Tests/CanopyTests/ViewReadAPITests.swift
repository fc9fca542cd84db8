import Canopy
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// Every method of ``ViewReader`` with exact expected values on a small hand-built dataset, then against a brute-force
/// model on a random dataset with multi-component sort keys.
@Suite("View read API")
struct ViewReadAPITests {
    // MARK: Hand-built dataset

    struct Book: Codable, Sendable, Equatable {
        var title: String
        var author: String
        var year: Int
        var genre: String?
    }

    static let books = TypedCollection<Book, NoteInfo>("books")
    static let anthology = TypedCollection<Book, NoteInfo>("anthology")
    static let magazines = TypedCollection<Book, NoteInfo>("magazines")

    /// Books grouped by genre (no genre: not in the view), by author, then newest first, then title. Magazines are not
    /// an allowed collection.
    static func makeBookView() -> View {
        View(
            name: "books",
            grouping: .byRow { row in try row.object(as: Book.self).genre },
            sorting: .byRow { _, row in
                let book = try row.object(as: Book.self)
                return SortKey(.ascending(book.author), .descending(book.year), .ascending(book.title))
            },
            options: ViewOptions(allowedCollections: ["books", "anthology"]))
    }

    static func book(_ key: String) -> RowID { RowID(collection: "books", key: key) }

    /// The rows of "fiction" in order. "anthology" is written after "books", so on equal sort keys books/b6 comes
    /// before anthology/b6 although "anthology" sorts first by name; b1 and b10 tie and order by key.
    static let fiction: [RowID] = [
        book("b6"), RowID(collection: "anthology", key: "b6"), book("b1"), book("b10"), book("b2"), book("b3"), book("b4"), book("b5"),
    ]

    /// A database with the book view registered and the hand-built rows written.
    func withBooks(_ body: (Database, Connection) throws -> Void) throws {
        try withDatabase { database, _ in
            try database.register(Self.makeBookView())
            let connection = database.newConnection()
            try connection.readWrite { txn throws in
                let emma = Book(title: "Emma", author: "Austen", year: 1815, genre: "fiction")
                try txn.set(Book(title: "Dune", author: "Herbert", year: 1965, genre: "fiction"), forKey: "b1", in: Self.books)
                try txn.set(Book(title: "Dune", author: "Herbert", year: 1965, genre: "fiction"), forKey: "b10", in: Self.books)
                try txn.set(Book(title: "The Dispossessed", author: "Le Guin", year: 1974, genre: "fiction"), forKey: "b2", in: Self.books)
                try txn.set(Book(title: "The Left Hand of Darkness", author: "Le Guin", year: 1969, genre: "fiction"), forKey: "b3", in: Self.books)
                try txn.set(Book(title: "Solaris", author: "Lem", year: 1961, genre: "fiction"), forKey: "b4", in: Self.books)
                try txn.set(Book(title: "The Hobbit", author: "Tolkien", year: 1937, genre: "fiction"), forKey: "b5", in: Self.books)
                try txn.set(emma, forKey: "b6", in: Self.books)
                try txn.set(Book(title: "Ariel", author: "Plath", year: 1965, genre: "poetry"), forKey: "p1", in: Self.books)
                try txn.set(Book(title: "Leaves of Grass", author: "Whitman", year: 1855, genre: "poetry"), forKey: "p2", in: Self.books)
                try txn.set(Book(title: "Zine", author: "Anon", year: 2000, genre: "Zines"), forKey: "z1", in: Self.books)
                try txn.set(Book(title: "Pnin", author: "Nabokov", year: 1957, genre: "émigré"), forKey: "e1", in: Self.books)
                try txn.set(Book(title: "Notes", author: "Nobody", year: 2020, genre: nil), forKey: "x1", in: Self.books)
            }
            try connection.readWrite { txn throws in
                try txn.set(Book(title: "Emma", author: "Austen", year: 1815, genre: "fiction"), forKey: "b6", in: Self.anthology)
                try txn.set(Book(title: "Weekly", author: "Aaron", year: 2024, genre: "fiction"), forKey: "m1", in: Self.magazines)
            }
            try body(database, connection)
        }
    }

    @Test("Groups, counts and the number of groups")
    func groupsAndCounts() throws {
        try withBooks { _, connection in
            try connection.read { txn throws in
                let view = try txn.view("books")
                #expect(view.name == "books")
                #expect(view.snapshot == txn.snapshot)
                // By UTF-8 bytes: uppercase, then lowercase, then non-ASCII.
                #expect(try view.groups() == ["Zines", "fiction", "poetry", "émigré"])
                #expect(try view.numberOfGroups() == 4)
                #expect(try view.count() == 12)
                #expect(try view.count(inGroup: "fiction") == 8)
                #expect(try view.count(inGroup: "poetry") == 2)
                #expect(try view.count(inGroup: "émigré") == 1)
                #expect(try view.count(inGroup: "Fiction") == 0)
                #expect(try view.count(inGroup: "") == 0)
                #expect(try view.checkInvariants() == [])
            }
        }
    }

    @Test("rowID(at:) and rowIDs(inGroup:range:) return the rows in order, clamped")
    func rowsByPosition() throws {
        try withBooks { _, connection in
            try connection.read { txn throws in
                let view = try txn.view("books")
                for (index, id) in Self.fiction.enumerated() {
                    #expect(try view.rowID(at: index, inGroup: "fiction") == id)
                }
                for index in [-1, 8, 9, Int.max, Int.min] {
                    #expect(try view.rowID(at: index, inGroup: "fiction") == nil, "index \(index)")
                }
                #expect(try view.rowID(at: 0, inGroup: "nowhere") == nil)
                #expect(try view.rowIDs(inGroup: "fiction", range: 0..<Int.max) == Self.fiction)
                #expect(try view.rowIDs(inGroup: "fiction", range: Int.min..<Int.max) == Self.fiction)
                #expect(try view.rowIDs(inGroup: "fiction", range: -5..<2) == Array(Self.fiction[0..<2]))
                #expect(try view.rowIDs(inGroup: "fiction", range: 2..<5) == Array(Self.fiction[2..<5]))
                #expect(try view.rowIDs(inGroup: "fiction", range: 6..<100) == Array(Self.fiction[6..<8]))
                #expect(try view.rowIDs(inGroup: "fiction", range: 8..<10) == [])
                #expect(try view.rowIDs(inGroup: "fiction", range: 3..<3) == [])
                #expect(try view.rowIDs(inGroup: "fiction", range: -3..<0) == [])
                #expect(try view.rowIDs(inGroup: "nowhere", range: 0..<10) == [])
                #expect(try view.rowIDs(inGroup: "poetry", range: 0..<10) == [Self.book("p1"), Self.book("p2")])
            }
        }
    }

    /// Offset, limit and direction, with the rows expected of "fiction" (indexes into ``fiction``).
    static let slices: [(offset: Int, limit: Int, reversed: Bool, expected: [Int])] = [
        (0, .max, false, [0, 1, 2, 3, 4, 5, 6, 7]),
        (0, .max, true, [7, 6, 5, 4, 3, 2, 1, 0]),
        (1, 2, false, [1, 2]),
        (1, 2, true, [6, 5]),
        (6, 5, false, [6, 7]),
        (6, 5, true, [1, 0]),
        (7, 1, true, [0]),
        (8, 1, false, []),
        (8, 1, true, []),
        (100, 3, false, []),
        (0, 0, false, []),
        (0, -2, true, []),
        (-2, 3, false, [0, 1, 2]),
        (-2, 3, true, [7, 6, 5]),
        (Int.min, 2, false, [0, 1]),
        (3, .max, false, [3, 4, 5, 6, 7]),
        (3, .max, true, [4, 3, 2, 1, 0]),
    ]

    @Test("rowIDs(inGroup:offset:limit:reversed:) slices from either end", arguments: slices.indices)
    func offsetLimitReversed(slice: Int) throws {
        let (offset, limit, reversed, expected) = Self.slices[slice]
        try withBooks { _, connection in
            try connection.read { txn throws in
                let view = try txn.view("books")
                #expect(try view.rowIDs(inGroup: "fiction", offset: offset, limit: limit, reversed: reversed) == expected.map { Self.fiction[$0] },
                        "offset \(offset) limit \(limit) reversed \(reversed)")
                #expect(try view.rowIDs(inGroup: "nowhere", offset: offset, limit: limit, reversed: reversed) == [])
            }
        }
    }

    @Test("first and last of a group; nil for empty and unknown groups")
    func firstAndLast() throws {
        try withBooks { _, connection in
            try connection.read { txn throws in
                let view = try txn.view("books")
                #expect(try view.first(inGroup: "fiction") == Self.book("b6"))
                #expect(try view.last(inGroup: "fiction") == Self.book("b5"))
                #expect(try view.first(inGroup: "émigré") == Self.book("e1"))
                #expect(try view.last(inGroup: "émigré") == Self.book("e1"))
                #expect(try view.first(inGroup: "nowhere") == nil)
                #expect(try view.last(inGroup: "nowhere") == nil)
            }
            // A group whose rows all leave is empty: gone from the groups, first and last are nil.
            try connection.readWrite { txn throws in
                _ = try txn.remove(key: "p1", in: Self.books)
                try txn.set(Book(title: "Leaves of Grass", author: "Whitman", year: 1855, genre: nil), forKey: "p2", in: Self.books)
            }
            try connection.read { txn throws in
                let view = try txn.view("books")
                #expect(try view.groups() == ["Zines", "fiction", "émigré"])
                #expect(try view.count(inGroup: "poetry") == 0)
                #expect(try view.count() == 10)
                #expect(try view.first(inGroup: "poetry") == nil)
                #expect(try view.last(inGroup: "poetry") == nil)
                #expect(try view.rowIDs(inGroup: "poetry", range: 0..<Int.max) == [])
                #expect(try view.rowIDs(inGroup: "poetry", offset: 0, limit: 5, reversed: true) == [])
                #expect(try view.findRange(inGroup: "poetry") { _ in .matching }.isEmpty)
                #expect(try view.checkInvariants() == [])
            }
        }
    }

    @Test("position(of:) and entry(of:) for rows in the view and rows that are not")
    func positionsAndEntries() throws {
        try withBooks { _, connection in
            try connection.read { txn throws in
                let view = try txn.view("books")
                for (index, id) in Self.fiction.enumerated() {
                    #expect(try view.position(of: id)! == ("fiction", index), "\(id)")
                    #expect(try view.position(ofKey: id.key, inCollection: id.collection)! == ("fiction", index), "\(id)")
                    let entry = try #require(try view.entry(of: id))
                    #expect(entry.group == "fiction")
                    #expect(try view.lowerBound(of: entry) == index, "\(id)")
                }
                #expect(try view.position(of: Self.book("p2"))! == ("poetry", 1))
                #expect(try view.position(of: Self.book("z1"))! == ("Zines", 0))
                // The order bytes start with the sort key.
                let dune = SortKey(.ascending("Herbert"), .descending(1965), .ascending("Dune"))
                #expect(try view.entry(of: Self.book("b1"))?.orderBytes.starts(with: dune.bytes) == true)
                #expect(try view.entry(of: Self.book("b1"))!.orderBytes.count > dune.bytes.count)
                #expect(try view.entry(of: Self.book("b1"))! < view.entry(of: Self.book("b10"))!)
                // Not in the view: no group, a collection the view doesn't allow, unknown collection or key.
                let absent = [Self.book("x1"), RowID(collection: "magazines", key: "m1"), RowID(collection: "nowhere", key: "b1"),
                              Self.book("nope"), Self.book(""), RowID(collection: "anthology", key: "b1")]
                for id in absent {
                    #expect(try view.position(of: id) == nil, "\(id)")
                    #expect(try view.entry(of: id) == nil, "\(id)")
                }
            }
            // A removed row has no position any more; the rows after it move up.
            try connection.readWrite { txn throws in _ = try txn.remove(key: "b1", in: Self.books) }
            try connection.read { txn throws in
                let view = try txn.view("books")
                #expect(try view.position(of: Self.book("b1")) == nil)
                #expect(try view.position(of: Self.book("b10"))! == ("fiction", 2))
            }
        }
    }

    @Test("lowerBound(of:) counts the rows before an entry that need not be in the view")
    func lowerBounds() throws {
        try withBooks { _, connection in
            try connection.read { txn throws in
                let view = try txn.view("books")
                func bound(_ group: String, _ bytes: [UInt8]) throws -> Int { try view.lowerBound(of: ViewEntry(group: group, orderBytes: bytes)) }
                #expect(try bound("fiction", []) == 0)
                #expect(try bound("fiction", SortKey(.ascending("A")).bytes) == 0)
                // Austen ×2 and Herbert ×2 sort before "L"; "Le Guin" and "Lem" after it.
                #expect(try bound("fiction", SortKey(.ascending("L")).bytes) == 4)
                #expect(try bound("fiction", SortKey(.ascending("Le Guin")).bytes) == 4)
                // Within "Le Guin", newest first: 1974 comes before 1970, 1969 after it.
                #expect(try bound("fiction", SortKey(.ascending("Le Guin"), .descending(1970)).bytes) == 5)
                #expect(try bound("fiction", SortKey(.ascending("Lem")).bytes) == 6)
                #expect(try bound("fiction", SortKey(.ascending("Z")).bytes) == 8)
                #expect(try bound("fiction", [0xFF]) == 8)
                #expect(try bound("nowhere", SortKey(.ascending("L")).bytes) == 0)
            }
        }
    }

    @Test("findRange(inGroup:_:) finds the rows matching a prefix with a binary search")
    func findRangeByPrefix() throws {
        try withBooks { _, connection in
            try connection.read { txn throws in
                let view = try txn.view("books")
                var calls = 0
                func authors(withPrefix prefix: String, in group: String = "fiction") throws -> Range<Int> {
                    try view.findRange(inGroup: group) { id in
                        calls += 1
                        let collection = id.collection == "books" ? Self.books : Self.anthology
                        let author = try #require(try txn.object(forKey: id.key, in: collection)).author
                        if author.hasPrefix(prefix) { return .matching }
                        return author.utf8.lexicographicallyPrecedes(prefix.utf8) ? .before : .after
                    }
                }
                #expect(try authors(withPrefix: "Le") == 4..<7)
                #expect(try authors(withPrefix: "Le ") == 4..<6)
                #expect(try authors(withPrefix: "Lem") == 6..<7)
                #expect(try authors(withPrefix: "Aus") == 0..<2)
                #expect(try authors(withPrefix: "Tolkien") == 7..<8)
                #expect(try authors(withPrefix: "") == 0..<8)
                #expect(try authors(withPrefix: "M").isEmpty)
                #expect(try authors(withPrefix: "A").isEmpty == false)
                #expect(try authors(withPrefix: "0").isEmpty)
                #expect(try authors(withPrefix: "zzz").isEmpty)
                #expect(try authors(withPrefix: "Plath", in: "poetry") == 0..<1)
                #expect(try authors(withPrefix: "Le", in: "nowhere").isEmpty)
                // Two binary searches over 8 rows: at most 2 × 4 comparisons, not one per row.
                calls = 0
                _ = try authors(withPrefix: "Le")
                #expect(calls <= 8)
            }
        }
    }

    @Test("object(at:inGroup:in:) decodes through a TypedCollection, nil for another collection or out of range")
    func objectsByPosition() throws {
        try withBooks { _, connection in
            try connection.read { txn throws in
                let view = try txn.view("books")
                let emma = Book(title: "Emma", author: "Austen", year: 1815, genre: "fiction")
                #expect(try view.object(at: 0, inGroup: "fiction", in: Self.books) == emma)
                // Index 1 is the anthology's row: not a row of "books".
                #expect(try view.object(at: 1, inGroup: "fiction", in: Self.books) == nil)
                #expect(try view.object(at: 1, inGroup: "fiction", in: Self.anthology) == emma)
                #expect(try view.object(at: 7, inGroup: "fiction", in: Self.books)?.title == "The Hobbit")
                #expect(try view.object(at: 1, inGroup: "poetry", in: Self.books)?.title == "Leaves of Grass")
                #expect(try view.object(at: 8, inGroup: "fiction", in: Self.books) == nil)
                #expect(try view.object(at: -1, inGroup: "fiction", in: Self.books) == nil)
                #expect(try view.object(at: 0, inGroup: "nowhere", in: Self.books) == nil)
            }
        }
    }

    @Test("An empty view answers every question with nothing")
    func emptyView() throws {
        try withDatabase { database, _ in
            try database.register(Self.makeBookView())
            try database.newConnection().read { txn throws in
                let view = try txn.view("books")
                #expect(try view.groups() == [])
                #expect(try view.numberOfGroups() == 0)
                #expect(try view.count() == 0)
                #expect(try view.rowID(at: 0, inGroup: "fiction") == nil)
                #expect(try view.first(inGroup: "fiction") == nil)
                #expect(try view.last(inGroup: "fiction") == nil)
                #expect(try view.position(of: Self.book("b1")) == nil)
                #expect(try view.entry(of: Self.book("b1")) == nil)
                #expect(try view.lowerBound(of: ViewEntry(group: "fiction", orderBytes: [1])) == 0)
                #expect(try view.findRange(inGroup: "fiction") { _ in .matching } == 0..<0)
                #expect(try view.checkInvariants() == [])
            }
        }
    }

    // MARK: Brute force

    struct Item: Codable, Sendable, Equatable {
        var name: String
        var rank: Int
        var score: Double
        var when: Date
        var flag: Bool
        var group: String?
    }

    static let items = TypedCollection<Item, NoteInfo>("items")
    static let extra = TypedCollection<Item, NoteInfo>("extra")

    /// Sorted by flag (false first), rank descending, name ascending (descending in "g3"), score descending, date
    /// ascending; ties by collection ("extra" was written first), then key.
    static func makeItemView() -> View {
        View(
            name: "items",
            grouping: .byRow { row in try row.object(as: Item.self).group },
            sorting: .byRow { group, row in
                let item = try row.object(as: Item.self)
                return SortKey(.ascending(item.flag), .descending(item.rank), group == "g3" ? .descending(item.name) : .ascending(item.name),
                               .descending(item.score), .ascending(item.when))
            })
    }

    static let names = ["", "a", "ab", "abc", "a\u{0}", "a\u{0}b", "b", "B", "é", "zz", "Zz"]
    static let ranks = [Int.min, -5, -1, 0, 1, 7, Int.max]
    static let scores = [-Double.infinity, -2.5, -0.0, 0.0, 1e-300, 3.25, .infinity]
    static let dates = [-31_536_000, 0, 1.5, 1e9, 1e9 + 0.001].map { Date(timeIntervalSince1970: $0) }
    static let groupNames: [String?] = ["g0", "g1", "g2", "g3", "g0", "g1", "g2", "g3", nil]

    static func randomItem(_ random: inout SeededRandom) -> Item {
        Item(name: names.randomElement(using: &random)!, rank: ranks.randomElement(using: &random)!,
             score: scores.randomElement(using: &random)!, when: dates.randomElement(using: &random)!,
             flag: Bool.random(using: &random), group: groupNames.randomElement(using: &random)!)
    }

    /// -1, 0 or 1 as `lhs` sorts before, with or after `rhs`.
    static func compare<T: Comparable>(_ lhs: T, _ rhs: T) -> Int { lhs < rhs ? -1 : (rhs < lhs ? 1 : 0) }

    static func compareBytes(_ lhs: String, _ rhs: String) -> Int {
        lhs.utf8.lexicographicallyPrecedes(rhs.utf8) ? -1 : (rhs.utf8.lexicographicallyPrecedes(lhs.utf8) ? 1 : 0)
    }

    /// The model's order of two rows of one group, written from the values (not from sort-key bytes).
    static func precedes(_ lhs: (id: RowID, item: Item), _ rhs: (id: RowID, item: Item), group: String) -> Bool {
        let components = [
            compare(lhs.item.flag ? 1 : 0, rhs.item.flag ? 1 : 0),
            -compare(lhs.item.rank, rhs.item.rank),
            group == "g3" ? -compareBytes(lhs.item.name, rhs.item.name) : compareBytes(lhs.item.name, rhs.item.name),
            -compare(lhs.item.score, rhs.item.score),
            compare(lhs.item.when, rhs.item.when),
            // "extra" has the smaller collection id.
            compare(lhs.id.collection == "extra" ? 0 : 1, rhs.id.collection == "extra" ? 0 : 1),
            compareBytes(lhs.id.key, rhs.id.key),
        ]
        return (components.first { $0 != 0 } ?? 0) < 0
    }

    /// The groups of the model, each sorted by ``precedes(_:_:group:)``.
    static func modelGroups(_ model: [RowID: Item]) -> [String: [RowID]] {
        var groups: [String: [(id: RowID, item: Item)]] = [:]
        for (id, item) in model { if let group = item.group { groups[group, default: []].append((id, item)) } }
        return groups.reduce(into: [:]) { result, entry in
            result[entry.key] = entry.value.sorted { precedes($0, $1, group: entry.key) }.map(\.id)
        }
    }

    /// Checks every reader method against the model.
    static func expectMatchesModel(_ txn: ReadTransaction, _ model: [RowID: Item], random: inout SeededRandom, _ note: String) throws {
        let view = try txn.view("items")
        let groups = modelGroups(model)
        let comment = Comment(rawValue: note)
        #expect(try view.groups() == groups.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }, comment)
        #expect(try view.numberOfGroups() == groups.count, comment)
        #expect(try view.count() == groups.values.reduce(0) { $0 + $1.count }, comment)
        for (group, rows) in groups.sorted(by: { $0.key < $1.key }) {
            #expect(try view.count(inGroup: group) == rows.count, comment)
            let all = try view.rowIDs(inGroup: group, range: 0..<Int.max)
            #expect(all == rows, "\(note) group \(group)")
            guard all == rows else { continue }
            #expect(try view.first(inGroup: group) == rows.first, comment)
            #expect(try view.last(inGroup: group) == rows.last, comment)
            for _ in 0..<40 {
                let index = Int.random(in: -2...(rows.count + 1), using: &random)
                #expect(try view.rowID(at: index, inGroup: group) == (rows.indices.contains(index) ? rows[index] : nil), "\(note) \(group)[\(index)]")
                let lower = Int.random(in: -3...(rows.count + 3), using: &random)
                let upper = lower + Int.random(in: 0...80, using: &random)
                let clamped = max(0, min(lower, rows.count))..<max(0, min(upper, rows.count))
                #expect(try view.rowIDs(inGroup: group, range: lower..<upper) == Array(rows[clamped]), "\(note) \(group)[\(lower)..<\(upper)]")
                let offset = Int.random(in: -2...(rows.count + 2), using: &random)
                let limit = Bool.random(using: &random) ? Int.max : Int.random(in: -1...90, using: &random)
                let reversed = Bool.random(using: &random)
                let ordered = reversed ? Array(rows.reversed()) : rows
                let expected = limit <= 0 ? [] : Array(ordered.dropFirst(max(0, offset)).prefix(limit))
                #expect(try view.rowIDs(inGroup: group, offset: offset, limit: limit, reversed: reversed) == expected,
                        "\(note) \(group) offset \(offset) limit \(limit) reversed \(reversed)")
                if rows.indices.contains(index) {
                    let collection = rows[index].collection == "items" ? items : extra
                    #expect(try view.object(at: index, inGroup: group, in: collection) == model[rows[index]], "\(note) \(group)[\(index)]")
                }
            }
            // findRange for rows with a given (flag, rank): the first two components, so the matches are contiguous.
            for _ in 0..<6 {
                let flag = Bool.random(using: &random)
                let rank = ranks.randomElement(using: &random)!
                var calls = 0
                let found = try view.findRange(inGroup: group) { id in
                    calls += 1
                    let item = try #require(model[id])
                    let order = item.flag != flag ? compare(item.flag ? 1 : 0, flag ? 1 : 0) : -compare(item.rank, rank)
                    return order < 0 ? .before : (order == 0 ? .matching : .after)
                }
                let matching = rows.indices.filter { model[rows[$0]]!.flag == flag && model[rows[$0]]!.rank == rank }
                if let first = matching.first, let last = matching.last {
                    #expect(found == first..<(last + 1), "\(note) \(group) flag \(flag) rank \(rank)")
                } else {
                    #expect(found.isEmpty, "\(note) \(group) flag \(flag) rank \(rank)")
                }
                // Two binary searches, not a scan.
                let depth = Int.bitWidth - rows.count.leadingZeroBitCount + 1
                #expect(calls <= 2 * depth, "\(note) \(group): \(calls) comparisons for \(rows.count) rows")
            }
        }
        // Every row's position, and the rows that are not in the view.
        var positions: [RowID: (String, Int)] = [:]
        for (group, rows) in groups { for (index, id) in rows.enumerated() { positions[id] = (group, index) } }
        for id in model.keys.sorted() {
            let position = try view.position(of: id)
            #expect(position?.group == positions[id]?.0 && position?.index == positions[id]?.1, "\(note) \(id)")
            if let entry = try view.entry(of: id) {
                #expect(try view.lowerBound(of: entry) == positions[id]?.1, "\(note) \(id)")
            } else {
                #expect(positions[id] == nil, "\(note) \(id)")
            }
        }
        #expect(try view.position(of: RowID(collection: "items", key: "never")) == nil, comment)
        #expect(try view.checkInvariants() == [], comment)
    }

    @Test("Every reader method agrees with a brute-force model on a random dataset", arguments: [7 as UInt64, 2024])
    func bruteForce(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        try withDatabase { database, _ in
            let connection = database.newConnection()
            var model: [RowID: Item] = [:]
            // Rows written before the view is registered (population), "extra" first.
            try connection.readWrite { txn throws in
                for i in 0..<300 {
                    let item = Self.randomItem(&random)
                    try txn.set(item, forKey: "e\(i)", in: Self.extra)
                    model[RowID(collection: "extra", key: "e\(i)")] = item
                }
            }
            try connection.readWrite { txn throws in
                for i in 0..<1_400 {
                    // Keys of varied lengths, some shared with "extra".
                    let key = i % 5 == 0 ? "e\(i % 300)" : "r\(i)"
                    let item = Self.randomItem(&random)
                    try txn.set(item, forKey: key, in: Self.items)
                    model[RowID(collection: "items", key: key)] = item
                }
            }
            let view = Self.makeItemView()
            try database.register(view)
            #expect(view.lastPopulation?.rowsExamined == model.count, "seed \(seed)")
            try connection.read { txn throws in try Self.expectMatchesModel(txn, model, random: &random, "seed \(seed) after population") }

            // Then incremental writes: inserts, updates (within and across groups, in and out of the view) and removals.
            for round in 0..<3 {
                try connection.readWrite { txn throws in
                    for _ in 0..<250 {
                        let collection = Int.random(in: 0..<4, using: &random) == 0 ? Self.extra : Self.items
                        let key = "r\(Int.random(in: 0..<2_200, using: &random))"
                        let id = RowID(collection: collection.name, key: key)
                        if Int.random(in: 0..<4, using: &random) == 0 {
                            _ = try txn.remove(key: key, in: collection)
                            model[id] = nil
                        } else {
                            let item = Self.randomItem(&random)
                            try txn.set(item, forKey: key, in: collection)
                            model[id] = item
                        }
                    }
                }
                try connection.read { txn throws in try Self.expectMatchesModel(txn, model, random: &random, "seed \(seed) round \(round)") }
            }
        }
    }
}
