import CanopyTestSupport
import Foundation
import LMDB
import Testing

@Suite struct EnvironmentTests {
    @Test func openCreatesFilesAndReopenKeepsData() throws {
        try withTemporaryDirectory(prefix: "LMDBTests") { directory in
            do {
                let env = try Environment(path: directory.path)
                #expect(env.path == directory.path)
                let main = try env.openDatabase(named: nil)
                try env.write { txn in try txn.put(bytes("value"), forKey: bytes("key"), in: main) }
            }
            // The environment above is closed: its last reference is gone.
            #expect(FileManager.default.fileExists(atPath: directory.appending("data.mdb")))
            #expect(FileManager.default.fileExists(atPath: directory.appending("lock.mdb")))

            let reopened = try Environment(path: directory.path)
            let main = try reopened.openDatabase(named: nil)
            #expect(try reopened.read { try $0.value(forKey: bytes("key"), in: main) } == bytes("value"))
        }
    }

    @Test(arguments: [
        EnvironmentOptions.Flags(),
        [.noSync],
        [.noMetaSync],
        [.writeMap],
        [.writeMap, .mapAsync, .noSync],
        [.noReadAhead],
        [.noMemoryInit],
        [.noThreadLocalStorage],
    ] as [EnvironmentOptions.Flags])
    func flagsAreKeptAndDataRoundTrips(flags: EnvironmentOptions.Flags) throws {
        try withTemporaryDirectory(prefix: "LMDBTests") { directory in
            do {
                let env = try Environment(path: directory.path, options: .init(flags: flags))
                #expect(env.flags == flags.union(.noThreadLocalStorage))
                let main = try env.openDatabase(named: nil)
                try env.write { txn in
                    for i in 0..<100 { try txn.put(value(i, count: 50), forKey: key(i), in: main) }
                }
                try env.sync()
            }
            let env = try Environment(path: directory.path)
            let main = try env.openDatabase(named: nil)
            try env.read { txn throws in
                #expect(try txn.count(of: main) == 100)
                #expect(try txn.value(forKey: key(42), in: main) == value(42, count: 50))
            }
        }
    }

    @Test func noSubdirectoryUsesThePathAsTheDataFile() throws {
        try withTemporaryDirectory(prefix: "LMDBTests") { directory in
            let file = directory.appending("store.mdb")
            do {
                let env = try Environment(path: file, options: .init(flags: .noSubdirectory))
                let main = try env.openDatabase(named: nil)
                try env.write { txn in try txn.put(bytes("v"), forKey: bytes("k"), in: main) }
            }
            var isDirectory: ObjCBool = true
            #expect(FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory) && !isDirectory.boolValue)
            #expect(FileManager.default.fileExists(atPath: file + "-lock"))

            let env = try Environment(path: file, options: .init(flags: .noSubdirectory))
            let main = try env.openDatabase(named: nil)
            #expect(try env.read { try $0.value(forKey: bytes("k"), in: main) } == bytes("v"))
        }
    }

    @Test(arguments: [0o600, 0o640, 0o660] as [UInt32])
    func createdFilesGetTheFileMode(mode: UInt32) throws {
        try withTemporaryDirectory(prefix: "LMDBTests") { directory in
            _ = try Environment(path: directory.path, options: .init(fileMode: mode))
            for file in ["data.mdb", "lock.mdb"] {
                let attributes = try FileManager.default.attributesOfItem(atPath: directory.appending(file))
                let permissions = try #require(attributes[.posixPermissions] as? Int)
                // The process umask may clear bits (it is process-wide, so the test leaves it alone), never add any.
                #expect(permissions & ~Int(mode) == 0, "\(file): \(String(permissions, radix: 8))")
                #expect(permissions & 0o600 == 0o600)
            }
        }
    }

    @Test func readOnlyEnvironmentReadsButRefusesWrites() throws {
        try withTemporaryDirectory(prefix: "LMDBTests") { directory in
            do {
                let env = try Environment(path: directory.path)
                let table = try env.openDatabase(named: "table", create: true)
                try env.write { txn in try txn.put(bytes("v"), forKey: bytes("k"), in: table) }
            }
            let env = try Environment(path: directory.path, options: .init(flags: .readOnly))
            #expect(env.flags.contains(.readOnly))
            // `create` is ignored read-only: an existing database opens, a missing one is not found.
            let table = try env.openDatabase(named: "table", create: true)
            #expect(try env.read { try $0.value(forKey: bytes("k"), in: table) } == bytes("v"))
            expectError(.notFound) { _ = try env.openDatabase(named: "missing", create: true) }
            expectError(.permissionDenied) {
                try env.write { txn in try txn.put(bytes("w"), forKey: bytes("k"), in: table) }
            }
            #expect(env.activeTransactionCount == 0)
        }
    }

    @Test(arguments: [1, 2, 5])
    func maxDatabasesLimitsNamedDatabases(limit: Int) throws {
        try withEnvironment(.init(maxDatabases: limit)) { env, _ in
            for i in 0..<limit {
                _ = try env.openDatabase(named: "db\(i)", create: true)
            }
            let error = expectError(.databasesFull) { _ = try env.openDatabase(named: "extra", create: true) }
            #expect(error?.database == "extra")
            #expect(error?.hint?.contains("maxDatabases") == true)
            // The databases that fit are still there and usable.
            let first = try env.openDatabase(named: "db0")
            try env.write { txn in try txn.put(bytes("v"), forKey: bytes("k"), in: first) }
        }
    }

