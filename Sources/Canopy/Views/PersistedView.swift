import Foundation
import LMDB

extension ReadTransaction {
    /// A reader of the view named `name` as stored in the database, also in a process that did not register it (a
    /// tool without the app's grouping and sorting closures): groups, counts, rows by index and positions all come
    /// from the view's stored tables.
    ///
    /// When the view is registered in this process, this is ``view(_:)``. Otherwise the view is read as the last
    /// process that maintained it left it, which is right only when no rows were written since by a process that did
    /// not register it; when they were, this throws rather than return a silently wrong list.
    ///
    /// - Throws: ``CanopyError/Code/extensionNotRegistered`` when no view of that name is recorded in the database (the
    ///   message lists the views that are), or inside a read-write transaction of a process that did not register it;
    ///   ``CanopyError/Code/staleView`` when the view's stored state is consistent with an older snapshot than the
    ///   store's (naming both); ``CanopyError/Code/corruptStore`` when its tables are malformed.
    ///
    /// - Parameter allowingStale: read a stale view as it is stored instead of throwing (for tools that show what is
    ///   stored, marked as stale).
    public func persistedView(_ name: String, allowingStale: Bool = false) throws -> ViewReader {
        if core.registeredExtension(named: name) is View { return try view(name) }
        guard !(self is ReadWriteTransaction) else {
            throw CanopyError(.extensionNotRegistered, "the view '\(name)' is not registered in this process, so a read-write transaction cannot keep it up to date; register it with Database.register(_:)",
                              path: core.path, extensionName: name)
        }
        let records = try extensionRecords()
        guard let record = records.first(where: { $0.name == name }), PersistedView.kinds.contains(record.kind) else {
            let known = records.filter { PersistedView.kinds.contains($0.kind) }.map(\.name).sorted()
            throw CanopyError(
                .extensionNotRegistered,
                "no view named '\(name)' is recorded in the database; its views are: \(known.isEmpty ? "none" : known.joined(separator: ", "))",
                path: core.path, extensionName: name)
        }
        let state = try DatabaseCore.readState(storage, tables)
        let viewSnapshot = state.extensionSnapshots[name]
        guard allowingStale || (viewSnapshot ?? 0) >= state.snapshot && viewSnapshot != nil else {
            throw PersistedView.staleError(name, viewSnapshot: viewSnapshot, storeSnapshot: state.snapshot, path: core.path)
        }
        let view = try PersistedView.detachedView(for: record, core: core, storage: storage)
        return ViewReader(view: view, index: try view.index(in: storage), transaction: self, tables: try view.tables)
    }

    /// The snapshot each recorded extension's stored state is consistent with (absent for one that has none), and the
    /// store's snapshot: an extension whose snapshot is below the store's is stale and is rebuilt at its next
    /// registration.
    public func extensionSnapshots() throws -> (store: UInt64, extensions: [String: UInt64]) {
        let state = try DatabaseCore.readState(storage, tables)
        return (state.snapshot, state.extensionSnapshots)
    }
}

extension ViewReader {
    /// The view's kind: `"view"` or `"filtered-view"`.
    public var kind: String { view.kind }

    /// The parent view of a filtered view, or `nil`.
    public var parentView: String? {
        if case .filtered(let parent, _) = view.source { return parent }
        return nil
    }

    /// The collections the view is limited to, or `nil` for all.
    public var allowedCollections: Set<String>? { view.viewOptions.allowedCollections }

    /// Whether the reader has the view's grouping and sorting closures (the view is registered in this process).
    /// Without them, ``checkStructure()`` can check the stored view against itself and the rows, but not that every
    /// row the closures would include is present.
    public var hasClosures: Bool { transaction.core.registeredExtension(named: view.name) === view }

