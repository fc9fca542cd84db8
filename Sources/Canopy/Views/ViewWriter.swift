import Synchronization

/// Keeps one view up to date during one write transaction, and records what happened to each row: the view's
/// ``/CanopyCore/StoreExtension/Writer``. Its state is read through the view (``CanopyCore/ReadTransaction/view(_:)``
/// inside a write transaction includes it); the store alone calls its methods.
public final class ViewWriter: ExtensionTransaction {
    let view: View
    let transaction: ReadWriteTransaction
    let tables: ViewTables
    private var index: ViewIndex?
    // The state a bulk write touches per row (`dirty`, the row log, the pending entries and their groups, the slot) is
    // unchecked for exclusivity, as ReadWriteTransaction's: a writer belongs to one write transaction, on its thread,
    // and no method passes these properties inout to code that reaches them again. The checks cost a bulk insert with
    // two views about 600 instructions a row.

    /// Whether this transaction changed the view's pages or directory (its state is written at commit).
    @exclusivity(unchecked) var dirty = false
    /// The changes this writer made to the view's entries so far (``noteChange()``).
    @exclusivity(unchecked) private var changeCount: UInt64 = 0
    /// A number for this writer, unique in the process: two write transactions that made as many changes from one
    /// snapshot still have different stamps.
    private let serial = ViewWriter.serials.add(1, ordering: .relaxed).newValue
    private static let serials = Atomic<UInt64>(0)

    /// The uncommitted changes a write transaction made to a view: which writer, and how many (``none`` for none:
    /// the state of the snapshot the transaction began at).
    struct ChangeStamp: Hashable, Sendable {
        var writer: UInt64
        var changes: UInt64
        static let none = ChangeStamp(writer: 0, changes: 0)
    }

    /// Which state of the view the transaction has made so far: ``ChangeStamp/none`` while it changed nothing, else
    /// one that no other state of the view in this process has.
    var changeStamp: ChangeStamp {
        changeCount == 0 ? .none : ChangeStamp(writer: serial, changes: changeCount)
    }

    /// Records that the view's entries changed (an entry inserted, removed, or waiting to be inserted).
    @inline(__always)
    func noteChange() {
        dirty = true
        changeCount &+= 1
    }
    /// Whether ``prepareCommit(_:)`` wrote the view's state: only then is ``index`` the directory of the version the
    /// commit leaves. A transaction that wrote no row (a change that a later extension refused, caught by the caller)
    /// commits without the extensions' commit step, so a changed directory here is not the file's.
    private var wroteState = false

    /// Per row: where it was at the start of the transaction, where it is now, and what happened.
    struct RowLog {
        var original: ViewEntry?
        var current: ViewEntry?
        var reinserted = false
        var objectChanged = false
        var metadataChanged = false
    }
    /// Keyed by row, or by row and group in a view whose rows can be in many groups (``manyGroups``).
    @exclusivity(unchecked) private var log: [ViewChangeKey: RowLog] = [:]
    /// Whether a row can be in several groups of the view: its attachment then holds an entry per group, and the log
    /// keeps a record per row and group.
    let manyGroups: Bool
    /// Rows this transaction left out because they do not decode (`error` set), or that were skipped and were
    /// rewritten or removed (`error` nil): applied to the view's ``/CanopyCore/SkippedRows`` record at commit.
    var skippedChanges: [(row: RowID, error: String?)] = []
    /// Set when the transaction changed more rows of the view than ``rowLogLimit``: the log is dropped and the commit
    /// reports the view as reset (observers reload), which keeps a bulk write from paying for a per-row log and from
    /// writing a commit-log entry as large as the write.
    @exclusivity(unchecked) private var logOverflowed = false
    /// The most rows a commit reports one by one; past it, the commit reports a reset. No UI animates more.
    static let rowLogLimit = 4_096

