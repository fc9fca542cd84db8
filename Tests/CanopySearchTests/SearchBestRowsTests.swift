import Canopy
import CanopySearch
import CanopyTestSupport
import Foundation
import Testing

/// The best rows of a one-list query (a word, or a prefix with a merged list) are read from block headers, best bound
/// first, stopping when no unread block can reach the last score kept; several lists are intersected list by list,
/// skipping blocks without candidates: over thousands of rows (words with dozens of blocks of different bounds, many
/// rows tying), written by commits that insert, update and remove, and rebuilt, every limit gives exactly the brute
/// force's first rows (same keys, order and scores; ties by key), and the count of matches is the brute force's.
@Suite("Search index: best rows from block headers")
struct SearchBestRowsTests {
    /// Few words, so that lists span many blocks and many rows tie; some words are prefixes of others.
    static let words = ["ka", "kalo", "kami", "kamine", "lo", "lomi", "mi", "mine", "ne", "nera", "ru", "rune"]

    static func note(_ random: inout SeededRandom) -> Note {
        func text(_ count: Int) -> String {
            (0..<count).map { _ in
                // Skewed: the first words are frequent, and a row often repeats one (occurrences 1 to 4).
                let r = Double(random.next() % 10_000) / 10_000
                return words[min(words.count - 1, Int(r * r * Double(words.count)))]
            }.joined(separator: " ")
        }
        return Note(title: text(1 + Int(random.next() % 2)), body: random.next() % 5 == 0 ? nil : text(2 + Int(random.next() % 9)))
    }

    static func check(_ index: SearchIndex, _ database: Database, _ rows: [String: Note], context: String) throws {
        // One list each, and several (intersected list by list: words, prefixes with lists, the same word twice).
        let queries = words + ["ka*", "kam*", "lo*", "mi*", "ne*", "ru*", "k*", "m*"]
            + ["ka lo", "kalo mi", "ne ru mi", "ka* lo", "mi* ne*", "rune kamine", "ka ka", "kamin* lo"]
        try database.newConnection().read { txn in
            for text in queries {
                let query = try SearchQuery(text)
                let expected = BruteForce.search(query, rows)
                #expect(try index.count(matching: query, in: txn) == expected.count, "count of \(text); \(context)")
                for limit in [1, 3, 20, 150] {
                    let actual = try index.search(query, in: txn, limit: limit, highlights: false).map { BruteForce.Hit(key: $0.id.key, score: $0.score) }
                    let wanted = Array(expected.prefix(limit))
                    let first = (0..<min(actual.count, wanted.count)).first { !sameHits([actual[$0]], [wanted[$0]]) } ?? min(actual.count, wanted.count)
                    #expect(sameHits(actual, wanted), "\(text), limit \(limit): \(actual.count) hits for \(wanted.count); from hit \(first): index \(actual.dropFirst(first).prefix(5)), brute force \(wanted.dropFirst(first).prefix(5)); \(context)")
                }
            }
        }
    }

    @Test("Thousands of rows, inserts, updates, removals, rebuilt: every limit equals brute force", arguments: [21 as UInt64, 22])
    func manyBlocks(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        var rows: [String: Note] = [:]
        do {
            let database = try Database(path: path, options: .init(durability: .none))
            let index = makeNoteSearch(prefixLengths: [1, 2, 3])
            try database.register(index)
            for commit in 0..<4 {
                try database.newConnection().readWrite { txn in
                    for _ in 0..<900 {
                        // Keys whose order is not the order rows were first written in ("n10" < "n9").
                        let key = "n\(random.next() % 3_000)"
                        if commit > 0, random.next() % 6 == 0 {
                            try txn.remove(key: key, in: notes)
                            rows[key] = nil
                        } else {
                            let note = Self.note(&random)
                            try txn.set(note, forKey: key, in: notes)
                            rows[key] = note
                        }
                    }
                }
            }
            try Self.check(index, database, rows, context: "seed \(seed), after the commits (\(rows.count) rows)")
        }
        let database = try Database(path: path, options: .init(durability: .none))
        let rebuilt = makeNoteSearch(versionTag: "2", prefixLengths: [1, 2, 3])
        try database.register(rebuilt)
        try Self.check(rebuilt, database, rows, context: "seed \(seed), rebuilt (\(rows.count) rows)")
    }

    @Test("Prefix lengths out of range are refused at registration, nothing written")
    func badPrefixLengths() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        for lengths: Set<Int> in [[0], [SearchIndex.maximumPrefixLength + 1], [-3, 2]] {
            #expect(throws: CanopyError.self, "\(lengths)") { try database.register(makeNoteSearch(prefixLengths: lengths)) }
            do {
                try database.register(makeNoteSearch(prefixLengths: lengths))
            } catch let error as CanopyError {
                #expect(error.code == .invalidArgument && error.message.contains("prefix length"), "\(error)")
            }
            #expect(try database.recordedExtensions().isEmpty)
        }
    }
}
