import CanopySource

/// One column of a cell: text, a width, an alignment and a style.
public struct TerminalColumn: Hashable, Sendable {
    /// How wide a column is.
    public enum Width: Hashable, Sendable {
        /// Exactly this many terminal columns (text is truncated or padded), so columns stay aligned across rows.
        case fixed(Int)
        /// The room the fixed columns leave, shared equally among flexible columns.
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

    /// Creates a column.
    public init(_ text: String, width: Width = .flexible, alignment: Alignment = .left, style: TerminalStyle = .plain) {
        self.text = text
        self.width = width
        self.alignment = alignment
        self.style = style
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

    /// Lays `columns` out in `width` terminal columns: fixed columns take their width (those that don't fit are
    /// dropped from the right), flexible ones share the rest; one space between columns.
    public static func layout(_ columns: [TerminalColumn], width: Int, colour: Bool) -> String {
        let width = max(0, width)
        guard !columns.isEmpty else { return String(repeating: " ", count: width) }
        let separators = columns.count - 1
        let fixed = columns.reduce(0) { total, column in
            if case .fixed(let w) = column.width { return total + max(0, w) }
            return total
        }
        let flexibleCount = columns.filter { $0.width == .flexible }.count
        let room = max(0, width - fixed - separators)
        var widths = columns.map { column -> Int in
            if case .fixed(let w) = column.width { return max(0, w) }
            return 0
        }
        if flexibleCount > 0 {
            var remaining = room
            var left = flexibleCount
            for index in columns.indices where columns[index].width == .flexible {
                widths[index] = remaining / left
                remaining -= widths[index]
                left -= 1
            }
        }
        var line = ""
        var used = 0
        for (index, column) in columns.enumerated() {
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
