extension ViewMappings {
    /// Whether a group's section hides while the group is empty.
    public enum SectionKind: Hashable, Sendable {
        /// The section exists only while its group holds rows (the default).
        case dynamic
        /// The section exists even when its group is empty (for mappings over a fixed list of groups; a filtered list
        /// only ever holds groups that have rows).
        case `static`
    }

    /// Which rows of a group a section shows: a fixed window at an offset from the start or the end of the group, or
    /// a flexible window that follows its rows.
    ///
    /// A fixed window (``first(_:)``, ``last(_:)``, ``fixed(length:offset:from:)``) shows `length` rows, or fewer when
    /// the group is smaller; it stays at its offset from its edge and slides as rows come and go, so rows move into and
    /// out of it (reported as inserts and deletes). A flexible window (``flexible(_:)``) instead keeps the rows it
    /// shows and grows or shrinks with them. Negative lengths and offsets count as 0.
    public enum ItemRange: Hashable, Sendable {
        /// The first `count` rows of the group (in the view's order): `.fixed(length: count, offset: 0, from: .start)`.
        case first(Int)
        /// The last `count` rows of the group (in the view's order): `.fixed(length: count, offset: 0, from: .end)`.
        case last(Int)
        /// `length` rows, starting `offset` rows from the start of the group, or ending `offset` rows before its end
        /// (in the view's order). Shows fewer rows, or none, where the group is too small.
        case fixed(length: Int, offset: Int, from: GroupEdge)
        /// A window that follows its rows; see ``FlexibleWindow``.
        case flexible(FlexibleWindow)
    }

    /// An end of a group, in the view's order.
    public enum GroupEdge: Hashable, Sendable {
        /// The first row's end (index 0).
        case start
        /// The last row's end.
        case end
    }

    /// A window of a group that follows its rows instead of sliding: the rows it shows stay shown while they stay in
    /// the group, whatever is inserted or deleted around them.
    ///
    /// It starts as `length` rows at `offset` from its ``edge`` (like ``ItemRange/fixed(length:offset:from:)``). Then,
    /// over each changeset:
    /// - rows that enter the group between its rows make it grow; its rows that leave make it shrink;
    /// - rows that enter at its edge — between its first row and the row before it, or its last row and the row after
    ///   it — join it only where ``growth`` says (``Growth/top``, ``Growth/bottom``: the top and bottom of the section as
    ///   shown, so after reversal); rows of the window that move to its edge stay in it;
    /// - it then holds at most ``maxLength`` rows, dropping rows on the side away from its ``edge``, and at least
    ///   ``minLength`` rows where the group has them, taking rows on the side away from its ``edge`` first.
    ///
    /// A group that was empty at the start of a changeset restarts from the window's definition. The window's place
    /// now is ``ViewMappings/flexibleWindow(forGroup:)``; "load more" is ``ViewMappings/setFlexibleWindow(offset:length:forGroup:)``
    /// (or new options), which the UI shows with a reload or with
    /// ``ViewChangeset/compute(from:to:reader:)``.
    ///
    /// A chat that shows the latest 50 messages and keeps every new one on screen, but no more than 200:
    /// `FlexibleWindow(length: 50, from: .end, maxLength: 200, growth: .bottom)`.
    public struct FlexibleWindow: Hashable, Sendable {
        /// Where new rows at the window's edge join it.
        public struct Growth: OptionSet, Hashable, Sendable {
            /// The raw bits.
            public var rawValue: UInt8
            /// Creates options from raw bits.
            public init(rawValue: UInt8) { self.rawValue = rawValue }
            /// Rows entering just above the window's first shown row join it.
            public static let top = Growth(rawValue: 1)
            /// Rows entering just below the window's last shown row join it.
            public static let bottom = Growth(rawValue: 2)
            /// Both.
            public static let both: Growth = [.top, .bottom]
        }

