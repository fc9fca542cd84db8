import LMDB

// Extensions in a write transaction: registering, catching up a lagging state, rebuilding, unregistering.
//
// The rule these keep: a commit records an extension as consistent with its snapshot only when its state was current
// when the transaction began, or was brought up to date in it (caught up from the commit log, or rebuilt).

extension ReadWriteTransaction {
    // MARK: Registering

    /// Registers `ext` in this transaction: rebuilds its state when the definition is new or changed, catches it up
    /// when it lags, and checks it otherwise.
    ///
    /// - Parameter checked: what ``StoreExtension/checkStoredState(in:)`` said in the registration's read, when it ran
    ///   there (a ``StoredStateCheck/rebuild(because:)`` rebuilds).
    func registerExtension(_ ext: any StoreExtension, checked: StoredStateCheck? = nil) throws -> RegistrationOutcome {
        for dependency in ext.dependencies where registeredExtension(named: dependency) == nil {
            throw CanopyError(.extensionDependencyMissing, "the extension depends on '\(dependency)', which must be registered first",
                              path: core.path, extensionName: ext.name)
        }
        let previous = try tables.extensionsTable.withValue(forKey: ext.name, in: storage) { bytes in
            try bytes.map { try decodeExtensionRecord($0, name: ext.name) }
        }
        var context = ExtensionRegistrationContext(
            previous: previous, storeSnapshot: storeState.snapshot, extensionSnapshot: storeState.extensionSnapshots[ext.name],
            currentVersionTag: ext.versionTag, currentKind: ext.kind,
            optionsComparison: try previous.map { try ext.compareOptions(withRecorded: $0.options) } ?? .same)
        if case .rebuild(let because) = checked { context.forcedRebuildReason = .storedStateMismatch(because) }
        // An unchanged definition whose state lags is caught up from the commit log when the log covers the gap.
        var missed: MissedWrites?
        if context.forcedRebuildReason == nil, context.definitionRebuildReason == nil, let lag = context.lagRebuildReason,
           let extensionSnapshot = context.extensionSnapshot {
            if let dependency = try dependencyRebuilt(ext, since: extensionSnapshot) {
                context.forcedRebuildReason = .dependencyRebuilt(dependency)
            } else if let gap = try missedWrites(from: extensionSnapshot) {
                missed = gap
                context.catchesUp = true
            } else {
                context.forcedRebuildReason = lag
            }
        }
        try prepare(ext, context: context)
        var outcome: RegistrationOutcome = context.rebuildCause.map { .rebuilt($0) } ?? .current
        registeredExtensions.append(ext)
        // Dependencies hear of each change first: the writer goes before those of extensions that depend on it (an
        // extension registered again while its dependents stayed registered).
        let all = core.extensions + registeredExtensions
        let firstDependent = writers.firstIndex { writer in
            all.first { $0.name == writer.name }?.dependencies.contains(ext.name) ?? false
        }
        writers.insert((ext.name, try ext.beginWrite(self)), at: firstDependent ?? writers.endIndex)
        if let missed {
            outcome = try sayingCatchUp(of: ext) { try catchUp(ext, missed: missed) }
            // The read could not check a lagging state; check it now that it is caught up.
            if case .caughtUp = outcome, case .rebuild(let because) = try ext.checkStoredState(in: self) {
                outcome = .rebuilt(.storedStateMismatch(because))
                try rebuild(ext, because: .storedStateMismatch(because), dependents: false)
            }
        } else if case .current = outcome, checked == nil, case .rebuild(let because) = try ext.checkStoredState(in: self) {
            outcome = .rebuilt(.storedStateMismatch(because))
            try rebuild(ext, because: .storedStateMismatch(because), dependents: false)
        }
        var rebuiltAt = previous?.rebuiltAtSnapshot
        if case .rebuilt = outcome { rebuiltAt = storeState.snapshot + 1 }
        let record = ExtensionRecord(name: ext.name, kind: ext.kind, versionTag: ext.versionTag, options: try ext.recordedOptions(),
                                     registeredAtSnapshot: storeState.snapshot, rebuiltAtSnapshot: rebuiltAt)
        try writeRecord(record)
        didWrite = true
        if case .rebuilt = outcome { try rebuildDependents(of: ext) }
        return outcome
    }

