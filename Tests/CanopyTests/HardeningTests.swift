import Canopy
import CanopyCoreTestFixtures
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import LMDB
import Synchronization
import Testing

/// What a long-running, multi-process app runs into: map growth with readers open, other processes, dead readers,
/// foreign files, nested calls, cancellation. Each test failed before its fix (see the hardening issue).
@Suite("Hardening: long-running and multi-process use", .ownThread)
struct HardeningTests {
    static let entries = crashWriterEntries

    /// The CrashWriter executable, the child process of these tests.
    static func writer() throws -> String { try #require(CrashTests.writerPath, "the CrashWriter executable was not built") }

    /// Rows of `bytes` bytes, `count` per commit.
    static func writeRows(_ connection: Connection, commits: Int, rowsPerCommit: Int, bytes: Int, start: Int = 0) throws {
        let payload = String(repeating: "x", count: bytes)
        for commit in 0..<commits {
            try connection.readWrite { txn in
                for row in 0..<rowsPerCommit {
                    let number = start + commit * rowsPerCommit + row
                    try txn.set(CrashWriterEntry(number: number, part: number % 2 == 0 ? "a" : "b", payload: payload),
                                forKey: "\(number)-a", in: entries)
                }
            }
        }
    }

    /// Runs `body` on a new thread (not Dispatch's pool, which busy loops would starve), as part of `group`.
    static func onThreadOfItsOwn(_ group: DispatchGroup, _ body: @escaping @Sendable () -> Void) {
        group.enter()
        Thread.detachNewThread {
            body()
            group.leave()
        }
    }

    // MARK: 1. Map growth

    @Test("The map grows while an observer and reader threads hold transactions", .timeLimit(.minutes(2)))
    func mapGrowsWithObserverAndReadersOpen() throws {
        let options = DatabaseOptions(durability: .none, initialMapSize: 1 << 20, maximumMapSize: 1 << 30)
        try withDatabase(options: options) { database, _ in
            try database.register(crashWriterView())
            let observer = try ViewObserver(database: database, mappings: ViewMappings(groups: ["a", "b"], view: "entries-by-part"))
            let stop = Atomic<Bool>(false)
            let failures = Mutex<[String]>([])
            let reads = Atomic<Int>(0)
            let group = DispatchGroup()
            let started = DispatchSemaphore(value: 0)
            for _ in 0..<4 {
                Self.onThreadOfItsOwn(group) {
                    let connection = database.newConnection()
                    var first = true
                    while !stop.load(ordering: .relaxed) {
                        do {
                            _ = try connection.read { txn in try txn.view("entries-by-part").count() }
                            _ = try observer.read { txn in try txn.count(inCollection: "entries") }
                            reads.add(1, ordering: .relaxed)
                        } catch {
                            failures.withLock { $0.append("\(error)") }
                        }
                        if first {
                            first = false
                            started.signal()
                        }
                    }
                }
            }
            for _ in 0..<4 { started.wait() }  // every reader is running before the writes start
            // 16 MiB of rows into a 1 MiB map: it grows five times while every reader above holds transactions.
            try Self.writeRows(database.newConnection(), commits: 64, rowsPerCommit: 64, bytes: 4_000)
            stop.store(true, ordering: .relaxed)
            group.wait()
            #expect(failures.withLock { $0 } == [])
            #expect(reads.load(ordering: .relaxed) > 0)
            #expect(database.environment.mapSize >= 16 << 20)
            let changes = try observer.advance()
            #expect(changes.mappings.numberOfItems(inSection: 0) + changes.mappings.numberOfItems(inSection: 1) == 64 * 64)
            try observer.read { txn throws in #expect(try txn.view("entries-by-part").checkInvariants() == []) }
        }
    }

    @Test("databaseFull comes only at the configured maximum, says so, and loses nothing", .timeLimit(.minutes(2)))
    func databaseFullOnlyAtTheMaximum() throws {
        let maximum = 8 << 20
        let options = DatabaseOptions(durability: .none, initialMapSize: 1 << 20, maximumMapSize: maximum)
        try withDatabase(options: options) { database, _ in
            // An observer holds a read transaction all along (it used to stop growth at the initial size).
            try database.register(crashWriterView())
            let observer = try ViewObserver(database: database, mappings: ViewMappings(groups: ["a"], view: "entries-by-part"))
            let connection = database.newConnection()
            var committed = 0
            var failure: CanopyError?
            while failure == nil && committed < 10_000 {
                do {
                    try Self.writeRows(connection, commits: 1, rowsPerCommit: 4, bytes: 4_000, start: committed * 4)
                    committed += 1
                } catch let error as CanopyError {
                    failure = error
                }
            }
            let error = try #require(failure)
            #expect(error.code == .databaseFull)
            #expect(error.message.contains("configured maximum"), "\(error)")
            #expect(error.message.contains("\(maximum)"), "\(error)")
            #expect(database.environment.mapSize == maximum, "the map grew to the maximum before failing")
            #expect(committed > 100)
            #expect(try connection.read { txn in try txn.count(inCollection: "entries") } == committed * 4)
            _ = try observer.advance()
        }
    }

    @Test("Another process growing the map makes no read or observer here fail", .timeLimit(.minutes(2)))
    func otherProcessGrowsTheMap() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let options = DatabaseOptions(durability: .none, initialMapSize: 1 << 20)
        let database = try Database(path: path, options: options)
        try database.register(crashWriterView())
        let observer = try ViewObserver(database: database, mappings: ViewMappings(groups: ["a", "b"], view: "entries-by-part"))
        let stop = Atomic<Bool>(false)
        let failures = Mutex<[String]>([])
        let group = DispatchGroup()
        for _ in 0..<3 {
            Self.onThreadOfItsOwn(group) {
                let connection = database.newConnection()
                while !stop.load(ordering: .relaxed) {
                    do {
                        _ = try connection.read { txn in try txn.count(inCollection: "entries") }
                        _ = try observer.read { txn in try txn.view("entries-by-part").count() }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
        }
        // ~10 MB from another process, whose map starts at 1 MiB too and grows past ours.
        let child = try ChildProcess(try Self.writer(), [path, "none", "--with-view", "--initial-map-size", "\(1 << 20)", "--row-bytes", "16000",
                                      "--commits", "300"])
        _ = child.remainingLines()
        let status = child.waitForExit(seconds: 90)
        stop.store(true, ordering: .relaxed)
        group.wait()
        #expect(status == 0, "the writer process failed or hung")
        #expect(failures.withLock { Array($0.prefix(3)) } == [])
        let changes = try observer.advance()
        #expect(changes.mappings.numberOfItems(inSection: 0) == 300)
        #expect(try database.newConnection().read { txn in try txn.count(inCollection: "entries") } == 600)
        #expect(database.environment.mapSize > 1 << 20, "this process adopted the larger map")
    }

    /// An observer keeps its LMDB reader between advances and renews it; when another process grew the map beyond
    /// this process's (and nothing here read since), the renewal fails with `MDB_MAP_RESIZED`, and the advance must
    /// adopt the larger map and carry on rather than fail or leave the observer without a snapshot.
    @Test("An observer advances over a map another process grew", .timeLimit(.minutes(2)))
    func observerAdvancesOverAMapAnotherProcessGrew() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let database = try Database(path: path, options: DatabaseOptions(durability: .none, initialMapSize: 1 << 20))
        try database.register(crashWriterView())
        let observer = try ViewObserver(database: database, mappings: ViewMappings(groups: ["a", "b"], view: "entries-by-part"))
        _ = try observer.advance()
        let mapBefore = database.environment.mapSize
        let child = try ChildProcess(try Self.writer(), [path, "none", "--with-view", "--initial-map-size", "\(1 << 20)", "--row-bytes", "16000",
                                      "--commits", "300"])
        _ = child.remainingLines()
        #expect(child.waitForExit(seconds: 90) == 0, "the writer process failed or hung")
        let changes = try observer.advance()
        #expect(database.environment.mapSize > mapBefore, "the observer's advance adopted the larger map")
        #expect(changes.mappings.numberOfItems(inSection: 0) == 300)
        #expect(try observer.read { txn in try txn.view("entries-by-part").count() } == 600)
        try database.newConnection().readWrite { txn in try txn.set(CrashWriterEntry(number: 9_999, part: "a"), forKey: "9999-a", in: Self.entries) }
        #expect(try observer.advance().rowChanges.count == 1)
    }

    /// A transaction's start that gets `MDB_MAP_RESIZED` adopts the other process's map and begins again; when that
    /// process grows the map once more in between (a writer filling the map doubles it in quick steps), the second
    /// begin gets `MDB_MAP_RESIZED` too and must adopt again, not fail the write (seen once under load in the
    /// two-process test below: the begin retried only once).
    @Test("A write begins over a map another process grew twice, the second time while this one adopted the first",
          .timeLimit(.minutes(3)))
    func writeBeginsOverAMapGrownTwice() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let database = try Database(path: path, options: DatabaseOptions(durability: .none, initialMapSize: 1 << 20))
        let connection = database.newConnection()
        let arguments = [path, "none", "--initial-map-size", "\(1 << 20)", "--row-bytes", "16000", "--commits", "300"]
        @Sendable func grow() throws {
            let child = try ChildProcess(try Self.writer(), arguments)
            _ = child.remainingLines()
            #expect(child.waitForExit(seconds: 90) == 0, "the writer process failed or hung")
        }
        try grow()
        let mapBefore = database.environment.mapSize
        let adoptions = Mutex(0)
        database.environment.setAfterAdoptingResizedMap {
            let first = adoptions.withLock { count in
                count += 1
                return count == 1
            }
            guard first else { return }
            do { try grow() } catch { Issue.record(error, "the second writer process failed") }
        }
        defer { database.environment.setAfterAdoptingResizedMap(nil) }
        try connection.readWrite { txn in try txn.set(CrashWriterEntry(number: 9_999, part: "a"), forKey: "9999-a", in: Self.entries) }
        #expect(adoptions.withLock { $0 } == 2, "the map grew again while the first adoption ran")
        #expect(database.environment.mapSize > mapBefore)
        #expect(try connection.read { txn in try txn.count(inCollection: "entries") } == 1_201)
    }

    // MARK: 2. Two definitions of one view

    @Test("A write by a process whose view definition differs from the recorded one is refused, never silently wrong",
          .timeLimit(.minutes(2)))
    func twoDefinitionsOfOneView() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let database = try Database(path: path, options: .init(durability: .none))
        try database.register(crashWriterView(versionTag: "1"))
        let connection = database.newConnection()
        try Self.writeRows(connection, commits: 3, rowsPerCommit: 2, bytes: 10)

        // Another process registers definition "2" (even numbers only): it rebuilds the view and writes.
        let child = try ChildProcess(try Self.writer(), [path, "none", "--with-view", "--view-tag", "2", "--commits", "3"])
        _ = child.remainingLines()
        #expect(child.waitForExit(seconds: 60) == 0)

        // This process still has definition "1": its write would maintain the view by the wrong rules.
        let before = try connection.read { txn in try txn.count(inCollection: "entries") }
        let error = #expect(throws: CanopyError.self) {
            try connection.readWrite { txn in try txn.set(CrashWriterEntry(number: 1001, part: "a"), forKey: "1001-a", in: Self.entries) }
        }
        #expect(error?.code == .extensionDefinitionMismatch)
        #expect(error?.extensionName == "entries-by-part")
        #expect(error?.message.contains("'2'") == true, "\(String(describing: error))")
        #expect(try connection.read { txn in try txn.count(inCollection: "entries") } == before, "nothing was written")

        // Taking this definition back: unregister and register again rebuilds the view from the rows.
        try database.unregisterExtension(named: "entries-by-part")
        let view = crashWriterView(versionTag: "1")
        try database.register(view)
        #expect(view.lastPopulation != nil, "registering the recorded-other definition rebuilt the view")
        try connection.readWrite { txn in try txn.set(CrashWriterEntry(number: 1001, part: "a"), forKey: "1001-a", in: Self.entries) }
        try connection.read { txn throws in
            let reader = try txn.view("entries-by-part")
            #expect(try reader.checkInvariants() == [])
            #expect(try reader.count() == txn.count(inCollection: "entries"))
        }
    }

