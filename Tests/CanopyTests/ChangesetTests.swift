import Canopy
import CanopyCoreTestFixtures
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// A database with the task view "by-list" and an observer over groups a and b (dynamic sections).
private struct Fixture {
    let directory: TemporaryDirectory
    let database: Database
    let writer: Connection
    let observer: ViewObserver

    init(groups: [String] = ["a", "b"], options: DatabaseOptions = .init(durability: .none), seed: (ReadWriteTransaction) throws -> Void = { _ in }) throws {
        directory = try TemporaryDirectory()
        database = try Database(path: directory.appending("db"), options: options)
        try database.register(makeTaskView())
        writer = database.newConnection()
        try writer.readWrite(seed)
        observer = try ViewObserver(database: database, mappings: ViewMappings(groups: groups, view: "by-list"))
    }

    /// Runs each closure as its own commit, then advances the observer over all of them.
    func span(_ commits: ((ReadWriteTransaction) throws -> Void)...) throws -> ViewChangeset {
        for commit in commits { try writer.readWrite(commit) }
        return try observer.advance()
    }

    func remove() { directory.remove() }
}

private func path(_ section: Int, _ row: Int) -> ViewIndexPath { ViewIndexPath(section: section, row: row) }
private func id(_ key: String) -> RowID { RowID(collection: "tasks", key: key) }

/// Three tasks in list a (priorities 3, 2, 1: k1, k2, k3) and one in b.
private func seedRows(_ txn: ReadWriteTransaction) throws {
    try txn.set(TodoItem(title: "one", list: "a", priority: 3), forKey: "k1", in: tasks)
    try txn.set(TodoItem(title: "two", list: "a", priority: 2), forKey: "k2", in: tasks)
    try txn.set(TodoItem(title: "three", list: "a", priority: 1), forKey: "k3", in: tasks)
    try txn.set(TodoItem(title: "four", list: "b", priority: 1), forKey: "k4", in: tasks)
}

@Suite("Changesets: consolidation rules and errors")
struct ChangesetTests {
    @Test("A single insert, delete, move and update become index-path changes")
    func singleChanges() throws {
        let fixture = try Fixture(seed: seedRows)
        defer { fixture.remove() }
        var changes = try fixture.span { txn in try txn.set(TodoItem(title: "new", list: "a", priority: 5), forKey: "k5", in: tasks) }
        #expect(changes.rowChanges == [.init(kind: .insert, id: id("k5"), originalIndexPath: nil, finalIndexPath: path(0, 0), objectChanged: true)])
        #expect(changes.sectionChanges.isEmpty)

        changes = try fixture.span { txn in try txn.remove(key: "k2", in: tasks) }
        #expect(changes.rowChanges == [.init(kind: .delete, id: id("k2"), originalIndexPath: path(0, 2), finalIndexPath: nil)])

        changes = try fixture.span { txn in try txn.replace(TodoItem(title: "one", list: "b", priority: 0), forKey: "k1", in: tasks) }
        #expect(changes.rowChanges == [.init(kind: .move, id: id("k1"), originalIndexPath: path(0, 1), finalIndexPath: path(1, 1), objectChanged: true)])

        changes = try fixture.span { txn in try txn.replaceMetadata(NoteInfo(color: "red"), forKey: "k3", in: tasks) }
        #expect(changes.rowChanges == [.init(kind: .update, id: id("k3"), originalIndexPath: path(0, 1), finalIndexPath: path(0, 1), metadataChanged: true)])
        #expect(changes.fromSnapshot + 1 == changes.toSnapshot)
    }

    @Test("delete then insert is a move, even at the same index, within a commit and across commits")
    func deleteThenInsertIsMove() throws {
        let fixture = try Fixture(seed: seedRows)
        defer { fixture.remove() }
        let same = TodoItem(title: "two", list: "a", priority: 2)
        var changes = try fixture.span { txn in
            try txn.remove(key: "k2", in: tasks)
            try txn.set(same, forKey: "k2", in: tasks)
        }
        #expect(changes.rowChanges.map(\.kind) == [.move])
        #expect(changes.rowChanges.first?.originalIndexPath == path(0, 1))
        #expect(changes.rowChanges.first?.finalIndexPath == path(0, 1))

        changes = try fixture.span(
            { txn in try txn.remove(key: "k2", in: tasks) },
            { txn in try txn.set(same, forKey: "k2", in: tasks) })
        #expect(changes.rowChanges.map(\.kind) == [.move])
        #expect(changes.rowChanges.first?.originalIndexPath == path(0, 1))
        #expect(changes.rowChanges.first?.finalIndexPath == path(0, 1))
    }