    /// Checks the view's stored structure without its closures and returns the problems found (empty when all is
    /// well): page counts add up to group counts, entries are in order within and across pages, each entry points at
    /// an existing row of an allowed collection and appears once, the rows table points back at every entry and has
    /// no others; for a filtered view, each entry is also in the parent view, in the same group and order. With the
    /// closures (a registered view), this is ``checkInvariants()``, which also checks that every row the view should
    /// hold is there.
    public func checkStructure() throws -> [String] {
        if hasClosures { return try checkInvariants() }
        return try checkStoredStructure()
    }
}

/// Opening views from their stored tables, without their closures.
enum PersistedView {
    static let kinds: Set<String> = ["view", "filtered-view"]

    static func staleError(_ name: String, viewSnapshot: UInt64?, storeSnapshot: UInt64, path: String) -> CanopyError {
        let consistent = viewSnapshot.map { "is consistent with snapshot \($0)" } ?? "has no stored state"
        return CanopyError(
            .staleView,
            "the view '\(name)' \(consistent) but the store is at snapshot \(storeSnapshot): rows were written by a process that did not register the view, so its stored order would be wrong. Open the database once with the app that registers the view (it is rebuilt at registration)",
            path: path, extensionName: name)
    }

    /// A `View` with the name, kind and options of `record`, whose closures throw, bound to its stored tables; cached
    /// per database core so that its decoded page directory is reused across transactions.
    ///
    /// The tables are opened in a short read transaction of their own, under the core's write lock: LMDB requires a
    /// transaction that opens database handles to end before another transaction of the process opens any, and makes
    /// the handles usable only by transactions that begin after it ends. A transaction that began earlier (a pinned
    /// snapshot older than the first use of the view) cannot use them: that case throws, asking for a new transaction.
    static func detachedView(for record: ExtensionRecord, core: DatabaseCore, storage: LMDB.ReadTransaction) throws -> View {
        var view: View
        if let cached = core.detachedViews.withLock({ $0[record.name] }), cached.kind == record.kind {
            view = cached
            // A cached handle this process closed since (dropped storage) is opened again.
            if (try? storage.statistics(of: view.tables.pages)) == nil {
                core.detachedViews.withLock { $0[record.name] = nil }
                view = try makeDetachedView(for: record, core: core)
            }
        } else {
            view = try makeDetachedView(for: record, core: core)
        }
        do {
            _ = try storage.statistics(of: view.tables.pages)
        } catch let error as LMDBError where error.code == .invalid {
            throw CanopyError(
                .extensionFailed,
                "the view's tables were first opened after this read transaction began (the view was recorded after the database was opened); read it in a new transaction",
                path: core.path, extensionName: record.name, underlying: error)
        }
        return view
    }

    private static func makeDetachedView(for record: ExtensionRecord, core: DatabaseCore) throws -> View {
        let options = Options(json: record.options)
        let view: View
        let unavailable = CanopyError(.extensionFailed, "the view is opened from its stored tables, without its closures; register it to write",
                                      path: core.path, extensionName: record.name)
        if record.kind == "filtered-view" {
            view = View(name: record.name, parent: options.parent ?? "", versionTag: record.versionTag, options: options.viewOptions,
                        filter: { _, _ in throw unavailable }, progress: nil)
        } else {
            view = View(
                name: record.name,
                grouping: ViewGrouping(dependsOnObject: false, dependsOnMetadata: false, closure: { _ in throw unavailable }),
                sorting: ViewSorting(dependsOnObject: false, dependsOnMetadata: false, closure: { _, _ in throw unavailable }),
                versionTag: record.versionTag, options: options.viewOptions)
        }
        let tables = try openTables(of: record.name, core: core)
        view.state.withLock { $0.tables = tables }
        core.detachedViews.withLock { $0[record.name] = view }
        return view
    }

