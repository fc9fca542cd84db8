@_spi(Benchmarks) import CanopyCore
import Canopy
import Foundation

/// Holds one benchmark's fixture between its setup and teardown hooks.
final class Fixture<Value: AnyObject> {
    var value: Value?
}

extension Workload {
    /// The rows of the cache-hit workload: a random subset of `hotKeyCount` rows.
    static let hotRows: [Int] = Array(permutation.prefix(hotKeyCount))
}

/// A Canopy database in a temporary directory, with one collection of ``BenchRecord`` and the connection a workload
/// measures.
final class CanopyStore {
    let directory: TemporaryDirectory
    private(set) var database: Database!
    private(set) var connection: Connection!
    let collection = benchRecords
    /// The workload's random numbers, carried from one iteration to the next.
    var generator = XorShift()
    /// How many iterations ran (to give updates new values).
    var round = 0

    /// Opens a new database; with `populated`, writes every row (in random order, in one transaction, through a
    /// connection of its own so that the measured connection's cache starts empty). Without `checksums`, the store's
    /// records carry no CRC32C (the `checksum-cost-*` lines compare the two).
    init(label: String, cacheLimit: Int, populated: Bool, durability: Durability = .full, writeMap: Bool = false, checksums: Bool = true) {
        directory = TemporaryDirectory(label)
        do {
            var options = DatabaseOptions(durability: durability, writeMap: writeMap)
            options.valueChecksums = checksums
            database = try Database(path: directory.child("db"), options: options)
            if populated {
                let loader = database.newConnection(options: ConnectionOptions(objectCacheLimit: 0, metadataCacheLimit: 0))
                try loader.readWrite { txn in
                    for index in Workload.permutation {
                        try txn.set(Workload.records[index], forKey: Workload.keys[index], in: collection)
                    }
                }
            }
            connection = database.newConnection(options: ConnectionOptions(objectCacheLimit: cacheLimit))
        } catch {
            fatalError("cannot set up the Canopy database in \(directory.path): \(error)")
        }
    }

    /// Closes the database and opens it again, as a new process would (nothing registered, caches empty). With
    /// `evictingPageCache`, the data file is first synced and dropped from the kernel's page cache, as when an app
    /// opens a database it wrote some time ago: the pages come back as the reads fault them in.
    func reopen(evictingPageCache: Bool = false) throws {
        let options = database.options
        let cacheLimit = connection.options.objectCacheLimit
        connection = nil
        database = nil
        if evictingPageCache { try evictFromPageCache(directory.child("db") + "/data.mdb") }
        database = try Database(path: directory.child("db"), options: options)
        connection = database.newConnection(options: ConnectionOptions(objectCacheLimit: cacheLimit))
    }

    /// Releases the connection and the database (closing the LMDB environment), then removes the directory.
    func close() {
        connection = nil
        database = nil
        directory.remove()
    }

    deinit { close() }
}

/// A raw LMDB environment in a temporary directory, for the baselines.
final class RawStore {
    let directory: TemporaryDirectory
    private(set) var environment: RawEnvironment!
    var generator = XorShift()
    var round = 0

    /// Opens a new environment with LMDB `flags`; with `populated`, puts every row as the bulk insert does.
    init(label: String, flags: Int32, populated: Bool) {
        directory = TemporaryDirectory("raw-\(label)")
        environment = RawEnvironment(directory: directory.child("env"), flags: flags)
        if populated { environment.insert(Workload.permutation) }
    }

    func close() {
        environment = nil
        directory.remove()
    }

    deinit { close() }
}