        /// The initial number of rows.
        public var length: Int
        /// The initial number of rows between ``edge`` and the window.
        public var offset: Int
        /// The end of the group the offset counts from; the window keeps its offset from it when it grows or shrinks
        /// past ``maxLength`` / ``minLength``.
        public var edge: GroupEdge
        /// The fewest rows the window shows (when the group has them). Default 0.
        public var minLength: Int
        /// The most rows the window shows. Default `Int.max`.
        public var maxLength: Int
        /// Where rows entering at the window's edges join it. Default ``Growth/both``.
        public var growth: Growth

        /// Creates a flexible window definition.
        ///
        /// - Parameters:
        ///   - length: the initial number of rows.
        ///   - offset: the initial number of rows between `edge` and the window.
        ///   - edge: the end of the group the offset counts from.
        ///   - minLength: the fewest rows shown; capped at `maxLength`.
        ///   - maxLength: the most rows shown.
        ///   - growth: where rows entering at the window's edges join it.
        public init(length: Int, offset: Int = 0, from edge: GroupEdge = .start, minLength: Int = 0, maxLength: Int = .max,
                    growth: Growth = .both) {
            self.length = length
            self.offset = offset
            self.edge = edge
            self.minLength = minLength
            self.maxLength = maxLength
            self.growth = growth
        }
    }

    /// Where a flexible window is now: `offset` rows between its ``FlexibleWindow/edge`` and its first row (counting
    /// from that edge), showing `length` rows.
    struct FlexibleWindowState: Hashable, Sendable {
        var offset: Int
        var length: Int

        /// Within a group of `count` rows and within the definition's limits.
        func normalized(count: Int, definition: FlexibleWindow) -> FlexibleWindowState {
            let count = max(0, count)
            var offset = min(max(0, offset), count)
            var length = min(max(0, length), count - offset)
            let maxLength = max(0, definition.maxLength)
            let minLength = min(max(0, definition.minLength), maxLength)
            if length > maxLength { length = maxLength }  // drop rows away from the edge
            if length < minLength {
                length += min(minLength - length, count - offset - length)  // away from the edge first
                let towardEdge = min(minLength - length, offset)
                offset -= towardEdge
                length += towardEdge
            }
            return FlexibleWindowState(offset: offset, length: length)
        }

        /// The indexes shown, in the view's order, of a group of `count` rows (the state being normalized for it).
        func range(count: Int, edge: GroupEdge) -> Range<Int> {
            switch edge {
            case .start: return offset..<(offset + length)
            case .end: return (count - offset - length)..<(count - offset)
            }
        }
    }

    /// How one group is shown.
    public struct GroupOptions: Hashable, Sendable {
        /// Whether the section hides while the group is empty. Default ``SectionKind/dynamic``.
        public var sectionKind: SectionKind
        /// The rows shown, or `nil` for all of them (the default).
        public var range: ItemRange?
        /// Whether the section shows the rows in the reverse of the view's order (after the range picked them).
        public var isReversed: Bool
        /// The neighbours a row's cell is drawn from, as offsets in the section as shown: −1 is the row just above, +1
        /// the row just below (0 is ignored). When the row at such an offset is another row than before, or the same
        /// row with a changed object or metadata, a changeset reports the row as an update (unless it already reports
        /// it as deleted, inserted or moved). Default: none.
        public var drawingDependencies: Set<Int>

        /// Creates options; the defaults show every row in the view's order, in a section hidden while empty, with no
        /// drawing dependencies.
        public init(sectionKind: SectionKind = .dynamic, range: ItemRange? = nil, isReversed: Bool = false,
                    drawingDependencies: Set<Int> = []) {
            self.sectionKind = sectionKind
            self.range = range
            self.isReversed = isReversed
            self.drawingDependencies = drawingDependencies
        }
    }

    /// The options of `group`: its own, or ``defaultOptions``.
    public func options(forGroup group: String) -> GroupOptions {
        // (Most mappings set no group's own options: then no lookup hashes the name.)
        optionsByGroup.isEmpty ? defaultOptions : optionsByGroup[group] ?? defaultOptions
    }

