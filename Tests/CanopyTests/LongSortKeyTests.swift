@testable import Canopy
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import LMDB
import Testing

/// A note sorted by its title, which may be long.
struct LongNote: Codable, Sendable, Equatable {
    var title: String
    var group: String
}

let longNotes = TypedCollection<LongNote, NoMetadata>("long-notes")

/// Notes grouped by their group, sorted by title (the whole title: keys as long as the titles).
func makeTitleView() -> View {
    View(
        name: "by-title",
        grouping: .byObject(longNotes) { _, note in note.group },
        sorting: .byObject(longNotes) { _, _, note in SortKey(.ascending(note.title)) },
        versionTag: "1")
}

/// Sort keys of 1 KB to 100 KB: pages are cut by bytes (a page over 2,016 bytes holds one entry), every place is
/// right, and the invariant check (what `canopy verify` runs) finds a healthy view healthy — through the write path
/// (rows entering, moving and leaving a registered view) and through population.
@Suite("Views: long sort keys keep pages bounded and views right")
struct LongSortKeyTests {
    /// A title of `length` bytes: random letters first (order spread), or a long shared run first (comparisons that
    /// read deep into the keys).
    static func title(length: Int, _ random: inout SeededRandom) -> String {
        // 0: mixed lengths, mostly short, a few over a page (a long entry among short ones splits a page by bytes).
        let length = length > 0 ? length : (Int.random(in: 0..<8, using: &random) == 0 ? Int.random(in: 1_000...5_000, using: &random) : Int.random(in: 8...60, using: &random))
        let letters = String((0..<8).map { _ in Character(UnicodeScalar(UInt8.random(in: 97...122, using: &random))) })
        let filler = String(repeating: "x", count: max(0, length - 8))
        return Bool.random(using: &random) ? letters + filler : filler + letters
    }

    /// The problems of the view's pages against their bounds: more than 64 entries, or more than 2,016 bytes with more
    /// than one entry.
    static func pageBoundProblems(_ view: ViewReader) throws -> [String] {
        var problems: [String] = []
        for (name, group) in try view.index.groups {
            for chunk in group.chunks {
                for ref in chunk.pages {
                    let page = try view.page(ref.id)
                    if page.count > ViewPage.maxEntries || (page.byteSize > ViewPage.maxBytes && page.count > 1) {
                        problems.append("group '\(name.prefix(20))' page \(ref.id): \(page.count) entries, \(page.byteSize) bytes")
                    }
                }
            }
        }
        return problems
    }

    /// The rows of each group in the order their titles (then keys) give.
    static func expectedOrder(_ notes: [String: LongNote]) -> [String: [String]] {
        var groups: [String: [(String, String)]] = [:]
        for (key, note) in notes { groups[note.group, default: []].append((note.title, key)) }
        return groups.mapValues { rows in
            rows.sorted { a, b in
                a.0 == b.0 ? a.1.utf8.lexicographicallyPrecedes(b.1.utf8) : a.0.utf8.lexicographicallyPrecedes(b.0.utf8)
            }.map(\.1)
        }
    }

    static func check(_ database: CanopyCore.Database, _ notes: [String: LongNote], _ context: String) throws {
        try database.newConnection().read { txn throws in
            let view = try txn.view("by-title")
            #expect(try view.checkInvariants() == [], "\(context)")
            #expect(try pageBoundProblems(view) == [], "\(context)")
            var stored: [String: [String]] = [:]
            for group in try view.groups() { stored[group] = try view.rowIDs(inGroup: group, range: 0..<Int.max).map(\.key) }
            #expect(stored == expectedOrder(notes), "\(context)")
        }
    }

    /// (title length, rows): enough rows for several pages of each length; length 0: mixed lengths.
    static let cases: [(length: Int, rows: Int)] = [(1_000, 120), (2_000, 60), (4_000, 40), (100_000, 12), (0, 400)]

