import Foundation
import Logging

/// The ordered migration steps of an app's model, applied to a database before its views and indexes are registered.
///
/// Rules:
/// 1. Migrate right after opening the database, before registering any extension: ``migrate(_:)`` refuses to run
///    while one is registered in this process. The views and indexes over migrated rows are rebuilt once, at their
///    registration, not once per step.
/// 2. Steps are applied once each, in order, and recorded in the database under their names (`canopy migrations DIR`
///    lists them). Never rename or remove a step that shipped; append new ones at the end.
/// 3. A step that throws rolls back its current batch and ``migrate(_:)`` throws ``CanopyError/Code/migrationFailed``
///    naming the step and the row. The batches committed before it stay, with the step's checkpoint: fix the step
///    (or the row) and migrate again, and it resumes after the checkpoint.
/// 4. A step runs in batches of ``batchSize`` rows, each one transaction that also records the checkpoint, so a
///    process killed in the middle resumes where the last batch ended and never leaves a row half-written: each row
///    is either as it was or migrated.
///
/// ```swift
/// var migrator = Migrator()
/// migrator.append(.addKey("note-archived", collection: "notes", "archived", value: .bool(false)))
/// migrator.append(.typed("note-title-split", collection: "notes", from: NoteV2.self, to: Note.self) { _, old in
///     Note(old)
/// })
/// try migrator.migrate(database)
/// try database.register(notesView)
/// ```
public struct Migrator: Sendable {
    /// The rows one transaction of a step handles (the last batch of a step also records it as applied). A step over a
    /// smaller collection is atomic: all of it or nothing.
    public var batchSize: Int
    /// The steps, in the order they are applied.
    public private(set) var steps: [MigrationStep] = []
    /// Called after each batch a step commits, with the step's name and the rows it changed so far (for a progress
    /// display); on the migrating thread, outside the transaction.
    public var progress: (@Sendable (_ step: String, _ rows: Int) -> Void)?

    /// Creates a migrator without steps.
    /// - Parameter batchSize: The rows per transaction; at least 1. Default 10,000.
    public init(batchSize: Int = 10_000) {
        self.batchSize = batchSize
    }

    /// Appends a step; it is applied after every step appended before it.
    public mutating func append(_ step: MigrationStep) {
        steps.append(step)
    }

    /// The names of the steps not yet applied to `database`, in order.
    /// - Throws: what ``migrate(_:)`` throws for a database that does not fit these steps.
    public func pendingSteps(in database: Database) throws -> [String] {
        let applied = try Set(checkedApplied(in: database).map(\.name))
        return steps.map(\.name).filter { !applied.contains($0) }
    }

    /// Applies the steps that are not applied yet, in order, and returns those it applied.
    ///
    /// - Throws: ``CanopyError/Code/invalidArgument`` when an extension is registered in this process, two steps have
    ///   one name, or ``batchSize`` is below 1 (nothing is written); ``CanopyError/Code/migrationFailed`` when the
    ///   database records a step this migrator does not list (a newer version of the app migrated it), records a step
    ///   as applied while an earlier one is not (a step was inserted rather than appended), or a step throws (naming
    ///   the step, the collection and the row; see rule 3); ``CanopyError/Code/readOnly`` for a read-only database.
    @discardableResult
    public func migrate(_ database: Database) throws -> [AppliedMigration] {
        guard batchSize >= 1 else {
            throw CanopyError(.invalidArgument, "a migrator's batch size must be at least 1, not \(batchSize)", path: database.path)
        }
        let registered = database.core.extensions.map(\.name)
        guard registered.isEmpty else {
            throw CanopyError(
                .invalidArgument,
                "migrate before registering extensions: \(registered.sorted().joined(separator: ", ")) \(registered.count == 1 ? "is" : "are") registered in this process, and would decode rows that are not migrated yet; call Migrator.migrate(_:) right after opening the database",
                path: database.path)
        }
        let appliedNames = try Set(checkedApplied(in: database).map(\.name))
        var done: [AppliedMigration] = []
        for step in steps where !appliedNames.contains(step.name) {
            let record = try run(step, in: database)
            database.core.logger.debug("applied a migration step", metadata: [
                "canopy.path": "\(database.path)", "canopy.migration": "\(step.name)", "canopy.rows": "\(record.rows)",
            ])
            done.append(record)
        }
        return done
    }

