import Canopy
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import LMDB
import Testing

/// Crashes inside liblmdb, killed backups, symbolic links and permissions in the database directory.
@Suite("canopy: damaged files, hostile directories", .serialized, .ownThread)
struct HostileDirectoryTests {
    /// A database of `rows` entries (with the CrashWriter's view), written in one transaction so that every page is live.
    static func makeDatabase(at path: String, rows: Int, payload: Int = 300) throws {
        let database = try Database(path: path, options: .init(durability: .none))
        try database.register(crashWriterView())
        try database.newConnection().readWrite { txn in
            for number in 0..<rows {
                try txn.set(CrashWriterEntry(number: number, part: number % 2 == 0 ? "a" : "b", payload: String(repeating: "p", count: payload)),
                            forKey: "\(number)-\(number % 2 == 0 ? "a" : "b")", in: crashWriterEntries)
            }
        }
    }

    /// Makes the leaf node of `key` in `canopy.objects` claim a 4 GiB value: LMDB hands out the pointer and size
    /// unchecked, so reading the value runs off the mapped file (SIGBUS or SIGSEGV inside the process).
    static func inflateValue(ofKey key: String, in path: String) throws {
        var data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb")))
        let rowKey: [UInt8] = try Environment(path: path, options: EnvironmentOptions(flags: [.readOnly], maxDatabases: 64)).read { txn in
            let record = try #require(try txn.value(forKey: Array("entries".utf8), in: txn.openDatabase(named: "canopy.collections")))
            return Array(record.prefix(4)) + Array(key.utf8)
        }
        // Every match: a page may keep stale copies of a node in its free space after a split.
        var found = false
        var position = 0
        while position + rowKey.count <= data.count {
            defer { position += 1 }
            guard data[position] == rowKey[0], Array(data[position..<position + rowKey.count]) == rowKey, position >= 8 else { continue }
            let size = Int(data[position - 2]) | Int(data[position - 1]) << 8
            let flags = Int(data[position - 4]) | Int(data[position - 3]) << 8
            let page = position / 4096 * 4096
            guard size == rowKey.count, flags == 0, data[page + 10] & 0x02 != 0 else { continue }
            for offset in (position - 8)..<(position - 4) { data[offset] = 0xFF }
            found = true
        }
        #expect(found, "no leaf node of \(key) in data.mdb")
        try Data(data).write(to: URL(fileURLWithPath: path + "/data.mdb"))
    }

    @Test("a node whose value runs off the file: every command exits 1 naming the table and key, never by a signal (with the CLI's child containment off too)")
    func crashInsideLMDB() throws {
        guard let canopyPath = canopyExecutable else {
            Issue.record("the canopy executable was not built next to the tests")
            return
        }
        let directory = try TemporaryDirectory(prefix: "canopy-cli-test")
        defer { directory.remove() }
        let path = directory.appending("db")
        try Self.makeDatabase(at: path, rows: 2_000)
        try Self.inflateValue(ofKey: "1000-a", in: path)
        // The LMDB layer refuses the value before anything reads it (valueOutsideFile): the same in the contained child
        // and in the process itself.
        for containment in ["on", "off"] {
            for arguments in [["verify", path], ["get", path, "entries", "1000-a"], ["export", path]] {
                let run = try ChildRun(canopyPath, arguments, environment: ["CANOPY_CONTAINMENT": containment])
                #expect(!run.signalled, "\(arguments[0]) ended by signal \(run.status)")
                #expect(run.status == 1, "\(arguments[0]): \(run.errors)")
                #expect(run.errors.contains("the database is damaged"), "\(arguments[0]): \(run.errors)")
                #expect(run.errors.contains("table 'canopy.objects'"), "\(arguments[0]): \(run.errors)")
                #expect(run.errors.contains("key '1000-a'"), "\(arguments[0]): \(run.errors)")
                #expect(run.errors.contains("past the end"), "\(arguments[0]): \(run.errors)")
                #expect(run.errors.contains("Restore the database from a backup"), "\(arguments[0]): \(run.errors)")
                #expect(!run.errors.contains("Backtracing"), "the runtime's crash dump was printed: \(run.errors.prefix(300))")
            }
        }
    }