    @Test("insert then delete is nothing; insert then update is an insert")
    func insertThenDeleteOrUpdate() throws {
        let fixture = try Fixture(seed: seedRows)
        defer { fixture.remove() }
        var changes = try fixture.span(
            { txn in try txn.set(TodoItem(title: "gone", list: "a", priority: 9), forKey: "k9", in: tasks) },
            { txn in try txn.remove(key: "k9", in: tasks) })
        #expect(changes.isEmpty)

        changes = try fixture.span { txn in
            try txn.set(TodoItem(title: "brief", list: "b", priority: 9), forKey: "k8", in: tasks)
            try txn.remove(key: "k8", in: tasks)
        }
        #expect(changes.isEmpty)

        changes = try fixture.span(
            { txn in try txn.set(TodoItem(title: "new", list: "a", priority: 0), forKey: "k7", in: tasks) },
            { txn in try txn.replaceMetadata(NoteInfo(color: "blue"), forKey: "k7", in: tasks) },
            { txn in try txn.replace(TodoItem(title: "new", list: "b", priority: 7), forKey: "k7", in: tasks) })
        #expect(changes.rowChanges == [.init(kind: .insert, id: id("k7"), originalIndexPath: nil, finalIndexPath: path(1, 0),
                                             objectChanged: true, metadataChanged: true)])
    }

    @Test("update then delete is a delete; only updates are one update with the flags or-ed")
    func updatesAndDeletes() throws {
        let fixture = try Fixture(seed: seedRows)
        defer { fixture.remove() }
        var changes = try fixture.span(
            { txn in try txn.replaceMetadata(NoteInfo(color: "red"), forKey: "k1", in: tasks) },
            { txn in try txn.remove(key: "k1", in: tasks) })
        #expect(changes.rowChanges == [.init(kind: .delete, id: id("k1"), originalIndexPath: path(0, 0), finalIndexPath: nil, metadataChanged: true)])

        changes = try fixture.span(
            { txn in try txn.replace(TodoItem(title: "two", list: "a", priority: 2), forKey: "k2", in: tasks) },
            { txn in try txn.replaceMetadata(NoteInfo(color: "green"), forKey: "k2", in: tasks) },
            { txn in _ = try txn.touchObject(forKey: "k2", inCollection: "tasks") })
        #expect(changes.rowChanges == [.init(kind: .update, id: id("k2"), originalIndexPath: path(0, 0), finalIndexPath: path(0, 0),
                                             objectChanged: true, metadataChanged: true)])
    }

    @Test("updates mixed with a delete and an insert are a move")
    func updatesWithDeleteAndInsertAreMove() throws {
        let fixture = try Fixture(seed: seedRows)
        defer { fixture.remove() }
        let changes = try fixture.span(
            { txn in try txn.replaceMetadata(NoteInfo(color: "red"), forKey: "k3", in: tasks) },
            { txn in try txn.remove(key: "k3", in: tasks) },
            { txn in try txn.set(TodoItem(title: "three", list: "a", priority: 1), forKey: "k3", in: tasks) },
            { txn in try txn.replaceMetadata(NoteInfo(color: "blue"), forKey: "k3", in: tasks) })
        #expect(changes.rowChanges == [.init(kind: .move, id: id("k3"), originalIndexPath: path(0, 2), finalIndexPath: path(0, 2),
                                             objectChanged: true, metadataChanged: true)])
    }

    @Test("Sections: a group that fills is inserted, one that empties is deleted, both in one span is nothing")
    func sectionChanges() throws {
        let fixture = try Fixture(groups: ["a", "b", "c"], seed: seedRows)
        defer { fixture.remove() }
        var changes = try fixture.span { txn in try txn.set(TodoItem(title: "c1", list: "c", priority: 1), forKey: "c1", in: tasks) }
        #expect(changes.sectionChanges == [.init(kind: .insert, group: "c", index: 2)])
        #expect(changes.rowChanges.isEmpty, "rows of an inserted section are covered by the section insert")

        changes = try fixture.span { txn in try txn.remove(key: "k4", in: tasks) }
        #expect(changes.sectionChanges == [.init(kind: .delete, group: "b", index: 1)])
        #expect(changes.rowChanges.isEmpty, "rows of a deleted section are covered by the section delete")

        changes = try fixture.span(
            { txn in try txn.set(TodoItem(title: "b1", list: "b", priority: 1), forKey: "b1", in: tasks) },
            { txn in try txn.remove(key: "b1", in: tasks) })
        #expect(changes.isEmpty, "a group inserted and deleted in one span is nothing")

        // A row moving from a deleted section into a surviving one is an insert there.
        changes = try fixture.span { txn in try txn.replace(TodoItem(title: "c1", list: "a", priority: 0), forKey: "c1", in: tasks) }
        #expect(changes.sectionChanges == [.init(kind: .delete, group: "c", index: 1)])
        #expect(changes.rowChanges == [.init(kind: .insert, id: RowID(collection: "tasks", key: "c1"), originalIndexPath: nil,
                                             finalIndexPath: path(0, 3), objectChanged: true)])
    }

    @Test("Static sections stay; rows sliding into a range window are inserts")
    func staticSectionsAndRanges() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.appending("db"), options: .init(durability: .none))
        try database.register(makeTaskView())
        let writer = database.newConnection()
        try writer.readWrite(seedRows)
        var mappings = ViewMappings(groups: ["a", "z"], view: "by-list")
        mappings.setSectionKind(.static, forGroup: "z")
        mappings.setRange(.first(2), forGroup: "a")
        let observer = try ViewObserver(database: database, mappings: mappings)
        #expect(observer.mappings.numberOfSections == 2)
        #expect(observer.mappings.numberOfItems(inSection: 0) == 2)
        try writer.readWrite { txn in try txn.remove(key: "k1", in: tasks) }
        let changes = try observer.advance()
        #expect(changes.sectionChanges.isEmpty)
        #expect(changes.rowChanges == [
            .init(kind: .delete, id: id("k1"), originalIndexPath: path(0, 0), finalIndexPath: nil),
            .init(kind: .insert, id: id("k3"), originalIndexPath: nil, finalIndexPath: path(0, 1)),
        ])
    }

    @Test("Notifications that don't line up with the mappings' snapshot are rejected")
    func snapshotMismatch() throws {
        let fixture = try Fixture(seed: seedRows)
        defer { fixture.remove() }
        let recorder = NotificationRecorder()
        let token = fixture.database.addCommitObserver { recorder.record($0) }
        defer { fixture.database.removeObserver(token) }
        var mappings = ViewMappings(groups: ["a", "b"], view: "by-list")
        try fixture.writer.read { txn in try mappings.update(with: txn.view("by-list")) }
        for number in 0..<3 {
            try fixture.writer.readWrite { txn in try txn.set(TodoItem(title: "t\(number)", list: "a", priority: 0), forKey: "n\(number)", in: tasks) }
        }
        let notifications = recorder.wait(for: 3)
        try fixture.writer.read { txn in
            let reader = try txn.view("by-list")
            let missing = #expect(throws: CanopyError.self) {
                try ViewChangeset.compute(notifications: Array(notifications.dropFirst()), from: mappings, reader: reader)
            }
            #expect(missing?.code == .snapshotMismatch)
            let reordered = #expect(throws: CanopyError.self) {
                try ViewChangeset.compute(notifications: notifications.reversed(), from: mappings, reader: reader)
            }
            #expect(reordered?.code == .snapshotMismatch)
            let never = #expect(throws: CanopyError.self) {
                try ViewChangeset.compute(notifications: notifications, from: ViewMappings(groups: ["a"], view: "by-list"), reader: reader)
            }
            #expect(never?.code == .snapshotMismatch)
            let other = #expect(throws: CanopyError.self) {
                try ViewChangeset.compute(notifications: notifications, from: ViewMappings(groups: ["a"], view: "other"), reader: reader)
            }
            #expect(other?.code == .invalidArgument)
            let changes = try ViewChangeset.compute(notifications: notifications, from: mappings, reader: reader)
            #expect(changes.rowChanges.map(\.kind) == [.insert, .insert, .insert])
        }
    }

    @Test("A view rebuilt in the span, or a span the commit log no longer holds, is a reload")
    func reloads() throws {
        let fixture = try Fixture(options: .init(durability: .none, commitLogLimit: 4), seed: seedRows)
        defer { fixture.remove() }
        for number in 0..<10 {
            try fixture.writer.readWrite { txn in try txn.set(TodoItem(title: "t\(number)", list: "a", priority: 0), forKey: "n\(number)", in: tasks) }
        }
        // In-process commits are still in memory: the span is complete and reported row by row.
        var changes = try fixture.observer.advance()
        #expect(!changes.isReload)
        #expect(changes.rowChanges.count == 10)

        // Past the commits kept in memory (256 to 320) and on disk (4 here), the span is lost: reload.
        try fixture.writer.readWrite { txn in try txn.remove(keys: (0..<10).map { "n\($0)" }, inCollection: "tasks") }
        for number in 0..<400 {
            try fixture.writer.readWrite { txn in try txn.set(TodoItem(title: "t", list: "b", priority: number), forKey: "m", in: tasks) }
        }
        changes = try fixture.observer.advance()
        #expect(changes.isReload)
        #expect(changes.rowChanges.isEmpty && changes.sectionChanges.isEmpty)
        #expect(changes.mappings.numberOfItems(inSection: 0) == 3)
        #expect(changes.mappings.numberOfItems(inSection: 1) == 2)

        try fixture.database.unregisterExtension(named: "by-list")
        try fixture.database.register(makeTaskView(versionTag: "2"))
        changes = try fixture.observer.advance()
        #expect(changes.isReload)
        #expect(changes.mappings.numberOfItems(inSection: 0) == 3)
    }
}