    @Test("Writes: rows of long titles enter, move and leave a registered view, in one group and spread (seeds printed)",
          arguments: [(1, 1), (2, 5)] as [(UInt64, Int)])
    func writePath(seed: UInt64, groups: Int) throws {
        for (length, rows) in Self.cases {
            var random = SeededRandom(seed: seed &+ UInt64(length))
            try withDatabase { database, _ in
                try database.register(makeTitleView())
                let connection = database.newConnection()
                var notes: [String: LongNote] = [:]
                // A few rows per transaction: new entries join groups that have pages (inserts that split pages).
                for batch in stride(from: 0, to: rows, by: 7) {
                    try connection.readWrite { txn throws in
                        for number in batch..<min(rows, batch + 7) {
                            let note = LongNote(title: Self.title(length: length, &random), group: "g\(Int.random(in: 0..<groups, using: &random))")
                            let key = String(format: "n%04d", number)
                            try txn.set(note, forKey: key, in: longNotes)
                            notes[key] = note
                        }
                    }
                }
                try Self.check(database, notes, "seed \(seed), \(length)-byte titles in \(groups) groups, inserted")
                // Moves (a new title, another group) and removals.
                try connection.readWrite { txn throws in
                    for key in notes.keys.sorted() where Int.random(in: 0..<3, using: &random) == 0 {
                        if Bool.random(using: &random) {
                            _ = try txn.remove(key: key, in: longNotes)
                            notes[key] = nil
                        } else {
                            let note = LongNote(title: Self.title(length: length, &random), group: "g\(Int.random(in: 0..<groups, using: &random))")
                            try txn.set(note, forKey: key, in: longNotes)
                            notes[key] = note
                        }
                    }
                }
                try Self.check(database, notes, "seed \(seed), \(length)-byte titles in \(groups) groups, moved and removed")
            }
        }
    }

    @Test("Population: rows of long titles written before the view is registered, in one group and spread (seeds printed)",
          arguments: [(3, 1), (4, 5)] as [(UInt64, Int)])
    func population(seed: UInt64, groups: Int) throws {
        for (length, rows) in Self.cases {
            var random = SeededRandom(seed: seed &+ UInt64(length))
            try withDatabase { database, _ in
                var notes: [String: LongNote] = [:]
                try database.newConnection().readWrite { txn throws in
                    for number in 0..<rows {
                        let note = LongNote(title: Self.title(length: length, &random), group: "g\(Int.random(in: 0..<groups, using: &random))")
                        let key = String(format: "n%04d", number)
                        try txn.set(note, forKey: key, in: longNotes)
                        notes[key] = note
                    }
                }
                try database.register(makeTitleView())
                try Self.check(database, notes, "seed \(seed), \(length)-byte titles in \(groups) groups, populated")
            }
        }
    }

    @Test("A group name of 100 KB is stored, read and checked like any other")
    func longGroupName() throws {
        try withDatabase { database, _ in
            try database.register(makeTitleView())
            let group = String(repeating: "g", count: 100_000)
            var notes: [String: LongNote] = [:]
            try database.newConnection().readWrite { txn throws in
                for number in 0..<80 {
                    let note = LongNote(title: "title \(number)", group: number % 2 == 0 ? group : "short")
                    try txn.set(note, forKey: String(format: "n%04d", number), in: longNotes)
                    notes[String(format: "n%04d", number)] = note
                }
            }
            try Self.check(database, notes, "a 100 KB group name")
        }
    }

