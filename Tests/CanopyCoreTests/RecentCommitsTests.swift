@testable import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Testing

@Suite("Recent commits kept in memory")
struct RecentCommitsTests {
    @Test("The ring keeps the newest notifications, oldest first, across its wrap", arguments: [1, 3, 8])
    func ringKeepsTheNewest(capacity: Int) {
        var recent = RecentCommits(capacity: capacity)
        #expect(recent.first == nil && recent.last == nil && recent.count == 0)
        for snapshot in UInt64(1)...UInt64(3 * capacity + 2) {
            recent.append(CommitNotification(snapshot: snapshot))
            let kept = Array(max(1, Int(snapshot) - capacity + 1)...Int(snapshot))
            #expect(recent.count == kept.count)
            #expect((0..<recent.count).map { Int(recent[$0].snapshot) } == kept, "after snapshot \(snapshot)")
            #expect(recent.first?.snapshot == UInt64(kept[0]) && recent.last?.snapshot == snapshot)
        }
    }

    @Test("A connection catching up over the ring's wrap gets every commit's changes from memory or the log")
    func catchingUpAcrossTheWrap() throws {
        try withDatabase { database, _ in
            let writer = database.newConnection()
            let reader = database.newConnection()
            try writer.readWrite { txn throws in try txn.set(Note(title: "0"), forKey: "k", in: notes) }
            // More commits than the ring holds, in steps that end on either side of its wrap: the reader's cache must
            // never return a value an earlier commit replaced.
            var written = 0
            for step in [1, 5, DatabaseCore.recentCommitLimit - 1, 1, DatabaseCore.recentCommitLimit + 3, 2] {
                #expect(try reader.read { try $0.object(forKey: "k", in: notes)?.title } == "\(written)")
                for _ in 0..<step {
                    written += 1
                    try writer.readWrite { txn throws in
                        try txn.set(Note(title: "\(written)"), forKey: "k", in: notes)
                        try txn.set(Note(title: "other"), forKey: "other-\(written % 7)", in: notes)
                    }
                }
                #expect(try reader.read { try $0.object(forKey: "k", in: notes)?.title } == "\(written)", "after \(written) commits")
            }
        }
    }
}
