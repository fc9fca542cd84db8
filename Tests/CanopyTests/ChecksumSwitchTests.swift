@_spi(Benchmarks) import CanopyCore
import Canopy
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import LMDB
import Testing

/// Whether every value of `table` carries a valid checksum trailer (`true`), or none does (`false`); `nil` for a mix.
private func trailers(path: String, table: String) throws -> Bool? {
    let environment = try Environment(path: path, options: EnvironmentOptions(flags: [.readOnly], maxDatabases: 64))
    let database = try environment.openDatabase(named: table)  // plain: the bytes as stored
    var sealed = 0
    var plain = 0
    try environment.read { txn in
        try txn.forEach(in: database) { key, value in
            if ValueChecksum.payload(of: value, key: key) != nil { sealed += 1 } else { plain += 1 }
            return true
        }
    }
    if plain == 0 && sealed > 0 { return true }
    if sealed == 0 && plain > 0 { return false }
    return nil
}

/// The benchmarks measure what checksums cost by opening a store without them (`DatabaseOptions.valueChecksums`, SPI).
/// Such a store must never be read as an ordinary one (its data would be taken for damaged trailers) nor an ordinary
/// store be read without its checks (its trailers would be taken for data).
@Suite("Stores without checksums (the benchmarks' switch) and ordinary stores never open as each other")
struct ChecksumSwitchTests {
    @Test("Without checksums: no trailers, its own format tag; each kind of open refuses the other's store, nothing changed")
    func bothWays() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let unchecked = directory.appending("unchecked")
        let ordinary = directory.appending("ordinary")
        var withoutChecksums = DatabaseOptions(durability: .none)
        withoutChecksums.valueChecksums = false
        let item = TodoItem(title: "a task with a title", list: "home", priority: 2)

        for (path, options) in [(unchecked, withoutChecksums), (ordinary, DatabaseOptions(durability: .none))] {
            let database = try Database(path: path, options: options)
            try database.register(makeTaskView())
            let connection = database.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
            try connection.readWrite { txn in
                for i in 0..<20 { try txn.set(item, forKey: "t\(i)", in: tasks, metadata: NoteInfo(color: "red")) }
            }
            try connection.read { (txn: CanopyCore.ReadTransaction) throws -> Void in
                #expect(try txn.object(forKey: "t3", in: tasks) == item)
                #expect(try txn.metadata(forKey: "t3", in: tasks)?.color == "red")
                #expect(try txn.persistedView("by-list").count(inGroup: "home") == 20)
            }
        }
        for table in ["canopy.objects", "canopy.metadata", "canopy.commits", "ext.by-list.pages"] {
            #expect(try trailers(path: unchecked, table: table) == false, "\(table) of the store without checksums")
            #expect(try trailers(path: ordinary, table: table) == true, "\(table) of the ordinary store")
        }

        let sizeBefore = try FileManager.default.attributesOfItem(atPath: unchecked + "/data.mdb")[.size] as? Int
        for readOnly in [false, true] {
            let refused = #expect(throws: CanopyError.self) {
                _ = try Database(path: unchecked, options: .init(durability: .none, readOnly: readOnly))
            }
            #expect(refused?.code == .incompatibleFormat)
            #expect(refused?.message.contains("canopy/6-without-checksums") == true, "\(String(describing: refused))")
            var options = withoutChecksums
            options.readOnly = readOnly
            let reversed = #expect(throws: CanopyError.self) { _ = try Database(path: ordinary, options: options) }
            #expect(reversed?.code == .incompatibleFormat)
        }
        #expect(try FileManager.default.attributesOfItem(atPath: unchecked + "/data.mdb")[.size] as? Int == sizeBefore)
        #expect(try trailers(path: unchecked, table: "canopy.objects") == false)
        #expect(try trailers(path: ordinary, table: "canopy.objects") == true)

        // Both still open as what they are.
        for (path, options) in [(unchecked, withoutChecksums), (ordinary, DatabaseOptions(durability: .none))] {
            let database = try Database(path: path, options: options)
            try database.newConnection().read { (txn: CanopyCore.ReadTransaction) throws -> Void in #expect(try txn.object(forKey: "t19", in: tasks) == item) }
        }
    }
}
