import ArgumentParser
import Canopy
import Foundation

extension CanopyCommand {
    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print each commit's changes as they happen, also commits of other processes.",
            discussion: """
                Without --view: the snapshot and the changed, removed keys of each commit. With --view: the view's \
                changeset as index paths (section, row), as a list UI applies it; --group limits it to one group. When \
                another process leaves the view stale (it wrote rows without registering the view), watch says so and \
                waits until a process that registers the view brings it up to date, then carries on. \
                Example: canopy watch ./db --view agenda --json | jq .
                """)

        @OptionGroup var database: DatabaseArgument
        @Option(help: "Show the changesets of this view.") var view: String?
        @Option(help: "With --view: only this group (one section).") var group: String?
        @Option(parsing: .unconditional, help: "Stop after this many commits (without --view) or changesets (with --view).") var count: Int?
        @Option(parsing: .unconditional, help: "Fallback polling interval in milliseconds, used where no wake-up is available.") var pollMilliseconds = 200
        @Flag(help: "Print a line when watching starts (for scripts that wait for it).") var announce = false
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if group != nil && view == nil { throw ValidationError("--group needs --view") }
            if let count, count < 1 { throw ValidationError("--count must be 1 or more") }
            if pollMilliseconds < 1 { throw ValidationError("--poll-milliseconds must be 1 or more") }
        }

        func run() async throws {
            let db = try database.openReadOnly()
            if let view {
                try await watchView(db, view)
            } else {
                try await watchCommits(db)
            }
        }

        func started(_ snapshot: UInt64) {
            guard announce else { return }
            if output.json {
                console.line(JSONValue.members([("watching", .string(view ?? "commits")), ("snapshot", .int(snapshot))]).text)
            } else {
                console.line("watching \(view.map { "view \($0)" } ?? "commits") from snapshot \(snapshot)")
            }
        }

        /// Wake-ups for each commit of any process (the database's commit watch), and every `--poll` milliseconds as
        /// well (the fallback where the watch cannot see other processes); call the returned closure to stop both.
        func commitWakeups(_ db: Canopy.Database) -> (AsyncStream<Void>, stop: @Sendable () -> Void) {
            let (wakeups, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
            let watch = db.watchCommits { continuation.yield() }
            let poll = Duration.milliseconds(pollMilliseconds)
            let ticker = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: poll)
                    continuation.yield()
                }
            }
            return (wakeups, {
                ticker.cancel()
                watch.cancel()
                continuation.finish()
            })
        }

        func watchCommits(_ db: Canopy.Database) async throws {
            let connection = db.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
            started(try connection.pin())
            let (wakeups, stopWakeups) = commitWakeups(db)
            defer { stopWakeups() }
            var printed = 0
            for await _ in wakeups {
                let notifications: [CommitNotification]
                do {
                    notifications = try connection.advance()
                } catch let error as CanopyError where error.code == .snapshotMismatch {
                    console.error("warning: \(error.message)")
                    continue
                }
                for notification in notifications {
                    print(notification)
                    printed += 1
                    if let count, printed >= count { return }
                }
            }
        }

        func print(_ n: CommitNotification) {
            func keys(_ map: [String: Set<String>]) -> JSONValue {
                .object(map.keys.sorted().map { .init($0, .array(map[$0, default: []].sorted().map { .string($0) })) })
            }
            if output.json {
                console.line(JSONValue.members([
                    ("snapshot", .int(n.snapshot)), ("changedObjects", keys(n.changedObjects)), ("changedMetadata", keys(n.changedMetadata)),
                    ("removedKeys", keys(n.removedKeys)), ("removedCollections", .array(n.removedCollections.sorted().map { .string($0) })),
                    ("removedAll", .bool(n.removedAll)),
                ]).text)
                return
            }
            var parts: [String] = []
            for collection in Set(n.changedObjects.keys).union(n.changedMetadata.keys).sorted() {
                let objects = n.changedObjects[collection, default: []]
                let metadata = n.changedMetadata[collection, default: []]
                for key in objects.union(metadata).sorted() {
                    let what = objects.contains(key) && metadata.contains(key) ? "" : objects.contains(key) ? " (object)" : " (metadata)"
                    parts.append("changed \(printable(collection))/\(printable(key))\(what)")
                }
            }
            for (collection, keys) in n.removedKeys.sorted(by: { $0.key < $1.key }) {
                for key in keys.sorted() { parts.append("removed \(printable(collection))/\(printable(key))") }
            }
            for collection in n.removedCollections.sorted() { parts.append("removed collection \(printable(collection))") }
            if n.removedAll { parts.append("removed everything") }
            console.line("snapshot \(n.snapshot): " + (parts.isEmpty ? "no row changes" : parts.joined(separator: ", ")))
        }

        /// Prints the view's changesets. The tool cannot maintain the view (it has not the app's closures): when
        /// another process wrote rows without registering it, the view is stale, and instead of ending, watch says so
        /// and waits until a process that registers it brings it up to date — then carries on from where it was, the
        /// next changeset covering everything since (a reload if the view was rebuilt).
        func watchView(_ db: Canopy.Database, _ view: String) async throws {
            let mappings = group.map { ViewMappings(groups: [$0], view: view) } ?? ViewMappings(view: view, groupFilter: { _ in true })
            let (wakeups, stopWakeups) = commitWakeups(db)
            defer { stopWakeups() }
            var observer: ViewObserver?
            var isStale = false
            func stale(_ error: CanopyError) {
                guard !isStale else { return }
                isStale = true
                if output.json {
                    console.line(JSONValue.members([("view", .string(view)), ("stale", .bool(true)), ("message", .string(error.message))]).text)
                } else {
                    console.line("view \(view) is stale: \(error.message). Waiting for it to be brought up to date (Ctrl-C stops).")
                }
            }
            func current(_ snapshot: UInt64) {
                guard isStale else { return }
                isStale = false
                if output.json {
                    console.line(JSONValue.members([("view", .string(view)), ("stale", .bool(false)), ("snapshot", .int(snapshot))]).text)
                } else {
                    console.line("view \(view) is up to date again at snapshot \(snapshot)")
                }
            }
            do {
                observer = try ViewObserver(database: db, mappings: mappings, connectionOptions: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
                if let group, let groups = try observer?.read({ txn in try txn.persistedView(view, allowingStale: true).groups() }),
                   !groups.contains(group) {
                    console.error("note: view '\(printable(view))' has no group '\(printable(group))' yet (its groups: \(groups.isEmpty ? "none" : groups.map(printable).joined(separator: ", "))); waiting for rows to enter it")
                }
                started(observer?.snapshot ?? 0)
            } catch let error as CanopyError where error.code == .staleView {
                stale(error)
                started(try db.currentSnapshot())
            }
            var printed = 0
            for await _ in wakeups {
                do {
                    guard let running = observer else {
                        let made = try ViewObserver(database: db, mappings: mappings, connectionOptions: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
                        observer = made
                        current(made.snapshot)
                        continue
                    }
                    guard try running.hasNewCommits() else { continue }
                    let changeset = try running.advance()
                    current(changeset.toSnapshot)
                    guard !changeset.isEmpty else { continue }
                    print(changeset)
                    printed += 1
                    if let count, printed >= count { return }
                } catch let error as CanopyError where error.code == .staleView {
                    stale(error)
                }
            }
        }

        func print(_ c: ViewChangeset) {
            func path(_ p: ViewIndexPath?) -> JSONValue { p.map { .array([.int($0.section), .int($0.row)]) } ?? .null }
            if output.json {
                console.line(JSONValue.members([
                    ("view", .string(c.mappings.view)), ("fromSnapshot", .int(c.fromSnapshot)), ("toSnapshot", .int(c.toSnapshot)),
                    ("reload", .bool(c.isReload)),
                    ("sections", .array(c.sectionChanges.map { .members([("kind", .string("\($0.kind)")), ("group", .string($0.group)), ("index", .int($0.index))]) })),
                    ("rows", .array(c.rowChanges.map { r in
                        .members([("kind", .string("\(r.kind)")), ("collection", .string(r.id.collection)), ("key", .string(r.id.key)),
                                  ("from", path(r.originalIndexPath)), ("to", path(r.finalIndexPath)),
                                  ("objectChanged", .bool(r.objectChanged)), ("metadataChanged", .bool(r.metadataChanged))])
                    })),
                    ("groups", .array(c.mappings.visibleGroups.map { g in .members([("group", .string(g)), ("rows", .int(c.mappings.numberOfItems(inGroup: g)))]) })),
                ]).text)
                return
            }
            if c.isReload {
                console.line("snapshot \(c.fromSnapshot) -> \(c.toSnapshot): reload, \(c.mappings)")
                return
            }
            console.line("snapshot \(c.fromSnapshot) -> \(c.toSnapshot): \(c.sectionChanges.count) section change(s), \(c.rowChanges.count) row change(s)")
            for change in c.sectionChanges { console.line("  " + printable("\(change)")) }
            for change in c.rowChanges { console.line("  " + printable("\(change)")) }
        }
    }
}
