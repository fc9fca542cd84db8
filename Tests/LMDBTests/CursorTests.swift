import LMDB
import Testing

@Suite struct CursorTests {
    /// Keys chosen around prefix edges: 0x00 and 0xFF bytes, prefixes that are keys themselves, runs of 0xFF.
    static let inserted: [[UInt8]] = [
        [0x01], [0x01, 0x00], [0x01, 0x7F], [0x01, 0xFF], [0x01, 0xFF, 0x00], [0x01, 0xFF, 0xFF],
        [0x02], [0x02, 0x01], [0x7F, 0xFF, 0xFF], [0x80], [0xFF], [0xFF, 0x00], [0xFF, 0xFF], [0xFF, 0xFF, 0x01],
    ]
    /// The keys in LMDB's default order: bytewise, a prefix before its extensions.
    static let sorted = inserted.sorted { $0.lexicographicallyPrecedes($1) }

    /// Runs `body` with a database holding ``inserted``, each with a value naming its position in ``sorted``.
    private func withFixture(_ body: (Environment, Database) throws -> Void) throws {
        try withEnvironment { env, _ in
            let table = try env.openDatabase(named: "table", create: true)
            try env.write { txn in
                // Inserted out of order on purpose.
                for k in Self.inserted.reversed() {
                    try txn.put([UInt8(Self.sorted.firstIndex(of: k)!)], forKey: k, in: table)
                }
            }
            try body(env, table)
        }
    }

    private func key(_ entry: Cursor.Entry?) -> [UInt8]? { entry.map { Array($0.key) } }

    @Test func movesThroughEveryEntryInBothDirections() throws {
        try withFixture { env, table in
            try env.read { txn in
                try txn.withCursor(in: table) { cursor in
                    #expect(cursor.database == table)
                    let first = try cursor.first()
                    #expect(key(first) == Self.sorted.first)
                    #expect(first.map { Array($0.value) } == [0])
                    var forward = [key(first)!]
                    while let entry = try cursor.next() { forward.append(Array(entry.key)) }
                    #expect(forward == Self.sorted)
                    #expect(try key(cursor.next()) == nil)

                    #expect(try key(cursor.last()) == Self.sorted.last)
                    #expect(try key(cursor.current()) == Self.sorted.last)
                    var backward = [Self.sorted.last!]
                    while let entry = try cursor.previous() { backward.append(Array(entry.key)) }
                    #expect(backward == Self.sorted.reversed())
                }
            }
        }
    }

    @Test func emptyDatabaseHasNoEntries() throws {
        try withEnvironment { env, _ in
            let table = try env.openDatabase(named: "empty", create: true)
            try env.read { txn in
                try txn.withCursor(in: table) { cursor throws in
                    #expect(try key(cursor.first()) == nil)
                    #expect(try key(cursor.last()) == nil)
                    #expect(try key(cursor.seek(atOrAfter: [0x01])) == nil)
                    #expect(try key(cursor.seekLast(atOrBefore: [0x01])) == nil)
                    #expect(try key(cursor.seek(exactly: [0x01])) == nil)
                }
                #expect(try keys(of: table, in: txn).isEmpty)
                #expect(try keys(of: table, in: txn, reverse: true).isEmpty)
            }
        }
    }

