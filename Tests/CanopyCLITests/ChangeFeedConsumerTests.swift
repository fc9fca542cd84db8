import Canopy
import CanopyCLI
import CanopyTestSupport
import Foundation
import Testing

/// `canopy changes --consumer` as a real consumer process, killed with SIGKILL at random moments while another
/// process commits: over the whole run it must have printed every commit, in order, none missing (at least once:
/// a commit printed but not acknowledged before the kill is printed again by the next run).
@Suite("Change feed consumer under SIGKILL", .serialized, .ownThread)
struct ChangeFeedConsumerTests {
    /// Kills of the consumer: 50 by default (the CI run); `CANOPY_FEED_KILLS=500` for the long run.
    static let kills = max(50, ProcessInfo.processInfo.environment["CANOPY_FEED_KILLS"].flatMap(Int.init) ?? 50)

    @Test(.timeLimit(.minutes(5))) func killedConsumerResumesWithoutMissingACommit() throws {
        guard let canopy = canopyExecutable, let writerExecutable = crashWriterExecutable else {
            Issue.record("the canopy and CrashWriter executables are not built next to the tests")
            return
        }
        let seed = UInt64(ProcessInfo.processInfo.environment["CANOPY_TEST_SEED"].flatMap(UInt64.init) ?? 18_06)
        var random = SeededRandom(seed: seed)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let start: UInt64
        do {
            let database = try Database(path: path, options: .init(durability: .none))
            start = try database.enableChangeFeed()
            // Registered before the writer starts: a consumer registered later could find the first commits pruned
            // already (the feed keeps 1,024 commits for no one), which is a gap, not what this test is about.
            try database.registerFeedConsumer(named: "indexer", after: start)
        }
        let writer = try ChildProcess(writerExecutable, [path, "none", "--commits", "3000"])

        var runs: [[UInt64]] = []
        var values: [UInt64: Int] = [:]  // snapshot → the counter value the commit set
        /// Reads the child's lines: `limit` of them, then (after `interrupt`, the kill) what it printed before it died.
        func consume(_ child: ChildProcess, lines limit: Int, interrupt: () -> Void) {
            var run: [UInt64] = []
            var read = 0
            var interrupted = false
            while true {
                if !interrupted && read >= limit {
                    interrupt()
                    interrupted = true
                }
                // A following consumer that has printed every commit waits for more: once the writer is done, a
                // pause means it caught up. It is killed then (never left running: it kept `swift test` from exiting)
                // and what it printed before is read as after any other kill.
                guard let line = child.nextLine(seconds: interrupted || !writer.hasExited ? 30 : 2) else {
                    if interrupted { break }
                    interrupt()
                    interrupted = true
                    continue
                }
                read += 1
                // A line cut by the kill is not JSON: that commit was not acknowledged and comes again.
                guard let commit = try? JSONValue.parse(line), let snapshot = commit["snapshot"]?.intValue else { continue }
                run.append(UInt64(snapshot))
                for change in commit["changes"]?.elements ?? [] where change["collection"] == .string("counter") {
                    values[UInt64(snapshot)] = change["object"]?.intValue
                }
            }
            runs.append(run)
        }
        for _ in 0..<Self.kills {
            let consumer = try ChildProcess(canopy, ["changes", path, "--consumer", "indexer", "--follow", "--json", "--batch", "16"])
            consume(consumer, lines: Int.random(in: 0...40, using: &random)) { consumer.kill9() }
        }
        #expect(writer.waitForExit(seconds: 120) == 0)
        let drain = try ChildProcess(canopy, ["changes", path, "--consumer", "indexer", "--json"])
        consume(drain, lines: .max) {}
        #expect(drain.waitForExit(seconds: 60) == 0)

        let last = try Database(path: path, options: .init(durability: .none)).currentSnapshot()
        #expect(last == start + 3000)
        var seenUpTo = start
        for (number, run) in runs.enumerated() {
            guard let first = run.first else { continue }
            // A run resumes at or before the first commit not seen yet, and reads on without a hole.
            #expect(first <= seenUpTo + 1, "run \(number) started at \(first) after seeing up to \(seenUpTo) (seed \(seed))")
            #expect(run == Array(first..<(first + UInt64(run.count))), "run \(number) skipped a commit (seed \(seed))")
            seenUpTo = max(seenUpTo, run.last ?? first)
        }
        #expect(seenUpTo == last, "seed \(seed)")
        // Each commit's value is the writer's number for it (CrashWriter commits n = 1, 2, ... in snapshot order).
        #expect(values.count == Int(last - start))
        #expect(values.allSatisfy { snapshot, value in UInt64(value) == snapshot - start }, "seed \(seed)")
    }
}