    /// Pages this transaction changed, decoded, written to LMDB once at ``prepareCommit(snapshot:)`` (or when there
    /// are more than ``pageCacheLimit``): a bulk write touches a page many times but encodes and puts it once.
    /// Readers of the view in this transaction see them through ``page(_:)``.
    private var dirtyPages: [UInt64: ViewPage] = [:]
    /// Pages this transaction emptied, deleted at the next flush.
    private var deletedPages: Set<UInt64> = []
    static let pageCacheLimit = 4_096
    /// Pages this transaction read and has not changed, decoded once: a move in a manual list reads the page at its
    /// source, its destination's neighbours, then changes both (each a B-tree descent and a decode, which in a list
    /// of a million rows also misses the CPU's caches). Only this writer changes the view's pages in its transaction,
    /// and a page it changes leaves this cache for ``dirtyPages``, so a cached page is the page as stored.
    private var readPages: [UInt64: ViewPage] = [:]
    static let readPageCacheLimit = 64
    /// Entries of rows this transaction placed that had none, not yet in the pages: inserted together, sorted, at
    /// the first read of the view's pages or directory, or at commit (``insertPendingEntries()``).
    @exclusivity(unchecked) var pendingInserts = ViewEntryBatch()
    /// The groups pending entries went to lately, with their ids (a group's id never changes, so a remembered id stays
    /// right for the writer's life).
    @exclusivity(unchecked) var recentGroups = RecentGroups()
    /// Why inserting the pending entries failed part way, if it did: the pages then lack some of the entries the
    /// rows' records name, so every later read of the pages and the commit throw it (the transaction cannot commit).
    var pendingInsertFailure: (any Error)?
    /// The pages the commit that made the view's version at the start of this transaction wrote
    /// (``ViewIndex/committedPages``): as stored until this writer flushes pages of its own.
    private var startPages: [UInt64: ViewPage] = [:]

    init(view: View, transaction: ReadWriteTransaction, tables: ViewTables) {
        self.view = view
        self.transaction = transaction
        self.tables = tables
        self.manyGroups = view.rowsInManyGroups(in: transaction)
    }

    @exclusivity(unchecked) private var slotStorage: AttachmentSlot?
    /// The view's attachment slot (each row's entry lives in the row's record), or `nil` while it has none: the store
    /// assigns it when the view first asks for an attachment.
    var slot: AttachmentSlot? {
        get throws {
            if let slotStorage { return slotStorage }
            slotStorage = try transaction.attachmentSlot(for: view.name)
            return slotStorage
        }
    }

    /// The view's index as this transaction has made it so far (its pending entries inserted first).
    func currentIndex() throws -> ViewIndex {
        if !pendingInserts.isEmpty { try insertPendingEntries() }
        return try loadedIndex()
    }

    /// The view's index, without inserting the pending entries: its group names and ids are current (a pending
    /// entry's group has its id), its pages and counts may lack those entries.
    func loadedIndex() throws -> ViewIndex {
        if let index { return index }
        var loaded = try view.index(in: transaction)
        // The committed pages describe the version this transaction starts from, not the one it will make.
        startPages = loaded.committedPages
        loaded.committedPages = [:]
        index = loaded
        return loaded
    }

    /// The name of group `id` of the view as this transaction has made it so far (without inserting the pending
    /// entries), or `nil`.
    func groupName(forID id: UInt32) throws -> String? {
        try loadedIndex().groupNames[id]
    }

    private func withIndex<R>(_ body: (inout ViewIndex) throws -> R) throws -> R {
        if !pendingInserts.isEmpty { try insertPendingEntries() }
        return try withLoadedIndex(body)
    }

    /// ``withIndex(_:)`` without inserting the pending entries first (for group ids, new page ids, and the pending
    /// entries' own insertion).
    func withLoadedIndex<R>(_ body: (inout ViewIndex) throws -> R) throws -> R {
        var current = try loadedIndex()
        index = nil  // keep the index uniquely referenced while mutating
        defer { index = current }
        return try body(&current)
    }

    func entry(_ stored: ViewTables.RowEntry?, rowKey: StoredRowKey, _ index: ViewIndex) -> ViewEntry? {
        guard let stored, let group = index.groupNames[stored.groupID] else { return nil }
        return ViewEntry(group: group, orderBytes: stored.order(rowKey: rowKey))
    }

    /// The log's key for `id` in the group of `entry`: the row alone unless rows can be in many groups.
    func changeKey(_ id: RowID, _ entry: ViewEntry?) -> ViewChangeKey {
        ViewChangeKey(id: id, group: manyGroups ? entry?.group : nil)
    }

    func note(_ id: RowID, original: ViewEntry?, current: ViewEntry?, object: Bool, metadata: Bool) {
        let key = changeKey(id, original ?? current)
        if logOverflowed { return }
        if log.count >= Self.rowLogLimit, log[key] == nil {
            logOverflowed = true
            log = [:]
            return
        }
        var record = log[key] ?? RowLog(original: original, current: original)
        if record.current == nil, current != nil, record.original != nil { record.reinserted = true }
        record.current = current
        record.objectChanged = record.objectChanged || object
        record.metadataChanged = record.metadataChanged || metadata
        log[key] = record
    }

