extension ViewMappings {
    /// Whether a group's section hides while the group is empty.
    public enum SectionKind: Hashable, Sendable {
        /// The section exists only while its group holds rows (the default).
        case dynamic
        /// The section exists even when its group is empty (for mappings over a fixed list of groups; a filtered list
        /// only ever holds groups that have rows).
        case `static`
    }

    /// Which rows of a group a section shows: a window of fixed length pinned to the start or the end of the group.
    ///
    /// The window shows `count` rows, or fewer when the group is smaller; it slides as rows come and go, so rows move
    /// into and out of it (reported as inserts and deletes). A negative count counts as 0.
    public enum ItemRange: Hashable, Sendable {
        /// The first `count` rows of the group (in the view's order).
        case first(Int)
        /// The last `count` rows of the group (in the view's order).
        case last(Int)
    }

    /// How one group is shown.
    public struct GroupOptions: Hashable, Sendable {
        /// Whether the section hides while the group is empty. Default ``SectionKind/dynamic``.
        public var sectionKind: SectionKind
        /// The rows shown, or `nil` for all of them (the default).
        public var range: ItemRange?
        /// Whether the section shows the rows in the reverse of the view's order (after the range picked them).
        public var isReversed: Bool

        /// Creates options; the defaults show every row in the view's order, in a section hidden while empty.
        public init(sectionKind: SectionKind = .dynamic, range: ItemRange? = nil, isReversed: Bool = false) {
            self.sectionKind = sectionKind
            self.range = range
            self.isReversed = isReversed
        }
    }

    /// The options of `group`: its own, or ``defaultOptions``.
    public func options(forGroup group: String) -> GroupOptions {
        optionsByGroup[group] ?? defaultOptions
    }

    /// Sets the options of `group` (`nil`: use ``defaultOptions``), and re-lays out the sections from the counts of
    /// the last ``update(with:)``.
    ///
    /// Change options between two UI updates only with a reload: a changeset compares the layout before and after
    /// with the same options.
    public mutating func setOptions(_ options: GroupOptions?, forGroup group: String) {
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
}
