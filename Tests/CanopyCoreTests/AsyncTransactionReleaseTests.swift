import CanopyCore
import CanopyTestSupport
import Foundation
import Testing

/// The async transactions (`read`, `readWrite`) run on a background thread: when the awaiting task resumes, that
/// thread must no longer hold the connection (and so the database). Otherwise a database the caller released right
/// after the await is still open in the process for a moment, and opening the path again with other options — a
/// tool run in the same process, as the CLI tests do — fails with `alreadyOpen`.
///
/// On its own thread (`.ownThread`): its 600 awaits resume there, not on Swift's cooperative pool, which in a full run
/// at load average 20 was busy long enough that the loop passed its one-minute limit (1.1 s alone).
@Suite("Async transactions let go of the database before they return", .ownThread)
struct AsyncTransactionReleaseTests {
    @Test("a database released right after an async transaction is closed: opening it again with other options succeeds",
          .timeLimit(.minutes(1)), arguments: ["readWrite", "read"])
    func reopenAfterAsyncTransaction(kind: String) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let counter = TypedCollection<Int, NoMetadata>("counter")
        var failures: [String] = []
        for round in 0..<300 {
            do {
                let database = try Database(path: path, options: .init(durability: .none))
                if kind == "readWrite" {
                    try await database.newConnection().readWrite { txn in try txn.set(round, forKey: "n", in: counter) }
                } else {
                    _ = try await database.newConnection().read { txn in try txn.object(forKey: "n", in: counter) }
                }
            }
            do {
                _ = try Database(path: path, options: .init(durability: .full))
            } catch {
                failures.append("round \(round): \(error)")
            }
        }
        #expect(failures.isEmpty, "\(failures.count) of 300 reopenings failed; first: \(failures.first ?? "")")
    }
}