    // MARK: ExtensionTransaction

    /// Places, moves or removes the row's entry; returns the row's new entry as its attachment.
    public func handle(_ change: RowChange) throws -> AttachmentEdit {
        guard view.viewOptions.allows(change.collection) else { return .keep }
        if view.sourceShape.kind == .manual, case .manual(let group) = view.source { return try handleListed(change, group: group) }
        switch change.kind {
        case .insert: return try apply(change, rerun: true)
        case .update: return try apply(change, rerun: view.placeDepends(onObject: change.objectChanged, metadata: change.metadataChanged))
        case .touch: return try apply(change, rerun: change.isPlacementOnly || view.viewOptions.rerunOnTouch)
        case .remove:
            let attachment = try slot.flatMap { try change.previousAttachment(at: $0) }
            if attachment == ViewTables.skippedMarker { skippedChanges.append((change.id, nil)) }
            for entry in try tables.rowEntries(attachment) { try remove(change.id, rowKey: change.storedKey, stored: entry) }
            return .keep
        }
    }

    /// The page `id` as this transaction has made it: from the dirty pages, or from LMDB.
    /// - Throws: ``/CanopyCore/CanopyError/Code/corruptStore`` when the page is missing (or was deleted) or malformed.
    func page(_ id: UInt64) throws -> ViewPage {
        if !pendingInserts.isEmpty { try insertPendingEntries() }
        if let page = dirtyPages[id] { return page }
        if let page = readPages[id] { return page }
        let page = try storedPage(id)
        if readPages.count >= Self.readPageCacheLimit { readPages.removeAll(keepingCapacity: true) }
        readPages[id] = page
        return page
    }

    /// The page `id` as stored (not changed by this transaction), read from LMDB.
    private func storedPage(_ id: UInt64) throws -> ViewPage {
        if deletedPages.contains(id) { throw corrupt(view.name, "page \(id) was deleted in this transaction") }
        if let page = startPages[id] { return page }
        return try tables.readPage(id, transaction)
    }

    /// Runs `body` on page `id` in place among the dirty pages (read from LMDB on first use): no copy of the page per
    /// change.
    private func modifyPage<R>(_ id: UInt64, _ body: (inout ViewPage) throws -> R) throws -> R {
        // One hash lookup when the page is already dirty (a bulk write's common case), and the page mutated in place.
        if let slot = dirtyPages.index(forKey: id) { return try body(&dirtyPages.values[slot]) }
        if dirtyPages.count >= Self.pageCacheLimit { try flushPages() }
        // Taken out of the read cache, so that the page's bytes are not shared (no copy when it changes).
        let page = try readPages.removeValue(forKey: id) ?? storedPage(id)
        if !deletedPages.isEmpty { deletedPages.remove(id) }
        dirtyPages[id] = page
        return try body(&dirtyPages[id, default: ViewPage(groupID: 0)])
    }

    /// How many pages the table will gain (or lose, if negative) when the dirty pages are flushed.
    func unflushedPageDelta() throws -> Int {
        if !pendingInserts.isEmpty { try insertPendingEntries() }
        var delta = 0
        for id in dirtyPages.keys where try !tables.hasPage(id, transaction) { delta += 1 }
        for id in deletedPages where try tables.hasPage(id, transaction) { delta -= 1 }
        return delta
    }

    func store(_ page: ViewPage, id: UInt64) throws {
        readPages[id] = nil
        dirtyPages[id] = page
        deletedPages.remove(id)
        try flushIfFull()
    }

    private func flushIfFull() throws {
        if dirtyPages.count > Self.pageCacheLimit { try flushPages() }
    }

    func drop(pageID id: UInt64) {
        dirtyPages[id] = nil
        readPages[id] = nil
        deletedPages.insert(id)
    }

    /// Writes the dirty pages and deletes the emptied ones. `final`: the commit's flush, after which the writer
    /// changes no page (its dictionaries are not kept for more, and the committed index may share the dirty pages').
    private func flushPages(final: Bool = false) throws {
        startPages = [:]  // LMDB now holds this transaction's pages
        for (id, page) in dirtyPages { try tables.writePage(page, id: id, transaction) }
        for id in deletedPages { try tables.deletePage(id, transaction) }
        dirtyPages.removeAll(keepingCapacity: !final)
        deletedPages.removeAll(keepingCapacity: !final)
    }