    @Test func missingNamedDatabaseIsNotFound() throws {
        try withEnvironment { env, _ in
            let error = expectError(.notFound) { _ = try env.openDatabase(named: "nope") }
            #expect(error?.database == "nope")
        }
    }

    @Test func namedDatabaseOpenedWithoutCreateAfterReopeningStaysUsable() throws {
        try withTemporaryDirectory(prefix: "LMDBTests") { directory in
            do {
                let env = try Environment(path: directory.path)
                let people = try env.openDatabase(named: "people", create: true)
                try env.write { txn in try txn.put(bytes("Ada"), forKey: bytes("1"), in: people) }
            }
            let env = try Environment(path: directory.path)
            // Opened in a transaction of its own; the handle must outlive that transaction.
            let people = try env.openDatabase(named: "people")
            #expect(try env.read { try $0.value(forKey: bytes("1"), in: people) } == bytes("Ada"))
            try env.write { txn in try txn.put(bytes("Grace"), forKey: bytes("2"), in: people) }
            #expect(try env.read { try $0.count(of: people) } == 2)
            // Opening again gives the same handle.
            #expect(try env.openDatabase(named: "people") == people)
        }
    }

    @Test func databaseOpenedInsideAReadTransactionOutlivesIt() throws {
        try withTemporaryDirectory(prefix: "LMDBTests") { directory in
            do {
                let env = try Environment(path: directory.path)
                let table = try env.openDatabase(named: "table", create: true)
                try env.write { txn in try txn.put(bytes("v"), forKey: bytes("k"), in: table) }
            }
            let env = try Environment(path: directory.path)
            let table = try env.read { txn in try txn.openDatabase(named: "table") }
            #expect(try env.read { try $0.value(forKey: bytes("k"), in: table) } == bytes("v"))
        }
    }

    @Test(arguments: [1, 3])
    func maxReadersLimitsConcurrentReadTransactions(limit: Int) throws {
        try withEnvironment(.init(maxReaders: limit)) { env, _ in
            #expect(env.maxReaders == limit)
            #expect(env.info().maxReaders == limit)
            let readers = try (0..<limit).map { _ in try env.beginRead() }
            let error = expectError(.readersFull) { _ = try env.read { _ in } }
            #expect(error?.hint?.contains("maxReaders") == true)
            #expect(error?.operation == "mdb_txn_begin")
            // The transaction that failed to begin is not counted as open.
            #expect(env.activeTransactionCount == limit)
            // Ending a reader frees its slot.
            readers[0].abort()
            try env.read { txn in #expect(txn.isOpen) }
            readers.forEach { $0.abort() }
            #expect(env.activeTransactionCount == 0)
        }
    }

    @Test func missingDirectoryIsNoSuchFile() throws {
        try withTemporaryDirectory(prefix: "LMDBTests") { directory in
            let path = directory.appending("does/not/exist")
            let error = expectError(.noSuchFile) { _ = try Environment(path: path) }
            #expect(error?.operation == "mdb_env_open")
            #expect(error?.path == path)
            #expect(error?.description.contains("mdb_env_open") == true)
            #expect(error?.description.contains(path) == true)
        }
    }

    @Test(.disabled(if: isRoot, "root ignores permission bits, so the directory would be writable anyway"))
    func readOnlyDirectoryIsPermissionDenied() throws {
        try withTemporaryDirectory(prefix: "LMDBTests") { directory in
            let path = try directory.makeSubdirectory("locked")
            try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: path)
            // Let the temporary directory be removed afterwards.
            defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path) }
            let error = expectError(.permissionDenied) { _ = try Environment(path: path) }
            #expect(error?.description.contains(path) == true)
        }
    }

    @Test func readOnlyFlagOnAnEmptyDirectoryIsNoSuchFile() throws {
        // A read-only open creates no data file; this holds for root too, unlike permission bits.
        try withTemporaryDirectory(prefix: "LMDBTests") { directory in
            let error = expectError(.noSuchFile) {
                _ = try Environment(path: directory.path, options: .init(flags: .readOnly))
            }
            #expect(error?.path == directory.path)
            #expect(!FileManager.default.fileExists(atPath: directory.appending("data.mdb")))
        }
    }

    @Test(arguments: [16, 4096, 3 * 4096 + 5])
    func fileThatIsNotLMDBIsInvalid(size: Int) throws {
        try withTemporaryDirectory(prefix: "LMDBTests") { directory in
            let garbage = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 151 &+ 7) })
            try garbage.write(to: URL(fileURLWithPath: directory.appending("data.mdb")))
            let error = expectError(.invalid) { _ = try Environment(path: directory.path) }
            #expect(error?.operation == "mdb_env_open")
            #expect(error?.hint == "The file is not an LMDB database.")
            #expect(error?.description.contains(directory.path) == true)
            // The failed open left the file alone.
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory.appending("data.mdb"))) == garbage)
        }
    }

    @Test func maxKeySizeIsTheDefaultBuilds() throws {
        try withEnvironment { env, _ in #expect(env.maxKeySize == 511) }
    }
}