    // MARK: 3. Dead readers

    @Test("A running writer clears a dead process's reader slot, so the file doesn't grow", .timeLimit(.minutes(2)))
    func deadReaderClearedByRunningWriter() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        // Opened before the reader dies: opening clears stale readers, a running writer must do it by itself.
        let database = try Database(path: path, options: .init(durability: .none))
        let connection = database.newConnection()
        try Self.writeRows(connection, commits: 1, rowsPerCommit: 10, bytes: 4_000)
        let child = try ChildProcess(try Self.writer(), [path, "none", "--hold-read"])
        #expect(child.nextLine() == "holding")
        let deadPID = child.processID
        #expect((try database.environment.readers()).contains { $0.processID == deadPID && $0.transactionID != nil })
        child.kill9()

        // Each commit replaces the same 10 rows of 4 KB: with the dead reader's snapshot pinned, every commit's
        // pages would be new (≈ 40 KB × 300 = 12 MB); once its slot is cleared, LMDB reuses freed pages.
        for _ in 0..<300 { try Self.writeRows(connection, commits: 1, rowsPerCommit: 10, bytes: 4_000) }
        #expect(!(try database.environment.readers()).contains { $0.processID == deadPID }, "the dead reader's slot is still there")
        let size = try FileManager.default.attributesOfItem(atPath: path + "/data.mdb")[.size] as? Int ?? 0
        #expect(size < 4 << 20, "data.mdb grew to \(size) bytes")
    }

    // MARK: 4. Foreign environments

    @Test("An LMDB environment Canopy did not create is refused and left untouched, unless adopted")
    func foreignEnvironmentRefused() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("foreign")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        do {
            let environment = try Environment(path: path, options: .init(maxDatabases: 4))
            let table = try environment.openDatabase(named: "their-table", create: true)
            try environment.write { txn in try txn.put(Array("v".utf8), forKey: Array("k".utf8), in: table) }
        }
        let error = #expect(throws: CanopyError.self) { _ = try Database(path: path) }
        #expect(error?.code == .foreignDatabase)
        #expect(error?.path?.hasSuffix("/foreign") == true)
        #expect(error?.message.contains("their-table") == true, "\(String(describing: error))")
        let names = try Environment(path: path, options: .init(maxDatabases: 4)).read { txn in
            var names: [String] = []
            try txn.forEach(in: try txn.openDatabase(named: nil)) { key, _ in
                names.append(String(decoding: key, as: UTF8.self))
                return true
            }
            return names
        }
        #expect(names == ["their-table"], "Canopy added nothing")
        let adopted = try Database(path: path, options: .init(adoptForeignEnvironment: true))
        #expect(try adopted.currentSnapshot() == 0)
    }

    // MARK: 5. Backups

    @Test("A backup is as private as the database: 0700 directory, 0600 data file")
    func backupPermissions() throws {
        try withDatabase { database, directory in
            try Self.writeRows(database.newConnection(), commits: 1, rowsPerCommit: 3, bytes: 10)
            let umask = Glibc.umask(0o022)
            defer { _ = Glibc.umask(umask) }
            let backup = directory.appending("backup")
            try database.backup(to: backup)
            let file = try FileManager.default.attributesOfItem(atPath: backup + "/data.mdb")
            let folder = try FileManager.default.attributesOfItem(atPath: backup)
            #expect((file[.posixPermissions] as? Int).map { $0 & 0o777 } == 0o600)
            #expect((folder[.posixPermissions] as? Int).map { $0 & 0o777 } == 0o700)
            let copy = try Database(path: backup)
            #expect(try copy.newConnection().read { txn in try txn.count(inCollection: "entries") } == 3)
            let notEmpty = #expect(throws: CanopyError.self) { try database.backup(to: backup) }
            #expect(notEmpty?.code == .invalidArgument)
        }
    }

    // MARK: 6. Typed errors

    @Test("Empty paths and names, unknown extensions, ended transactions and malformed records get their own errors")
    func typedErrors() throws {
        let emptyPath = #expect(throws: CanopyError.self) { _ = try Database(path: "") }
        #expect(emptyPath?.code == .invalidArgument)
        try withDatabase { database, _ in
            let connection = database.newConnection()
            let unnamed = TypedCollection<Int, NoMetadata>("")
            let read = #expect(throws: CanopyError.self) { _ = try connection.read { txn in try txn.object(forKey: "k", in: unnamed) } }
            #expect(read?.code == .invalidCollectionName)
            let write = #expect(throws: CanopyError.self) { try connection.readWrite { txn in try txn.set(1, forKey: "k", in: unnamed) } }
            #expect(write?.code == .invalidCollectionName)

            let view = View(name: "", grouping: .byKey { _, key in key }, sorting: .byKey { _, _, key in SortKey(key) })
            #expect(throws: CanopyError.self) { try database.register(view) }
            #expect((try? database.register(view)) == nil)
            let emptyName = #expect(throws: CanopyError.self) { try database.register(view) }
            #expect(emptyName?.code == .invalidArgument)

            let unknown = #expect(throws: CanopyError.self) { try database.unregisterExtension(named: "never-registered") }
            #expect(unknown?.code == .extensionNotRegistered)

            var escaped: Canopy.ReadTransaction?
            try connection.read { txn in escaped = txn }
            let ended = #expect(throws: CanopyError.self) { _ = try escaped?.object(forKey: "1-a", in: Self.entries) }
            #expect(ended?.code == .transactionEnded)
            var escapedWrite: ReadWriteTransaction?
            try connection.readWrite { txn in escapedWrite = txn }
            let endedWrite = #expect(throws: CanopyError.self) {
                try escapedWrite?.set(CrashWriterEntry(number: 1, part: "a"), forKey: "1-a", in: Self.entries)
            }
            #expect(endedWrite?.code == .transactionEnded)

            // A malformed extension record is reported, not skipped.
            try database.register(crashWriterView())
            try database.environment.write { txn in
                let table = try txn.openDatabase(named: "canopy.extensions", checksummed: true)  // a valid checksum: the decoder's turn
                try txn.put(Array("not json".utf8), forKey: Array("entries-by-part".utf8), in: table)
            }
            let corrupt = #expect(throws: CanopyError.self) { _ = try database.recordedExtensions() }
            #expect(corrupt?.code == .corruptStore)
            #expect(corrupt?.extensionName == "entries-by-part")
        }
    }

    /// Keeps what a grouping closure was given, to use it after the closure returned (which it must not).
    final class KeptRows: @unchecked Sendable {
        // @unchecked: written by the grouping closure on the writer's thread, read by the test after the write.
        var rows: [ViewRow] = []
    }

    @Test("A ViewRow kept beyond its closure refuses to load bytes instead of reading a page LMDB may have reused")
    func viewRowAfterItsClosure() throws {
        try withDatabase { database, _ in
            try Self.writeRows(database.newConnection(), commits: 1, rowsPerCommit: 3, bytes: 10)
            let kept = KeptRows()
            let view = View(
                name: "keeps-rows",
                grouping: .custom(dependsOnObject: true, dependsOnMetadata: false) { row in
                    kept.rows.append(row)
                    return "all"
                },
                sorting: .byKey { _, _, key in SortKey(key) })
            try database.register(view)  // population: rows read straight from the map
            try database.newConnection().readWrite { txn in  // a write: rows read through the transaction
                try txn.set(CrashWriterEntry(number: 99, part: "a"), forKey: "99-a", in: Self.entries)
            }
            #expect(kept.rows.map(\.key).sorted() == ["0-a", "1-a", "2-a", "99-a"])
            for row in kept.rows where row.key != "99-a" {
                let error = #expect(throws: CanopyError.self) { _ = try row.object(as: CrashWriterEntry.self) }
                #expect(error?.code == .transactionEnded, "\(row.key): \(String(describing: error))")
            }
            // The written row holds the Swift value the writer passed (no bytes of the map): still readable.
            #expect(try kept.rows.first { $0.key == "99-a" }?.object(as: CrashWriterEntry.self).number == 99)
            // The kept rows hold their transactions, and the view's closure holds them: let go, or the view, the rows and
            // their transactions keep each other alive (AddressSanitizer's leak check reported them).
            kept.rows.removeAll()
        }
    }

    @Test("A full disk (here: the file size limit) is diskFull, rolls back, and loses nothing", .timeLimit(.minutes(2)))
    func diskFull() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        _ = try Database(path: path, options: .init(durability: .full))  // created here, so the limit is on growth only
        let child = try ChildProcess(try Self.writer(), [path, "full", "--file-size-limit", "\(2 << 20)"])
        let lines = child.remainingLines()
        #expect(child.waitForExit(seconds: 60) == 0)
        #expect(lines.last == "failed diskFull", "\(lines.suffix(3))")
        let acknowledged = lines.compactMap { $0.hasPrefix("acked ") ? Int($0.dropFirst(6)) : nil }.max() ?? 0
        #expect(acknowledged > 10)
        let database = try Database(path: path, options: .init(durability: .full))
        #expect(try database.newConnection().read { txn in try txn.count(inCollection: "entries") } == acknowledged)
    }

    /// Runs a system tool; whether it succeeded.
    static func system(_ arguments: [String]) -> Bool {
        guard let tool = ["/usr/bin/", "/bin/"].map({ $0 + arguments[0] }).first(where: FileManager.default.isExecutableFile(atPath:)) else { return false }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = Array(arguments.dropFirst())
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    @Test("A full file system (a 3 MB tmpfs the test mounts when it runs as root) is diskFull, rolls back, and loses nothing",
          .timeLimit(.minutes(2)))
    func diskFullOnAFullFileSystem() throws {
        guard getuid() == 0 else {
            print("skipped: mounting a small tmpfs needs root")
            return
        }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let mountPoint = directory.appending("small")
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: false)
        guard Self.system(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", mountPoint]) else {
            print("skipped: cannot mount a tmpfs here (no CAP_SYS_ADMIN)")
            return
        }
        defer { _ = Self.system(["umount", mountPoint]) }
        let path = mountPoint + "/db"
        do { _ = try Database(path: path, options: .init(durability: .full)) }
        // No file size limit that matters: the writer commits 8 KB rows until the file system is full.
        let child = try ChildProcess(try Self.writer(), [path, "full", "--file-size-limit", "\(1 << 40)"])
        let lines = child.remainingLines()
        #expect(child.waitForExit(seconds: 60) == 0)
        // LMDB reports a write that only partly fits as EIO; Canopy tells it from a failing disk by the free space.
        #expect(lines.last == "failed diskFull", "\(lines.suffix(3))")
        let acknowledged = lines.compactMap { $0.hasPrefix("acked ") ? Int($0.dropFirst(6)) : nil }.max() ?? 0
        #expect(acknowledged > 10)
        // Room again: every acknowledged row is there, and writing works.
        #expect(Self.system(["mount", "-o", "remount,size=16m", mountPoint]))
        do {
            let database = try Database(path: path, options: .init(durability: .full))
            let connection = database.newConnection()
            #expect(try connection.read { txn in try txn.count(inCollection: "entries") } == acknowledged)
            try connection.readWrite { txn in try txn.set(CrashWriterEntry(number: 0, part: "after"), forKey: "after", in: crashWriterEntries) }
            #expect(try connection.read { txn in try txn.count(inCollection: "entries") } == acknowledged + 1)
        }
    }

    // MARK: 7. Nested calls

    @Test("Nested calls are supported or a typed error at once — never a hang (checked in a child with a timeout)",
          .timeLimit(.minutes(2)))
    func nestedCallsDoNotHang() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let child = try ChildProcess(try Self.writer(), [directory.appending("db"), "none", "--nested-checks"])
        let lines = child.remainingLines()
        let status = child.waitForExit(seconds: 60)
        #expect(status == 0, "the child hung (killed after 60 s) or failed; it printed: \(lines)")
        #expect(lines == [
            "read-in-read-same nestedTransaction",
            "read-in-read-other ok",
            "readWrite-in-read-same nestedTransaction",
            "readWrite-in-read-other nestedTransaction",
            "readWrite-in-readWrite-same nestedTransaction",
            "readWrite-in-readWrite-other nestedTransaction",
            "read-in-readWrite-same nestedTransaction",
            "register-in-readWrite nestedTransaction",
            "unregister-in-readWrite nestedTransaction",
            "observer-read-in-observer-read nestedTransaction",
            "observer-advance-in-observer-read nestedTransaction",
            "readWrite-in-observer-read nestedTransaction",
            "pin-in-read-same nestedTransaction",
            "after-all-a-plain-write ok",
        ])
    }

    // MARK: 9. Cancellation

    @Test("A write whose task was cancelled before it started does not commit", .timeLimit(.minutes(1)))
    func cancelledBeforeTheCall() async throws {
        try await withDatabase { database, _ async throws in
            let connection = database.newConnection()
            let gate = AsyncStream<Void>.makeStream()
            let task = Task {
                var waiting = gate.stream.makeAsyncIterator()
                await waiting.next()  // returns at once when cancelled
                try await connection.readWrite { txn in try txn.set(1, forKey: "k", in: TypedCollection<Int, NoMetadata>("ints")) }
            }
            task.cancel()
            let result = await task.result
            #expect(throws: CancellationError.self) { try result.get() }
            let count = try await connection.read { txn in try txn.count(inCollection: "ints") }
            #expect(count == 0)
            #expect(try database.currentSnapshot() == 0)
        }
    }

    @Test("A write whose task is cancelled while its body runs does not commit", .timeLimit(.minutes(1)))
    func cancelledDuringTheCall() async throws {
        try await withDatabase { database, _ async throws in
            let connection = database.newConnection()
            let entered = DispatchSemaphore(value: 0)
            let proceed = DispatchSemaphore(value: 0)
            let task = Task {
                try await connection.readWrite { txn in
                    try txn.set(1, forKey: "k", in: TypedCollection<Int, NoMetadata>("ints"))
                    entered.signal()
                    proceed.wait()  // the body runs on a thread of its own, not the cooperative pool
                }
            }
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    entered.wait()
                    continuation.resume()
                }
            }
            task.cancel()
            proceed.signal()
            let result = await task.result
            #expect(throws: CancellationError.self) { try result.get() }
            let count = try await connection.read { txn in try txn.count(inCollection: "ints") }
            #expect(count == 0)
            // The connection and the write lock are free again.
            try await connection.readWrite { txn in try txn.set(2, forKey: "k", in: TypedCollection<Int, NoMetadata>("ints")) }
            #expect(try database.currentSnapshot() == 1)
        }
    }

    // MARK: Everything at once

    /// 8 reader threads, a writer thread and an observer in this process, and a second writer process, on a map that
    /// starts at 1 MiB: no read, write or advance fails, every changeset applies, and the view agrees with its rows.
    /// Runs 3 seconds in `make test` (`CANOPY_STRESS_SECONDS=180` for the long run), and longer if by then the work
    /// that makes the test mean something has not happened yet (on a loaded machine): the other process committing
    /// while this one works, writes, reads and advances here, a full check of the observer's rendering, the map grown.
    @Test("Readers, writers in two processes and an observer, with the map growing: zero errors", .timeLimit(.minutes(10)))
    func stress() throws {
        let seconds = Double(ProcessInfo.processInfo.environment["CANOPY_STRESS_SECONDS"] ?? "") ?? 3
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let database = try Database(path: path, options: .init(durability: .none, initialMapSize: 1 << 20))
        try database.register(crashWriterView())
        let mappings = ViewMappings(groups: ["a", "b"], view: "entries-by-part")
        let observer = try ViewObserver(database: database, mappings: mappings)
        let child = try ChildProcess(try Self.writer(), [path, "none", "--with-view", "--initial-map-size", "\(1 << 20)", "--row-bytes", "3000"])
        defer { child.kill9() }
        // The other process is writing (its first commit acknowledged) before this one starts.
        let firstAck = child.nextLine(seconds: 600)
        try #require(firstAck?.hasPrefix("acked ") == true, "the CrashWriter did not commit: \(firstAck ?? "no output")")

        let stop = Atomic<Bool>(false)
        let failures = Mutex<[String]>([])
        let counts = Mutex<(reads: Int, writes: Int, advances: Int, checks: Int)>((0, 0, 0, 0))
        @Sendable func fail(_ what: String) { failures.withLock { if $0.count < 20 { $0.append(what) } } }
        // Signalled once everything the final checks need has happened here (the child commits all along).
        let enough = DispatchSemaphore(value: 0)
        let signalled = Atomic<Bool>(false)
        @Sendable func noteProgress() {
            let done = counts.withLock { $0.reads > 0 && $0.writes > 0 && $0.checks > 0 } && database.environment.mapSize > 1 << 20
            if done && !signalled.exchange(true, ordering: .relaxed) { enough.signal() }
        }
        let group = DispatchGroup()
        for reader in 0..<8 {
            Self.onThreadOfItsOwn(group) {
                let connection = database.newConnection()
                var random = SeededRandom(seed: UInt64(reader))
                while !stop.load(ordering: .relaxed) {
                    do {
                        try connection.read { txn in
                            let view = try txn.view("entries-by-part")
                            let count = try view.count(inGroup: "a")
                            if count > 0, let id = try view.rowID(at: Int.random(in: 0..<count, using: &random), inGroup: "a") {
                                if try txn.object(forKey: id.key, in: Self.entries) == nil { fail("reader: \(id) in the view but not stored") }
                            }
                        }
                        counts.withLock { $0.reads += 1 }
                    } catch {
                        fail("reader: \(error)")
                    }
                }
            }
        }
        Self.onThreadOfItsOwn(group) {
            let connection = database.newConnection()
            var number = 0
            let payload = String(repeating: "w", count: 1_000)
            while !stop.load(ordering: .relaxed) {
                number += 1
                do {
                    try connection.readWrite { txn in
                        try txn.set(CrashWriterEntry(number: 10_000_000 + number, part: number % 3 == 0 ? "b" : "a", payload: payload),
                                    forKey: "w\(number)", in: Self.entries)
                        if number % 7 == 0 { try txn.remove(key: "w\(number - 5)", in: Self.entries) }
                    }
                    counts.withLock { $0.writes += 1 }
                    noteProgress()
                } catch {
                    fail("writer: \(error)")
                }
            }
        }
        Self.onThreadOfItsOwn(group) {
            do {
                var rendering = try observer.read { txn in try Rendering(mappings: observer.mappings, reader: txn.view("entries-by-part")) }
                while !stop.load(ordering: .relaxed) {
                    let changes = try observer.advance()
                    let (old, current) = (rendering, changes.mappings)
                    rendering = try observer.read { txn in
                        let reader = try txn.view("entries-by-part")
                        return try ChangesetApplier.apply(changes, to: old) { try current.rowIDs(inSection: $0, reader: reader) }
                    }
                    let advances = counts.withLock { state -> Int in
                        state.advances += 1
                        return state.advances
                    }
                    if advances % 25 == 0 {
                        let fresh = try observer.read { txn in try Rendering(mappings: observer.mappings, reader: txn.view("entries-by-part")) }
                        if fresh != rendering { fail("observer: the applied changesets differ from a fresh rendering at \(changes.toSnapshot)") }
                        counts.withLock { $0.checks += 1 }
                        noteProgress()
                    }
                }
            } catch {
                fail("observer: \(error)")
            }
        }
        _ = DispatchSemaphore(value: 0).wait(timeout: .now() + seconds)  // the run's duration, not a wait for a result
        let progressed = enough.wait(timeout: .now() + 420) == .success  // a limit on a hang only
        stop.store(true, ordering: .relaxed)
        group.wait()
        child.kill9()
        let summary = counts.withLock { $0 }
        print("stress \(seconds) s: \(summary.reads) reads, \(summary.writes) writes here, \(summary.advances) advances (\(summary.checks) full checks), map \(database.environment.mapSize) bytes")
        #expect(progressed, "7 minutes without the work the checks need: \(summary)")
        #expect(failures.withLock { $0 } == [])
        #expect(summary.writes > 0 && summary.reads > 0 && summary.advances > 0)
        #expect(database.environment.mapSize > 1 << 20, "the map grew")
        try database.newConnection().read { txn throws in
            #expect(try txn.view("entries-by-part").checkInvariants() == [])
        }
    }
}
