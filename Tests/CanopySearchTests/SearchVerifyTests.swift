import Canopy
import CanopyCore
import CanopyTestSupport
import Testing
@testable import CanopySearch

/// The check of a stored search index (`ReadTransaction.checkSearchIndex`, what `canopy verify` runs): clean on an
/// intact index of long lists (many blocks, directories of several chunks), and each kind of damage named.
@Suite("Search index: the check of a stored index")
struct SearchVerifyTests {
    /// 9,000 notes holding `milk` (71 blocks: several directory chunks, and their summary), some removed and rewritten.
    static func withLongLists(_ body: (SearchIndex, Database) throws -> Void) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let index = makeNoteSearch(prefixLengths: [2])
        try database.register(index)
        try database.newConnection().readWrite { txn in
            for number in 0..<9_000 {
                try txn.set(Note(title: "milk \(number % 3 == 0 ? "oat" : "bread")", body: number % 5 == 0 ? "milk again" : nil), forKey: "n\(number)", in: notes)
            }
        }
        try database.newConnection().readWrite { txn in
            for number in stride(from: 0, to: 9_000, by: 7) { try txn.remove(key: "n\(number)", in: notes) }
            for number in stride(from: 1, to: 9_000, by: 11) { try txn.set(Note(title: "tea", body: nil), forKey: "n\(number)", in: notes) }
        }
        try body(index, database)
    }

    static func check(_ database: Database, _ index: SearchIndex) throws -> SearchIndexCheck {
        try database.newConnection().read { txn in try txn.checkSearchIndex(named: index.name) }
    }

    @Test("long lists, rows removed and rewritten: clean, in a read and in a write that changed rows (pending postings)")
    func intactLongLists() throws {
        try Self.withLongLists { index, database in
            let milk = try database.newConnection().read { txn in
                try SearchBlockDirectory.headers(of: Array("milk".utf8), in: index.tables().postingsDirectory, txn).count
            }
            #expect(milk > SearchBlockDirectory.maximumBlocks)
            let check = try Self.check(database, index)
            #expect(check.problems == [] && check.notChecked == nil, "\(check.problems)")
            let removed = Set(stride(from: 0, to: 9_000, by: 7)).subtracting(stride(from: 1, to: 9_000, by: 11))
            #expect(check.rows == 9_000 - removed.count)
            try database.newConnection().readWrite { txn in
                try txn.set(Note(title: "honey milk", body: nil), forKey: "new", in: notes)
                try txn.remove(key: "n3", in: notes)
                let inWrite = try txn.checkSearchIndex(named: index.name)
                #expect(inWrite.problems == [], "\(inWrite.problems)")
            }
        }
    }

    @Test("a row missing from the documents table, a posting of a row that is gone, a wrong length: each named")
    func damages() throws {
        try Self.withLongLists { index, database in
            let connection = database.newConnection()
            try connection.readWrite { txn in
                let tables = try index.tables()
                // Document 2 (n1 was rewritten: its first number is gone): remove the documents block of numbers 0–63.
                try tables.documents.table.remove(0, in: txn)
                // A posting of number 8 (n7, removed) in the open block of `tea`, which never held it.
                let teaKey = SearchPostingBlock.key(term: Array("tea".utf8), block: SearchPostingBlock.openBlock)
                let tea = try #require(try tables.postings.value(forKey: teaKey, in: txn))
                var run = try tea.withUnsafeBytes { try SearchPostingBlock.decode($0) }
                var extended = SearchPostingRun()
                extended.append(8) { $0.bytes += [1, 1, 0, 1, 1, 0] }
                for entry in 0..<run.count { extended.append(run.documents[entry], body: run.body(entry)) }
                run = extended
                try tables.postings.put(try SearchPostingBlock.encode(run, 0..<run.count, key: SearchPostingBlock.openBlock).value, forKey: teaKey, in: txn)
            }
            let problems = try Self.check(database, index).problems
            #expect(problems.contains { $0.contains("is missing from the documents table") }, "\(problems)")
            #expect(problems.contains { $0.contains("lists row number 8, which no row carries") }, "\(problems)")
            // The block's header changed with its rows: the directory no longer agrees.
            #expect(problems.contains { $0.contains("the directory's header of block open of word 'tea'") }, "\(problems)")
        }
    }

    @Test("the repair (the index dropped by a tool, rebuilt by the app): a results view over it agrees with its query again")
    func repairWithResultsView() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        func open() throws -> (Database, SearchIndex, SearchResultsView) {
            let database = try Database(path: path, options: .init(durability: .none))
            let index = makeNoteSearch()
            let results = SearchResultsView.ranked(name: "note-results", index: index)
            try database.register(index)
            try database.register(results.view)
            return (database, index, results)
        }
        do {
            let (database, _, results) = try open()
            try database.newConnection().readWrite { txn in
                for (key, title) in [("a", "oat milk"), ("b", "milk"), ("c", "bread")] { try txn.set(Note(title: title), forKey: key, in: notes) }
                try results.setQuery("milk", in: txn)
            }
            #expect(try database.newConnection().read { txn in try txn.view("note-results").count() } == 2)
        }
        do {
            let tool = try Database(path: path, options: .init(durability: .none))
            try tool.unregisterExtension(named: "note-search", dropStorage: true)
        }
        let (database, _, results) = try open()
        try database.newConnection().read { txn in
            let query = try results.query(in: txn)
            let shown = try txn.view("note-results").count()
            // The query went with the index's storage: the view shows no row, never the old query's rows.
            #expect(query == nil && shown == 0, "query \(String(describing: query)), \(shown) rows shown")
            #expect(try txn.checkSearchIndex(named: "note-search").problems == [])
        }
    }

    @Test("with the text closure (registered here): a row whose record was lost, or holds other words, is named")
    func withTheClosure() throws {
        try Self.withLongLists { index, database in
            try database.newConnection().readWrite { txn in
                // n2's record gone from its row (its postings stay), n4's words replaced: what no table shows.
                let slot = try #require(try txn.attachmentSlot(for: index.name))
                try txn.scanRows(inCollections: ["notes"]) { row in
                    if row.id.key == "n2" { try row.setAttachment(nil, at: slot) }
                    if row.id.key == "n4", let bytes = try row.attachment(at: slot), let record = try SearchRowRecord.decode(bytes) {
                        try row.setAttachment(SearchRowRecord(document: record.document, length: record.length, terms: [Array("zebra".utf8)]).encoded, at: slot)
                    }
                    return true
                }
            }
            let problems = try Self.check(database, index).problems
            #expect(problems.contains { $0.contains("row notes/n2 is not indexed, but the text closure gives it text") }, "\(problems)")
            #expect(problems.contains { $0.contains("row notes/n4's record holds other words than the text closure gives") }, "\(problems)")
            // From the stored tables alone (as `canopy verify` sees it): n4's word is missing, its postings are extra.
            #expect(problems.contains { $0.contains("the postings of word 'zebra' lack 1 of its rows (notes/n4)") }, "\(problems)")
            #expect(problems.contains { $0.contains("of word 'milk' lists row notes/n4, whose record does not hold that word") }, "\(problems)")
            #expect(problems.contains { $0.contains("of prefix 'mi' lists row notes/n4, whose record does not hold that prefix") }, "\(problems)")
        }
    }

    /// Random damage to the index's records, written with valid checksums (so only the check can tell): the check
    /// never traps, and reports the damage it can see. Seeded; the seed and round are printed with a failure.
    @Test("random damage to postings, prefix lists and their directories: reported, never a trap", arguments: [21 as UInt64, 22])
    func randomDamage(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let index = makeNoteSearch(prefixLengths: [2])
        try database.register(index)
        let connection = database.newConnection()
        try connection.readWrite { txn in
            for number in 0..<600 { try txn.set(randomNote(&random), forKey: "n\(number)", in: notes) }
        }
        let tables = try index.tables()
        let targets: [(String, ExtensionTable<BytesCoding, BytesCoding>)] = [
            ("postings", tables.postings), ("postings-directory", tables.postingsDirectory),
            ("prefixes", try #require(tables.prefixes)), ("prefixes-directory", try #require(tables.prefixesDirectory)),
        ]
        var reported = 0
        let rounds = 60
        for round in 0..<rounds {
            let context = "seed \(seed), round \(round)"
            // A record of one of the tables, changed: bits flipped, cut short or extended.
            let (name, table) = targets[Int(random.next() % UInt64(targets.count))]
            var keys: [[UInt8]] = []
            try connection.read { txn in
                try table.forEachBytes(in: txn) { key, _ in
                    keys.append(Array(key))
                    return true
                }
            }
            let key = keys[Int(random.next() % UInt64(keys.count))]
            let original = try #require(try connection.read { txn in try table.value(forKey: key, in: txn) })
            var damaged = original
            switch random.next() % 3 {
            case 0:
                for _ in 0..<(1 + random.next() % 3) { damaged[Int(random.next() % UInt64(damaged.count))] ^= UInt8(1) << UInt8(random.next() % 8) }
            case 1: damaged.removeLast(1 + Int(random.next() % UInt64(damaged.count)))
            default: damaged += [UInt8(truncatingIfNeeded: random.next()), 0x80]
            }
            try connection.readWrite { txn in try table.put(damaged, forKey: key, in: txn) }
            let check = try connection.read { txn in try txn.checkSearchIndex(named: index.name, limit: 5) }
            if !check.problems.isEmpty { reported += 1 }
            // A cut or an extension always changes what the record says: it is always reported.
            if damaged.count != original.count {
                #expect(!check.problems.isEmpty, "\(name) record \(key) changed from \(original.count) to \(damaged.count) bytes, not reported; \(context)")
            }
            try connection.readWrite { txn in try table.put(original, forKey: key, in: txn) }
        }
        #expect(try connection.read { txn in try txn.checkSearchIndex(named: index.name).problems } == [])
        print("search index random damage, seed \(seed): \(reported) of \(rounds) damaged records reported")
    }

    @Test("a search index that is not recorded: extensionNotRegistered listing those that are")
    func unknownName() throws {
        try Self.withLongLists { _, database in
            let error = #expect(throws: CanopyError.self) {
                try database.newConnection().read { txn in _ = try txn.checkSearchIndex(named: "nope") }
            }
            #expect(error?.code == .extensionNotRegistered)
            #expect(error?.message.contains("note-search") == true)
        }
    }
}