    /// The pid of `parent`'s first child, from /proc (the contained command), if any.
    static func childProcess(of parent: Int32) -> Int32? {
        let text = (try? String(contentsOfFile: "/proc/\(parent)/task/\(parent)/children", encoding: .utf8)) ?? ""
        return text.split(separator: " ").first.flatMap { Int32($0) }
    }

    @Test("a backup killed at any moment leaves a database that verifies, or no data.mdb and a clear error: never a half-written file")
    func killedBackup() throws {
        guard let canopyPath = canopyExecutable else {
            Issue.record("the canopy executable was not built next to the tests")
            return
        }
        let directory = try TemporaryDirectory(prefix: "canopy-cli-test")
        defer { directory.remove() }
        let path = directory.appending("db")
        try Self.makeDatabase(at: path, rows: 6_000, payload: 2_000)
        var random = SeededRandom(seed: 0xBAC0)
        var interrupted = 0
        for round in 0..<8 {
            let destination = directory.appending("copy-\(round)")
            let process = Process()
            process.executableURL = URL(fileURLWithPath: canopyPath)
            process.arguments = ["backup", path, destination] + (round % 2 == 0 ? [] : ["--compact"])
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            // A random moment into the copy; the kill lands wherever the copy then is.
            usleep(UInt32(random.next() % 150_000))
            let child = Self.childProcess(of: process.processIdentifier)
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            if let child {
                kill(child, SIGKILL)
                var waited = 0
                while kill(child, 0) == 0 && waited < 1_000 {  // bounded: at most 10 s for the kernel to end it
                    usleep(10_000)
                    waited += 1
                }
            }
            if FileManager.default.fileExists(atPath: destination + "/data.mdb") {
                let verify = try ChildRun(canopyPath, ["verify", destination])
                #expect(verify.status == 0 && !verify.signalled, "round \(round) seed 0xBAC0: a killed backup left a data.mdb that does not verify: \(verify.errors)")
            } else {
                interrupted += 1
                let info = try ChildRun(canopyPath, ["info", destination])
                #expect(info.status == 3 && !info.signalled, "round \(round): \(info.errors)")
                let contents = (try? FileManager.default.contentsOfDirectory(atPath: destination)) ?? []
                if contents.contains(where: { $0.hasPrefix("data.mdb.partial-") }) {
                    #expect(info.errors.contains("interrupted `canopy backup`"), "round \(round): \(info.errors)")
                }
            }
        }
        print("killed backups: \(interrupted) of 8 interrupted before the copy was named")
    }

    @Test("a symbolic link as the signal file or lock.mdb is refused naming it; the file it points at is untouched")
    func symbolicLinks() async throws {
        let directory = try TemporaryDirectory(prefix: "canopy-cli-test")
        defer { directory.remove() }
        let victim = directory.appending("victim.txt")
        try Data("precious".utf8).write(to: URL(fileURLWithPath: victim))
        let path = directory.appending("db")
        try Self.makeDatabase(at: path, rows: 10)
        let manager = FileManager.default

        for name in ["canopy-commit.signal", "lock.mdb"] {
            let link = path + "/" + name
            try? manager.removeItem(atPath: link)
            try manager.createSymbolicLink(atPath: link, withDestinationPath: victim)
            for readOnly in [false, true] {
                let error = #expect(throws: CanopyError.self) { _ = try Database(path: path, options: .init(readOnly: readOnly)) }
                #expect(error?.code == .cannotOpen)
                #expect(error?.path == link && error?.message.contains("symbolic link") == true, "\(String(describing: error))")
            }
            let info = await canopy("info", path)
            #expect(info.status == 3 && info.errors.contains("symbolic link") && info.errors.contains(name), "\(info.errors)")
            #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious")
            try manager.removeItem(atPath: link)
        }

        // A dangling link: nothing is created where it points.
        let target = directory.appending("created-by-link")
        try manager.createSymbolicLink(atPath: path + "/canopy-commit.signal", withDestinationPath: target)
        #expect(throws: CanopyError.self) { _ = try Database(path: path) }
        #expect(!manager.fileExists(atPath: target))
        try manager.removeItem(atPath: path + "/canopy-commit.signal")

        // A link made after the database was opened: the writer's first commit does not follow it (O_NOFOLLOW).
        let database = try Database(path: path, options: .init(durability: .none))
        try? manager.removeItem(atPath: path + "/canopy-commit.signal")
        try manager.createSymbolicLink(atPath: path + "/canopy-commit.signal", withDestinationPath: victim)
        try await database.newConnection().readWrite { txn in try txn.set(CrashWriterEntry(number: 1, part: "a"), forKey: "x", in: crashWriterEntries) }
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious")
        #expect(try await database.newConnection().read { txn in try txn.object(forKey: "x", in: crashWriterEntries) } != nil)
    }

