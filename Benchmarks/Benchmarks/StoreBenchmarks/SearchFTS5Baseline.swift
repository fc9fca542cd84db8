import Foundation
import GRDB

// The GRDB side of the search comparison (in a file of its own: GRDB and Canopy both name a type `Database`).

/// The same texts in an SQLite FTS5 table through GRDB.
final class FTS5Store {
    let directory = TemporaryDirectory("fts5")
    let queue: DatabaseQueue

    /// A table of `count` texts; `prefixes`: FTS5's prefix index for those lengths (the query comparison's).
    init(count: Int, prefixes: Set<Int> = []) throws {
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = OFF") }
        queue = try DatabaseQueue(path: directory.child("db.sqlite"), configuration: configuration)
        try queue.write { db in
            try db.create(virtualTable: "texts", using: FTS5()) { table in
                table.tokenizer = .unicode61(diacritics: .remove)
                if !prefixes.isEmpty { table.prefixes = prefixes }
                table.column("id").notIndexed()
                table.column("body")
            }
        }
        if count > 0 { try insert(0..<count) }
    }

    func insert(_ range: Range<Int>) throws {
        try queue.write { db in
            let statement = try db.makeStatement(sql: "INSERT INTO texts(id, body) VALUES (?, ?)")
            for index in range { try statement.execute(arguments: [SearchWorkload.key(index), SearchWorkload.text(index)]) }
        }
    }

    func search(_ query: String) throws -> [String] {
        try queue.read { db in
            try String.fetchAll(db, sql: "SELECT id FROM texts WHERE texts MATCH ? ORDER BY rank LIMIT 20", arguments: [query])
        }
    }
}

