@testable import Canopy
@testable import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import LMDB
import Testing

/// How many mutated inputs the fuzz tests feed: seconds in CI; `CANOPY_FUZZ_CASES=1000000 swift test --filter
/// DecoderFuzzTests` for the large run (the database-level test takes a hundredth of it).
let fuzzCases = ProcessInfo.processInfo.environment["CANOPY_FUZZ_CASES"].flatMap(Int.init) ?? 10_000

/// The mutations a damaged disk or a bug makes to stored bytes.
struct Mutator {
    var random: SeededRandom

    mutating func mutate(_ input: [UInt8]) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...3, using: &random) {
            switch Int.random(in: 0..<7, using: &random) {
            case 0 where !bytes.isEmpty:  // flip a bit
                let i = Int.random(in: 0..<bytes.count, using: &random)
                bytes[i] ^= 1 << UInt8.random(in: 0..<8, using: &random)
            case 1 where !bytes.isEmpty:  // a random byte
                bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            case 2 where !bytes.isEmpty:  // bytes that stress lengths and varints
                bytes[Int.random(in: 0..<bytes.count, using: &random)] = [0x00, 0x7F, 0x80, 0xFF, 0x3F, 0x40].randomElement(using: &random)!
            case 3:  // cut short
                bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &random)))
            case 4:  // bytes inserted
                let at = Int.random(in: 0...bytes.count, using: &random)
                bytes.insert(contentsOf: (0..<Int.random(in: 1...8, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }, at: at)
            case 5 where bytes.count > 1:  // a range repeated
                let start = Int.random(in: 0..<bytes.count, using: &random)
                let end = Int.random(in: start...bytes.count, using: &random)
                bytes.insert(contentsOf: bytes[start..<end], at: end)
            case 6 where bytes.count >= 8:  // a run of 0xFF (huge counts and lengths)
                let at = Int.random(in: 0...(bytes.count - 8), using: &random)
                for i in at..<(at + 8) { bytes[i] = 0xFF }
            default:
                bytes.append(UInt8.random(in: 0...255, using: &random))
            }
        }
        return bytes
    }
}

/// Real stored values of a database with rows, metadata, attachments, two views and a commit log, by kind.
struct FuzzCorpus {
    var rows: [[UInt8]] = []
    var jsonRows: [[UInt8]] = []
    var metadata: [[UInt8]] = []
    var commits: [[UInt8]] = []
    var pages: [[UInt8]] = []
    var states: [[UInt8]] = []
    var slots: [[UInt8]] = []
    var collections: [[UInt8]] = []
    var registrations: [[UInt8]] = []

    static func make(in directory: TemporaryDirectory) throws -> (FuzzCorpus, CanopyCore.Database) {
        let database = try CanopyCore.Database(path: directory.appending("db"), options: .init(durability: .none))
        try database.register(makeTaskView(options: ViewOptions(allowedCollections: ["tasks"])))
        try database.register(makeTaskView(name: "by-list-2", options: ViewOptions(allowedCollections: ["tasks"])))
        let connection = database.newConnection()
        for round in 0..<4 {
            try connection.readWrite { txn in
                for i in 0..<120 {
                    try txn.set(TodoItem(title: "task \(i) of round \(round) ✓", list: "list \(i % 7)", priority: (i * round) % 5, done: i % 11 == 0),
                                forKey: "t\(i)", in: tasks, metadata: i % 2 == 0 ? NoteInfo(color: "c\(i)") : nil)
                    if i % 10 == 0 { try txn.set(Note(title: "json \(i)", body: "b", priority: i), forKey: "j\(i)", in: jsonNotes) }
                }
                if round == 3 { for i in 0..<20 { _ = try txn.remove(key: "t\(i * 3)", in: tasks) } }
            }
        }
        var corpus = FuzzCorpus()
        let environment = database.environment
        try environment.read { txn in
            func values(_ table: String) throws -> [([UInt8], [UInt8])] {
                var found: [([UInt8], [UInt8])] = []
                try txn.forEach(in: try txn.openDatabase(named: table, checksummed: true)) { key, value in
                    found.append((Array(key), Array(value)))
                    return true
                }
                return found
            }
            let jsonID = try values("canopy.collections").first { String(decoding: $0.0, as: UTF8.self) == "json-notes" }?.1.prefix(4)
            for (key, value) in try values("canopy.objects") {
                if let jsonID, key.starts(with: jsonID) { corpus.jsonRows.append(value) } else { corpus.rows.append(value) }
            }
            corpus.metadata = try values("canopy.metadata").map(\.1)
            corpus.commits = try values("canopy.commits").map(\.1)
            corpus.pages = try values("ext.by-list.pages").map(\.1) + values("ext.by-list-2.pages").map(\.1)
            corpus.collections = try values("canopy.collections").map(\.1)
            corpus.registrations = try values("canopy.extensions").map(\.1)
            for (key, value) in try values("canopy.info") {
                if key == Array("state".utf8) { corpus.states.append(value) }
                if key == StoreInfoKey.attachmentSlots { corpus.slots.append(value) }
            }
        }
        return (corpus, database)
    }
}