@Suite("View observer", .ownThread)
struct ViewObserverTests {
    @Test("The async sequence yields one changeset per advance and reads see the state it leads to", .timeLimit(.minutes(1)))
    func asyncSequence() async throws {
        let fixture = try Fixture(seed: seedRows)
        defer { fixture.remove() }
        let observer = fixture.observer
        let startSnapshot = observer.snapshot
        // The loop tells the test when it has handled an element, so the second write comes after the first advance
        // (no sleep: a handshake).
        let handled = AsyncStream<Int>.makeStream()
        let received = Task {
            var seen: [(ViewChangeset, [RowID])] = []
            for try await changes in observer.changes() {
                let rows = try observer.read { txn in try changes.mappings.rowIDs(inSection: 0, reader: txn.view("by-list")) }
                #expect(observer.snapshot == changes.toSnapshot, "inside the loop, the observer shows the iteration's state")
                seen.append((changes, rows))
                handled.continuation.yield(seen.count)
                if seen.count == 2 { break }
            }
            return seen
        }
        var handledCount = handled.stream.makeAsyncIterator()
        try await fixture.writer.readWrite { txn in try txn.set(TodoItem(title: "top", list: "a", priority: 9), forKey: "k0", in: tasks) }
        #expect(await handledCount.next() == 1)
        try await fixture.writer.readWrite { txn in try txn.remove(key: "k3", in: tasks) }
        let seen = try await received.value
        #expect(seen.count == 2)
        let inserted = seen.flatMap(\.0.rowChanges).filter { $0.kind == .insert }.map(\.id)
        let deleted = seen.flatMap(\.0.rowChanges).filter { $0.kind == .delete }.map(\.id)
        #expect(inserted == [id("k0")])
        #expect(deleted == [id("k3")])
        #expect(seen.last?.1 == [id("k0"), id("k1"), id("k2")])
        // The observer follows the loop (it let go of its own snapshot): outside the loop too, it shows the state of
        // the loop's last advance.
        #expect(observer.snapshot == seen.last?.0.toSnapshot)
        #expect(observer.snapshot > startSnapshot)
        #expect(try observer.read { txn in try observer.mappings.rowIDs(inSection: 0, reader: txn.view("by-list")) }
            == [id("k0"), id("k1"), id("k2")])
        // Advancing it from there reports only what came after.
        try await fixture.writer.readWrite { txn in try txn.remove(key: "k2", in: tasks) }
        let next = try observer.advance()
        #expect(next.rowChanges.map(\.id) == [id("k2")] && next.rowChanges.first?.kind == .delete)
    }

    @Test("Two loops over one observer each see every change", .timeLimit(.minutes(1)))
    func twoLoopsSeeEveryChange() async throws {
        let fixture = try Fixture(seed: seedRows)
        defer { fixture.remove() }
        let observer = fixture.observer
        let commits = 40
        let target = observer.snapshot + UInt64(commits)
        @Sendable func consume(_ sequence: ViewObserver.Changes) async throws -> Set<String> {
            var inserted = Set<String>()
            for try await changes in sequence {
                for change in changes.rowChanges where change.kind == .insert { inserted.insert(change.id.key) }
                if changes.toSnapshot >= target { break }
            }
            return inserted
        }
        // Both loops start from the observer's state when their sequences were made, whenever their first element is
        // asked for (and although the observer follows whichever loop advanced last).
        let (firstSequence, secondSequence) = (observer.changes(), observer.changes())
        let first = Task { try await consume(firstSequence) }
        let second = Task { try await consume(secondSequence) }
        for number in 0..<commits {
            try await fixture.writer.readWrite { txn in
                try txn.set(TodoItem(title: "n\(number)", list: "a", priority: number), forKey: "new-\(number)", in: tasks)
            }
        }
        let all = Set((0..<commits).map { "new-\($0)" })
        #expect(try await first.value == all)
        #expect(try await second.value == all)
    }

    /// An actor a UI-like consumer names for delivery: the callback mutates its state synchronously, which compiles
    /// only because the callback is isolated to it.
    actor Screen {
        var shown: [[RowID]] = []
        func show(_ rows: [RowID]) { shown.append(rows) }
    }

    @Test("A callback is delivered on the actor the consumer names, and reads there see its changeset's state", .timeLimit(.minutes(1)))
    func callbackOnNamedActor() async throws {
        let fixture = try Fixture(seed: seedRows)
        defer { fixture.remove() }
        let observer = fixture.observer
        let screen = Screen()
        let delivered = AsyncStream<Void>.makeStream()
        let observation = observer.observe(on: screen) { screen, result in
            screen.assertIsolated()
            guard case .success(let changes) = result else { return }
            let rows = (try? observer.read { txn in try changes.mappings.rowIDs(inSection: 0, reader: txn.view("by-list")) }) ?? []
            screen.show(rows)
            delivered.continuation.yield()
        }
        defer { observation.cancel() }
        let onMain = observer.observe(on: MainActor.shared) { _, _ in MainActor.assertIsolated() }
        defer { onMain.cancel() }
        try await fixture.writer.readWrite { txn in try txn.remove(key: "k1", in: tasks) }
        var iterator = delivered.stream.makeAsyncIterator()
        await iterator.next()
        #expect(await screen.shown == [[id("k2"), id("k3")]])
    }

    @Test("The callback is called after each advance until cancelled", .timeLimit(.minutes(1)))
    func callback() async throws {
        let fixture = try Fixture(seed: seedRows)
        defer { fixture.remove() }
        let stream = AsyncStream<ViewChangeset>.makeStream()
        let observation = fixture.observer.observe { result in
            if case .success(let changes) = result { stream.continuation.yield(changes) }
        }
        defer { observation.cancel() }
        try await fixture.writer.readWrite { txn in try txn.replace(TodoItem(title: "one", list: "b", priority: 9), forKey: "k1", in: tasks) }
        var iterator = stream.stream.makeAsyncIterator()
        let changes = await iterator.next()
        #expect(changes?.rowChanges == [.init(kind: .move, id: id("k1"), originalIndexPath: path(0, 0), finalIndexPath: path(1, 0), objectChanged: true)])
    }

    @Test("Commits of another process come with the same changesets", .timeLimit(.minutes(1)))
    func crossProcess() async throws {
        let writerPath = try #require(CrashTests.writerPath, "the CrashWriter executable was not built")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let database = try Database(path: path, options: .init(durability: .none))
        try database.register(crashWriterView())
        let observer = try ViewObserver(database: database, mappings: ViewMappings(groups: ["a", "b"], view: "entries-by-part"))
        var rendering = try observer.read { txn in try Rendering(mappings: observer.mappings, reader: txn.view("entries-by-part")) }
        #expect(rendering.sections.isEmpty)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: writerPath)
        process.arguments = [path, "none", "--with-view", "--commits", "5"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "the writer process failed")

        var changesets = 0
        var expected = Rendering(sections: [])
        for try await changes in observer.changes(pollInterval: .milliseconds(20)) {
            #expect(!changes.isReload)
            let (mappings, old) = (changes.mappings, rendering)
            rendering = try observer.read { txn in
                let reader = try txn.view("entries-by-part")
                return try ChangesetApplier.apply(changes, to: old) { try mappings.rowIDs(inSection: $0, reader: reader) }
            }
            changesets += 1
            if changes.toSnapshot == (try database.currentSnapshot()) {
                // Inside the loop, reads see the iteration's state: the one the changesets led to.
                expected = try observer.read { txn in try Rendering(mappings: observer.mappings, reader: txn.view("entries-by-part")) }
                break
            }
        }
        #expect(changesets >= 1)
        #expect(rendering == expected)
        #expect(expected.sections.map(\.rows.count) == [5, 5])
        #expect(expected.sections.first?.rows.first == RowID(collection: "entries", key: "5-a"))
    }

    @Test("Writes of a process that did not register the view are reported, not silently missed: the observer catches the view up",
          .timeLimit(.minutes(1)))
    func crossProcessWithoutTheView() throws {
        let writerPath = try #require(CrashTests.writerPath, "the CrashWriter executable was not built")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let database = try Database(path: path, options: .init(durability: .none))
        try database.register(crashWriterView())
        let observer = try ViewObserver(database: database, mappings: ViewMappings(groups: ["a", "b"], view: "entries-by-part"))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: writerPath)
        process.arguments = [path, "none", "--commits", "2"]  // without --with-view
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "the writer process failed")
        // Read as it is, the view would be stale: a read says so.
        let error = #expect(throws: CanopyError.self) { try database.newConnection().read { txn in _ = try txn.view("entries-by-part") } }
        #expect(error?.code == .staleView)
        #expect(error?.extensionName == "entries-by-part")
        // This process registers the view: the observer brings it up to date and reports the other process's rows.
        let changes = try observer.advance()
        #expect(!changes.isReload)
        // The view was empty: its two groups appear as sections, with the other process's rows.
        #expect(changes.sectionChanges.map(\.group).sorted() == ["a", "b"])
        #expect(changes.sectionChanges.allSatisfy { $0.kind == .insert })
        #expect(observer.mappings.numberOfItems(inGroup: "a") == 2 && observer.mappings.numberOfItems(inGroup: "b") == 2)
    }

    @Test("A span whose commits did not change the view is an empty changeset at the new snapshot, with the mappings an update there gives")
    func spanThatDidNotChangeTheView() throws {
        let fixture = try Fixture(groups: ["a", "b", "c"], seed: seedRows)
        defer { fixture.remove() }
        var mappings = fixture.observer.mappings
        mappings.setOptions(.init(range: .first(2)), forGroup: "a")
        try fixture.observer.setMappings(mappings)
        // Rows of a collection the view does not read, and a task it leaves out (done): neither changes the view.
        let changes = try fixture.span(
            { txn in try txn.set(Note(title: "elsewhere"), forKey: "n1", in: notes) },
            { txn in try txn.set(TodoItem(title: "finished", list: "a", priority: 9, done: true), forKey: "k9", in: tasks) },
            { txn in try txn.set(Note(title: "elsewhere too"), forKey: "n2", in: notes) })
        #expect(changes.isEmpty && !changes.isReload)
        #expect(changes.toSnapshot == changes.fromSnapshot + 3)
        #expect(changes.mappings.snapshot == changes.toSnapshot)
        // The mappings are those an update at the new snapshot gives: same sections, counts and windows.
        try fixture.observer.read { txn in
            let reader = try txn.view("by-list")
            var updated = mappings
            try updated.update(with: reader)
            #expect(changes.mappings.description == updated.description)
            #expect(try Rendering(mappings: changes.mappings, reader: reader) == Rendering(mappings: updated, reader: reader))
        }
        // And the next change of the view is reported from them.
        let next = try fixture.span { txn in try txn.set(TodoItem(title: "first", list: "a", priority: 9), forKey: "k5", in: tasks) }
        #expect(next.rowChanges.map(\.kind).sorted { "\($0)" < "\($1)" } == [.delete, .insert])
        #expect(next.rowChanges.contains(.init(kind: .insert, id: id("k5"), originalIndexPath: nil, finalIndexPath: path(0, 0), objectChanged: true)))
        #expect(next.rowChanges.contains(.init(kind: .delete, id: id("k2"), originalIndexPath: path(0, 1), finalIndexPath: nil)))
    }

    @Test("A commit that changes more rows of a view than a UI animates is a reload, and a small commit after it is row by row")
    func bulkCommitIsAReload() throws {
        let fixture = try Fixture(seed: seedRows)
        defer { fixture.remove() }
        var changes = try fixture.span { txn in
            for number in 0..<4_200 { try txn.set(TodoItem(title: "t", list: "a", priority: number), forKey: "bulk\(number)", in: tasks) }
        }
        #expect(changes.isReload)
        #expect(changes.mappings.numberOfItems(inSection: 0) == 4_203)
        // Just under the limit, the commit is reported row by row.
        changes = try fixture.span { txn in
            for number in 0..<4_000 { try txn.remove(key: "bulk\(number)", in: tasks) }
        }
        #expect(!changes.isReload)
        #expect(changes.rowChanges.count == 4_000 && changes.rowChanges.allSatisfy { $0.kind == .delete })
        #expect(changes.mappings.numberOfItems(inSection: 0) == 203)
    }
}