    private func writeRecord(_ record: ExtensionRecord) throws {
        let encoded = try JSONDecoderBox.encoder.encode(record)
        try guarded { try tables.extensionsTable.put(Array(encoded), forKey: record.name, in: writeStorage) }
    }

    /// Records that extension `name` is rebuilt by this transaction's commit (its dependents in other processes must
    /// then rebuild rather than catch up).
    private func recordRebuild(of name: String) throws {
        guard var record = try extensionRecords().first(where: { $0.name == name }) else { return }
        record.rebuiltAtSnapshot = storeState.snapshot + 1
        try writeRecord(record)
    }

    /// Runs `ext`'s prepare (a rebuild when the context says so).
    private func prepare(_ ext: any StoreExtension, context: ExtensionRegistrationContext) throws {
        // A rebuilt extension attaches under a new slot: what rows carry under the old one is read at most once more,
        // by the extension's own rebuild (the context says which slot it was). The slot is assigned here, at
        // registration, so that no change handled later writes the store's records for it.
        var context = context
        if context.needsRebuild {
            context.retiredAttachmentSlot = try attachmentSlot(for: ext.name)
            try retireAttachmentSlot(of: ext.name)
        }
        _ = try writableAttachmentSlot(for: ext.name)
        do {
            try ext.prepare(in: self, context: context)
        } catch let error as CanopyError {
            throw error
        } catch {
            // What LMDB refused (a table too many, a key too long) says what to do.
            let advice = (CanopyError.wrap(error, path: core.path) as? CanopyError).map { ": \($0.message)" } ?? ""
            throw CanopyError(.extensionRebuildFailed, "the extension failed to prepare or rebuild its storage; nothing was registered\(advice)",
                              path: core.path, extensionName: ext.name, underlying: error)
        }
        if context.needsRebuild { rebuiltExtensions.insert(ext.name) }
        if let reason = context.rebuildReason { core.didRebuildExtension(ext.name, reason: reason) }
    }

    /// Rebuilds `ext` (registered in this process, its writer in this transaction) from the rows, gives it a new
    /// writer, and (with `dependents`) rebuilds the extensions that depend on it.
    private func rebuild(_ ext: any StoreExtension, because reason: ExtensionRebuildReason, dependents: Bool = true) throws {
        var context = ExtensionRegistrationContext(
            previous: nil, storeSnapshot: storeState.snapshot, extensionSnapshot: storeState.extensionSnapshots[ext.name],
            currentVersionTag: ext.versionTag, currentKind: ext.kind, optionsComparison: .same)
        context.forcedRebuildReason = reason
        try prepare(ext, context: context)
        if let index = writers.firstIndex(where: { $0.name == ext.name }) {
            writers[index] = (ext.name, try ext.beginWrite(self))
        }
        laggingExtensions.remove(ext.name)
        didWrite = true
        if !registeredExtensions.contains(where: { $0 === ext }) { try recordRebuild(of: ext.name) }
        if dependents { try rebuildDependents(of: ext) }
    }

    /// Prepares again, rebuilding, every extension registered in this process that depends on `ext` (which was just
    /// rebuilt), transitively: their state was derived from its old state.
    private func rebuildDependents(of ext: any StoreExtension) throws {
        let registeredHere = Set(registeredExtensions.map { ObjectIdentifier($0) })
        for dependent in core.extensions where dependent.dependencies.contains(ext.name) && !registeredHere.contains(ObjectIdentifier(dependent)) {
            try rebuild(dependent, because: .dependencyRebuilt(ext.name))
        }
    }

    // MARK: Catching up

    /// Brings every extension registered in this process whose state lags the store's snapshot up to date, before
    /// the transaction's own changes: from the commit log when it covers the gap, otherwise by a rebuild. Called when
    /// the transaction begins. An extension whose recorded definition differs (only possible in a registering
    /// transaction, which may run regardless) is left as it is, and not recorded as current.
    func catchUpStaleExtensions(_ extensions: [any StoreExtension]) throws {
        for ext in extensions {
            try sayingCatchUp(of: ext) { try catchUpIfStale(ext) }
        }
    }

