import Foundation
import Synchronization

extension ReadTransaction {
    /// A reader of the view named `name` as stored in the database, also in a process that did not register it (a
    /// tool without the app's grouping and sorting closures): groups, counts, rows by index and positions all come
    /// from the view's stored tables.
    ///
    /// When the view is registered in this process, this is ``view(_:)``. Otherwise the view is read as the last
    /// process that maintained it left it, which is right only when no rows were written since by a process that did
    /// not register it; when they were, this throws rather than return a silently wrong list.
    ///
    /// - Throws: ``/CanopyCore/CanopyError/Code/extensionNotRegistered`` when no view of that name is recorded in the database (the
    ///   message lists the views that are), or inside a read-write transaction of a process that did not register it;
    ///   ``/CanopyCore/CanopyError/Code/staleView`` when the view's stored state is consistent with an older snapshot than the
    ///   store's (naming both); ``/CanopyCore/CanopyError/Code/corruptStore`` when its tables are malformed.
    ///
    /// - Parameters:
    ///   - name: the view's name.
    ///   - allowingStale: read a stale view as it is stored instead of throwing (for tools that show what is
    ///     stored, marked as stale).
    public func persistedView(_ name: String, allowingStale: Bool = false) throws -> ViewReader {
        if registeredExtension(named: name, as: View.self) != nil { return try view(name) }
        try requireMaintained(extensionNamed: name)
        let records = try extensionRecords()
        guard let record = records.first(where: { $0.name == name }), PersistedView.kinds.contains(record.kind) else {
            let known = records.filter { PersistedView.kinds.contains($0.kind) }.map(\.name).sorted()
            throw CanopyError(
                .extensionNotRegistered,
                "no view named '\(name)' is recorded in the database; its views are: \(known.isEmpty ? "none" : known.joined(separator: ", "))",
                path: databasePath, extensionName: name)
        }
        let snapshots = try extensionSnapshots()
        let viewSnapshot = snapshots.extensions[name]
        guard allowingStale || (viewSnapshot ?? 0) >= snapshots.store && viewSnapshot != nil else {
            throw PersistedView.staleError(name, viewSnapshot: viewSnapshot, storeSnapshot: snapshots.store, path: databasePath)
        }
        let view = try PersistedView.detachedView(for: record, in: self)
        return ViewReader(view: view, index: try view.index(in: self), transaction: self, tables: try view.tables)
    }
}

extension ViewReader {
    /// The view's kind, as recorded: ``View/plainKind``, ``View/filteredKind``, ``View/manualKind``, ``View/manyGroupsKind`` or
    /// ``View/filteredManyGroupsKind``.
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
    public var hasClosures: Bool { transaction.registeredExtension(named: view.name) === view }

    /// Checks the view's stored structure without its closures and returns the problems found (empty when all is
    /// well): page counts add up to group counts, entries are in order within and across pages, each entry points at
    /// an existing row of an allowed collection and appears once, the rows' records point back at every entry and no
    /// other row carries one; for a filtered view, each entry is also in the parent view, in the same group and order. With the
    /// closures (a registered view), this is ``checkInvariants()``, which also checks that every row the view should
    /// hold is there.
    public func checkStructure() throws -> [String] {
        if hasClosures { return try checkInvariants() }
        return try checkStoredStructure()
    }
}

/// Opening views from their stored tables, without their closures.
enum PersistedView {
    static let kinds = View.recordedKinds

    static func staleError(_ name: String, viewSnapshot: UInt64?, storeSnapshot: UInt64, path: String) -> CanopyError {
        let consistent = viewSnapshot.map { "is consistent with snapshot \($0)" } ?? "has no stored state"
        return CanopyError(
            .staleView,
            "the view '\(name)' \(consistent) but the store is at snapshot \(storeSnapshot): rows were written by a process that did not register the view, so its stored order would be wrong. A process that registers the view brings it up to date (at registration, at its next write, or with Database.catchUpExtensions())",
            path: path, extensionName: name)
    }

    /// A `View` with the name, kind and options of `record`, whose closures throw, bound to its stored tables; cached
    /// per database so that its decoded page directory is reused across transactions.
    ///
    /// The tables come from ``ReadTransaction/existingTable(_:of:keys:values:)``, which opens them at most once per
    /// process and throws when a table was created after `transaction` began.
    static func detachedView(for record: ExtensionRecord, in transaction: ReadTransaction) throws -> View {
        let cache = transaction.databaseScopedValue(forKey: "canopy.detached-views") { DetachedViews() }
        let tables = try openTables(of: record.name, in: transaction)
        if let cached = cache.views.withLock({ $0[record.name] }), cached.kind == record.kind, cached.versionTag == record.versionTag,
           (try? cached.tables.pages.count(in: transaction)) != nil {
            cached.state.withLock { $0.tables = tables }
            return cached
        }
        let view = try makeDetachedView(for: record, path: transaction.databasePath)
        view.state.withLock { $0.tables = tables }
        if case .manual = view.source {
            guard let order = try ManualOrderTable.existing(in: transaction, view: record.name) else {
                throw CanopyError(.corruptStore, "the manual view is recorded but its order table is missing; register it again to rebuild it",
                                  path: transaction.databasePath, extensionName: record.name)
            }
            view.state.withLock { $0.order = order }
        }
        cache.views.withLock { $0[record.name] = view }
        return view
    }

