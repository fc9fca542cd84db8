import Canopy
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// Every option of ``ViewMappings`` against a real view ("by-list" of ``makeTaskView(name:versionTag:options:)``):
/// the expected sections are written out by hand or computed in the test from a model of the rows, never from the
/// mappings' own arithmetic.
@Suite("Mappings")
struct MappingsTests {
    /// The rows every test starts from. In the view's order (descending priority, then title, then key):
    /// inbox = i4 i2 i3 i1 i5, work = w2 w3 w1, home = h1; e1 is done, so "errands" is not a group.
    static let seed: [String: TodoItem] = [
        "i1": TodoItem(title: "e", list: "inbox", priority: 1),
        "i2": TodoItem(title: "d", list: "inbox", priority: 3),
        "i3": TodoItem(title: "c", list: "inbox", priority: 2),
        "i4": TodoItem(title: "a", list: "inbox", priority: 3),
        "i5": TodoItem(title: "b", list: "inbox", priority: 0),
        "w1": TodoItem(title: "x", list: "work", priority: 1),
        "w2": TodoItem(title: "y", list: "work", priority: 2),
        "w3": TodoItem(title: "a", list: "work", priority: 1),
        "h1": TodoItem(title: "z", list: "home", priority: 0),
        "e1": TodoItem(title: "done", list: "errands", priority: 5, done: true),
    ]
    static let inbox = ["i4", "i2", "i3", "i1", "i5"]
    static let work = ["w2", "w3", "w1"]
    static let home = ["h1"]

    /// A database with the view "by-list" registered and the seed rows written.
    func withSeededView(_ body: (Database, Connection) throws -> Void) throws {
        try withDatabase { database, _ in
            try database.register(makeTaskView())
            let connection = database.newConnection()
            try connection.readWrite { txn throws in
                for (key, task) in Self.seed { try txn.set(task, forKey: key, in: tasks) }
            }
            try body(database, connection)
        }
    }

    /// The groups of the view a model of the rows implies, each in the view's order — computed without the view.
    static func modelGroups(_ model: [String: TodoItem]) -> [String: [String]] {
        var groups: [String: [(key: String, task: TodoItem)]] = [:]
        for (key, task) in model where !task.done { groups[task.list, default: []].append((key, task)) }
        return groups.mapValues { rows in
            rows.sorted { lhs, rhs in
                if lhs.task.priority != rhs.task.priority { return lhs.task.priority > rhs.task.priority }
                if lhs.task.title != rhs.task.title { return lhs.task.title.utf8.lexicographicallyPrecedes(rhs.task.title.utf8) }
                return lhs.key.utf8.lexicographicallyPrecedes(rhs.key.utf8)
            }.map(\.key)
        }
    }

    /// The rows a section shows of a group whose rows (in the view's order) are `keys`, worked out by hand.
    /// A flexible window is placed by `flexible` (its offset from its edge and its length now).
    static func shown(_ keys: [String], _ options: ViewMappings.GroupOptions, flexible: (offset: Int, length: Int)? = nil) -> [String] {
        var rows: [String]
        func slice(length: Int, offset: Int, from edge: ViewMappings.GroupEdge) -> [String] {
            guard length > 0 else { return [] }
            let offset = max(0, offset)
            return edge == .start ? Array(keys.dropFirst(offset).prefix(length)) : Array(keys.dropLast(offset).suffix(length))
        }
        switch options.range {
        case nil: rows = keys
        case .first(let length): rows = length <= 0 ? [] : Array(keys.prefix(length))
        case .last(let length): rows = length <= 0 ? [] : Array(keys.suffix(length))
        case .fixed(let length, let offset, let edge): rows = slice(length: length, offset: offset, from: edge)
        case .flexible(let window):
            // Without a place given, the initial window (the cases here have no minLength).
            rows = slice(length: flexible?.length ?? min(window.length, window.maxLength), offset: flexible?.offset ?? window.offset, from: window.edge)
        }
        if options.isReversed { rows.reverse() }
        return rows
    }