    /// Runs `body`, which brings `ext` up to date; a failure (a closure that cannot decode a row another process wrote)
    /// is about those rows, not about what the caller writes, so its error names the extension and says so.
    private func sayingCatchUp<R>(of ext: any StoreExtension, _ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch var error as CanopyError where error.extensionName == nil {
            error.extensionName = ext.name
            error.message = "bringing '\(ext.name)' up to date with rows written by a process that did not register it failed, "
                + "and nothing was written: \(error.message). Fix or remove the row named here, then try again"
            throw error
        }
    }

    /// Brings `ext` up to date when its state lags (see ``catchUpStaleExtensions(_:)``).
    private func catchUpIfStale(_ ext: any StoreExtension) throws {
        let name = ext.name
        let extensionSnapshot = storeState.extensionSnapshots[name]
        if extensionSnapshot == storeState.snapshot { return }
        if rebuiltExtensions.contains(name) { return }  // rebuilt as a dependent earlier in the loop
        if connection.state.isMaintenance, try definitionMatches(ext) != true {
            laggingExtensions.insert(name)
            return
        }
        guard let extensionSnapshot else {
            try rebuild(ext, because: .noStoredState)
            return
        }
        if let dependency = try dependencyRebuilt(ext, since: extensionSnapshot) {
            try rebuild(ext, because: .dependencyRebuilt(dependency))
            return
        }
        guard let missed = try missedWrites(from: extensionSnapshot) else {
            try rebuild(ext, because: .missedWrites(extensionSnapshot: extensionSnapshot, storeSnapshot: storeState.snapshot))
            return
        }
        _ = try catchUp(ext, missed: missed)
    }

    /// Hands `missed` to `ext`'s writer; rebuilds the extension when it cannot catch up.
    private func catchUp(_ ext: any StoreExtension, missed: MissedWrites) throws -> RegistrationOutcome {
        guard let writer = writers.first(where: { $0.name == ext.name })?.writer else { return .current }
        guard let edits = try writer.catchUp(missed) else {
            let reason = ExtensionRebuildReason.missedWrites(extensionSnapshot: missed.fromSnapshot, storeSnapshot: missed.toSnapshot)
            try rebuild(ext, because: reason)
            return .rebuilt(reason)
        }
        try writeCatchUpEdits(edits, of: ext.name)
        didWrite = true
        return .caughtUp(rows: missed.rows.count)
    }

    /// The first dependency of `ext` rebuilt after `snapshot` (or whose rebuild was not recorded): `ext`'s state was
    /// derived from the dependency's old state, and must be rebuilt.
    private func dependencyRebuilt(_ ext: any StoreExtension, since snapshot: UInt64) throws -> String? {
        guard !ext.dependencies.isEmpty else { return nil }
        let records = try extensionRecords()
        for dependency in ext.dependencies {
            if rebuiltExtensions.contains(dependency) { return dependency }
            guard let rebuiltAt = records.first(where: { $0.name == dependency })?.rebuiltAtSnapshot, rebuiltAt <= snapshot else {
                return dependency
            }
        }
        return nil
    }