    /// The views of one database opened without their closures, by name.
    final class DetachedViews: Sendable {
        let views = Mutex<[String: View]>([:])
    }

    private static func makeDetachedView(for record: ExtensionRecord, path: String) throws -> View {
        let options = try Options(record: record, path: path)
        let unavailable = CanopyError(.extensionFailed, "the view is opened from its stored tables, without its closures; register it to write",
                                      path: path, extensionName: record.name)
        if record.kind == View.manualKind {
            return View(manualName: record.name, group: options.manualGroup ?? record.name, versionTag: record.versionTag,
                        collections: options.viewOptions.allowedCollections ?? [])
        }
        if record.kind == View.filteredKind || record.kind == View.filteredManyGroupsKind {
            return View(name: record.name, parent: options.parent ?? "", versionTag: record.versionTag, options: options.viewOptions,
                        kind: record.kind, filter: { _, _ in throw unavailable }, progress: nil)
        }
        let grouping = options.manyGroups
            ? ViewGrouping(dependsOnObject: false, dependsOnMetadata: false, collection: nil, groups: { _ in throw unavailable })
            : ViewGrouping(dependsOnObject: false, dependsOnMetadata: false, collection: nil, closure: { _ in throw unavailable })
        return View(
            name: record.name,
            grouping: grouping,
            sorting: ViewSorting(dependsOnObject: false, dependsOnMetadata: false, collection: nil, closure: { _, _ in throw unavailable }),
            versionTag: record.versionTag, options: options.viewOptions)
    }

    /// The tables of view `name`, as recorded.
    /// - Throws: ``CanopyError/Code/corruptStore`` when they are missing.
    static func openTables(of name: String, in transaction: ReadTransaction) throws -> ViewTables {
        guard let tables = try ViewTables.existing(in: transaction, view: name) else {
            throw CanopyError(.corruptStore, "the view is recorded but its tables are missing; register it again to rebuild it",
                              path: transaction.databasePath, extensionName: name)
        }
        return tables
    }

    /// The options a view records (see ``View/options``).
    struct Options {
        var parent: String?
        var viewOptions = ViewOptions()
        /// The view's grouping puts a row in many groups (a `many…` form).
        var manyGroups = false
        /// A manual view's one group.
        var manualGroup: String?

        /// The options recorded with `record`: those of this version, or of earlier ones (whose JSON was built by
        /// hand: the same keys, fewer of them).
        /// - Throws: ``CanopyError/Code/corruptStore`` when they are not a view's options: read without them, a
        ///   filtered view would lose its parent and the allowed collections their check.
        init(record: ExtensionRecord, path: String) throws {
            let definition: View.Definition
            do {
                definition = try ExtensionOptionsCoding.decode(View.Definition.self, from: record.options)
            } catch {
                throw CanopyError(
                    .corruptStore,
                    "the recorded options of the view cannot be read (\(ExtensionOptionsCoding.reason(error, decoding: View.Definition.self))): \(record.options); register the view again, which rebuilds it",
                    path: path, extensionName: record.name, underlying: error)
            }
            parent = definition.parent
            manualGroup = definition.manualGroup
            manyGroups = definition.manyGroups ?? false
            if let allowed = definition.allowedCollections { viewOptions.allowedCollections = Set(allowed) }
            if let rerun = definition.rerunOnTouch { viewOptions.rerunOnTouch = rerun }
            if let strict = definition.strictDecoding { viewOptions.strictDecoding = strict }
        }
    }
}

extension ViewReader {
    /// ``storedStructureProblems()`` plus what can be checked without closures: every entry's collection is allowed,
    /// and a filtered view's entries are in its parent, in the same group and order.
    func checkStoredStructure() throws -> [String] {
        var (problems, _) = try storedStructureProblems()
        let index = try self.index
        let parent = try parentView.map { try transaction.persistedView($0) }
        let parentIndex = try parent?.index
        var entries: [(StoredRowKey, ViewTables.RowEntry)] = []
        if let slot = try attachmentSlot() {
            try transaction.scanRows { row in
                guard let attachment = try row.attachment(at: slot), attachment != ViewTables.skippedMarker else { return true }
                do {
                    entries += try view.storedEntries(attachment, rowKey: row.storedKey, tables: tables, index: index, in: transaction).map { (row.storedKey, $0) }
                } catch {
                    problems.append("the entry of row \(row.id) is malformed")
                }
                return true
            }
        }
        for (rowKey, entry) in entries {
            let collection = try transaction.rowID(for: rowKey)?.collection
            let label = "\(collection ?? "?")/\(rowKey.key)"
            if collection == nil { problems.append("row \(label) names an unknown collection") }
            if let collection, !view.viewOptions.allows(collection) {
                problems.append("row \(label) is of collection '\(collection)', which the view does not allow")
            }
            if let parent {
                let parentEntries = try parent.attachmentSlot().map { try parent.tables.rowEntries(try transaction.attachment(at: $0, forRow: rowKey)) } ?? []
                if !parentEntries.isEmpty {
                    let group = index.groupNames[entry.groupID]
                    if !parentEntries.contains(where: { parentIndex?.groupNames[$0.groupID] == group && $0.sortKey == entry.sortKey }) {
                        problems.append("row \(label) is in another group or place than in the parent view '\(parent.name)'")
                    }
                } else {
                    problems.append("row \(label) is in the filtered view but not in its parent view '\(parent.name)'")
                }
            }
        }
        return problems
    }
}