    /// The applied steps, after checking that they are a prefix of this migrator's steps, in its order.
    private func checkedApplied(in database: Database) throws -> [AppliedMigration] {
        var seen: Set<String> = []
        for step in steps where !seen.insert(step.name).inserted {
            throw CanopyError(.invalidArgument, "two migration steps are named '\(step.name)'; each step needs its own name", path: database.path)
        }
        let connection = database.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
        let applied = try connection.read { txn in try txn.appliedMigrations() }
        let known = Dictionary(uniqueKeysWithValues: steps.enumerated().map { ($0.element.name, $0.offset) })
        for record in applied where known[record.name] == nil {
            throw CanopyError(
                .migrationFailed,
                "the database records migration step '\(record.name)' (applied \(record.appliedAt)), which this version of the app does not list: a newer version migrated it. Open it with that version, or list every shipped step in order",
                path: database.path)
        }
        let appliedSet = Set(applied.map(\.name))
        if let firstPending = steps.firstIndex(where: { !appliedSet.contains($0.name) }),
           let late = steps[firstPending...].first(where: { appliedSet.contains($0.name) }) {
            throw CanopyError(
                .migrationFailed,
                "migration step '\(late.name)' is applied but '\(steps[firstPending].name)', listed before it, is not: steps must be appended at the end, never inserted before shipped ones",
                path: database.path)
        }
        return applied
    }

    /// Runs `step` in batches until it is applied.
    private func run(_ step: MigrationStep, in database: Database) throws -> AppliedMigration {
        while true {
            let connection = database.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
            connection.state.isMaintenance = true
            let applied: (record: AppliedMigration?, rows: Int) = try connection.readWrite { txn in
                let progress = try txn.migrationProgress(step.name)
                let result: MigrationBatchResult
                do {
                    result = try txn.runMigrationBatch(step, after: progress?.after, isFirstBatch: progress == nil, limit: batchSize)
                } catch let failure as MigrationStepRowFailure {
                    throw stepFailed(step, failure, progress: progress, path: database.path)
                }
                let rows = (progress?.rows ?? 0) + result.rows
                txn.customPayload = Array("migration:\(step.name)".utf8)
                if result.finished {
                    let record = AppliedMigration(name: step.name, appliedAt: Date(), snapshot: txn.storeState.snapshot + 1, rows: rows)
                    if progress != nil { try txn.writeMigrationRecord(nil as MigrationInProgress?, forKey: StoreInfoKey.migrationProgress(step.name)) }
                    try txn.writeMigrationRecord(record, forKey: StoreInfoKey.migrationApplied(step.name))
                    return (record, rows)
                }
                let next = MigrationInProgress(name: step.name, after: result.lastKey ?? progress?.after, rows: rows, batches: (progress?.batches ?? 0) + 1)
                try txn.writeMigrationRecord(next, forKey: StoreInfoKey.migrationProgress(step.name))
                return (nil, rows)
            }
            self.progress?(step.name, applied.rows)
            if let record = applied.record { return record }
        }
    }

    private func stepFailed(_ step: MigrationStep, _ failure: MigrationStepRowFailure, progress: MigrationInProgress?, path: String) -> CanopyError {
        let row = failure.key.map { "at row '\($0)' of collection '\(failure.collection)'" } ?? "on collection '\(failure.collection)'"
        let cause: String
        if let canopy = failure.error as? CanopyError {
            cause = canopy.message
        } else {
            cause = "\(failure.error)"
        }
        let committed: String
        if let progress, progress.batches > 0 {
            committed = "; \(progress.rows) rows of the step were committed by \(progress.batches) earlier batch\(progress.batches == 1 ? "" : "es"), and migrating again resumes after row '\(progress.after ?? "")'"
        } else {
            committed = "; nothing of the step was written"
        }
        var error = CanopyError(
            .migrationFailed,
            "migration step '\(step.name)' failed \(row): \(cause). The batch was rolled back\(committed); fix the step or the row and migrate again",
            path: path, collection: failure.collection, key: failure.key, underlying: failure.error)
        error.migrationStep = step.name
        return error
    }
}