    /// The rows changed or removed after `from` up to the store's snapshot, from the commit log; `nil` when the log no
    /// longer holds every commit of the gap.
    func missedWrites(from: UInt64) throws -> MissedWrites? {
        guard let notifications = try core.notifications(after: from, upTo: storeState.snapshot, in: lmdbWriteStorage) else { return nil }
        var objects: [String: Set<String>] = [:]
        var metadata: [String: Set<String>] = [:]
        var removedCollections: Set<String> = []
        var removedEverything = false
        for notification in notifications {
            removedEverything = removedEverything || notification.removedAll
            removedCollections.formUnion(notification.removedCollections)
            for (collection, keys) in notification.changedObjects { objects[collection, default: []].formUnion(keys) }
            for (collection, keys) in notification.changedMetadata { metadata[collection, default: []].formUnion(keys) }
            for (collection, keys) in notification.removedKeys {
                objects[collection, default: []].formUnion(keys)
                metadata[collection, default: []].formUnion(keys)
            }
        }
        let collections = try collectionNamesByID()
        var byName: [String: (id: UInt32, codec: String)] = [:]
        for (id, entry) in collections { byName[entry.name] = (id, entry.codec) }
        var rows: [MissedRow] = []
        for collection in Set(objects.keys).union(metadata.keys) {
            guard let record = byName[collection] else { continue }
            let objectKeys = objects[collection, default: []]
            let metadataKeys = metadata[collection, default: []]
            for key in objectKeys.union(metadataKeys) {
                let storedKey = StoredRowKey(collectionID: record.id, key: key)
                let id = RowID(collection: collection, key: key)
                let previous = try guardedRead { try storedKey.bytes.withUnsafeBytes { try previousRecord($0, id: id, withObject: false) } }
                let objectChanged = objectKeys.contains(key)
                let metadataChanged = metadataKeys.contains(key)
                let current = previous.map {
                    RowChange(id: id, storedKey: storedKey, kind: .update, codecName: record.codec, objectChanged: objectChanged,
                              metadataChanged: metadataChanged, transaction: self, previousAttachments: $0.attachments)
                }
                rows.append(MissedRow(id: id, storedKey: storedKey, current: current, objectChanged: objectChanged, metadataChanged: metadataChanged))
            }
        }
        rows.sort { $0.storedKey.bytes.lexicographicallyPrecedes($1.storedKey.bytes) }
        return MissedWrites(fromSnapshot: from, toSnapshot: storeState.snapshot, rows: rows, removedCollections: removedCollections,
                            removedEverything: removedEverything)
    }

    // MARK: Unregistering

    func unregisterExtension(named name: String, dropStorage: Bool) throws {
        if dropStorage {
            if let ext = core.registeredExtension(named: name) ?? registeredExtensions.first(where: { $0.name == name }) {
                try ext.dropStorage(in: self)
            } else {
                // Not registered in this process (a tool): its tables are found by name and emptied (not deleted, so
                // that handles other transactions opened stay valid), and its state record goes.
                try emptyTables(ofUnregistered: name)
            }
            // What the extension attached to rows goes with its storage.
            try retireAttachmentSlot(of: name)
            try stripRetiredAttachments()
            try setSkippedRows(nil, ofExtension: name)
        }
        _ = try guarded { try tables.extensionsTable.remove(name, in: writeStorage) }
        writers.removeAll { $0.name == name }
        registeredExtensions.removeAll { $0.name == name }
        unregisteredExtensions.append(name)
        laggingExtensions.remove(name)
        storeState.extensionSnapshots[name] = nil
        didWrite = true
    }

    /// Empties every table `ext.<name>.*` of extension `name` (not those of a recorded extension whose name starts with
    /// `<name>.`) and removes its state record.
    private func emptyTables(ofUnregistered name: String) throws {
        let storage = try writeStorage
        let prefix = ExtensionTableName.prefix + name + "."
        let main = try storage.openDatabase(named: nil)
        // Names may hold dots: the tables of a recorded extension whose name starts with `<name>.` (`tasks.done` for
        // `tasks`) share the prefix, and are not this one's to empty.
        var longerPrefixes: [String] = []
        try tables.extensionsTable.forEach(in: storage, path: core.path) { other, _ in
            if other.hasPrefix(name + ".") { longerPrefixes.append(ExtensionTableName.prefix + other + ".") }
            return true
        }
        var tableNames: [String] = []
        try storage.forEach(in: main, prefix: Array(prefix.utf8)) { key, _ in
            let tableName = String(decoding: key, as: UTF8.self)
            if !longerPrefixes.contains(where: { tableName.hasPrefix($0) }) { tableNames.append(tableName) }
            return true
        }
        try guarded {
            for tableName in tableNames { try storage.empty(try storage.openDatabase(named: tableName)) }
        }
        try setExtensionState(nil, of: name)
    }
}
