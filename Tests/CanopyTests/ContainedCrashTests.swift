import Canopy
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import LMDB
import Testing

/// A damaged page that makes liblmdb crash (a zeroed leaf page: LMDB's `IS_LEAF` assertion, which calls abort()),
/// read through the API: `corruptStore` naming the table and what to do, in this process and in a child process —
/// never a signal. A fault that is not LMDB's still ends the process.
@Suite("Crashes inside liblmdb through the API: corruptStore, never a signal", .serialized, .ownThread)
struct ContainedCrashTests {
    /// A closed database of 2,000 entries with the CrashWriter's view (what `CrashWriter --read-all` reads), whose
    /// `canopy.objects` leaf page holding the middle keys is zeroed. Returns the database's path.
    static func makeDamagedDatabase(in directory: TemporaryDirectory) throws -> String {
        let path = directory.appending("db")
        do {
            let database = try Database(path: path, options: .init(durability: .none))
            try database.register(crashWriterView())
            try database.newConnection().readWrite { txn in
                for number in 0..<2_000 {
                    try txn.set(CrashWriterEntry(number: number, part: number % 2 == 0 ? "a" : "b", payload: String(repeating: "p", count: 300)),
                                forKey: "\(number)-\(number % 2 == 0 ? "a" : "b")", in: crashWriterEntries)
                }
            }
        }
        let file = URL(fileURLWithPath: path + "/data.mdb")
        var data = try [UInt8](Data(contentsOf: file))
        // Leaf pages of canopy.objects: the first node's key is a row key (collection id, then "<number>-<part>").
        var leaves: [(page: Int, firstKey: [UInt8])] = []
        for page in 2..<(data.count / 4096) {
            let base = page * 4096
            guard data[base + 10] == 2, data[base + 11] == 0 else { continue }
            let node = base + (Int(data[base + 16]) | Int(data[base + 17]) << 8)
            let keySize = Int(data[node + 6]) | Int(data[node + 7]) << 8
            guard node + 8 + keySize <= data.count, keySize > 5 else { continue }
            let key = Array(data[node + 8..<node + 8 + keySize])
            guard key.prefix(3) == [0, 0, 0], (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(key[4]) else { continue }
            leaves.append((page, key))
        }
        let middle = try #require(leaves.sorted { $0.firstKey.lexicographicallyPrecedes($1.firstKey) }.dropFirst(leaves.count / 2).first)
        for offset in middle.page * 4096..<(middle.page + 1) * 4096 { data[offset] = 0 }
        try Data(data).write(to: file)
        return path
    }

    @Test("enumerating rows over a zeroed leaf page: corruptStore naming the table and a backup; later calls too; nothing written")
    func inProcess() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try Self.makeDamagedDatabase(in: directory)
        let before = try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb"))
        for readOnly in [true, false] {
            let database = try Database(path: path, options: .init(durability: .none, readOnly: readOnly))
            let connection = database.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
            let error = #expect(throws: CanopyError.self) {
                try connection.read { txn in try txn.enumerateObjects(in: crashWriterEntries) { _, _ in true } }
            }
            #expect(error?.code == .corruptStore)
            #expect(error?.message.contains("the database is damaged") == true, "\(String(describing: error))")
            #expect(error?.message.contains("table 'canopy.objects'") == true, "\(String(describing: error))")
            #expect(error?.message.contains("Assertion") == true, "\(String(describing: error))")
            #expect(error?.message.contains("Restore the database from a backup") == true)
            #expect(error?.lmdbError?.code == .crashContained)
            // Every later call, a write included: the same error, without entering LMDB.
            let later = #expect(throws: CanopyError.self) { _ = try connection.read { txn in try txn.object(forKey: "0-a", in: crashWriterEntries) } }
            #expect(later?.code == .corruptStore)
            #expect(later?.lmdbError?.code == .environmentDamaged, "\(String(describing: later))")
            #expect(later?.message.contains("an earlier LMDB call crashed") == true, "\(String(describing: later))")
            if !readOnly {
                let write = #expect(throws: CanopyError.self) {
                    try connection.readWrite { txn in try txn.set(CrashWriterEntry(number: 1, part: "a", payload: "x"), forKey: "x", in: crashWriterEntries) }
                }
                #expect(write?.code == .corruptStore)
            }
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb")) == before)
    }

    @Test("the API's open and read in a child process: exit 1 with corruptStore; with containment off the same read dies by SIGABRT")
    func childProcess() throws {
        let reader = try #require(builtExecutable(named: "CrashWriter"), "the CrashWriter executable was not built")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try Self.makeDamagedDatabase(in: directory)
        let contained = try ChildRun(reader, [path, "none", "--read-all"])
        #expect(!contained.signalled, "ended by signal \(contained.status): \(contained.errors)")
        #expect(contained.status == 1)
        #expect(contained.output.contains("error corruptStore"), "\(contained.output) \(contained.errors)")
        #expect(contained.errors.contains("table 'canopy.objects'"), "\(contained.errors)")
        // The control: the same read without containment ends the process inside liblmdb.
        let uncontained = try ChildRun(reader, [path, "none", "--read-all"], environment: ["CANOPY_LMDB_CONTAINMENT": "off", "SWIFT_BACKTRACE": "enable=no"])
        #expect(uncontained.signalled && uncontained.status == SIGABRT, "status \(uncontained.status), signalled \(uncontained.signalled): \(uncontained.errors)")
    }

    @Test("a fault outside LMDB's calls is not contained: the process still dies by SIGSEGV (the handler passes it on)")
    func faultOutsideLMDB() throws {
        let reader = try #require(builtExecutable(named: "CrashWriter"), "the CrashWriter executable was not built")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        do {
            let database = try Database(path: path, options: .init(durability: .none))
            try database.newConnection().readWrite { txn in
                try txn.set(CrashWriterEntry(number: 1, part: "a", payload: "p"), forKey: "1-a", in: crashWriterEntries)
            }
        }
        for backtrace in ["enable=no", "enable=yes"] {
            let run = try ChildRun(reader, [path, "none", "--fault-outside-lmdb"], environment: ["SWIFT_BACKTRACE": backtrace])
            #expect(run.output.contains("read"), "\(backtrace): \(run.output) \(run.errors)")
            #expect(!run.output.contains("byte"), "\(backtrace): the bad read returned")
            #expect(run.signalled && run.status == SIGSEGV, "\(backtrace): status \(run.status), signalled \(run.signalled): \(run.errors.prefix(500))")
        }
    }
}
