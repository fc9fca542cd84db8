@testable import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

private let archive = TypedCollection<Note, NoteInfo>("archive")

/// The change feed records a commit from the change log's own lists and sets (``CommitKeySets``), without building the
/// notification's key sets: these tests hold that walk to what the sets said — every key the commit set or removed,
/// once, sorted, with the row's values — in a bulk commit that mixes every kind of change.
@Suite("Change feed: a bulk commit records every key without building key sets")
struct ChangeFeedBulkCommitTests {
    @Test("A bulk commit's feed record lists every row it set or removed, once, in order, with its values (seeded)",
          arguments: [7, 19, 2_026] as [UInt64])
    func bulkCommitRecordsEveryKey(seed: UInt64) throws {
        try withDatabase { database, _ in
            var random = SeededRandom(seed: seed)
            let recorder = NotificationRecorder()
            let token = database.addCommitObserver { recorder.record($0) }
            defer { database.removeObserver(token) }
            let connection = database.newConnection()
            let collections = [notes, archive]
            // The rows as the model has them: title and metadata colour (nil: none).
            var rows: [String: [String: (title: String, color: String?)]] = [:]
            try connection.readWrite { txn throws in
                for collection in collections {
                    for index in 0..<30 {
                        let color: String? = index % 3 == 0 ? "c\(index)" : nil
                        try txn.set(Note(title: "first \(index)"), forKey: "k\(index)", in: collection, metadata: color.map { NoteInfo(color: $0) })
                        rows[collection.name, default: [:]]["k\(index)"] = ("first \(index)", color)
                    }
                }
            }
            let start = try database.enableChangeFeed()
            // Every key a change reached (the feed lists it: set if the row is there at the end, else a tombstone).
            var touched: [String: Set<String>] = [:]
            try connection.readWrite { txn throws in
                // Rows created in bulk, in a random order (the change log lists them as written, unsorted).
                var created = Array(0..<2_000)
                created.shuffle(using: &random)
                for index in created {
                    let collection = collections[index % 2]
                    try txn.set(Note(title: "new \(index)"), forKey: "n\(index)", in: collection)
                    rows[collection.name, default: [:]]["n\(index)"] = ("new \(index)", nil)
                    touched[collection.name, default: []].insert("n\(index)")
                }
                for step in 0..<600 {
                    let collection = collections[Int.random(in: 0..<2, using: &random)]
                    let name = collection.name
                    let key = Bool.random(using: &random) ? "k\(Int.random(in: 0..<45, using: &random))" : "n\(Int.random(in: 0..<2_000, using: &random))"
                    let existing = rows[name]?[key]
                    switch Int.random(in: 0..<100, using: &random) {
                    case 0..<30:
                        try txn.set(Note(title: "s\(step)"), forKey: key, in: collection)
                        rows[name, default: [:]][key] = ("s\(step)", nil)
                        touched[name, default: []].insert(key)
                    case 30..<45:
                        try txn.set(Note(title: "m\(step)"), forKey: key, in: collection, metadata: NoteInfo(color: "m\(step)"))
                        rows[name, default: [:]][key] = ("m\(step)", "m\(step)")
                        touched[name, default: []].insert(key)
                    case 45..<60:
                        let color: String? = step % 2 == 0 ? "r\(step)" : nil
                        #expect(try txn.replaceMetadata(color.map { NoteInfo(color: $0) }, forKey: key, in: collection) == (existing != nil))
                        if let existing {
                            rows[name]?[key] = (existing.title, color)
                            touched[name, default: []].insert(key)
                        }
                    case 60..<68:
                        #expect(try txn.touchRow(forKey: key, inCollection: name) == (existing != nil))
                        if existing != nil { touched[name, default: []].insert(key) }
                    default:
                        #expect(try txn.remove(key: key, in: collection) == (existing != nil))
                        if existing != nil {
                            rows[name]?[key] = nil
                            touched[name, default: []].insert(key)
                        }
                    }
                }
            }
            let commits = try database.readChanges(since: start)
            guard commits.count == 1, let changes = commits.first?.changes else {
                Issue.record("seed \(seed): \(try database.readChanges(since: start).count) feed commits")
                return
            }
            var expected: [String] = []
            for name in touched.keys.sorted() {
                for key in (touched[name] ?? []).sorted() {
                    expected.append("\(rows[name]?[key] == nil ? "remove" : "set") \(name)/\(key)")
                }
            }
            let recorded = changes.map { "\($0.kind.rawValue) \($0.collection)/\($0.key)" }
            #expect(recorded == expected, "seed \(seed): the feed's keys differ from the model's")
            for change in changes where change.kind == .set {
                guard let row = rows[change.collection]?[change.key] else { continue }
                #expect(try change.object(as: Note.self)?.title == row.title, "seed \(seed): \(change.collection)/\(change.key)")
                #expect(try change.metadata(as: NoteInfo.self)?.color == row.color, "seed \(seed): \(change.collection)/\(change.key) metadata")
            }
            // The commit recorded itself without building the notification's sets (the observer read none).
            // Delivered in commit order: the bulk commit's comes after those of the commits before it.
            var found: CommitNotification?
            for count in 1...4 where found == nil {
                found = recorder.wait(for: count).first { $0.snapshot == commits.first?.snapshot }
            }
            guard let notification = found else {
                Issue.record("seed \(seed): no notification of the bulk commit")
                return
            }
            #expect(!notification.keySets.areBuilt, "seed \(seed): recording the feed built the notification's key sets")
        }
    }
}