@Suite("Decoders of stored bytes never trap: mutated real inputs")
struct DecoderFuzzTests {
    /// Runs every decoder that reads `bytes` as `kind`, and everything a reader then does with the result. Errors are
    /// the expected outcome; a trap ends the test process.
    static func decode(_ kind: Int, _ bytes: [UInt8], slot: UInt32, order: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            switch kind {
            case 0:  // a row record: flags, attachments (a view's entry per row), the object (binary codec)
                if let region = StoredRecord.attachmentBytes(buffer) {
                    if let all = StoredRecord.attachments(region) {
                        for attachment in all.values { _ = try? attachment.withUnsafeBytes { try ViewTables.RowEntry(decoding: $0) } }
                    }
                    if let one = StoredRecord.attachment(slot: slot, in: region) ?? nil { _ = try? ViewTables.RowEntry(decoding: one) }
                }
                if let object = StoredRecord.objectBytes(buffer) {
                    _ = try? BinaryCodec().decodeGeneral(TodoItem.self, from: object)
                    _ = try? BinaryCodec().decode(TodoItem.self, from: object, entry: FlatDecodePlans.entry(for: TodoItem.self))
                    _ = try? BinaryCodec().decode([String: Int].self, from: object)
                    _ = try? Codecs.jsonText(from: object, codecName: "binary")
                }
            case 1:  // a row of a JSON collection
                if let object = StoredRecord.objectBytes(buffer) {
                    _ = try? JSONCodec().decode(Note.self, from: object)
                    _ = try? Codecs.jsonText(from: object, codecName: "json")
                }
            case 2:  // metadata
                _ = try? BinaryCodec().decode(NoteInfo.self, from: buffer)
                _ = try? Codecs.jsonText(from: buffer, codecName: "binary", prettyPrinted: true)
            case 3:  // a commit-log entry and the views' payloads in it
                if let notification = try? CommitNotification(decoding: buffer) {
                    for payload in notification.extensionPayloads.values { _ = try? ViewCommitChanges.decode(payload) }
                }
                _ = try? ViewCommitChanges.decode(bytes)
            case 4:  // a view page, then every accessor a reader uses
                if let page = try? ViewPage(decoding: buffer) {
                    for i in 0..<page.count {
                        _ = page.orderBytes(at: i)
                        _ = try? StoredRowKeyCoding.decode(UnsafeRawBufferPointer(rebasing: buffer[0..<0]))
                        let rowKey = page.rowKey(at: i)
                        _ = rowKey.withUnsafeBytes { try? StoredRowKeyCoding.decode($0) }
                        _ = page.compare(i, order)
                    }
                    _ = page.lowerBound(order)
                    _ = page.index(of: order)
                }
            case 5:  // the store's state, attachment slots, collection records, registrations
                _ = try? StoreState(decoding: buffer)
                _ = AttachmentSlots(decoding: buffer)
                _ = CollectionRecord(decoding: buffer)
                _ = try? JSONDecoderBox.decoder.decode(ExtensionRecord.self, from: bytes)
            default:
                break
            }
        }
    }

    @Test("Every decoder, fed mutated real records (CANOPY_FUZZ_CASES, default 10,000; seed printed): errors, never a trap")
    func decoders() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (corpus, _) = try FuzzCorpus.make(in: directory)
        let kinds: [(Int, [[UInt8]])] = [
            (0, corpus.rows), (1, corpus.jsonRows), (2, corpus.metadata), (3, corpus.commits), (4, corpus.pages),
            (5, corpus.states + corpus.slots + corpus.collections + corpus.registrations),
        ]
        for (kind, inputs) in kinds { #expect(!inputs.isEmpty, "kind \(kind) has no real inputs") }
        let seed = UInt64(ProcessInfo.processInfo.environment["CANOPY_FUZZ_SEED"].flatMap(UInt64.init) ?? 3)
        print("decoder fuzz: \(fuzzCases) cases, seed \(seed) (CANOPY_FUZZ_SEED to replay)")
        var mutator = Mutator(random: SeededRandom(seed: seed))
        let order = corpus.pages.first.flatMap { try? ViewPage(decoding: $0.withUnsafeBytes { $0 }) }.map { $0.count > 0 ? $0.orderBytes(at: 0) : [] } ?? []
        for _ in 0..<fuzzCases {
            let (kind, inputs) = kinds.randomElement(using: &mutator.random)!
            let input = inputs.randomElement(using: &mutator.random)!
            Self.decode(kind, mutator.mutate(input), slot: UInt32.random(in: 0...3, using: &mutator.random), order: order)
        }
    }

    @Test("Views over mutated pages, groups, entries and state (sealed, so the decoders see them): typed errors, never a trap")
    func viewsOverMutatedStorage() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        do { _ = try FuzzCorpus.make(in: directory) }
        let seed: UInt64 = 4
        let cases = max(100, fuzzCases / 100)
        print("view storage fuzz: \(cases) cases, seed \(seed)")
        var mutator = Mutator(random: SeededRandom(seed: seed))
        let database = try CanopyCore.Database(path: path, options: .init(durability: .none))
        let environment = database.environment
        var typedErrors = 0
        let writer = database.newConnection()
        for number in 0..<cases {
            // "state": the view's state record, which the store's state (the newest commit-log entry) carries.
            let table = ["ext.by-list.pages", "ext.by-list.pages", "ext.by-list.groups", "canopy.objects", "state"].randomElement(using: &mutator.random)!
            let state = try writer.read { txn in try txn.withExtensionState(of: "by-list") { $0.map { Array($0) } } }
            var restore: ([UInt8], [UInt8], LMDB.Database)?
            if table == "state" {
                // Mutated and committed by a process without the view (a tool), sealed as the store seals it.
                let mutated = mutator.mutate(state ?? [])
                try writer.readWrite { txn in try txn.setExtensionState(mutated, of: "by-list") }
            } else {
                // Mutate one value (sealed again) and give the view a new version, so that readers rebuild its directory.
                restore = try environment.write { txn in
                    let handle = try txn.openDatabase(named: table, checksummed: true)
                    var entries: [([UInt8], [UInt8])] = []
                    try txn.forEach(in: handle) { key, value in
                        entries.append((Array(key), Array(value)))
                        return true
                    }
                    let (key, value) = entries.randomElement(using: &mutator.random)!
                    try txn.put(mutator.mutate(value), forKey: key, in: handle)
                    return (key, value, handle)
                }
                if var state, state.count == 20 {
                    state[0..<8] = ArraySlice(withUnsafeBytes(of: UInt64(1_000_000 + number).bigEndian, Array.init))
                    try writer.readWrite { txn in try txn.setExtensionState(state, of: "by-list") }
                }
            }
            do {
                try database.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0)).read { txn in
                    let view = try txn.persistedView("by-list", allowingStale: true)
                    _ = try view.checkStructure()
                    for group in try view.groups() {
                        let ids = try view.rowIDs(inGroup: group)
                        for id in ids.prefix(5) { _ = try view.position(of: id) }
                        _ = try view.rowID(at: ids.count / 2, inGroup: group)
                    }
                    _ = try txn.checkStoredRows(limit: 5)
                }
            } catch is CanopyError {
                typedErrors += 1
            }
            if let restore { try environment.write { txn in try txn.put(restore.1, forKey: restore.0, in: restore.2) } }
            try writer.readWrite { txn in try txn.setExtensionState(state, of: "by-list") }
        }
        print("view storage fuzz: \(typedErrors) typed errors in \(cases) cases, 0 traps")
    }
}
