import CanopySource

/// One column of a cell: text, a width, an alignment and a style.
public struct TerminalColumn: Hashable, Sendable {
    /// How wide a column is.
    public enum Width: Hashable, Sendable {
        /// Exactly this many terminal columns (text is truncated or padded), so columns stay aligned across rows.
        case fixed(Int)
        /// The room the fixed columns leave, shared equally among flexible columns; each keeps at least its
        /// ``TerminalColumn/minimumWidth`` (fixed columns are dropped first, see ``TerminalCell/layout(_:width:colour:)``).
        case flexible
    }

    /// Which side the text sticks to.
    public enum Alignment: Hashable, Sendable {
        /// Text on the left, padding on the right.
        case left
        /// Text on the right, padding on the left.
        case right
    }

    /// The text (control characters show as spaces).
    public var text: String
    /// The width.
    public var width: Width
    /// The alignment.
    public var alignment: Alignment
    /// The style, applied when colour is on.
    public var style: TerminalStyle
    /// For a flexible column, the width it keeps before any fixed column: in a narrow row, fixed columns are dropped
    /// (from the right) until every flexible column has this much. Ignored for fixed columns.
    public var minimumWidth: Int

    /// The ``minimumWidth`` of a flexible column unless its initializer says otherwise: enough for a word or two.
    public static let defaultMinimumWidth = 8

    /// Creates a column.
    /// - Parameters:
    ///   - text: The text.
    ///   - width: Fixed or flexible.
    ///   - alignment: Which side the text sticks to.
    ///   - style: The style, applied when colour is on.
    ///   - minimumWidth: For a flexible column, the width it keeps before fixed columns are shown (``minimumWidth``).
    public init(_ text: String, width: Width = .flexible, alignment: Alignment = .left, style: TerminalStyle = .plain,
                minimumWidth: Int = TerminalColumn.defaultMinimumWidth) {
        self.text = text
        self.width = width
        self.alignment = alignment
        self.style = style
        self.minimumWidth = max(0, minimumWidth)
    }
}

/// A row of a ``TerminalListView``: columns separated by one space, rendered to the list's width. Subclass it for
/// your own cell kinds (register them with `.type(MyCell.self)`), or configure a plain `TerminalCell`.
open class TerminalCell: ReusableView {
    /// The columns, left to right.
    public var columns: [TerminalColumn] = []

    /// Makes an empty cell.
    public required init() {}

    /// Clears the columns.
    open func prepareForReuse() { columns = [] }

    /// The row as text exactly `width` columns wide (by display width).
    open func render(width: Int, colour: Bool) -> String {
        TerminalCell.layout(columns, width: width, colour: colour)
    }

    /// Lays `columns` out in `width` terminal columns, one space between columns. Fixed columns take their width and
    /// flexible ones share the rest; when the row is too narrow for the fixed columns plus each flexible column's
    /// ``TerminalColumn/minimumWidth``, fixed columns are dropped, the rightmost first, until it fits (a title keeps
    /// its words before an ID or a calendar name keeps its place). Which columns are dropped depends only on the widths,
    /// never on the text, so every row of a list keeps the same columns. A row without flexible columns is cut at the
    /// right. A `width` above ``TerminalListView/maximumSize`` is taken as that.
    public static func layout(_ columns: [TerminalColumn], width: Int, colour: Bool) -> String {
        let width = min(max(0, width), TerminalListView.maximumSize)
        let shown = shownColumns(columns, width: width)
        guard !shown.isEmpty else { return String(repeating: " ", count: width) }
        let separators = shown.count - 1
        let fixed = shown.reduce(0) { total, column in
            if case .fixed(let w) = column.width { return adding(total, w) }
            return total
        }
        let flexibleCount = shown.filter { $0.width == .flexible }.count
        let room = max(0, width - adding(fixed, separators))
        var widths = shown.map { column -> Int in
            if case .fixed(let w) = column.width { return max(0, w) }
            return 0
        }
        if flexibleCount > 0 {
            var remaining = room
            var left = flexibleCount
            for index in shown.indices where shown[index].width == .flexible {
                widths[index] = remaining / left
                remaining -= widths[index]
                left -= 1
            }
        }
        var line = ""
        var used = 0
        for (index, column) in shown.enumerated() {
            let separator = index > 0 ? 1 : 0
            let available = width - used - separator
            guard available > 0 else { break }
            let columnWidth = min(widths[index], available)
            if separator == 1 { line += " " }
            line += column.style.apply(to: DisplayWidth.fit(column.text, to: columnWidth, alignment: column.alignment), colour: colour)
            used += separator + columnWidth
        }
        if used < width { line += String(repeating: " ", count: width - used) }
        return line
    }

    /// The columns ``layout(_:width:colour:)`` shows in `width`: all of them when the fixed widths, the separators and
    /// the flexible columns' minimum widths fit; otherwise without the rightmost fixed columns, one at a time, until
    /// they do (or no fixed column is left). Without a flexible column, all of them (the row is cut at the right).
    public static func shownColumns(_ columns: [TerminalColumn], width: Int) -> [TerminalColumn] {
        guard columns.contains(where: { $0.width == .flexible }) else { return columns }
        func needed(_ columns: [TerminalColumn]) -> Int {
            columns.reduce(max(0, columns.count - 1)) { total, column in
                switch column.width {
                case .fixed(let w): adding(total, w)
                case .flexible: adding(total, column.minimumWidth)
                }
            }
        }
        var shown = columns
        while needed(shown) > width, let last = shown.lastIndex(where: { $0.width != .flexible }) {
            shown.remove(at: last)
        }
        return shown
    }

    /// `total` plus a caller's width (taken as 0 when negative), at most `Int.max`: widths such as `.fixed(Int.max)`
    /// add up without a trap (such a row is then too narrow for them, whatever its width).
    private static func adding(_ total: Int, _ width: Int) -> Int {
        let (sum, overflow) = total.addingReportingOverflow(max(0, width))
        return overflow ? Int.max : sum
    }
}

/// A header, footer or other supplementary line of a ``TerminalListView``.
open class TerminalSupplementaryView: ReusableView {
    /// The text.
    public var text: String = ""
    /// The style, applied when colour is on.
    public var style: TerminalStyle = TerminalStyle(bold: true)

    /// Makes an empty view.
    public required init() {}

    /// Clears the text.
    open func prepareForReuse() { text = "" }

    /// The line, exactly `width` columns wide.
    open func render(width: Int, colour: Bool) -> String {
        style.apply(to: DisplayWidth.fit(text, to: width), colour: colour)
    }
}
