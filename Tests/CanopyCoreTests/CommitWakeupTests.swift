import CanopyCore
import CanopyTestSupport
import Foundation
import Synchronization
import Testing

@Suite("Cross-process commit wake-up", .ownThread)
struct CommitWakeupTests {
    /// The CrashWriter child's path, and a new database in a temporary directory whose first commit made the signal
    /// file (so that a watch is on the file itself). The caller removes the directory.
    static func databaseWithSignalFile() throws -> (writer: String, directory: TemporaryDirectory, path: String, database: Database) {
        let writerPath = try #require(builtExecutable(named: "CrashWriter"), "the CrashWriter executable was not built")
        let directory = try TemporaryDirectory()
        let path = directory.appending("db")
        let database = try Database(path: path, options: .init(durability: .none))
        try database.newConnection().readWrite { txn in try txn.set(0, forKey: "n", in: TypedCollection<Int, NoMetadata>("counter")) }
        #expect(FileManager.default.fileExists(atPath: path + "/canopy-commit.signal"))
        return (writerPath, directory, path, database)
    }

    @Test("another process's commit wakes a watch (inotify on the signal file), without polling", .timeLimit(.minutes(1)))
    func otherProcessCommitWakesTheWatch() throws {
        let (writerPath, directory, path, database) = try Self.databaseWithSignalFile()
        defer { directory.remove() }

        let wakeups = Atomic<Int>(0)
        let woken = DispatchSemaphore(value: 0)
        let watch = database.watchCommits {
            wakeups.add(1, ordering: .relaxed)
            woken.signal()
        }
        defer { watch.cancel() }
        #expect(watch.isActive)
        let before = try database.currentSnapshot()

        let process = Process()
        process.executableURL = URL(fileURLWithPath: writerPath)
        process.arguments = [path, "none", "--commits", "1"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "the writer process failed")
        // Bounded wait (a hang guard, not a timing): the wake-up must come from the other process's commit.
        #expect(woken.wait(timeout: .now() + .seconds(20)) == .success)
        #expect(wakeups.load(ordering: .relaxed) >= 1)
        #expect(try database.currentSnapshot() == before + 1)
    }

    @Test("a process whose last commit comes right after another and that exits at once still wakes the watch for it",
          .timeLimit(.minutes(1)), arguments: [0 as UInt32, 200, 500])
    func lastCommitBeforeExitWakesTheWatch(gap: UInt32) throws {
        // Touches of the signal file are spaced (a commit within a millisecond of the last touch schedules a trailing
        // touch); a process that exits right after such a commit must still touch for it, or an observer that
        // waits for wake-ups never sees that commit (the push stress test's hang on CI).
        let (writerPath, directory, path, database) = try Self.databaseWithSignalFile()
        defer { directory.remove() }
        let before = try database.currentSnapshot()
        let commits: UInt64 = 3

        // At each wake-up, the snapshot an observer woken then would read.
        let seen = Mutex<[UInt64]>([])
        let woken = DispatchSemaphore(value: 0)
        let watch = database.watchCommits {
            let snapshot = (try? database.currentSnapshot()) ?? 0
            seen.withLock { $0.append(snapshot) }
            woken.signal()
        }
        defer { watch.cancel() }
        #expect(watch.isActive)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: writerPath)
        process.arguments = [path, "none", "--commits", "\(commits)", "--gap-microseconds", "\(gap)"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "the writer process failed")
        #expect(try database.currentSnapshot() == before + commits)
        // Bounded waits (a hang guard, not a timing): some wake-up must come after the last commit.
        while seen.withLock({ $0.last }) != before + commits {
            guard woken.wait(timeout: .now() + .seconds(10)) == .success else { break }
        }
        #expect(seen.withLock { $0.last } == before + commits, "gap \(gap) µs: wake-ups read snapshots \(seen.withLock { $0 }), the last commit is \(before + commits)")
    }

    @Test("a cancelled watch is not called again")
    func cancelledWatchStops() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        let counter = TypedCollection<Int, NoMetadata>("counter")
        try database.newConnection().readWrite { txn in try txn.set(0, forKey: "n", in: counter) }
        let calls = Atomic<Int>(0)
        let watch = database.watchCommits { calls.add(1, ordering: .relaxed) }
        watch.cancel()
        for i in 1...5 { try database.newConnection().readWrite { txn in try txn.set(i, forKey: "n", in: counter) } }
        #expect(calls.load(ordering: .relaxed) == 0)
    }
}