    /// Runs `command` (with `chattr`), returning whether it succeeded.
    static func shell(_ executable: String, _ arguments: [String]) -> Bool {
        guard FileManager.default.isExecutableFile(atPath: executable) else { return false }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    @Test("a lock.mdb that cannot be written (immutable): permission denied naming it; --no-lock reads the copy")
    func unwritableLockFile() async throws {
        let directory = try TemporaryDirectory(prefix: "canopy-cli-test")
        defer { directory.remove() }
        let path = directory.appending("db")
        try Self.makeDatabase(at: path, rows: 10)
        // The immutable flag refuses writes even to root (EPERM): how a test run as root meets a lock file it cannot
        // write. Where chattr cannot set it (a file system without the flag, no CAP_LINUX_IMMUTABLE), skip.
        guard Self.shell("/usr/bin/chattr", ["+i", path + "/lock.mdb"]) else {
            print("skipped: chattr +i is not possible here (needs root and a file system with the immutable flag)")
            return
        }
        defer { _ = Self.shell("/usr/bin/chattr", ["-i", path + "/lock.mdb"]) }
        let info = await canopy("info", path)
        #expect(info.status == 3, "\(info.errors)")
        #expect(info.errors.contains("permission denied") && info.errors.contains("lock.mdb") && info.errors.contains("--no-lock"), "\(info.errors)")
        let error = #expect(throws: CanopyError.self) { _ = try Database(path: path, options: .init(readOnly: true)) }
        #expect(error?.code == .permissionDenied)

        let noLock = await canopy("info", path, "--no-lock", "--json")
        #expect(noLock.status == 0, "\(noLock.errors)")
        #expect(try noLock.json()["collections"]?.elements.count == 1)
        let rows = await canopy("view", path, "entries-by-part", "--no-lock", "--json")
        #expect(try rows.json()["total"]?.intValue == 10)
        let write = await canopy("import", path, "--no-lock", "--input", "/dev/null")
        #expect(write.status == 2 && write.errors.contains("--no-lock is for inspection only"), "\(write.errors)")
    }

    @Test("a database this user cannot reach (a non-root user, via setpriv): canopy and reminders say permission denied")
    func unreachableDatabase() throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
              let canopyPath = canopyExecutable, let remindersPath = builtExecutable(named: "reminders") else {
            print("skipped: needs root and setpriv to run the tools as another user")
            return
        }
        let directory = try TemporaryDirectory(prefix: "canopy-cli-test")
        defer { directory.remove() }
        _ = chmod(directory.path, 0o755)
        let path = directory.appending("db")
        try Self.makeDatabase(at: path, rows: 10)  // the directory is 0700, owned by root
        let asNobody = ["--reuid=65534", "--regid=65534", "--clear-groups", "--"]
        let info = try ChildRun("/usr/bin/setpriv", asNobody + [canopyPath, "info", path])
        guard !info.errors.contains("Permission denied") || info.status != 126 else {
            print("skipped: the built tools cannot be run by another user here: \(info.errors)")
            return
        }
        #expect(info.status == 3, "\(info.errors)")
        #expect(info.errors.contains("permission denied") && info.errors.contains(path), "\(info.errors)")
        #expect(!info.errors.contains("not a Canopy database"), "\(info.errors)")
        let list = try ChildRun("/usr/bin/setpriv", asNobody + [remindersPath, "list", "--db", path])
        #expect(list.status == 1 && list.errors.contains("permission denied"), "status \(list.status): \(list.output) \(list.errors)")
        #expect(!list.output.contains("Nothing yet"))
    }
}