    /// Opens the tables of view `name` in a read transaction of their own (see ``detachedView(for:core:storage:)``).
    static func openTables(of name: String, core: DatabaseCore) throws -> ViewTables {
        core.writeLock.lock()
        defer { core.writeLock.unlock() }
        do {
            return try core.environment.read { txn in
                ViewTables(
                    pages: try txn.openDatabase(named: "ext.\(name).pages"),
                    rows: try txn.openDatabase(named: "ext.\(name).rows"),
                    groups: try txn.openDatabase(named: "ext.\(name).groups"),
                    info: core.tables.info,
                    stateKey: Array("ext.\(name).state".utf8))
            }
        } catch let error as LMDBError where error.code == .notFound {
            throw CanopyError(.corruptStore, "the view is recorded but its tables are missing; register it again to rebuild it",
                              path: core.path, extensionName: name, underlying: error)
        }
    }

    /// Opens the tables of every view recorded in the database and not registered in this process, so that any
    /// transaction begun afterwards (a pinned snapshot, an observer's) can read them. Called when a database is
    /// opened; failures are left for the first read of the view to report.
    static func prepareRecordedViews(core: DatabaseCore) {
        // Best effort, at open: a record that doesn't decode (or a read that fails) is skipped here and reported with
        // its own error (corruptStore naming the extension) when the view is first read or the records are listed.
        // Skipped while this process writes (the lock may even be held by this thread, inside a write transaction):
        // the first read of such a view opens its tables then.
        guard core.writeLock.try() else { return }
        core.writeLock.unlock()
        guard let records = try? core.environment.read({ txn -> [ExtensionRecord] in
            var records: [ExtensionRecord] = []
            try txn.forEach(in: core.tables.extensions) { _, value in
                if let record = try? JSONDecoderBox.decoder.decode(ExtensionRecord.self, from: Array(value)), kinds.contains(record.kind) {
                    records.append(record)
                }
                return true
            }
            return records
        }) else { return }
        for record in records where core.detachedViews.withLock({ $0[record.name] }) == nil && core.registeredExtension(named: record.name) == nil {
            _ = try? makeDetachedView(for: record, core: core)
        }
    }

    /// The options a view records (see ``View/options``).
    struct Options {
        var parent: String?
        var viewOptions = ViewOptions()

        init(json: String) {
            guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] else { return }
            parent = object["parent"] as? String
            if let allowed = object["allowedCollections"] as? [String] { viewOptions.allowedCollections = Set(allowed) }
            if let rerun = object["rerunOnTouch"] as? Bool { viewOptions.rerunOnTouch = rerun }
        }
    }
}

extension ViewReader {
    /// ``storedStructureProblems()`` plus what can be checked without closures: every entry's collection is allowed,
    /// and a filtered view's entries are in its parent, in the same group and order.
    func checkStoredStructure() throws -> [String] {
        var (problems, _) = try storedStructureProblems()
        let names = try transaction.collectionNamesByID()
        let parent = try parentView.map { try transaction.persistedView($0) }
        try transaction.storage.forEach(in: tables.rows) { rowKey, value in
            let entry: ViewTables.RowEntry
            do { entry = try ViewTables.RowEntry(decoding: value) } catch {
                problems.append("a row entry is malformed")
                return true
            }
            let collectionID = RowKey.collectionID(of: rowKey)
            let collection = collectionID.flatMap { names[$0]?.name }
            let label = "\(collection ?? "?")/\(RowKey.key(of: rowKey))"
            if collection == nil { problems.append("row \(label) names an unknown collection") }
            if let collection, !view.viewOptions.allows(collection) {
                problems.append("row \(label) is of collection '\(collection)', which the view does not allow")
            }
            if let parent {
                let parentEntry = try parent.tables.readRow(Array(rowKey), transaction.storage, viewName: parent.name)
                if let parentEntry {
                    if parent.index.groupNames[parentEntry.groupID] != index.groupNames[entry.groupID] || parentEntry.order != entry.order {
                        problems.append("row \(label) is in another group or place than in the parent view '\(parent.name)'")
                    }
                } else {
                    problems.append("row \(label) is in the filtered view but not in its parent view '\(parent.name)'")
                }
            }
            return true
        }
        return problems
    }
}
