/// Turns a view into the sections and rows of one list UI.
///
/// A view has groups; a UI has sections. Mappings say which groups become sections and in what order — a fixed list
/// of group names, or every group of the view that passes a filter, sorted by a comparator — and, per group, how the
/// section shows it (see ``GroupOptions``): hidden while empty (a *dynamic* section, the default) or always shown (a
/// *static* section); the whole group, a fixed window of it (first or last N rows, or N rows at an offset from either
/// end) or a flexible window that follows its rows (``FlexibleWindow``); in the view's order or reversed; with cells
/// drawn from their neighbours (``GroupOptions/drawingDependencies``). Below a threshold of rows shown, all groups can
/// show as one section (``setConsolidation(threshold:sectionName:)``).
///
/// Mappings are a value captured at one snapshot of the view: ``update(with:)`` reads the group counts from a
/// ``ViewReader`` and remembers its ``snapshot``. Every query answers for that snapshot, and every index-path query is
/// total: out of range gives `nil` (or 0), never a trap.
///
/// ```swift
/// var mappings = ViewMappings(groups: ["today", "tomorrow", "later"], view: "agenda")
/// mappings.setSectionKind(.static, forGroup: "today")      // shown even when empty
/// mappings.setRange(.first(20), forGroup: "later")          // only the next 20
/// try connection.read { txn in try mappings.update(with: txn.view("agenda")) }
/// let rows = mappings.numberOfItems(inSection: 0)
/// ```
///
/// ``ViewChangeset/compute(notifications:from:reader:)`` turns the commits between two snapshots into section and row
/// changes expressed with the mappings before and after; ``ViewObserver`` does that for you as commits happen.
public struct ViewMappings: Sendable {
    /// Where the mappings take their groups from.
    enum GroupSource: Sendable {
        /// These groups, in this order.
        case fixed([String])
        /// The view's groups that pass `filter`, ordered by `areInIncreasingOrder`.
        case filtered(filter: @Sendable (String) -> Bool, areInIncreasingOrder: @Sendable (String, String) -> Bool)
    }

    /// The name of the view the mappings show.
    public let view: String
    let source: GroupSource
    /// The options of every group that has none of its own (see ``setOptions(_:forGroup:)``).
    ///
    /// Changing them re-lays out the sections from the counts of the last ``update(with:)``.
    public var defaultOptions: GroupOptions {
        didSet {
            // Windows of groups that follow the default restart from the new definition.
            if oldValue.range != defaultOptions.range {
                for group in flexibleStates.keys where optionsByGroup[group] == nil { flexibleStates[group] = nil }
            }
            refreshLayout()
        }
    }
    var optionsByGroup: [String: GroupOptions] = [:]

    /// The snapshot of the last ``update(with:)``, or `nil` before the first one.
    public private(set) var snapshot: UInt64?
    /// The uncommitted changes of the write transaction whose reader last updated the mappings (none for a read
    /// transaction's reader): a reader whose transaction has changed the view since reads another state than the
    /// mappings' counts describe, at the same snapshot.
    var uncommitted = ViewWriter.ChangeStamp.none
    /// The groups the mappings take sections from, in section order, including empty ones (which show only as static
    /// sections).
    public private(set) var allGroups: [String] = []
    /// The number of rows of each of ``allGroups`` in the view, at ``snapshot``.
    var counts: [String: Int] = [:]
    /// The groups shown as sections, in section order.
    ///
    /// While the mappings are consolidated (see ``setConsolidation(threshold:sectionName:)``), these groups all show in
    /// one section.
    public private(set) var visibleGroups: [String] = []
    var sectionsByGroup: [String: Int] = [:]
    /// The place of each flexible window, per group whose range is ``ItemRange/flexible(_:)``.
    var flexibleStates: [String: FlexibleWindowState] = [:]
    /// Below how many shown rows the groups consolidate into one section (0: never). Set to 0 when the section's name
    /// turns out to be a group's (see ``setConsolidation(threshold:sectionName:)``).
    public internal(set) var consolidationThreshold: Int = 0
    /// The name of the one section the groups show as while consolidated (see
    /// ``setConsolidation(threshold:sectionName:)``).
    public internal(set) var consolidatedSectionName: String = ""
    /// Whether every visible group shows in one section now, because fewer rows than ``consolidationThreshold`` are
    /// shown across them.
    public private(set) var isConsolidated: Bool = false
    /// Per visible group, the number of rows shown before its first row in its section (non-zero only while
    /// consolidated).
    var rowOffsetsByGroup: [String: Int] = [:]

    /// Mappings over a fixed list of groups, as sections in that order (a name listed twice counts once).
    ///
    /// - Parameters:
    ///   - groups: the group names, in section order. Groups the view doesn't have (yet) are empty.
    ///   - view: the name of the view (or filtered view).
    public init(groups: [String], view: String) {
        var seen = Set<String>()
        let unique = groups.filter { seen.insert($0).inserted }
        self.view = view
        self.source = .fixed(unique)
        self.defaultOptions = GroupOptions()
        self.allGroups = unique
    }