    /// Writes the changed pages and the view's state; returns the rows' before and after entries (the view's changes).
    public func prepareCommit(_ commit: ExtensionCommit) throws -> ExtensionPayload? {
        let reset = commit.isReset || logOverflowed
        if !skippedChanges.isEmpty {
            var record = try transaction.skippedRows(ofExtension: view.name) ?? SkippedRows()
            for change in skippedChanges {
                if let error = change.error { record.add(change.row, error: error) } else { record.remove(change.row) }
            }
            try transaction.setSkippedRows(record, ofExtension: view.name)
            skippedChanges = []
        }
        if !pendingInserts.isEmpty { try insertPendingEntries() }
        guard dirty || !log.isEmpty || reset else { return nil }
        let written = dirty && dirtyPages.count <= ViewIndex.committedPageLimit ? dirtyPages : [:]
        try flushPages(final: true)
        if dirty {
            try withIndex { index in
                // Unique per committed state without a system random call per commit: the commit's snapshot, with the
                // top bit set (population versions are random with it clear).
                index.version = commit.snapshot | (1 << 63)
                index.committedPages = written
                try tables.writeState(index, in: transaction)
            }
            wroteState = true
        }
        var rows: [ViewRowChange] = []
        rows.reserveCapacity(log.count)
        for (key, record) in log where !reset {
            if record.original == nil && record.current == nil { continue }
            if record.original == record.current && !record.reinserted && !record.objectChanged && !record.metadataChanged { continue }
            rows.append(ViewRowChange(
                id: key.id, original: record.original, final: record.current, objectChanged: record.objectChanged,
                metadataChanged: record.metadataChanged, reinserted: record.reinserted && record.original != nil && record.current != nil))
        }
        return ExtensionPayload(ViewCommitChanges(rows: rows, isReset: reset, recordsPerGroup: manyGroups), coding: ViewCommitChanges.PayloadCoding.self)
    }

    /// Keeps the committed index for readers at its version (only once committed: a failed commit's index must not
    /// be found under the version the next commit at that snapshot will have).
    public func didCommit(snapshot: UInt64) {
        if wroteState, let index { view.remember(index) }
    }

    /// Nothing to undo: the index copy is dropped with the writer.
    public func didRollback() {}

    // MARK: Maintaining

    private func apply(_ change: RowChange, rerun: Bool) throws -> AttachmentEdit {
        let attachment = try slot.flatMap { try change.attachment(at: $0) }
        if manyGroups {
            return try applyMany(change, rerun: rerun, stored: try tables.rowEntries(attachment), attached: true,
                                 wasSkipped: attachment == ViewTables.skippedMarker)
        }
        return try apply(change, rerun: rerun, stored: try tables.rowEntry(attachment), attached: true,
                         wasSkipped: attachment == ViewTables.skippedMarker)
    }

    /// Places `change`'s row, whose entry in the view is `stored` (read from its attachment when `attached`, otherwise
    /// found in the pages by a catch-up: the record then lacks the attachment, which is set even when the place holds),
    /// and returns the edit of its attachment. `wasSkipped`: the row's attachment marks it as skipped (its closures
    /// could not decode it).
    private func apply(
        _ change: RowChange, rerun: Bool, stored: ViewTables.RowEntry?, attached: Bool, wasSkipped: Bool
    ) throws -> AttachmentEdit {
        let rowKey = change.storedKey
        // The directory only names a stored entry's group: a row without one (every row of a bulk insert) takes no
        // copy of it (a copy retains and releases its dictionaries and arrays: about 500 instructions a row and view).
        let existing = try stored.flatMap { entry($0, rowKey: rowKey, try loadedIndex()) }
        guard rerun || wasSkipped else {
            if existing != nil {
                note(change.id, original: existing, current: existing, object: change.objectChanged, metadata: change.metadataChanged)
            }
            return .keep
        }
        let row = ExtensionRow(change)
        let found: (group: String, sortKeyLength: Int, order: [UInt8])?
        do {
            found = try view.place(of: row, rowKey: rowKey, in: transaction)
        } catch {
            guard let undecodable = view.skippable(error) else { throw error }
            // A row the closures cannot decode (touched, or written by a tool as bytes) leaves the view and is
            // recorded, rather than failing the write.
            if existing != nil { try remove(change.id, rowKey: rowKey, stored: stored) }
            if !wasSkipped { skippedChanges.append((change.id, undecodable.message)) }
            return .set(ViewTables.skippedMarker)
        }
        if wasSkipped {
            // Rewritten so that it decodes: it leaves the record and is placed like any row.
            skippedChanges.append((change.id, nil))
        }
        guard let place = found else {
            if existing != nil {
                try remove(change.id, rowKey: rowKey, stored: stored)
                return .remove
            }
            return wasSkipped ? .remove : .keep
        }
        let newEntry = ViewEntry(group: place.group, orderBytes: place.order)
        if let existing, existing == newEntry {
            note(change.id, original: existing, current: existing, object: change.objectChanged, metadata: change.metadataChanged)
            if !attached, let stored { return .set(stored.encoded) }
            return .keep
        }
        let groupID: UInt32
        if let stored, let existing {
            try removeEntry(existing, groupID: stored.groupID)
            groupID = try insertEntry(newEntry, sortKeyLength: place.sortKeyLength)
        } else {
            // A row entering the view: its entry joins the pages later, with the transaction's other new entries.
            groupID = try deferInsert(newEntry, sortKeyLength: place.sortKeyLength)
        }
        note(change.id, original: existing, current: newEntry, object: change.objectChanged, metadata: change.metadataChanged)
        return .set(ViewTables.RowEntry.encoded(groupID: groupID, sortKey: place.order[..<place.sortKeyLength]))
    }