    /// Sets the options of `group` (`nil`: use ``defaultOptions``), and re-lays out the sections from the counts of
    /// the last ``update(with:)``.
    ///
    /// Change options between two UI updates only with a reload: a changeset compares the layout before and after
    /// with the same options.
    public mutating func setOptions(_ options: GroupOptions?, forGroup group: String) {
        if self.options(forGroup: group).range != (options ?? defaultOptions).range { flexibleStates[group] = nil }
        optionsByGroup[group] = options
        refreshLayout()
    }

    /// Makes the section of `group` dynamic (hidden while empty) or static (always shown).
    public mutating func setSectionKind(_ kind: SectionKind, forGroup group: String) {
        var options = options(forGroup: group)
        options.sectionKind = kind
        setOptions(options, forGroup: group)
    }

    /// Shows only the first or last rows of `group` (`nil`: all of them).
    public mutating func setRange(_ range: ItemRange?, forGroup group: String) {
        var options = options(forGroup: group)
        options.range = range
        setOptions(options, forGroup: group)
    }

    /// Shows the rows of `group` in the reverse of the view's order, or not.
    public mutating func setReversed(_ reversed: Bool, forGroup group: String) {
        var options = options(forGroup: group)
        options.isReversed = reversed
        setOptions(options, forGroup: group)
    }

    /// Makes a row's cell depend on its neighbours at `offsets` in the section as shown (see
    /// ``GroupOptions/drawingDependencies``).
    public mutating func setDrawingDependencies(_ offsets: Set<Int>, forGroup group: String) {
        var options = options(forGroup: group)
        options.drawingDependencies = offsets
        setOptions(options, forGroup: group)
    }

    /// Shows every visible group in one section named `sectionName` while fewer than `threshold` rows are shown across
    /// them (after their ranges), and one section per group from `threshold` rows on. A threshold of 0 or less turns
    /// consolidation off.
    ///
    /// Inside the consolidated section, the groups' rows follow each other in section order, each group after its
    /// range and reversal. A changeset that crosses the threshold deletes the sections before and inserts the sections
    /// after.
    ///
    /// The name must not be a group's: a consolidated section named like a group the mappings show would name that
    /// group (``group(forSection:)``, section changes) while showing every group's rows. As in YapDatabase, such a
    /// name switches consolidation off (``consolidationThreshold`` 0, ``consolidatedSectionName`` empty): at once for
    /// mappings over a fixed list of groups that lists it, and for filtered mappings at the first ``update(with:)``
    /// that finds a group of that name. Check ``consolidationThreshold`` afterwards to see whether it stayed on.
    public mutating func setConsolidation(threshold: Int, sectionName: String) {
        consolidationThreshold = max(0, threshold)
        consolidatedSectionName = sectionName
        refreshLayout()
    }

    /// Where the flexible window of `group` is now: `offset` rows between its edge and its first row, `length` rows
    /// shown; `nil` when the group's range is not flexible or the mappings don't take sections from it.
    public func flexibleWindow(forGroup group: String) -> (offset: Int, length: Int)? {
        guard case .flexible(let definition)? = options(forGroup: group).range, includes(group: group) else { return nil }
        let state = flexibleStates[group]
            ?? FlexibleWindowState(offset: definition.offset, length: definition.length).normalized(count: count(inGroup: group), definition: definition)
        return (state.offset, state.length)
    }

    /// Moves the flexible window of `group` ("load more": a longer length, or a new offset), within the group and the
    /// window's limits; does nothing when the group's range is not flexible or the group is empty (an empty group's
    /// window restarts from its definition).
    ///
    /// The UI shows the change with a reload, or with the changeset of ``ViewChangeset/compute(from:to:reader:)``.
    public mutating func setFlexibleWindow(offset: Int, length: Int, forGroup group: String) {
        guard case .flexible? = options(forGroup: group).range else { return }
        flexibleStates[group] = FlexibleWindowState(offset: offset, length: length)
        refreshLayout()
    }
}