    /// Mappings over every group of the view whose name passes `filter`, as sections ordered by
    /// `areInIncreasingOrder`; re-evaluated by every ``update(with:)`` as groups appear and disappear.
    ///
    /// Only groups that hold rows exist in a view, so a section of filtered mappings disappears when its group
    /// empties, static or not.
    ///
    /// - Parameters:
    ///   - view: the name of the view (or filtered view).
    ///   - filter: whether a group becomes a section.
    ///   - areInIncreasingOrder: the order of the sections; by default the groups' UTF-8 bytes. It must be a strict
    ///     weak ordering that depends only on the names.
    public init(
        view: String,
        groupFilter filter: @escaping @Sendable (String) -> Bool,
        sortedBy areInIncreasingOrder: @escaping @Sendable (String, String) -> Bool = { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    ) {
        self.view = view
        self.source = .filtered(filter: filter, areInIncreasingOrder: areInIncreasingOrder)
        self.defaultOptions = GroupOptions()
    }

    /// Reads the groups and their counts from `reader` and remembers its snapshot.
    ///
    /// - Throws: ``/CanopyCore/CanopyError/Code/invalidArgument`` when `reader` reads another view than ``view``; what the reader
    ///   throws.
    public mutating func update(with reader: ViewReader) throws {
        guard reader.name == view else {
            throw CanopyError(.invalidArgument, "these mappings are for view '\(view)', not '\(reader.name)'", extensionName: reader.name)
        }
        let groups: [String]
        switch source {
        case .fixed(let fixed):
            groups = fixed
        case .filtered(let filter, let areInIncreasingOrder):
            groups = try reader.groups().filter(filter).sorted(by: areInIncreasingOrder)
        }
        var counts: [String: Int] = [:]
        counts.reserveCapacity(groups.count)
        for group in groups { counts[group] = try reader.count(inGroup: group) }
        self.allGroups = groups
        self.counts = counts
        self.snapshot = reader.snapshot
        self.uncommitted = reader.readPoint.uncommitted
        refreshLayout()
    }

    /// Moves the mappings to `reader`'s snapshot when the commits since theirs changed the counts of `changedGroups`
    /// only: the caller knows every group a row came to or left in the span (the view's consolidated changes: a
    /// group whose count changed holds the original or final entry of a changed row). Those groups' counts are read
    /// again; the list of groups is read again (``update(with:)``) only when one of them appeared or emptied in
    /// filtered mappings, whose groups are the view's non-empty ones. Same groups and counts as ``update(with:)``.
    mutating func update(with reader: ViewReader, changedGroups: [String]) throws {
        guard reader.name == view else { return try update(with: reader) }
        switch source {
        case .fixed:
            // Every listed group has a count (0 when empty); other groups are not shown.
            for group in changedGroups where counts[group] != nil { counts[group] = try reader.count(inGroup: group) }
        case .filtered(let filter, _):
            for group in changedGroups {
                let count = try reader.count(inGroup: group)
                if counts[group] != nil {
                    guard count > 0 else { return try update(with: reader) }  // the group emptied: it leaves
                    counts[group] = count
                } else if count > 0, filter(group) {
                    return try update(with: reader)  // a new group: the sections' order is decided again
                }
            }
        }
        snapshot = reader.snapshot
        uncommitted = reader.readPoint.uncommitted
        refreshLayout()
    }

    /// Moves the mappings to `reader`'s snapshot when no commit since theirs changed the view (the caller knows it from
    /// the commits' changes): the groups and counts read there would be the ones the mappings hold.
    mutating func moveUnchanged(to reader: ViewReader) {
        snapshot = reader.snapshot
        uncommitted = reader.readPoint.uncommitted
    }

    /// Whether a group's cells are drawn from neighbours (``GroupOptions/drawingDependencies``), for any group.
    var hasDrawingDependencies: Bool {
        !defaultOptions.drawingDependencies.isEmpty || optionsByGroup.values.contains { !$0.drawingDependencies.isEmpty }
    }

    /// Recomputes the visible sections from the counts and options: brings every flexible window within its group
    /// and limits, then decides whether the groups consolidate.
    mutating func refreshLayout() {
        var states: [String: FlexibleWindowState] = [:]
        for group in allGroups {
            // An empty group has no window to follow: it restarts from the definition when rows come.
            guard case .flexible(let definition)? = options(forGroup: group).range, let count = counts[group], count > 0 else { continue }
            let state = flexibleStates[group] ?? FlexibleWindowState(offset: definition.offset, length: definition.length)
            states[group] = state.normalized(count: count, definition: definition)
        }
        flexibleStates = states
        var visible: [String] = []
        visible.reserveCapacity(allGroups.count)  // (one allocation, where a filter grows the array as it goes)
        for group in allGroups where options(forGroup: group).sectionKind == .static || (counts[group] ?? 0) > 0 {
            visible.append(group)
        }
        // A consolidated section named like one of the groups would name a real group while showing every group's
        // rows: as YapDatabase does, such a name switches consolidation off (see setConsolidation).
        if consolidationThreshold > 0, allGroups.contains(consolidatedSectionName) {
            consolidationThreshold = 0
            consolidatedSectionName = ""
        }
        if consolidationThreshold == 0 {
            // One section per visible group: when they are the sections already (an update that changed counts
            // only, the common case), the section numbers stand.
            let unchanged = !isConsolidated && visible == visibleGroups
            visibleGroups = visible
            isConsolidated = false
            if unchanged { return }
            rowOffsetsByGroup = [:]
            sectionsByGroup = Dictionary(uniqueKeysWithValues: visibleGroups.enumerated().map { ($1, $0) })
            return
        }
        visibleGroups = visible
        let shown = visibleGroups.map { windowRange(inGroup: $0).count }
        isConsolidated = consolidationThreshold > 0 && !visibleGroups.isEmpty && shown.reduce(0, +) < consolidationThreshold
        rowOffsetsByGroup = [:]
        if isConsolidated {
            sectionsByGroup = Dictionary(uniqueKeysWithValues: visibleGroups.map { ($0, 0) })
            var offset = 0
            for (group, count) in zip(visibleGroups, shown) {
                rowOffsetsByGroup[group] = offset
                offset += count
            }
        } else {
            sectionsByGroup = Dictionary(uniqueKeysWithValues: visibleGroups.enumerated().map { ($1, $0) })
        }
    }

    /// Whether the mappings take sections from `group` (it is in the fixed list, or passes the filter), whether or not
    /// it is visible now.
    public func includes(group: String) -> Bool {
        switch source {
        case .fixed: counts[group] != nil || allGroups.contains(group)
        case .filtered(let filter, _): filter(group)
        }
    }

    // MARK: Sections and counts

    /// The number of sections (visible groups, or 1 while consolidated).
    public var numberOfSections: Int { isConsolidated ? 1 : visibleGroups.count }

    /// The number of rows shown in `section`, or 0 when there is no such section.
    public func numberOfItems(inSection section: Int) -> Int {
        groups(inSection: section).reduce(0) { $0 + numberOfItems(inGroup: $1) }
    }

    /// The groups whose rows `section` shows, in order: one, or every visible group while consolidated; empty when
    /// there is no such section.
    public func groups(inSection section: Int) -> [String] {
        guard section >= 0, section < numberOfSections else { return [] }
        return isConsolidated ? visibleGroups : [visibleGroups[section]]
    }

    /// The number of rows of `group` shown (after its range), or 0 when the group is not a visible section.
    public func numberOfItems(inGroup group: String) -> Int {
        visibleRange(inGroup: group)?.count ?? 0
    }

    /// The number of rows shown in all sections.
    public var numberOfItems: Int {
        visibleGroups.reduce(0) { $0 + numberOfItems(inGroup: $1) }
    }

    /// The number of rows `group` holds in the view at ``snapshot`` (whether shown or not), or 0 for a group the
    /// mappings don't take sections from.
    public func count(inGroup group: String) -> Int {
        counts[group] ?? 0
    }

    /// The group shown as `section` — while consolidated, ``consolidatedSectionName`` for section 0 — or `nil` when
    /// there is no such section.
    public func group(forSection section: Int) -> String? {
        guard section >= 0, section < numberOfSections else { return nil }
        return isConsolidated ? consolidatedSectionName : visibleGroups[section]
    }

    /// The section showing `group` (while consolidated, 0 for every visible group and for
    /// ``consolidatedSectionName``), or `nil` when the group is not visible.
    public func section(forGroup group: String) -> Int? {
        if let section = sectionsByGroup[group] { return section }
        return isConsolidated && group == consolidatedSectionName ? 0 : nil
    }

    /// Which section shows `group`, as the changeset computation tells sections apart: a group's own section, or the
    /// consolidated one (whatever its name).
    enum SectionKey: Hashable {
        case group(String)
        case consolidated
    }

    /// The key of the section showing `group`, or `nil` when the group is not visible.
    func sectionKey(forGroup group: String) -> SectionKey? {
        guard sectionsByGroup[group] != nil else { return nil }
        return isConsolidated ? .consolidated : .group(group)
    }

    /// The keys of the sections, in order.
    var sectionKeys: [SectionKey] {
        isConsolidated ? (visibleGroups.isEmpty ? [] : [.consolidated]) : visibleGroups.map { .group($0) }
    }
}

extension ViewMappings: CustomStringConvertible {
    /// The view, the snapshot and the visible sections with their counts, such as `agenda@12 [today: 3, later: 20/41]`.
    public var description: String {
        var sections = visibleGroups.map { group in
            let shown = numberOfItems(inGroup: group)
            let total = count(inGroup: group)
            return shown == total ? "\(group): \(shown)" : "\(group): \(shown)/\(total)"
        }
        if isConsolidated { sections = ["\(consolidatedSectionName): (" + sections.joined(separator: ", ") + ")"] }
        return "\(view)@\(snapshot.map(String.init) ?? "-") [\(sections.joined(separator: ", "))]"
    }
}
