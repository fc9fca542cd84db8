import Canopy
import CanopySource
import CanopyTerminal
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Synchronization
import Testing

/// The push source's loop (`ViewDatasource.changes()`) under bursts of commits from another process and from this
/// one while the loop is slow: a lost wake-up (a ring between the look and the wait, a commit whose touch of the
/// signal file was coalesced away) leaves the loop waiting for the one-hour poll, and the time limit ends it.
@Suite("Sources that push, under bursts of commits", .ownThread)
struct PushStressTests {
    typealias Source = ViewDatasource<CrashWriterEntry, TerminalCell, TerminalSupplementaryView, TerminalListView>

    @Test("changes() with a slow loop while a child process and a thread of this one commit: every batch is accepted, and the list ends as the view",
          .timeLimit(.minutes(2)), arguments: [11 as UInt64, 12])
    func burstsWhileTheLoopIsSlow(seed: UInt64) async throws {
        let writer = try #require(builtExecutable(named: "CrashWriter"), "the CrashWriter executable was not built")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let database = try Database(path: path, options: .init(durability: .none))
        try database.register(crashWriterView())
        let list = TerminalListView(width: 40, height: 8)
        let factory = Source.SourceFactory()
        factory.registerCell(.type(TerminalCell.self), in: list) { cell, entry, _ in cell.columns = [TerminalColumn("\(entry.number)\(entry.part)")] }
        let source = try Source(database: database, mappings: ViewMappings(view: "entries-by-part", groupFilter: { _ in true }),
                                factory: factory, container: list, collection: crashWriterEntries)
        list.dataSource = source
        _ = try list.render()

        // The child commits 150 transactions of two rows ("n-a", "n-b"), as fast as it can; a thread of this process
        // commits 60 rows of part "c" meanwhile.
        let childCommits = 150
        let localCommits = 60
        let child = try ChildProcess(writer, [path, "none", "--with-view", "--commits", "\(childCommits)"])
        let localDone = DispatchSemaphore(value: 0)
        let localFailure = Mutex<String?>(nil)
        Thread {
            do {
                let connection = database.newConnection()
                for number in 1...localCommits {
                    try connection.readWrite { txn in
                        try txn.set(CrashWriterEntry(number: 1_000_000 + number, part: "c"), forKey: "local-\(number)", in: crashWriterEntries)
                    }
                }
            } catch {
                localFailure.withLock { $0 = "\(error)" }
            }
            localDone.signal()
        }.start()

        let expected = childCommits * 2 + localCommits
        var random = SeededRandom(seed: seed)
        var changesets = 0
        var batchErrors: [String] = []
        // A one-hour poll: only wake-ups move the loop. Between elements the loop is slow (up to 4 ms of other work),
        // so commits pile up and ring while it is not waiting.
        for try await changeset in source.changes(pollInterval: .seconds(3_600)) {
            changesets += 1
            if let error = list.lastBatchError { batchErrors.append("\(error)") }
            #expect(!changeset.isEmpty)
            _ = try list.render()
            usleep(UInt32(random.next() % 4_000))
            if list.numberOfRows == expected { break }
        }
        #expect(child.waitForExit() == 0, "seed \(seed)")
        #expect(localDone.wait(timeout: .now() + 60) == .success, "seed \(seed)")
        #expect(localFailure.withLock { $0 } == nil, "seed \(seed)")
        #expect(batchErrors.isEmpty, "seed \(seed): \(batchErrors)")
        #expect(list.numberOfRows == expected, "seed \(seed): \(changesets) changesets; the loop ended before the last commits were shown")

        // What the list shows is the view at the source's snapshot, row for row.
        let shown = try (0..<list.numberOfRows).map { position -> RowID? in
            try source.rowID(at: try #require(list.indexPath(forPosition: position)))
        }
        let stored = try await database.newConnection().read { txn -> [RowID?] in
            let view = try txn.view("entries-by-part")
            return try ["a", "b", "c"].flatMap { try view.rowIDs(inGroup: $0) }
        }
        #expect((0..<source.numberOfSections).map { source.group(forSection: $0) } == ["a", "b", "c"], "seed \(seed)")
        #expect(shown == stored, "seed \(seed)")
    }
}
