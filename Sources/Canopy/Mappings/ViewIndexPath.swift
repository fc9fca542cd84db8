/// The place of an item in a list UI: a section and a row within it.
///
/// Sections and rows are what ``ViewMappings`` shows: a section is one visible group, and a row counts from the top of
/// the section as displayed (after the group's range and reversal are applied). Ordered by section, then row.
public struct ViewIndexPath: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The section, counted from 0.
    public var section: Int
    /// The row within the section, counted from 0.
    public var row: Int

    /// Creates an index path.
    public init(section: Int, row: Int) {
        self.section = section
        self.row = row
    }

    /// Orders by section, then by row.
    public static func < (lhs: ViewIndexPath, rhs: ViewIndexPath) -> Bool {
        (lhs.section, lhs.row) < (rhs.section, rhs.row)
    }

    /// `[section, row]`.
    public var description: String { "[\(section), \(row)]" }
}
