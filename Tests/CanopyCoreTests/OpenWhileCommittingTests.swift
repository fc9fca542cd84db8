import CanopyCore
import CanopyTestSupport
@testable import LMDB
import Foundation
import Synchronization
import Testing

/// Opening a database while another process commits: the check of the data file's size against its meta page (a
/// truncated file would end the process with SIGBUS) read the size, then the meta page; a commit between the two
/// named pages past the size read, and the open failed with `corruptStore`, "data.mdb is truncated", on a healthy
/// file (seen with six `CrashWriter` children started at once on one path, once in 180 opens).
@Suite("Opening a database while another process commits", .ownThread)
struct OpenWhileCommittingTests {
    @Test("another process grows the file between the open's look at its size and at its meta page: the open succeeds")
    func commitBetweenSizeAndMeta() throws {
        let writer = try #require(builtExecutable(named: "CrashWriter"), "the CrashWriter executable was not built")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let first = try ChildProcess(writer, [path, "none", "--commits", "1"])
        try #require(first.waitForExit(seconds: 120) == 0, "the first child \(first.exitDescription(seconds: 0))")
        let sizeBefore = try #require(try FileManager.default.attributesOfItem(atPath: path + "/data.mdb")[.size] as? Int)
        let other = Mutex<String?>(nil)
        // The hook is process-wide: it acts only for this test's file.
        DataFileCheck.afterSizeRead.withLock { hook in
            hook = { file in
                guard file == path + "/data.mdb" else { return }
                do {
                    // Rows of 16 KB: the commits add pages past the size this open has just read.
                    let child = try ChildProcess(writer, [path, "none", "--commits", "10", "--row-bytes", "16384"])
                    if child.waitForExit(seconds: 120) != 0 { other.withLock { $0 = "the other process \(child.exitDescription(seconds: 0))" } }
                } catch {
                    other.withLock { $0 = "\(error)" }
                }
            }
        }
        defer { DataFileCheck.afterSizeRead.withLock { $0 = nil } }
        let database = try Database(path: path, options: .init(durability: .none))
        #expect(other.withLock { $0 } == nil)
        let sizeAfter = try #require(try FileManager.default.attributesOfItem(atPath: path + "/data.mdb")[.size] as? Int)
        #expect(sizeAfter > sizeBefore, "the other process's commits did not grow the file")
        #expect(try database.newConnection().read { txn in try txn.count(inCollection: "entries") } == 22)
    }

    @Test("a file really cut short is still refused as truncated")
    func reallyTruncated() throws {
        let writer = try #require(builtExecutable(named: "CrashWriter"), "the CrashWriter executable was not built")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let child = try ChildProcess(writer, [path, "none", "--commits", "10", "--row-bytes", "16384"])
        try #require(child.waitForExit(seconds: 120) == 0, "the child \(child.exitDescription(seconds: 0))")
        let file = path + "/data.mdb"
        let size = try #require(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int)
        #expect(truncate(file, off_t(size / 2)) == 0)
        let error = try #require(throws: CanopyError.self) { try Database(path: path) }
        #expect(error.code == .corruptStore && error.message.contains("truncated"), "\(error)")
    }
}