    // MARK: Catching up

    /// Brings the view up to date with rows written by processes that did not register it (see
    /// ``/CanopyCore/ExtensionTransaction/catchUp(_:)``): each missed row is placed again from its current values. The row's old
    /// entry is its attachment when the record carries one (the view wrote it, and other processes keep it); a row
    /// without one was new, not in the view, or removed (and maybe written again) in the gap, so its entry, if any,
    /// is looked up in the pages — one pass over them, only when there are such rows. Whole collections removed
    /// in the gap: a rebuild (returns `false`).
    public func catchUp(_ missed: MissedWrites) throws -> [StoredRowKey: AttachmentEdit]? {
        if case .manual(let group) = view.source { return try catchUpManualList(missed, group: group) }
        if missed.removedEverything || missed.removedCollections.contains(where: { view.viewOptions.allows($0) }) { return nil }
        let slot = try slot
        let rows = missed.rows.filter { view.viewOptions.allows($0.id.collection) }
        // A row removed in the gap no longer says whether the view had skipped it: with skipped rows recorded, a
        // rebuild counts them again exactly.
        if rows.contains(where: { $0.current == nil }), (try transaction.skippedRows(ofExtension: view.name)?.count ?? 0) > 0 { return nil }
        var attachedEntries: [[ViewTables.RowEntry]] = []
        var skipped: [Bool] = []
        var unattached: Set<[UInt8]> = []
        for row in rows {
            let attachment = try slot.flatMap { slot in try row.current.flatMap { try $0.previousAttachment(at: slot) } }
            let entries = try tables.rowEntries(attachment)
            attachedEntries.append(entries)
            skipped.append(attachment == ViewTables.skippedMarker)
            if entries.isEmpty { unattached.insert(row.storedKey.bytes) }
        }
        let fromPages = unattached.isEmpty ? [:] : try entriesInPages(of: unattached)
        var edits: [StoredRowKey: AttachmentEdit] = [:]
        for (number, (row, attached)) in zip(rows, attachedEntries).enumerated() {
            let stored = attached.isEmpty ? fromPages[row.storedKey.bytes] ?? [] : attached
            if let current = row.current {
                if manyGroups {
                    edits[row.storedKey] = try applyMany(current, rerun: true, stored: stored, attached: !attached.isEmpty, wasSkipped: skipped[number])
                } else {
                    edits[row.storedKey] = try apply(current, rerun: true, stored: stored.first, attached: !attached.isEmpty, wasSkipped: skipped[number])
                }
            } else {
                for entry in stored { try remove(row.id, rowKey: row.storedKey, stored: entry) }
            }
        }
        return edits
    }

    /// The entries of the view whose row keys are in `rowKeys`, found by reading every page (the pages are ordered
    /// by sort key, not row key).
    private func entriesInPages(of rowKeys: Set<[UInt8]>) throws -> [[UInt8]: [ViewTables.RowEntry]] {
        var found: [[UInt8]: [ViewTables.RowEntry]] = [:]
        var entriesFound = 0
        try tables.pages.forEachBytes(in: transaction) { key, value in
            guard key.count == 8 else { throw corrupt(view.name, "a page id is malformed") }
            let page: ViewPage
            do { page = try ViewPage(decoding: value) } catch { throw corrupt(view.name, "page \(key.loadBigEndianUInt64(at: 0)) is malformed") }
            for i in 0..<page.count {
                let rowKey = Array(page.rowKey(at: i))
                guard rowKeys.contains(rowKey) else { continue }
                let order = page.orderBytes(at: i)
                found[rowKey, default: []].append(ViewTables.RowEntry(groupID: page.groupID, sortKey: Array(order[..<(order.count - rowKey.count)])))
                entriesFound += 1
            }
            // A row in one group has one entry: the walk stops once each is found. Rows in many groups: every page.
            return manyGroups || entriesFound < rowKeys.count
        }
        return found
    }

