import Canopy
import CanopyCoreTestFixtures
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// The view's committed directories (and the pages each commit wrote) are kept per version in this process
/// (``View/index(in:)``). Commits of another process make versions this process never saw: its next commit and its
/// reads must start from the file's directory and pages, not from what it kept of an older version. (Readers at other
/// versions, and this process's own commits, are checked by ``CommittedPagesTests``.)
@Suite("Committed pages and directories: commits of another process", .ownThread)
struct CommittedPagesCrossProcessTests {
    @Test("after a child's commits, this process's next commit and reads see the child's rows", .timeLimit(.minutes(2)))
    func anotherProcessCommitsBetween() throws {
        let writerPath = try #require(CrashTests.writerPath, "the CrashWriter executable was not built")
        let directory = try TemporaryDirectory(prefix: "committed-pages-xproc")
        defer { directory.remove() }
        let path = directory.appending("db")
        let database = try Database(path: path, options: .init(durability: .none))
        try database.register(crashWriterView())
        let connection = database.newConnection()
        let counter = TypedCollection<Int, NoMetadata>("counter")
        // Several commits, so that directories and pages are kept (the child numbers its rows from "n" on, so they
        // land at the start of groups "a" and "b", on pages this process has read).
        for first in stride(from: 1, through: 200, by: 20) {
            try connection.readWrite { txn in
                for number in first..<(first + 20) {
                    try txn.set(CrashWriterEntry(number: number, part: number % 2 == 0 ? "a" : "b"), forKey: "\(number)", in: crashWriterEntries)
                }
                try txn.set(first + 19, forKey: "n", in: counter)
            }
        }
        _ = try connection.read { txn in try CommittedPagesTests.rendered(txn) }  // every page read

        let child = try ChildProcess(writerPath, [path, "none", "--with-view", "--commits", "5"])
        #expect(child.waitForExit(seconds: 60) == 0, "\(child.remainingLines(seconds: 1))")
        // A commit of this process from the child's version, changing a page in the middle of "a" only.
        try connection.readWrite { txn in
            try txn.set(CrashWriterEntry(number: 101, part: "a"), forKey: "100", in: crashWriterEntries)
        }
        let (rendered, model, problems) = try database.newConnection().read { txn in
            var model: [String: CrashWriterEntry] = [:]
            try txn.enumerateObjects(in: crashWriterEntries) { key, entry in
                model[key] = entry
                return true
            }
            return (try CommittedPagesTests.rendered(txn), model, try txn.view("entries-by-part").checkInvariants())
        }
        #expect(model.count == 210)
        #expect(problems == [])
        #expect(rendered == CommittedPagesTests.expected(model))
    }
}
