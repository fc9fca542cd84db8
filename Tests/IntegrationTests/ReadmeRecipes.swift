import Canopy
import CanopyIndexes
import CanopySource
import CanopyTerminal
import Foundation

// The README's recipes, each verbatim between its `RECIPE name` markers (ReadmeRecipesTests checks the README holds
// them and runs them). They use the quick start's `Reminder` (QuickStart.swift) and a "by-list" view of it.

let recipeReminders = TypedCollection<Reminder, NoMetadata>("reminders")

/// Paging a big view: rows by position, without scanning the group.
func recipePaging(connection: Connection) throws -> [String] {
    let reminders = recipeReminders
    // RECIPE paging BEGIN
    // Rows 200..<250 of the group "home": a few binary searches and one page read per call, whatever its size.
    let page = try connection.read { txn in
        let view = try txn.view("by-list")
        let end = min(250, try view.count(inGroup: "home"))
        return try view.rowIDs(inGroup: "home", range: min(200, end)..<end).compactMap { id in
            try txn.object(forKey: id.key, in: reminders)?.title
        }
    }
    // RECIPE paging END
    return page
}

/// Deleting a group: every row the view has in it, in one transaction.
func recipeDeleteGroup(connection: Connection) throws -> Int {
    // RECIPE delete-group BEGIN
    // The view says which rows are in the group; removing them updates the view in the same transaction.
    let removed = try connection.readWrite { txn in
        let ids = try txn.view("by-list").rowIDs(inGroup: "work")
        for id in ids { try txn.remove(key: id.key, inCollection: id.collection) }
        return ids.count
    }
    // RECIPE delete-group END
    return removed
}

/// Observing from async code: one changeset per commit (also other processes'), in a task.
func recipeObserveAsync(observer: ViewObserver, until done: @escaping @Sendable (ViewChangeset) -> Bool) async throws {
    // RECIPE observe-async BEGIN
    // `observer` as in the quick start. Each loop starts from the observer's state and sees every commit after it.
    for try await changes in observer.changes() {
        for change in changes.rowChanges { print(change) }  // e.g. insert reminders/r9 -> [0, 0]
        if done(changes) { break }                            // or cancel the task
    }
    // RECIPE observe-async END
}

/// A live terminal list: the README's list (`list`, `source`), redrawn after each commit of any process.
func recipeLiveList(list: TerminalListView, source: ViewDatasource<Reminder, TerminalCell, TerminalSupplementaryView, TerminalListView>, until done: @escaping @Sendable () -> Bool) async throws {
    // RECIPE live-list BEGIN
    // The data source pushes: it wakes when any process commits (inotify on the database's signal file, no polling),
    // and each element is the changeset of the commits since the last one, already applied to `list` as one checked batch.
    for try await changes in source.changes() {
        // Rows of a section that appeared come with it: they are not row changes (the UIKit rule).
        print(changes.isReload ? "reload" : "\(changes.sectionChanges.count) sections, \(changes.rowChanges.count) rows changed")
        print(try list.renderToString())   // a real app redraws its screen, or lets a TerminalRunner follow the source
        if done() { break }                // or cancel the task: the loop ends
    }
    // RECIPE live-list END
}

/// Serving requests: the async API keeps the server's threads free.
func recipeRequestHandler(database: Database, id: String) async throws -> Reminder? {
    let reminders = recipeReminders
    // RECIPE server BEGIN
    // In a request handler (Hummingbird, Vapor, any NIO server): the async API. It runs the transaction on a thread
    // of its own, so an event-loop thread never waits for the disk or for another writer's lock. A connection runs
    // one transaction at a time: take one per request (cheap), or a small pool.
    let connection = database.newConnection()
    let reminder = try await connection.read { txn in try txn.object(forKey: id, in: reminders) }
    try await connection.readWrite { txn in
        try txn.set(Reminder(title: "Seen by the server", list: "work", priority: 0), forKey: "log-\(id)", in: reminders)
    }
    // RECIPE server END
    return reminder
}

/// A secondary index (module CanopyIndexes): rows by a value, looked up by range.
func recipeIndex(database: Database, connection: Connection) throws -> [String] {
    let reminders = recipeReminders
    // RECIPE index BEGIN
    let byPriority = SecondaryIndex<Int64OrderedCoding>.byObject(name: "by-priority", reminders) { _, reminder in
        Int64(reminder.priority)
    }
    try database.register(byPriority)
    let urgent = try connection.read { txn in
        try byPriority.rowIDs(in: 3...9, in: txn).compactMap { try txn.object(forKey: $0.key, in: reminders)?.title }
    }
    // RECIPE index END
    return urgent
}

/// A row in many groups: an urgent reminder under its list and under "urgent".
func recipeManyGroups(database: Database, connection: Connection) throws -> [String] {
    let reminders = recipeReminders
    // RECIPE many-groups BEGIN
    let listsAndUrgent = View(
        name: "lists-and-urgent",
        grouping: .manyByObject(reminders) { _, reminder in
            reminder.priority >= 3 ? [reminder.list, "urgent"] : [reminder.list]
        },
        sorting: .byObject(reminders) { _, _, reminder in SortKey(.descending(reminder.priority), .ascending(reminder.title)) })
    try database.register(listsAndUrgent)
    let urgentTitles = try connection.read { txn in
        try txn.view("lists-and-urgent").rowIDs(inGroup: "urgent").compactMap { try txn.object(forKey: $0.key, in: reminders)?.title }
    }
    // RECIPE many-groups END
    return urgentTitles
}

/// Following the change feed from another service: resumable, at least once.
func recipeFeed(database: Database, apply: @escaping @Sendable (FeedChange) throws -> Void, until done: @escaping @Sendable (UInt64) -> Bool) async throws {
    // RECIPE feed BEGIN
    // Once, when setting up: commits are recorded with their values from then on (by every process).
    let start = try database.enableChangeFeed()
    try database.registerFeedConsumer(named: "search-indexer", after: start)
    // The consumer: resume after its checkpoint; apply each commit, then acknowledge it. A crash in between
    // delivers the commit again, so applying must be idempotent (skip snapshots you already applied).
    let checkpoint = try database.feedConsumer(named: "search-indexer")?.checkpoint ?? start
    for try await commit in database.changes(since: checkpoint) {
        for change in commit.changes { try apply(change) }   // .set (with the row's values) or a removal
        try database.acknowledge(consumer: "search-indexer", through: commit.snapshot)
        if done(commit.snapshot) { break }
    }
    // RECIPE feed END
}