    /// Removes the row's entry from the pages (its attachment goes with the row's record, or is cleared by the caller).
    func remove(_ id: RowID, rowKey: StoredRowKey, stored: ViewTables.RowEntry?) throws {
        guard let stored, let existing = entry(stored, rowKey: rowKey, try currentIndex()) else { return }
        try removeEntry(existing, groupID: stored.groupID)
        note(id, original: existing, current: nil, object: false, metadata: false)
    }

    func removeEntry(_ entry: ViewEntry, groupID: UInt32) throws {
        noteChange()
        try withIndex { index in
            // The group's name is hashed once: its slot in the directory serves the lookup and the update.
            guard let slot = index.groups.index(forKey: entry.group), case let group = index.groups.values[slot],
                  let location = index.locate(entry.orderBytes, in: group) else {
                throw corrupt(view.name, "group '\(entry.group)' has no page for a row it holds")
            }
            let ref = index.page(at: location, in: group)
            let (count, first): (Int, [UInt8]?) = try modifyPage(ref.id) { page in
                guard let position = page.index(of: entry.orderBytes) else {
                    throw corrupt(view.name, "page \(ref.id) lacks an entry the rows table points to")
                }
                page.remove(at: position)
                return (page.count, position == 0 && page.count > 0 ? page.orderBytes(at: 0) : nil)
            }
            if count == 0 { drop(pageID: ref.id) }
            index.updatePage(at: location, inGroupAt: slot, count: count, first: count == 0 ? nil : first)
        }
    }

    @discardableResult
    func insertEntry(_ entry: ViewEntry, sortKeyLength: Int) throws -> UInt32 {
        noteChange()
        return try withIndex { index in
            // The group's name is hashed once when it has rows: its slot in the directory gives its id, its pages and
            // the place to update.
            let slot = index.groups.index(forKey: entry.group)
            let groupID: UInt32
            if let slot {
                groupID = index.groups.values[slot].id
            } else if let known = index.groupIDs[entry.group] {
                groupID = known
            } else {
                groupID = index.groupID(for: entry.group)
                try tables.groups.put(entry.group, forKey: groupID, in: transaction)
            }
            guard let slot, case let group = index.groups.values[slot], let location = index.locate(entry.orderBytes, in: group) else {
                var page = ViewPage(groupID: groupID)
                page.insert(order: entry.orderBytes, sortKeyLength: sortKeyLength)
                let id = index.newPageID()
                try store(page, id: id)
                index.insertPage(ViewIndex.PageRef(id: id, count: 1, first: entry.orderBytes), after: nil, in: entry.group, groupID: groupID)
                return groupID
            }
            let ref = index.page(at: location, in: group)
            let (count, first, uppers): (Int, [UInt8]?, [ViewPage]) = try modifyPage(ref.id) { page in
                let position = page.insert(order: entry.orderBytes, sortKeyLength: sortKeyLength)
                let uppers = page.isOverfull ? page.splitToFit() : []
                return (page.count, position == 0 || !uppers.isEmpty ? page.orderBytes(at: 0) : nil, uppers)
            }
            index.updatePage(at: location, inGroupAt: slot, count: count, first: first)
            var after = location
            for (number, upper) in uppers.enumerated() {
                let upperID = index.newPageID()
                let upperFirst = upper.orderBytes(at: 0)
                try store(upper, id: upperID)
                index.insertPage(ViewIndex.PageRef(id: upperID, count: upper.count, first: upperFirst), after: after, in: entry.group, groupID: groupID)
                // (A split into three: the next page goes after this one, wherever a chunk split put it.)
                if number + 1 < uppers.count {
                    guard let group = index.groups[entry.group], let next = index.locate(upperFirst, in: group) else {
                        // The page just inserted cannot be missing: a directory that lost it would put the next part
                        // before this one, silently out of order.
                        throw corrupt(view.name, "the page directory lost the page it just inserted while splitting a page in three")
                    }
                    after = next
                }
            }
            return groupID
        }
    }
}

