import Canopy
import CanopyTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// Many-group views observed across processes: one process writes rows that change their sets of groups at random
/// (`crashWriterRegroup`), the other observes the view, applies every changeset to its model of the list (UIKit's batch
/// rules, per row and group) and must end equal to the view as stored — in both directions.
@Suite("Views: rows in many groups, observed from another process", .ownThread)
struct ManyGroupsCrossProcessTests {
    static let mappings = ViewMappings(view: "entries-by-tags", groupFilter: { _ in true })
    static let commits = 40

    @Test("A child writes, regrouping rows at random; this process's observer applies every changeset and ends equal to the view",
          .timeLimit(.minutes(2)), arguments: [5 as UInt64, 6])
    func childWritesParentObserves(seed: UInt64) async throws {
        let writerPath = try #require(CrashTests.writerPath, "the CrashWriter executable was not built")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let database = try Database(path: path, options: .init(durability: .none))
        try database.register(crashWriterManyGroupView())
        // Rows first (a child's commits 1...20), so that the regrouping commits move rows the observer already shows.
        let first = try ChildProcess(writerPath, [path, "none", "--with-many-group-view", "--commits", "20"])
        #expect(first.waitForExit(seconds: 60) == 0)
        let observer = try ViewObserver(database: database, mappings: Self.mappings)
        var rendering = try observer.read { txn in try Rendering(mappings: observer.mappings, reader: txn.view("entries-by-tags")) }
        #expect(rendering.sections.map(\.rows.count).reduce(0, +) > 40)
        let child = try ChildProcess(writerPath, [path, "none", "--with-many-group-view", "--regroup", "\(seed)", "--commits", "\(Self.commits)"])
        var changesets = 0
        var moves = 0
        for try await changes in observer.changes(pollInterval: .milliseconds(20)) {
            #expect(!changes.isReload, "seed \(seed)")
            let step = try applyObserved(changes, to: rendering, observer: observer)
            #expect(step.applied == step.expected, "seed \(seed), changeset \(changesets): applying gave\n\(step.applied)\nexpected\n\(step.expected)")
            rendering = step.expected
            changesets += 1
            moves += changes.rowChanges.filter { $0.kind == .move }.count
            if step.counter >= 20 + Self.commits { break }
        }
        #expect(child.waitForExit(seconds: 60) == 0, "\(child.remainingLines(seconds: 1))")
        #expect(changesets >= 1)
        #expect(moves > 0, "seed \(seed): no row moved")
        let final = try await database.newConnection().read { txn in
            var mappings = Self.mappings
            let reader = try txn.view("entries-by-tags")
            try mappings.update(with: reader)
            #expect(try reader.checkInvariants() == [])
            return try Rendering(mappings: mappings, reader: reader)
        }
        #expect(rendering == final, "seed \(seed)")
        #expect(final.sections.map(\.group).contains("c"), "seed \(seed): no row was regrouped into 'c'")
    }

    @Test("This process writes, regrouping rows at random; a child's observer applies every changeset and ends equal to the view",
          .timeLimit(.minutes(2)), arguments: [7 as UInt64, 8])
    func parentWritesChildObserves(seed: UInt64) throws {
        let writerPath = try #require(CrashTests.writerPath, "the CrashWriter executable was not built")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        let database = try Database(path: path, options: .init(durability: .none))
        try database.register(crashWriterManyGroupView())
        let child = try ChildProcess(writerPath, [path, "none", "--observe-many-groups", "\(Self.commits)"])
        #expect(child.nextLine(seconds: 60) == "observing")
        let connection = database.newConnection()
        let counter = TypedCollection<Int, NoMetadata>("counter")
        for number in 1...Self.commits {
            try connection.readWrite { txn in
                try txn.set(CrashWriterEntry(number: number, part: "a"), forKey: "\(number)-a", in: crashWriterEntries)
                try txn.set(CrashWriterEntry(number: number, part: "b"), forKey: "\(number)-b", in: crashWriterEntries)
                try crashWriterRegroup(txn, number: number, seed: seed)
                try txn.set(number, forKey: "n", in: counter)
            }
        }
        let result = child.nextLine(seconds: 90)
        #expect(result?.hasPrefix("done ") == true, "\(result ?? "no line"): \(child.remainingLines(seconds: 1))")
        #expect(child.waitForExit(seconds: 30) == 0)
        // "done <changesets> <reloads> <rows>": every changeset applied, none a reload, the model's rows as stored.
        let fields = result?.split(separator: " ").compactMap { Int($0) } ?? []
        let rows = try connection.read { txn in
            let reader = try txn.view("entries-by-tags")
            return try reader.groups().reduce(0) { $0 + (try reader.count(inGroup: $1)) }
        }
        #expect(fields.count == 3 && fields[0] >= 1 && fields[1] == 0 && fields[2] == rows, "\(result ?? "")")
    }
}