    /// Checks everything the mappings answer against `expected` (the visible sections in order with the keys each
    /// shows top to bottom): counts, rows read through the reader, both conversions for every shown row and for
    /// every row of the group that is not shown, and that out-of-range questions give `nil` or 0.
    static func expectRendering(
        _ mappings: ViewMappings, _ txn: ReadTransaction, _ expected: [(group: String, keys: [String])],
        _ comment: String = "", sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let reader = try txn.view(mappings.view)
        let note = Comment(rawValue: "\(comment) \(mappings)")
        #expect(mappings.snapshot == reader.snapshot, note, sourceLocation: sourceLocation)
        #expect(mappings.numberOfSections == expected.count, note, sourceLocation: sourceLocation)
        #expect(mappings.visibleGroups == expected.map(\.group), note, sourceLocation: sourceLocation)
        #expect(mappings.numberOfItems == expected.reduce(0) { $0 + $1.keys.count }, note, sourceLocation: sourceLocation)
        for (section, (group, keys)) in expected.enumerated() {
            #expect(mappings.group(forSection: section) == group, note, sourceLocation: sourceLocation)
            #expect(mappings.section(forGroup: group) == section, note, sourceLocation: sourceLocation)
            #expect(mappings.numberOfItems(inSection: section) == keys.count, note, sourceLocation: sourceLocation)
            #expect(mappings.numberOfItems(inGroup: group) == keys.count, note, sourceLocation: sourceLocation)
            #expect(mappings.count(inGroup: group) == (try reader.count(inGroup: group)), note, sourceLocation: sourceLocation)
            #expect(try mappings.rowIDs(inSection: section, reader: reader).map(\.key) == keys, note, sourceLocation: sourceLocation)
            // The same rendering from the group's rows, sliced and reversed by hand.
            let groupRows = try reader.rowIDs(inGroup: group, range: 0..<Int.max)
            #expect(Self.shown(groupRows.map(\.key), mappings.options(forGroup: group), flexible: mappings.flexibleWindow(forGroup: group)) == keys,
                    note, sourceLocation: sourceLocation)
            for (row, key) in keys.enumerated() {
                let indexPath = ViewIndexPath(section: section, row: row)
                #expect(try mappings.rowID(at: indexPath, reader: reader)?.key == key, note, sourceLocation: sourceLocation)
                #expect(try mappings.object(at: indexPath, reader: reader, in: tasks) == (try txn.object(forKey: key, in: tasks)), note,
                        sourceLocation: sourceLocation)
                guard let position = mappings.position(at: indexPath) else {
                    Issue.record("no position for \(indexPath) \(note)", sourceLocation: sourceLocation)
                    continue
                }
                #expect(position.group == group, note, sourceLocation: sourceLocation)
                #expect(groupRows.indices.contains(position.index) && groupRows[position.index].key == key, note,
                        sourceLocation: sourceLocation)
                #expect(mappings.indexPath(forIndex: position.index, inGroup: group) == indexPath, note, sourceLocation: sourceLocation)
                #expect(try mappings.indexPath(of: RowID(collection: "tasks", key: key), reader: reader) == indexPath, note,
                        sourceLocation: sourceLocation)
            }
            // Rows of the group outside the section's range have no index path.
            let shownKeys = Set(keys)
            for (index, id) in groupRows.enumerated() where !shownKeys.contains(id.key) {
                #expect(mappings.indexPath(forIndex: index, inGroup: group) == nil, note, sourceLocation: sourceLocation)
                #expect(try mappings.indexPath(of: id, reader: reader) == nil, note, sourceLocation: sourceLocation)
            }
            for row in [-1, keys.count, Int.max, Int.min] {
                let indexPath = ViewIndexPath(section: section, row: row)
                #expect(mappings.position(at: indexPath) == nil, note, sourceLocation: sourceLocation)
                #expect(try mappings.rowID(at: indexPath, reader: reader) == nil, note, sourceLocation: sourceLocation)
            }
            for index in [-1, groupRows.count, Int.max, Int.min] {
                #expect(mappings.indexPath(forIndex: index, inGroup: group) == nil, note, sourceLocation: sourceLocation)
            }
        }
        for section in [-1, expected.count, Int.max, Int.min] {
            #expect(mappings.group(forSection: section) == nil, note, sourceLocation: sourceLocation)
            #expect(mappings.numberOfItems(inSection: section) == 0, note, sourceLocation: sourceLocation)
            #expect(try mappings.rowIDs(inSection: section, reader: reader) == [], note, sourceLocation: sourceLocation)
            #expect(mappings.position(at: ViewIndexPath(section: section, row: 0)) == nil, note, sourceLocation: sourceLocation)
            #expect(try mappings.rowID(at: ViewIndexPath(section: section, row: 0), reader: reader) == nil, note,
                    sourceLocation: sourceLocation)
        }
    }

    // MARK: Group lists

    @Test("A fixed group list keeps its order, collapses duplicates and lists groups the view doesn't have")
    func fixedGroups() throws {
        try withSeededView { _, connection in
            var mappings = ViewMappings(groups: ["work", "inbox", "work", "missing", "home", "inbox"], view: "by-list")
            #expect(mappings.allGroups == ["work", "inbox", "missing", "home"])
            // Before the first update nothing is known: every (dynamic) section is hidden.
            #expect(mappings.snapshot == nil)
            #expect(mappings.numberOfSections == 0)
            #expect(mappings.numberOfItems == 0)
            #expect(mappings.description == "by-list@- []")
            try connection.read { txn throws in
                let reader = try txn.view("by-list")
                try mappings.update(with: reader)
                try Self.expectRendering(mappings, txn, [("work", Self.work), ("inbox", Self.inbox), ("home", Self.home)])
            }
            #expect(mappings.allGroups == ["work", "inbox", "missing", "home"])
            #expect(mappings.includes(group: "missing"))
            #expect(!mappings.includes(group: "errands"))
            #expect(mappings.count(inGroup: "missing") == 0)
            #expect(mappings.count(inGroup: "errands") == 0)
            #expect(mappings.section(forGroup: "missing") == nil)
            #expect(mappings.visibleRange(inGroup: "missing") == nil)
            #expect(mappings.numberOfItems(inGroup: "missing") == 0)
            #expect(mappings.indexPath(forIndex: 0, inGroup: "missing") == nil)

            // A group of the list appears in the view: it takes its place in the list's order.
            try connection.readWrite { txn throws in try txn.set(TodoItem(title: "m", list: "missing", priority: 1), forKey: "m1", in: tasks) }
            try connection.read { txn throws in
                let reader = try txn.view("by-list")
                try mappings.update(with: reader)
                try Self.expectRendering(mappings, txn, [("work", Self.work), ("inbox", Self.inbox), ("missing", ["m1"]), ("home", Self.home)])
            }
        }
    }

    @Test("Filtered and sorted groups are re-evaluated by update(with:) as groups appear and disappear")
    func filteredGroups() throws {
        try withSeededView { _, connection in
            var descending = ViewMappings(view: "by-list", groupFilter: { $0 != "home" }, sortedBy: { $0 > $1 })
            var byBytes = ViewMappings(view: "by-list", groupFilter: { _ in true })
            #expect(descending.allGroups == [])
            let before = try connection.read { txn throws in
                let reader = try txn.view("by-list")
                try descending.update(with: reader)
                try byBytes.update(with: reader)
                try Self.expectRendering(descending, txn, [("work", Self.work), ("inbox", Self.inbox)])
                try Self.expectRendering(byBytes, txn, [("home", Self.home), ("inbox", Self.inbox), ("work", Self.work)])
                return reader.snapshot
            }
            #expect(descending.includes(group: "anything"))
            #expect(!descending.includes(group: "home"))

            // "work" empties (its tasks are done), "zoo", "Zeta" and "aardvark" appear, "home" grows but stays filtered out.
            try connection.readWrite { txn throws in
                for key in ["w1", "w2", "w3"] {
                    var task = Self.seed[key]!
                    task.done = true
                    try txn.set(task, forKey: key, in: tasks)
                }
                try txn.set(TodoItem(title: "z", list: "zoo", priority: 0), forKey: "z1", in: tasks)
                try txn.set(TodoItem(title: "a", list: "aardvark", priority: 0), forKey: "a1", in: tasks)
                try txn.set(TodoItem(title: "Z", list: "Zeta", priority: 0), forKey: "Z1", in: tasks)
                try txn.set(TodoItem(title: "h", list: "home", priority: 9), forKey: "h2", in: tasks)
            }
            // Mappings are values: until updated they still describe the old snapshot.
            #expect(descending.snapshot == before)
            #expect(descending.visibleGroups == ["work", "inbox"])
            #expect(descending.numberOfItems(inGroup: "work") == 3)

            // A static section of filtered mappings still disappears with its group.
            descending.setSectionKind(.static, forGroup: "work")
            try connection.read { txn throws in
                let reader = try txn.view("by-list")
                try descending.update(with: reader)
                try byBytes.update(with: reader)
                try Self.expectRendering(descending, txn, [("zoo", ["z1"]), ("inbox", Self.inbox), ("aardvark", ["a1"]), ("Zeta", ["Z1"])])
                #expect(descending.allGroups == ["zoo", "inbox", "aardvark", "Zeta"])
                // The default order is by UTF-8 bytes: uppercase before lowercase.
                try Self.expectRendering(byBytes, txn, [
                    ("Zeta", ["Z1"]), ("aardvark", ["a1"]), ("home", ["h2", "h1"]), ("inbox", Self.inbox), ("zoo", ["z1"]),
                ])
            }
        }
    }

    // MARK: Section kinds

    @Test("Dynamic sections hide while their group is empty; static sections show empty")
    func dynamicAndStaticSections() throws {
        try withSeededView { _, connection in
            var mappings = ViewMappings(groups: ["home", "missing", "work"], view: "by-list")
            mappings.setSectionKind(.static, forGroup: "missing")
            #expect(mappings.options(forGroup: "missing").sectionKind == .static)
            #expect(mappings.options(forGroup: "home").sectionKind == .dynamic)
            // Static sections show even before the first update.
            #expect(mappings.visibleGroups == ["missing"])
            try connection.read { txn throws in
                let reader = try txn.view("by-list")
                try mappings.update(with: reader)
                try Self.expectRendering(mappings, txn, [("home", Self.home), ("missing", []), ("work", Self.work)])
                #expect(mappings.visibleRange(inGroup: "missing") == 0..<0)
            }
            // "home" empties: its dynamic section goes; making it static brings it back without a new update.
            try connection.readWrite { txn throws in _ = try txn.remove(key: "h1", in: tasks) }
            try connection.read { txn throws in
                let reader = try txn.view("by-list")
                try mappings.update(with: reader)
                try Self.expectRendering(mappings, txn, [("missing", []), ("work", Self.work)])
                mappings.setSectionKind(.static, forGroup: "home")
                try Self.expectRendering(mappings, txn, [("home", []), ("missing", []), ("work", Self.work)])
                // Back to the default options: dynamic again.
                mappings.setOptions(nil, forGroup: "home")
                try Self.expectRendering(mappings, txn, [("missing", []), ("work", Self.work)])
                // Default options apply to every group without options of its own.
                mappings.defaultOptions = .init(sectionKind: .static)
                try Self.expectRendering(mappings, txn, [("home", []), ("missing", []), ("work", Self.work)])
                mappings.setSectionKind(.dynamic, forGroup: "missing")
                try Self.expectRendering(mappings, txn, [("home", []), ("work", Self.work)])
            }
        }
    }

    // MARK: Ranges and reversal

    static let ranges: [ViewMappings.ItemRange?] = [
        nil, .first(0), .first(1), .first(2), .first(5), .first(9), .first(-3), .first(Int.max),
        .last(0), .last(1), .last(2), .last(5), .last(9), .last(-1), .last(Int.min), .last(Int.max),
        .fixed(length: 2, offset: 1, from: .start), .fixed(length: 2, offset: 1, from: .end), .fixed(length: 9, offset: 3, from: .end),
        .fixed(length: 3, offset: 9, from: .start), .fixed(length: -1, offset: -5, from: .end), .fixed(length: .max, offset: .max, from: .start),
        .fixed(length: .max, offset: 2, from: .end), .fixed(length: 1, offset: Int.min, from: .start),
        .flexible(.init(length: 2, offset: 1, from: .end)), .flexible(.init(length: 9, offset: 2, from: .start, maxLength: 2)),
    ]

    @Test("Every range, forwards and reversed, shows the rows the model says", arguments: ranges, [false, true])
    func rangesAndReversal(range: ViewMappings.ItemRange?, reversed: Bool) throws {
        try withSeededView { _, connection in
            let options = ViewMappings.GroupOptions(range: range, isReversed: reversed)
            var mappings = ViewMappings(groups: ["inbox", "work", "home"], view: "by-list")
            mappings.defaultOptions = options
            try connection.read { txn throws in
                let reader = try txn.view("by-list")
                try mappings.update(with: reader)
                // Dynamic sections hide only while the group is empty, not while the range shows nothing.
                try Self.expectRendering(mappings, txn, [
                    ("inbox", Self.shown(Self.inbox, options)), ("work", Self.shown(Self.work, options)), ("home", Self.shown(Self.home, options)),
                ], "range \(String(describing: range)) reversed \(reversed)")
            }
        }
    }

    @Test("Ranges pick the first or last rows, reversal applies after the range, and the window slides after writes")
    func rangeExamples() throws {
        try withSeededView { _, connection in
            var mappings = ViewMappings(groups: ["inbox", "home"], view: "by-list")
            try connection.read { txn throws in
                let reader = try txn.view("by-list")
                try mappings.update(with: reader)
                mappings.setRange(.first(2), forGroup: "inbox")
                try Self.expectRendering(mappings, txn, [("inbox", ["i4", "i2"]), ("home", ["h1"])])
                mappings.setRange(.last(2), forGroup: "inbox")
                try Self.expectRendering(mappings, txn, [("inbox", ["i1", "i5"]), ("home", ["h1"])])
                mappings.setReversed(true, forGroup: "inbox")
                try Self.expectRendering(mappings, txn, [("inbox", ["i5", "i1"]), ("home", ["h1"])])
                #expect(mappings.visibleRange(inGroup: "inbox") == 3..<5)
                #expect(mappings.indexPath(forIndex: 3, inGroup: "inbox") == ViewIndexPath(section: 0, row: 1))
                #expect(mappings.indexPath(forIndex: 4, inGroup: "inbox") == ViewIndexPath(section: 0, row: 0))
                #expect(mappings.indexPath(forIndex: 2, inGroup: "inbox") == nil)
                #expect(mappings.position(at: ViewIndexPath(section: 0, row: 0))! == ("inbox", 4))
                mappings.setRange(.first(3), forGroup: "inbox")
                try Self.expectRendering(mappings, txn, [("inbox", ["i3", "i2", "i4"]), ("home", ["h1"])])
                // A group smaller than the range shows all of its rows.
                mappings.setRange(.first(3), forGroup: "home")
                try Self.expectRendering(mappings, txn, [("inbox", ["i3", "i2", "i4"]), ("home", ["h1"])])
                mappings.setRange(.last(0), forGroup: "home")
                try Self.expectRendering(mappings, txn, [("inbox", ["i3", "i2", "i4"]), ("home", [])])
                #expect(mappings.description == "by-list@\(reader.snapshot) [inbox: 3/5, home: 0/1]")
            }
            // A new first row enters the window of the first 3 and pushes i3 out.
            try connection.readWrite { txn throws in try txn.set(TodoItem(title: "top", list: "inbox", priority: 9), forKey: "i0", in: tasks) }
            try connection.read { txn throws in
                let reader = try txn.view("by-list")
                try mappings.update(with: reader)
                try Self.expectRendering(mappings, txn, [("inbox", ["i2", "i4", "i0"]), ("home", [])])
                #expect(mappings.count(inGroup: "inbox") == 6)
            }
        }
    }

    // MARK: Randomized

    @Test("Random options and writes render as a model of the rows says", arguments: [101 as UInt64, 202, 303])
    func randomOptionsAndWrites(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let lists = ["a", "b", "c", "d"]
        try withDatabase { database, _ in
            try database.register(makeTaskView())
            let connection = database.newConnection()
            var model: [String: TodoItem] = [:]
            for round in 0..<12 {
                try connection.readWrite { txn throws in
                    for _ in 0..<Int.random(in: 1...25, using: &random) {
                        let key = "k\(Int.random(in: 0..<60, using: &random))"
                        if Int.random(in: 0..<4, using: &random) == 0 {
                            _ = try txn.remove(key: key, in: tasks)
                            model[key] = nil
                        } else {
                            let task = TodoItem(title: "t\(Int.random(in: 0..<6, using: &random))", list: lists.randomElement(using: &random)!,
                                            priority: Int.random(in: 0..<3, using: &random), done: Int.random(in: 0..<6, using: &random) == 0)
                            try txn.set(task, forKey: key, in: tasks)
                            model[key] = task
                        }
                    }
                }
                let groups = Self.modelGroups(model)
                // Random mappings: fixed (with a duplicate and an unknown group) or filtered, random options per group.
                let fixed = Bool.random(using: &random)
                var mappings: ViewMappings
                var order: [String]
                if fixed {
                    order = (lists + ["zz"]).shuffled(using: &random)
                    mappings = ViewMappings(groups: order + [order[0]], view: "by-list")
                } else {
                    let excluded = lists.randomElement(using: &random)!
                    mappings = ViewMappings(view: "by-list", groupFilter: { $0 != excluded }, sortedBy: { $0 > $1 })
                    order = groups.keys.filter { $0 != excluded }.sorted(by: >)
                }
                var optionsByGroup: [String: ViewMappings.GroupOptions] = [:]
                for group in lists + ["zz"] {
                    let ranges: [ViewMappings.ItemRange?] = [nil, .first(Int.random(in: -1...6, using: &random)), .last(Int.random(in: -1...6, using: &random))]
                    let options = ViewMappings.GroupOptions(
                        sectionKind: Bool.random(using: &random) ? .static : .dynamic, range: ranges.randomElement(using: &random)!,
                        isReversed: Bool.random(using: &random))
                    optionsByGroup[group] = options
                    mappings.setOptions(options, forGroup: group)
                }
                let expected: [(group: String, keys: [String])] = order.compactMap { group in
                    let keys = groups[group] ?? []
                    let options = optionsByGroup[group]!
                    guard !keys.isEmpty || (fixed && options.sectionKind == .static) else { return nil }
                    return (group, Self.shown(keys, options))
                }
                try connection.read { txn throws in
                    let reader = try txn.view("by-list")
                    for (group, keys) in groups {
                        #expect(try reader.rowIDs(inGroup: group, range: 0..<Int.max).map(\.key) == keys, "seed \(seed) round \(round)")
                    }
                    try mappings.update(with: reader)
                    try Self.expectRendering(mappings, txn, expected, "seed \(seed) round \(round)")
                }
            }
        }
    }

    // MARK: Readers

    @Test("Reader-based queries throw snapshotMismatch for another snapshot and invalidArgument for another view")
    func readerChecks() throws {
        try withSeededView { database, connection in
            try database.register(makeTaskView(name: "other"))
            var mappings = ViewMappings(groups: ["inbox"], view: "by-list")
            let indexPath = ViewIndexPath(section: 0, row: 0)
            let id = RowID(collection: "tasks", key: "i4")

            func expectCode(_ code: CanopyError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
                let error = #expect(throws: CanopyError.self, sourceLocation: sourceLocation) { try body() }
                #expect(error?.code == code, "\(String(describing: error))", sourceLocation: sourceLocation)
            }

            // Never updated: no snapshot to match.
            try connection.read { txn throws in
                let reader = try txn.view("by-list")
                expectCode(.snapshotMismatch) { _ = try mappings.rowID(at: indexPath, reader: reader) }
                expectCode(.snapshotMismatch) { _ = try mappings.rowIDs(inSection: 0, reader: reader) }
                try mappings.update(with: reader)
                #expect(try mappings.rowID(at: indexPath, reader: reader)?.key == "i4")
                #expect(try mappings.object(at: indexPath, reader: reader, in: tasks)?.title == "a")
                // A reader of another view, even at the same snapshot.
                let other = try txn.view("other")
                expectCode(.invalidArgument) { _ = try mappings.rowID(at: indexPath, reader: other) }
                expectCode(.invalidArgument) { _ = try mappings.rowIDs(inSection: 0, reader: other) }
                expectCode(.invalidArgument) { _ = try mappings.indexPath(of: id, reader: other) }
                expectCode(.invalidArgument) { _ = try mappings.object(at: indexPath, reader: other, in: tasks) }
                expectCode(.invalidArgument) { try mappings.update(with: other) }
            }
            // A failed update changes nothing.
            #expect(mappings.numberOfItems(inSection: 0) == 5)
            // A read at the same snapshot (no write in between) is fine.
            try connection.read { txn throws in #expect(try mappings.rowID(at: indexPath, reader: txn.view("by-list"))?.key == "i4") }

            try connection.readWrite { txn throws in try txn.set(TodoItem(title: "top", list: "inbox", priority: 9), forKey: "i0", in: tasks) }
            try connection.read { txn throws in
                let reader = try txn.view("by-list")
                expectCode(.snapshotMismatch) { _ = try mappings.rowID(at: indexPath, reader: reader) }
                expectCode(.snapshotMismatch) { _ = try mappings.rowIDs(inSection: 0, reader: reader) }
                expectCode(.snapshotMismatch) { _ = try mappings.indexPath(of: id, reader: reader) }
                expectCode(.snapshotMismatch) { _ = try mappings.object(at: indexPath, reader: reader, in: tasks) }
                try mappings.update(with: reader)
                #expect(try mappings.rowID(at: indexPath, reader: reader)?.key == "i0")
                #expect(try mappings.indexPath(of: id, reader: reader) == ViewIndexPath(section: 0, row: 1))
                // Rows that are not shown: not in the view, unknown collection, unknown key.
                #expect(try mappings.indexPath(of: RowID(collection: "tasks", key: "e1"), reader: reader) == nil)
                #expect(try mappings.indexPath(of: RowID(collection: "tasks", key: "w1"), reader: reader) == nil)
                #expect(try mappings.indexPath(of: RowID(collection: "nowhere", key: "i4"), reader: reader) == nil)
                #expect(try mappings.indexPath(of: RowID(collection: "tasks", key: "nope"), reader: reader) == nil)
                // A row of another collection is not decoded as a task.
                #expect(try mappings.object(at: ViewIndexPath(section: 0, row: 0), reader: reader, in: notes) == nil)
            }
        }
    }

    @Test("numberOfItems, numberOfSections and description sum up the visible sections")
    func countsAndDescription() throws {
        try withSeededView { _, connection in
            var mappings = ViewMappings(groups: ["work", "inbox", "missing", "home"], view: "by-list")
            mappings.setRange(.last(2), forGroup: "inbox")
            mappings.setSectionKind(.static, forGroup: "missing")
            #expect(mappings.description == "by-list@- [missing: 0]")
            try connection.read { txn throws in
                let reader = try txn.view("by-list")
                try mappings.update(with: reader)
                #expect(mappings.numberOfSections == 4)
                #expect(mappings.numberOfItems == 3 + 2 + 0 + 1)
                #expect((0..<4).map { mappings.numberOfItems(inSection: $0) } == [3, 2, 0, 1])
                #expect(mappings.count(inGroup: "inbox") == 5)
                #expect(mappings.description == "by-list@\(reader.snapshot) [work: 3, inbox: 2/5, missing: 0, home: 1]")
            }
        }
    }
}
