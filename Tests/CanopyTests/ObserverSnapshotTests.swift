import Canopy
import CanopyTestSupport
import Foundation
import Testing

/// An observer holds a snapshot only between two advances: a loop over `changes()` running through many commits does
/// not keep LMDB from reusing the pages they free, so the file does not grow with every commit.
@Suite("Observers never hold old snapshots", .ownThread)
struct ObserverSnapshotTests {
    /// The blocks `data.mdb` takes on disk (st_blocks, in 512-byte units).
    static func allocatedBlocks(_ directory: String) throws -> Int {
        var info = stat()
        guard stat(directory + "/data.mdb", &info) == 0 else {
            throw CanopyError(.cannotOpen, "cannot stat data.mdb", path: directory)
        }
        return Int(info.st_blocks)
    }

    /// Commits `commits` small transactions (each rewrites one of 50 rows of the observed group) and returns the
    /// blocks `data.mdb` takes at the end. With `observing`, a loop over an observer's `changes()` runs throughout,
    /// and each commit waits until the loop has reached it (a handshake, no timing).
    static func workload(commits: Int, observing: Bool) async throws -> Int {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let database = try Database(path: path, options: .init(durability: .none))
        try database.register(makeTaskView(options: .init(allowedCollections: ["tasks"])))
        let writer = database.newConnection()
        try await writer.readWrite { txn in
            for number in 0..<50 { try txn.set(TodoItem(title: "t\(number)", list: "a", priority: number), forKey: "k\(number)", in: tasks) }
        }
        let reached = AsyncStream<UInt64>.makeStream()
        var loop: Task<Void, any Error>?
        if observing {
            let observer = try ViewObserver(database: database, mappings: ViewMappings(groups: ["a"], view: "by-list"))
            loop = Task {
                for try await changes in observer.changes() { reached.continuation.yield(changes.toSnapshot) }
            }
        }
        var progress = reached.stream.makeAsyncIterator()
        for number in 0..<commits {
            try await writer.readWrite { txn in
                try txn.set(TodoItem(title: "t\(number)", list: "a", priority: number % 7), forKey: "k\(number % 50)", in: tasks)
            }
            if observing {
                let committed = try database.currentSnapshot()
                while let snapshot = await progress.next(), snapshot < committed {}
            }
        }
        loop?.cancel()
        _ = try await loop?.value
        return try allocatedBlocks(path)
    }

    @Test("With a loop over changes() running through 2,000 commits, data.mdb takes at most 1.5x the blocks it takes without",
          .timeLimit(.minutes(5)))
    func loopDoesNotGrowTheFile() async throws {
        let without = try await Self.workload(commits: 2_000, observing: false)
        let with = try await Self.workload(commits: 2_000, observing: true)
        #expect(Double(with) <= 1.5 * Double(without), "data.mdb: \(with) blocks with the loop, \(without) without")
    }
}
