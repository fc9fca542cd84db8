// Placing rows again in one extension without changing them: the path an extension takes when its own state (a
// search query, a list's order) changes which rows it holds or where, rather than the rows.

extension ReadWriteTransaction {
    /// Hands each existing row of `ids` to the writer of the extension named `name`, and then to the writers of the
    /// extensions that depend on it, as a change that only asks them to place the row again
    /// (``RowChange/isPlacementOnly``, kind ``RowChangeKind/touch``); no other extension hears of it. Returns how
    /// many rows exist.
    ///
    /// The row's object and metadata are not written and the commit does not report the row as changed: other
    /// extensions (views, indexes), caches, observers of other views and the change feed see nothing. The row's record
    /// is rewritten only when a writer that was told changes its attachment (a row entering or leaving a view).
    /// Extensions use it when their own state changed what they hold — a search-results view whose query changed, a
    /// manual list whose membership changed — so that only their own changesets report the rows.
    ///
    /// - Parameters:
    ///   - ids: the rows; those that do not exist are skipped.
    ///   - name: the extension, registered in this process.
    ///   - asUpdated: set ``RowChange/objectChanged`` on the change, so that a view reports the rows it keeps as
    ///     updated (a search result whose highlights changed); otherwise a row that stays in place is not reported.
    /// - Throws: ``CanopyError/Code/extensionNotRegistered`` when no extension named `name` is registered in this
    ///   process; what a writer throws (the transaction then rolls back).
    @discardableResult
    public func placeAgain(_ ids: some Sequence<RowID>, inExtension name: String, asUpdated: Bool = false) throws -> Int {
        guard writers.contains(where: { $0.name == name }) else {
            throw CanopyError(.extensionNotRegistered, "no extension named '\(name)' is registered in this process, so it cannot place rows again; register it first",
                              path: core.path, extensionName: name)
        }
        let told = extensionAndDependents(of: name)
        var placed = 0
        for id in ids {
            guard let record = try collectionRecord(id.collection) else { continue }
            let found: Bool = try withRowKey(record, id.key, collection: id.collection) { rowKey in
                guard let previous = try previousRecord(rowKey, id: id, withObject: true) else { return false }
                let change = RowChange(
                    id: id, storedKey: StoredRowKey(collectionID: record.id, key: id.key), kind: .touch, codecName: record.codec,
                    objectChanged: asUpdated, metadataChanged: false, isPlacementOnly: true, transaction: self,
                    previousAttachments: previous.attachments, objectBytes: previous.object)
                for (writerName, writer) in writers where told.contains(writerName) {
                    let edit = try writer.handle(change)
                    if case .keep = edit { continue }
                    change.record(edit, at: try writableAttachmentSlot(for: writerName).number)
                }
                if let attachments = try change.attachmentsAfter(live: liveAttachmentSlots) {
                    try (previous.object ?? []).withUnsafeBytes { try putRecord(rowKey, hasMetadata: previous.hasMetadata, attachments: attachments, object: $0) }
                }
                return true
            }
            if found { placed += 1 }
        }
        didWrite = true
        return placed
    }

    /// `name` and the extensions registered in this process that depend on it, directly or through others.
    private func extensionAndDependents(of name: String) -> Set<String> {
        let all = core.extensions + registeredExtensions
        var told: Set<String> = [name]
        var grew = true
        while grew {
            grew = false
            for ext in all where !told.contains(ext.name) && ext.dependencies.contains(where: told.contains) {
                told.insert(ext.name)
                grew = true
            }
        }
        return told
    }
}