    @Test func currentOfAnUnpositionedCursorIsNil() throws {
        try withFixture { env, table in
            try env.read { txn in
                try txn.withCursor(in: table) { cursor throws in #expect(try key(cursor.current()) == nil) }
            }
        }
    }

    @Test func seekExactly() throws {
        try withFixture { env, table in
            try env.read { txn in
                try txn.withCursor(in: table) { cursor in
                    let found = try cursor.seek(exactly: [0x01, 0xFF])
                    #expect(key(found) == [0x01, 0xFF])
                    #expect(found.map { Array($0.value) } == [UInt8(Self.sorted.firstIndex(of: [0x01, 0xFF])!)])
                    #expect(try key(cursor.next()) == [0x01, 0xFF, 0x00])
                    #expect(try key(cursor.seek(exactly: [0x01, 0x80])) == nil)
                    #expect(try key(cursor.seek(exactly: [0x00])) == nil)
                    #expect(try key(cursor.seek(exactly: [0xFF, 0xFF, 0xFF])) == nil)
                    expectError(.badValueSize) { _ = try cursor.seek(exactly: []) }
                }
            }
        }
    }

    static let probes: [[UInt8]] = [
        [], [0x00], [0x01], [0x01, 0x00, 0x00], [0x01, 0x80], [0x01, 0xFF], [0x01, 0xFF, 0xFF, 0x00], [0x03],
        [0x80], [0xFE], [0xFF, 0xFF, 0x01], [0xFF, 0xFF, 0x02], [0xFF, 0xFF, 0xFF, 0xFF],
    ]

    @Test(arguments: probes)
    func seekAtOrAfterFindsTheFirstKeyNotBelow(probe: [UInt8]) throws {
        let expected = Self.sorted.first { !$0.lexicographicallyPrecedes(probe) }
        try withFixture { env, table in
            try env.read { txn in
                try txn.withCursor(in: table) { cursor throws in
                    #expect(try key(cursor.seek(atOrAfter: probe)) == expected)
                }
            }
        }
    }

    @Test(arguments: probes)
    func seekLastAtOrBeforeFindsTheLastKeyNotAbove(probe: [UInt8]) throws {
        let expected = Self.sorted.last { !probe.lexicographicallyPrecedes($0) }
        try withFixture { env, table in
            try env.read { txn in
                try txn.withCursor(in: table) { cursor throws in
                    #expect(try key(cursor.seekLast(atOrBefore: probe)) == expected)
                    // The cursor stands where the entry is: moving on continues from it.
                    if let expected, expected != Self.sorted.last {
                        let following = Self.sorted[Self.sorted.firstIndex(of: expected)! + 1]
                        #expect(try key(cursor.next()) == following)
                    }
                }
            }
        }
    }

    @Test(arguments: [nil] + probes.map(Optional.some))
    func forEachFromAStart(start: [UInt8]?) throws {
        let forward = Self.sorted.filter { start == nil || !$0.lexicographicallyPrecedes(start!) }
        let backward = Self.sorted.filter { start == nil || !start!.lexicographicallyPrecedes($0) }.reversed()
        try withFixture { env, table in
            try env.read { txn throws in
                #expect(try keys(of: table, in: txn, from: start) == forward)
                #expect(try keys(of: table, in: txn, from: start, reverse: true) == Array(backward))
            }
        }
    }

    @Test(arguments: [false, true])
    func forEachStopsWhenTheBodyReturnsFalse(reverse: Bool) throws {
        try withFixture { env, table in
            var visited: [[UInt8]] = []
            try env.read { txn in
                try txn.forEach(in: table, reverse: reverse) { key, _ in
                    visited.append(Array(key))
                    return visited.count < 3
                }
            }
            #expect(visited == Array((reverse ? Self.sorted.reversed() : Self.sorted).prefix(3)))
        }
    }

    @Test(arguments: [
        [], [0x01], [0x01, 0xFF], [0x01, 0xFF, 0xFF], [0x02], [0x7F], [0x7F, 0xFF], [0xFF], [0xFF, 0xFF],
        [0xFF, 0xFF, 0xFF], [0x00], [0x03], [0x01, 0x80],
    ] as [[UInt8]])
    func prefixIterationInBothDirections(prefix: [UInt8]) throws {
        let expected = Self.sorted.filter { $0.starts(with: prefix) }
        try withFixture { env, table in
            try env.read { txn in
                var forward: [[UInt8]] = []
                try txn.forEach(in: table, prefix: prefix) { key, _ in
                    forward.append(Array(key))
                    return true
                }
                #expect(forward == expected)

                var backward: [[UInt8]] = []
                try txn.forEach(in: table, prefix: prefix, reverse: true) { key, _ in
                    backward.append(Array(key))
                    return true
                }
                #expect(backward == expected.reversed())
            }
        }
    }

    @Test func prefixIterationStopsWhenTheBodyReturnsFalse() throws {
        try withFixture { env, table in
            var visited: [[UInt8]] = []
            try env.read { txn in
                try txn.forEach(in: table, prefix: [0x01], reverse: true) { key, _ in
                    visited.append(Array(key))
                    return false
                }
            }
            #expect(visited == [[0x01, 0xFF, 0xFF]])
        }
    }

    @Test func deleteCurrentMovesToTheFollowingEntry() throws {
        try withFixture { env, table in
            try env.write { txn in
                try txn.withCursor(in: table) { cursor in
                    // Delete every other entry.
                    var entry = try cursor.first()
                    var index = 0
                    while entry != nil {
                        if index.isMultiple(of: 2) {
                            try cursor.deleteCurrent()
                            entry = try cursor.current()
                        } else {
                            entry = try cursor.next()
                        }
                        index += 1
                    }
                }
            }
            let remaining = Self.sorted.enumerated().filter { !$0.offset.isMultiple(of: 2) }.map(\.element)
            #expect(try env.read { try keys(of: table, in: $0) } == remaining)
        }
    }

    @Test func nextAfterDeleteCurrentIsTheFollowingEntry() throws {
        try withFixture { env, table in
            try env.write { txn in
                try txn.withCursor(in: table) { cursor in
                    _ = try cursor.seek(exactly: [0x01, 0xFF])
                    try cursor.deleteCurrent()
                    #expect(try key(cursor.next()) == [0x01, 0xFF, 0x00])
                    #expect(try key(cursor.previous()) == [0x01, 0x7F])
                }
            }
        }
    }

    @Test func deleteCurrentUntilEmpty() throws {
        try withFixture { env, table in
            try env.write { txn in
                try txn.withCursor(in: table) { cursor in
                    var deleted = 0
                    var entry = try cursor.first()
                    while entry != nil {
                        try cursor.deleteCurrent()
                        deleted += 1
                        entry = try cursor.current()
                    }
                    #expect(deleted == Self.inserted.count)
                }
                #expect(try txn.count(of: table) == 0)
            }
            #expect(try env.read { try $0.count(of: table) } == 0)
        }
    }

    @Test func deleteCurrentOfTheLastEntryLeavesNothingCurrent() throws {
        try withFixture { env, table in
            try env.write { txn in
                try txn.withCursor(in: table) { cursor in
                    _ = try cursor.last()
                    try cursor.deleteCurrent()
                    #expect(try key(cursor.current()) == nil)
                    #expect(try key(cursor.last()) == Self.sorted.dropLast().last)
                }
            }
        }
    }

    @Test func cursorPutWritesAndStaysOnTheEntry() throws {
        try withFixture { env, table in
            try env.write { txn in
                try txn.withCursor(in: table) { cursor in
                    try bytes("new").withUnsafeBytes { v in
                        try [UInt8]([0x01, 0x80]).withUnsafeBytes { k in try cursor.put(v, forKey: k) }
                    }
                    #expect(try key(cursor.current()) == [0x01, 0x80])
                    #expect(try key(cursor.next()) == [0x01, 0xFF])

                    // Replace the value at the cursor.
                    _ = try cursor.seek(exactly: [0x02])
                    try bytes("replaced").withUnsafeBytes { v in
                        try [UInt8]([0x02]).withUnsafeBytes { k in try cursor.put(v, forKey: k, flags: .current) }
                    }
                    expectError(.keyExists) {
                        try bytes("v").withUnsafeBytes { v in
                            try [UInt8]([0x02]).withUnsafeBytes { k in try cursor.put(v, forKey: k, flags: .noOverwrite) }
                        }
                    }
                }
            }
            try env.read { txn throws in
                #expect(try txn.value(forKey: [0x01, 0x80], in: table) == bytes("new"))
                #expect(try txn.value(forKey: [0x02], in: table) == bytes("replaced"))
                #expect(try txn.count(of: table) == Self.inserted.count + 1)
            }
        }
    }

    @Test func writesThroughAReadTransactionCursorAreRefused() throws {
        try withFixture { env, table in
            try env.read { txn in
                try txn.withCursor(in: table) { cursor in
                    _ = try cursor.first()
                    let error = expectError(.invalidArgument) { try cursor.deleteCurrent() }
                    #expect(error?.database == "table")
                    expectError(.invalidArgument) {
                        try [UInt8]([0x05]).withUnsafeBytes { k in try cursor.put(k, forKey: k) }
                    }
                }
            }
            #expect(try env.read { try $0.count(of: table) } == Self.inserted.count)
        }
    }

    @Test func cursorUsedAfterItsClosureFails() throws {
        try withFixture { env, table in
            try env.read { txn in
                let escaped = try txn.withCursor(in: table) { $0 }
                expectError(.badTransaction) { _ = try escaped.first() }
                // The transaction itself is still fine.
                #expect(try txn.count(of: table) == Self.inserted.count)
            }
        }
    }

    @Test func cursorSeesTheWritesOfItsTransaction() throws {
        try withFixture { env, table in
            try env.write { txn in
                try txn.put(bytes("v"), forKey: [0x00], in: table)
                try txn.delete([0xFF, 0xFF, 0x01], in: table)
                try txn.withCursor(in: table) { cursor throws in
                    #expect(try key(cursor.first()) == [0x00])
                    #expect(try key(cursor.last()) == [0xFF, 0xFF])
                }
            }
        }
    }
}
