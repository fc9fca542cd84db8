import Canopy
import Foundation

/// The shape of every workload: sizes, the random numbers, the keys and values, as in
/// `shared/reference/lmdb-c-baseline/lmdb_bench.c`, so that the raw Swift baseline does the C program's work.
enum Workload {
    /// Rows in every database.
    static let rowCount = 100_000
    /// Point reads in one measured read transaction.
    static let readsPerIteration = 10_000
    /// Keys read over and over by the cache-hit workload (the connection's cache holds them all).
    static let hotKeyCount = 10_000
    /// One-row write transactions in one measured iteration.
    static let smallTransactionsPerIteration = 1_000
    /// Bytes of a raw key: 8-byte big-endian index, then 8 bytes derived from it.
    static let rawKeySize = 16
    /// Bytes of a raw value.
    static let rawValueSize = 100

    /// The row indices in random insertion order (a Fisher–Yates shuffle with the C program's generator).
    static let permutation: [Int] = {
        var generator = XorShift()
        var order = Array(0..<rowCount)
        for i in stride(from: rowCount - 1, to: 0, by: -1) {
            let j = Int(generator.next() % UInt64(i + 1))
            order.swapAt(i, j)
        }
        return order
    }()

    /// The Canopy key of row `index`: 16 hex characters, the index then 8 characters derived from it, so that key
    /// order is index order (as with the raw keys).
    static func key(_ index: Int) -> String {
        let high = String(UInt32(truncatingIfNeeded: index), radix: 16)
        let low = String(UInt32(truncatingIfNeeded: mix(UInt64(index))), radix: 16)
        return String(repeating: "0", count: 8 - high.utf8.count) + high + String(repeating: "0", count: 8 - low.utf8.count) + low
    }

    /// The Canopy object of row `index` (about 100 bytes with ``BinaryCodec``).
    static func record(_ index: Int) -> BenchRecord {
        let h = mix(UInt64(index) ^ 0x1234567)
        return BenchRecord(
            id: index,
            title: "Task \(String(h % 1_000_000_000, radix: 36))",
            note: "Follow up on \(String(h >> 20, radix: 36)) soon",
            priority: Int(h % 5),
            created: Date(timeIntervalSinceReferenceDate: 780_000_000 + Double(index)),
            done: h & 1 == 0)
    }

    static let keys: [String] = (0..<rowCount).map(key)
    static let records: [BenchRecord] = (0..<rowCount).map(record)
}

/// The collection of the Canopy workloads (the views are typed for it).
let benchRecords = TypedCollection<BenchRecord, NoMetadata>("records")

/// The object stored by the Canopy workloads: a few strings, integers, a date and a flag. Its `Decodable` is the
/// synthesized one, so it opts in to the binary codec's fast path for flat structs.
struct BenchRecord: Codable, Sendable, Hashable, BinaryCodecSynthesizedDecoding {
    var id: Int
    var title: String
    var note: String
    var priority: Int
    var created: Date
    var done: Bool
}

/// The C program's xorshift64 generator, with its seed.
struct XorShift {
    var state: UInt64 = 88_172_645_463_325_252

    @inline(__always)
    mutating func next() -> UInt64 {
        var x = state
        x ^= x << 13
        x ^= x >> 7
        x ^= x << 17
        state = x
        return x
    }
}

/// The C program's splitmix64 finalizer.
@inline(__always)
func mix(_ value: UInt64) -> UInt64 {
    var z = value &+ 0x9e37_79b9_7f4a_7c15
    z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
    z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
    return z ^ (z >> 31)
}

/// Writes the file's dirty pages to disk and drops its pages from the kernel's page cache (`POSIX_FADV_DONTNEED`;
/// pages still mapped by a process stay).
func evictFromPageCache(_ path: String) throws {
    let descriptor = open(path, O_RDWR)
    guard descriptor >= 0 else { throw PageCacheError("cannot open \(path) to drop it from the page cache: errno \(errno)") }
    defer { close(descriptor) }
    guard fsync(descriptor) == 0, posix_fadvise(descriptor, 0, 0, POSIX_FADV_DONTNEED) == 0 else {
        throw PageCacheError("cannot sync \(path) or drop it from the page cache: errno \(errno)")
    }
    // The kernel keeps the pages a process still maps: a database left open would keep its file cached, and the
    // benchmark would measure another state than it says.
    let resident = try residentFraction(descriptor, path)
    guard resident < 0.5 else {
        throw PageCacheError("\(Int(resident * 100))% of \(path) is still in the page cache after dropping it: is the database still open?")
    }
}

/// The fraction of the file's pages in the page cache (`mincore` on a map of it).
func residentFraction(_ descriptor: Int32, _ path: String) throws -> Double {
    var status = stat()
    guard fstat(descriptor, &status) == 0 else { throw PageCacheError("cannot stat \(path): errno \(errno)") }
    let size = Int(status.st_size)
    guard size > 0 else { return 0 }
    guard let map = mmap(nil, size, PROT_READ, MAP_SHARED, descriptor, 0), map != UnsafeMutableRawPointer(bitPattern: -1) else {
        throw PageCacheError("cannot map \(path): errno \(errno)")
    }
    defer { munmap(map, size) }
    let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
    var pages = [UInt8](repeating: 0, count: (size + pageSize - 1) / pageSize)
    guard mincore(map, size, &pages) == 0 else { throw PageCacheError("mincore failed on \(path): errno \(errno)") }
    return Double(pages.count { $0 & 1 != 0 }) / Double(pages.count)
}

/// The page cache could not be dropped (a benchmark's setup, outside the measured part).
struct PageCacheError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A fresh directory under the system's temporary directory, removed by ``remove()`` or when the value is released.
final class TemporaryDirectory {
    let path: String

    init(_ label: String) {
        let base = FileManager.default.temporaryDirectory.path
        path = "\(base)/canopy-bench-\(label)-\(getpid())-\(UUID().uuidString.prefix(8))"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// A path inside the directory that does not exist yet (Canopy creates its database directory itself).
    func child(_ name: String) -> String { "\(path)/\(name)" }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }

    deinit { remove() }
}
