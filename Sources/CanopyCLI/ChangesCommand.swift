import ArgumentParser
import Canopy
import Foundation

extension CanopyCommand {
    struct Changes: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the durable change feed: each commit with the values it wrote, and tombstones.",
            discussion: """
                The feed must be enabled (Database.enableChangeFeed() in the app, or `canopy changes DIR --enable`). \
                Prints the commits after --since (or after a consumer's checkpoint), one per line; --follow waits for \
                new commits. With --consumer NAME the command is a named consumer: its checkpoint (created after \
                --since, or at the feed's start, when new) holds the feed, and it is acknowledged after each batch is \
                printed, so a consumer that is killed sees the unacknowledged commits again (at least once: apply them \
                idempotently by snapshot). Example: canopy changes ./db --consumer search --follow --json
                """)

        @OptionGroup var database: DatabaseArgument
        @Option(help: "Print the commits after this snapshot (for a new --consumer: its starting checkpoint).") var since: UInt64?
        @Flag(help: "Keep waiting for new commits.") var follow = false
        @Option(help: "Read as this named consumer: resume after its checkpoint, acknowledge what was printed.") var consumer: String?
        @Flag(help: "Enable the change feed on the database (needs write access) before reading.") var enable = false
        @Option(help: "Commits read (and acknowledged) at a time.") var batch = 256
        @Option(help: "Fallback polling interval in milliseconds, used where no wake-up is available.") var pollMilliseconds = 200
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if consumer == nil && since == nil && !enable { throw ValidationError("pass --since N, or --consumer NAME") }
            if batch < 1 { throw ValidationError("--batch must be 1 or more") }
            if pollMilliseconds < 1 { throw ValidationError("--poll-milliseconds must be 1 or more") }
            if let consumer, consumer.isEmpty || consumer.utf8.count > 400 { throw ValidationError("--consumer must be 1 to 400 bytes") }
        }

        func run() async throws {
            let db = try database.open(readOnly: consumer == nil && !enable)
            do {
                if enable {
                    let since = try db.enableChangeFeed()
                    if consumer == nil && self.since == nil {
                        console.error("the change feed is enabled; it records the commits after snapshot \(since)")
                        return
                    }
                }
                var last: UInt64
                if let consumer {
                    let start: UInt64
                    if let since { start = since } else { start = try db.changeFeedEnabledSince() ?? 0 }
                    last = try db.registerFeedConsumer(named: consumer, after: start)
                } else {
                    last = since ?? 0
                }
                try await stream(db, after: &last)
            } catch let error as CanopyError where error.code == .changeFeedDisabled {
                throw CLIFailure(.failed, "\(error.code): the change feed is not enabled on this database; enable it in the app (Database.enableChangeFeed()) or here with --enable (needs write access). From then on every commit is recorded with its values")
            } catch let error as CanopyError {
                throw CLIFailure(.failed, "\(error.code): \(error.message)")
            }
        }

        /// Prints batches of commits; with --consumer, acknowledges each batch once it is printed. With --follow, waits
        /// for the next commit of any process (the database's commit watch fires a CommitSignal), or the poll interval.
        func stream(_ db: Canopy.Database, after last: inout UInt64) async throws {
            let signal = CommitSignal()
            let watch = follow ? db.watchCommits { signal.fire() } : nil
            defer { watch?.cancel() }
            while !Task.isCancelled {
                // The generation before the read: a commit between the read and the wait still ends the wait.
                let generation = signal.generation
                let commits = try db.readChanges(since: last, limit: batch)
                if commits.isEmpty {
                    guard follow else { return }
                    await signal.wait(after: generation, timeout: .milliseconds(pollMilliseconds))
                    continue
                }
                for commit in commits { try print(commit) }
                last = commits[commits.count - 1].snapshot
                if let consumer { try db.acknowledge(consumer: consumer, through: last) }
            }
        }

        func print(_ commit: FeedCommit) throws {
            if output.json {
                let changes: [JSONValue] = try commit.changes.map { change in
                    var members: [(String, JSONValue?)] = [("op", .string(change.kind.rawValue))]
                    if change.kind != .removeAll { members.append(("collection", .string(change.collection))) }
                    if change.kind == .set || change.kind == .remove { members.append(("key", .string(change.key))) }
                    if change.kind == .set {
                        members.append(("object", .raw(try json(change.objectBytes, change, "object") ?? "null")))
                        members.append(("metadata", .raw(try json(change.metadataBytes, change, "metadata") ?? "null")))
                    }
                    return .members(members)
                }
                console.line(JSONValue.members([("snapshot", .int(commit.snapshot)), ("changes", .array(changes))]).text)
                return
            }
            let parts = commit.changes.map { change -> String in
                switch change.kind {
                case .set: "set \(change.collection)/\(change.key)"
                case .remove: "removed \(change.collection)/\(change.key)"
                case .removeCollection: "removed collection \(change.collection)"
                case .removeAll: "removed everything"
                }
            }
            console.line("snapshot \(commit.snapshot): " + (parts.isEmpty ? "no row changes" : parts.joined(separator: ", ")))
        }

        func json(_ bytes: [UInt8]?, _ change: FeedChange, _ what: String) throws -> String? {
            guard let bytes else { return nil }
            do {
                return try bytes.withUnsafeBytes { try Codecs.jsonText(from: $0, codecName: change.codec) }
            } catch {
                throw CLIFailure(.failed, "the \(what) of \(change.collection)/\(change.key) in the feed does not decode with its recorded codec '\(change.codec)' (\(error))")
            }
        }
    }
}