    @Test("A sort key over 1 MiB is sortKeyTooLong naming the view and the row; nothing is written (write and registration)")
    func sortKeyPastTheLimit() throws {
        try withDatabase { database, _ in
            try database.register(makeTitleView())
            let connection = database.newConnection()
            try connection.readWrite { txn throws in try txn.set(LongNote(title: "short", group: "g"), forKey: "a", in: longNotes) }
            // The string's encoding adds a tag byte and a two-byte terminator: a title of exactly the limit is past it.
            let tooLong = LongNote(title: String(repeating: "t", count: SortKey.maximumLength), group: "g")
            let error = #expect(throws: CanopyError.self) {
                try connection.readWrite { txn throws in try txn.set(tooLong, forKey: "b", in: longNotes) }
            }
            #expect(error?.code == .sortKeyTooLong, "\(String(describing: error))")
            #expect(error?.extensionName == "by-title" && error?.key == "b" && error?.collection == "long-notes", "\(String(describing: error))")
            try connection.read { txn throws in
                #expect(try txn.object(forKey: "b", in: longNotes) == nil)
                #expect(try txn.view("by-title").count() == 1)
            }
            // A key of exactly the limit: stored and placed.
            let longest = LongNote(title: String(repeating: "t", count: SortKey.maximumLength - 3), group: "g")
            try connection.readWrite { txn throws in try txn.set(longest, forKey: "c", in: longNotes) }
            try Self.check(database, ["a": LongNote(title: "short", group: "g"), "c": longest], "a key of the maximum length")
        }
        // A row written before the view: its registration fails, naming the cause; nothing is registered.
        try withDatabase { database, _ in
            try database.newConnection().readWrite { txn throws in
                try txn.set(LongNote(title: String(repeating: "t", count: SortKey.maximumLength), group: "g"), forKey: "b", in: longNotes)
            }
            let error = #expect(throws: CanopyError.self) { try database.register(makeTitleView()) }
            #expect((error?.underlying as? CanopyError)?.code == .sortKeyTooLong || error?.code == .sortKeyTooLong, "\(String(describing: error))")
            #expect(database.registeredExtension(named: "by-title") == nil)
        }
    }

    @Test("A page damaged past the entry bound (two pages' entries in one, in order) is reported by the invariant check")
    func pagePastTheEntryBound() throws {
        try withDatabase { database, _ in
            try database.register(makeTitleView())
            try database.newConnection().readWrite { txn throws in
                for number in 0..<100 {
                    try txn.set(LongNote(title: String(format: "title %03d", number), group: "g"), forKey: String(format: "n%04d", number), in: longNotes)
                }
            }
            // The group's first two pages merged into the first: every entry still there, in order, on fewer pages.
            try database.environment.write { txn in
                let pages = try txn.openDatabase(named: "ext.by-title.pages", checksummed: true)
                var stored: [([UInt8], ViewPage)] = []
                try txn.forEach(in: pages) { key, value in
                    stored.append((Array(key), try ViewPage(decoding: value)))
                    return true
                }
                try #require(stored.count >= 2)
                var merged = stored[0].1
                let second = stored[1].1
                for i in 0..<second.count {
                    let order = second.orderBytes(at: i)
                    merged.append(order: order[...], sortKeyLength: order.count - second.rowKey(at: i).count)
                }
                try #require(merged.count > ViewPage.maxEntries)
                try txn.put(merged.encoded, forKey: stored[0].0, in: pages)
                _ = try txn.delete(stored[1].0, in: pages)
            }
            // A new version of the view, so that readers rebuild its directory from the pages.
            try database.newConnection().readWrite { txn throws in
                var state = try #require(try txn.withExtensionState(of: "by-title") { $0.map { Array($0) } })
                state[0..<8] = ArraySlice(withUnsafeBytes(of: UInt64(1_000_000).bigEndian, Array.init))
                try txn.setExtensionState(state, of: "by-title")
            }
            try database.newConnection().read { txn throws in
                let view = try txn.view("by-title")
                // It reads right: the damage is the bound alone.
                #expect(try view.rowIDs(inGroup: "g", range: 0..<Int.max).map(\.key) == (0..<100).map { String(format: "n%04d", $0) })
                let problems = try view.checkInvariants()
                #expect(problems.contains { $0.contains("more than a page holds (\(ViewPage.maxEntries))") }, "\(problems)")
                #expect(problems.count == 1, "\(problems)")
            }
        }
    }
}
