import Canopy
import CanopySource

/// A list in a terminal: the container of CanopySource's data sources on Linux (UITableView's role).
///
/// It keeps a reuse pool of cells per identifier, shows sections with header and footer lines, renders rows to the
/// terminal's width (truncated by display width, columns aligned), and renders only the rows of its viewport — a
/// 50-row viewport over a 1M-row view configures about 50 cells. Batch updates are checked as UIKit checks them
/// (sections and rows after = before − deletes + inserts, indexes in range, no row both deleted and reloaded): a
/// violation is a ``/CanopySource/SourceError/Code/invalidBatch`` error, and the list reloads before throwing, so it never shows a
/// garbled state.
///
/// ```swift
/// let list = TerminalListView(width: 60, height: 10)
/// let factory = Factory<String, TerminalCell, TerminalSupplementaryView, TerminalListView, IndexPathIndex, IndexPathIndex>()
/// factory.registerCell(.type(TerminalCell.self), in: list) { cell, item, _ in cell.columns = [TerminalColumn(item)] }
/// let source = StaticDatasource(items: ["one", "two"], factory: factory, container: list)
/// list.dataSource = source
/// print(try list.renderToString())
/// ```
public final class TerminalListView: ContainerView {
    /// Rows are ``TerminalCell``s.
    public typealias Cell = TerminalCell
    /// Headers and footers are ``TerminalSupplementaryView``s.
    public typealias SupplementaryView = TerminalSupplementaryView

    /// What one line of the list shows.
    public enum Line: Hashable, Sendable {
        /// The header of a section.
        case header(section: Int)
        /// A row.
        case row(ViewIndexPath)
        /// The footer of a section.
        case footer(section: Int)
    }

    /// The data source, held strongly (unlike UIKit: a list whose data source went away would silently show
    /// nothing). The data sources of CanopySource hold their container weakly, so there is no cycle. Setting it reloads.
    public var dataSource: (any DataSource<TerminalCell, TerminalSupplementaryView>)? {
        didSet { reloadData() }
    }
    /// The width of every line, in terminal columns, from 1 to ``maximumSize`` (a value outside is taken as the nearest
    /// end). Changing it (the terminal was resized) renders every row again at the new width.
    public var width: Int {
        didSet {
            width = Self.clamped(width)
            if width != oldValue { renderedRows = [:] }
        }
    }
    /// The number of lines the viewport shows, from 1 to ``maximumSize`` (a value outside is taken as the nearest end).
    /// When it grows, the viewport shows the new lines above as well as below (a list that was scrolled in a small
    /// terminal doesn't stay scrolled in a large one).
    public var height: Int {
        didSet {
            height = Self.clamped(height)
            if height > oldValue { scrollOffset = max(0, scrollOffset - (height - oldValue)) }
        }
    }
    /// Whether lines carry ANSI colour (see ``TerminalColorPolicy``). Changing it renders every row again.
    public var colour: Bool {
        didSet { if colour != oldValue { renderedRows = [:] } }
    }
    /// Whether a two-column gutter shows the selection (`>`) and, with ``marksChanges``, changed rows (`*`). Changing
    /// it renders every row again (the gutter takes two columns from the rows).
    public var showsSelection: Bool = false {
        didSet { if showsSelection != oldValue { renderedRows = [:] } }
    }
    /// Whether rows inserted, moved or reloaded by the last batch are marked until ``clearMarks()``.
    public var marksChanges: Bool = false

    /// The flat position (over all rows, section by section) of the selected row, or `nil` when the list is empty.
    public private(set) var selection: Int?
    /// The first line shown.
    public private(set) var scrollOffset: Int = 0
    /// The last batch that was rejected (and recovered from by a reload), or `nil`.
    public private(set) var lastBatchError: SourceError?
    /// How many cells were configured since the list was made (each costs a read of the data source).
    public private(set) var cellsConfigured: Int = 0
    /// The rows and sections the last render could not show (an item that can't be read, a cell or header whose
    /// configuration threw), each shown as an error line in its place while the other rows render; empty when all
    /// rendered.
    public private(set) var lastErrors: [SourceError] = []
    /// The rows marked as changed by the last batches.
    public private(set) var markedRows: Set<ViewIndexPath> = []

    private var cellDescriptors: [String: ReuseDescriptor<TerminalCell>] = [:]
    private var supplementaryDescriptors: [SupplementaryKind: [String: ReuseDescriptor<TerminalSupplementaryView>]] = [:]
    private var cellPool: [String: [TerminalCell]] = [:]
    private var supplementaryPool: [String: [TerminalSupplementaryView]] = [:]
    /// The reuse identifier (or pool key) each view handed out was dequeued for, so it returns to the right pool.
    private var issuedIdentifiers: [ObjectIdentifier: String] = [:]
    /// The rows of each section as the list shows them (updated by reloads and batches, not by the data source).
    public private(set) var sectionCounts: [Int] = []
    /// Rendered rows (without gutter) by index path, for the rows of the last viewport; kept across batches.
    private var renderedRows: [ViewIndexPath: String] = [:]

    /// The largest width and height a list takes (4,096 columns or lines, far beyond any terminal): a larger size, a
    /// caller's mistake, would have every line and the padded viewport allocate without bound.
    public static let maximumSize = 4_096

    static func clamped(_ size: Int) -> Int { min(max(1, size), maximumSize) }

    /// Creates a list.
    public init(width: Int = 80, height: Int = 24, colour: Bool = false) {
        self.width = Self.clamped(width)
        self.height = Self.clamped(height)
        self.colour = colour
    }

    // MARK: ContainerView

    /// Registers how to make cells for an identifier.
    public func registerCell(_ descriptor: ReuseDescriptor<TerminalCell>) {
        if descriptor.kind == .registered, cellDescriptors[descriptor.identifier] != nil { return }
        cellDescriptors[descriptor.identifier] = descriptor
    }

    /// Registers how to make supplementary views of `kind` for an identifier.
    public func registerSupplementaryView(_ descriptor: ReuseDescriptor<TerminalSupplementaryView>, kind: SupplementaryKind) {
        if descriptor.kind == .registered, supplementaryDescriptors[kind]?[descriptor.identifier] != nil { return }
        supplementaryDescriptors[kind, default: [:]][descriptor.identifier] = descriptor
    }

    /// A cell from the pool (reset with `prepareForReuse()`) or a new one.
    public func dequeueCell(withIdentifier identifier: String, for indexPath: ViewIndexPath) throws -> TerminalCell {
        if var pool = cellPool[identifier], let cell = pool.popLast() {
            cellPool[identifier] = pool
            cell.prepareForReuse()
            issuedIdentifiers[ObjectIdentifier(cell)] = identifier
            return cell
        }
        guard let descriptor = cellDescriptors[identifier] else {
            throw SourceError(.unregisteredIdentifier,
                              "no cell is registered for identifier '\(identifier)'; registered: \(cellDescriptors.keys.sorted().joined(separator: ", "))",
                              indexPath: indexPath)
        }
        // An identifier the list knows "already" but never learnt how to build makes a plain cell.
        let cell = try descriptor.make?() ?? TerminalCell()
        issuedIdentifiers[ObjectIdentifier(cell)] = identifier
        return cell
    }

    /// A supplementary view from the pool or a new one.
    public func dequeueSupplementaryView(kind: SupplementaryKind, identifier: String, for indexPath: ViewIndexPath) throws -> TerminalSupplementaryView {
        let poolKey = "\(kind)/\(identifier)"
        if var pool = supplementaryPool[poolKey], let view = pool.popLast() {
            supplementaryPool[poolKey] = pool
            view.prepareForReuse()
            issuedIdentifiers[ObjectIdentifier(view)] = poolKey
            return view
        }
        guard let descriptor = supplementaryDescriptors[kind]?[identifier] else {
            throw SourceError(.unregisteredIdentifier, "no \(kind) view is registered for identifier '\(identifier)'", indexPath: indexPath)
        }
        let view = try descriptor.make?() ?? TerminalSupplementaryView()
        issuedIdentifiers[ObjectIdentifier(view)] = poolKey
        return view
    }

    /// Forgets the rows shown and takes the counts from the data source again.
    public func reloadData() {
        sectionCounts = currentCounts()
        renderedRows = [:]
        markedRows = []
        clampSelection()
    }

    /// Applies a batch after checking it against the rows shown and the data source's counts.
    ///
    /// - Throws: ``/CanopySource/SourceError/Code/invalidBatch`` describing the first violation; the list has reloaded.
    public func performBatchUpdates(_ updates: BatchUpdates) throws {
        let after = currentCounts()
        do {
            let plan = try BatchPlan(updates, before: sectionCounts, after: after)
            let selectedPath = selection.flatMap(indexPath(forPosition:))
            var remapped: [ViewIndexPath: String] = [:]
            for (path, line) in renderedRows {
                if let moved = plan.finalPath(of: path) { remapped[moved] = line }
            }
            for move in updates.movedRows where !move.changed {
                if let line = renderedRows[move.from] { remapped[move.to] = line }
            }
            for move in updates.movedRows where move.changed { remapped[move.to] = nil }
            renderedRows = remapped
            var marks = Set(markedRows.compactMap { plan.finalPath(of: $0) })
            marks.formUnion(updates.insertedRows)
            marks.formUnion(updates.movedRows.map(\.to))
            marks.formUnion(updates.reloadedRows.compactMap { plan.finalPathOfReloaded($0) })
            markedRows = marks
            sectionCounts = after
            // The selection follows its row: where it stayed, was reloaded or moved to (a deleted row leaves the
            // selection at its position).
            if let selectedPath, let newPath = plan.finalPath(of: selectedPath) ?? plan.finalPathOfReloaded(selectedPath)
                ?? updates.movedRows.first(where: { $0.from == selectedPath })?.to {
                selection = position(of: newPath)
            }
            clampSelection()
            lastBatchError = nil
        } catch let error as SourceError {
            reloadData()
            lastBatchError = error
            throw error
        }
    }

    private func currentCounts() -> [Int] {
        guard let dataSource else { return [] }
        return (0..<max(0, dataSource.numberOfSections)).map { max(0, dataSource.numberOfItems(inSection: $0)) }
    }

    // MARK: Positions and selection

    /// The number of rows shown.
    public var numberOfRows: Int { sectionCounts.reduce(0, +) }

    /// The index path of the `position`-th row, or `nil`.
    public func indexPath(forPosition position: Int) -> ViewIndexPath? {
        guard position >= 0 else { return nil }
        var remaining = position
        for (section, count) in sectionCounts.enumerated() {
            if remaining < count { return ViewIndexPath(section: section, row: remaining) }
            remaining -= count
        }
        return nil
    }

    /// The flat position of `indexPath`, or `nil` when the list doesn't show it.
    public func position(of indexPath: ViewIndexPath) -> Int? {
        guard sectionCounts.indices.contains(indexPath.section), indexPath.row >= 0, indexPath.row < sectionCounts[indexPath.section] else {
            return nil
        }
        return sectionCounts[..<indexPath.section].reduce(0, +) + indexPath.row
    }

    /// The index path of the selected row, or `nil`.
    public var selectedIndexPath: ViewIndexPath? { selection.flatMap(indexPath(forPosition:)) }

    /// Selects the row at `indexPath` (ignored when the list doesn't show it).
    public func select(_ indexPath: ViewIndexPath) {
        if let position = position(of: indexPath) { selection = position }
    }

    private func clampSelection() {
        let count = numberOfRows
        if count == 0 { selection = nil } else { selection = min(max(0, selection ?? 0), count - 1) }
    }

    /// Moves the selection for a navigation key (↑ ↓ PgUp PgDn Home End); returns whether the key was one.
    @discardableResult
    public func handle(_ key: Key) -> Bool {
        let count = numberOfRows
        guard count > 0 else { return [.up, .down, .pageUp, .pageDown, .home, .end].contains(key) }
        let current = selection ?? 0
        let page = max(1, height - 1)
        switch key {
        case .up: selection = max(0, current - 1)
        case .down: selection = min(count - 1, current + 1)
        case .pageUp: selection = max(0, current - page)
        case .pageDown: selection = min(count - 1, current + page)
        case .home: selection = 0
        case .end: selection = count - 1
        default: return false
        }
        return true
    }

    /// Unmarks the rows changed by earlier batches.
    public func clearMarks() { markedRows = [] }

    // MARK: Layout

    /// Whether `section` shows a line of `kind`.
    private func hasLine(_ kind: SupplementaryKind, section: Int) -> Bool {
        guard let dataSource else { return false }
        if dataSource.supplementaryText(kind: kind, inSection: section) != nil { return true }
        return supplementaryDescriptors[kind].map { !$0.isEmpty } ?? false
    }

    /// The lines of the whole list, lazily: header, rows, footer per section. Only headers and footers are asked for.
    private func sectionLayout() -> [(header: Bool, rows: Int, footer: Bool)] {
        sectionCounts.indices.map { section in
            (hasLine(.header, section: section), sectionCounts[section], hasLine(.footer, section: section))
        }
    }

    /// The total number of lines of the list.
    public var numberOfLines: Int {
        sectionLayout().reduce(0) { $0 + ($1.header ? 1 : 0) + $1.rows + ($1.footer ? 1 : 0) }
    }

    /// The lines of the viewport: from ``scrollOffset``, at most ``height``, scrolled so that the selection shows.
    public func visibleLines() -> [Line] {
        let layout = sectionLayout()
        let total = layout.reduce(0) { $0 + ($1.header ? 1 : 0) + $1.rows + ($1.footer ? 1 : 0) }
        // Line number of the selection, to keep it in view.
        if let selected = selectedIndexPath {
            var line = 0
            for section in 0..<selected.section { line += (layout[section].header ? 1 : 0) + layout[section].rows + (layout[section].footer ? 1 : 0) }
            line += (layout[selected.section].header ? 1 : 0) + selected.row
            if line < scrollOffset { scrollOffset = max(0, line - (layout[selected.section].header && selected.row == 0 ? 1 : 0)) }
            if line >= scrollOffset + height { scrollOffset = line - height + 1 }
        }
        scrollOffset = max(0, min(scrollOffset, max(0, total - height)))
        var lines: [Line] = []
        var start = 0
        let end = scrollOffset + height
        for (section, entry) in layout.enumerated() {
            let sectionLines = (entry.header ? 1 : 0) + entry.rows + (entry.footer ? 1 : 0)
            defer { start += sectionLines }
            if start + sectionLines <= scrollOffset { continue }
            if start >= end { break }
            var line = start
            if entry.header {
                if line >= scrollOffset && line < end { lines.append(.header(section: section)) }
                line += 1
            }
            let firstRow = max(0, scrollOffset - line)
            let lastRow = min(entry.rows, end - line)
            if firstRow < lastRow {
                for row in firstRow..<lastRow { lines.append(.row(ViewIndexPath(section: section, row: row))) }
            }
            line += entry.rows
            if entry.footer, line >= scrollOffset, line < end { lines.append(.footer(section: section)) }
        }
        return lines
    }

    // MARK: Rendering

    /// The viewport's lines as text, each exactly ``width`` columns wide (plus escape sequences when ``colour`` is on).
    ///
    /// Rows shown before and untouched by batches since are not configured again; the others are configured through
    /// the data source inside one consistent read. A row or section that can't be shown (its item can't be read, its
    /// configuration throws) is an error line in its place, and is listed in ``lastErrors``: the other rows render.
    /// - Throws: what opening the data source's consistent read throws (a view-backed source reads the store).
    public func render() throws -> [String] {
        guard let dataSource else { return [] }
        let lines = visibleLines()
        let gutter = showsSelection ? 2 : 0
        let rowWidth = max(1, width - gutter)
        let selected = selectedIndexPath
        var kept: [ViewIndexPath: String] = [:]
        var errors: [SourceError] = []
        let output: [String] = try dataSource.withConsistentReads {
            lines.map { line -> String in
                switch line {
                case .header(let section), .footer(let section):
                    let kind: SupplementaryKind = { if case .header = line { return .header } else { return .footer } }()
                    do {
                        return try supplementaryLine(kind: kind, section: section, dataSource: dataSource)
                    } catch {
                        let failure = Self.rowError(error, at: ViewIndexPath(section: section, row: 0), what: "the \(kind) of section \(section)")
                        errors.append(failure)
                        return errorLine(failure, width: width)
                    }
                case .row(let indexPath):
                    var body: String
                    if let cached = renderedRows[indexPath] {
                        body = cached
                        kept[indexPath] = body
                    } else {
                        do {
                            let cell = try dataSource.cell(at: indexPath)
                            cellsConfigured += 1
                            body = cell.render(width: rowWidth, colour: colour)
                            recycle(cell)
                            kept[indexPath] = body
                        } catch {
                            let failure = Self.rowError(error, at: indexPath, what: "the row at \(indexPath)")
                            errors.append(failure)
                            body = errorLine(failure, width: rowWidth)
                        }
                    }
                    guard showsSelection else { return body }
                    let isSelected = indexPath == selected
                    let mark = marksChanges && markedRows.contains(indexPath) ? "*" : " "
                    let prefix = (isSelected ? ">" : " ") + mark
                    if colour && isSelected {
                        // The whole row in reverse video; the cell's own styles end with a reset, so they are renewed.
                        let reverse = "\u{1B}[7m"
                        return reverse + prefix + body.replacingOccurrences(of: "\u{1B}[0m", with: "\u{1B}[0m" + reverse) + "\u{1B}[0m"
                    }
                    if colour && mark == "*" { return TerminalStyle(foreground: .yellow, bold: true).apply(to: prefix, colour: true) + body }
                    return prefix + body
                }
            }
        }
        renderedRows = kept
        lastErrors = errors
        return output
    }

    /// A failure to show a row or section as a ``SourceError`` with the index path.
    static func rowError(_ error: any Error, at indexPath: ViewIndexPath, what: String) -> SourceError {
        if let error = error as? SourceError { return error.adding(indexPath: indexPath) }
        return SourceError(.rowFailed, "\(what) could not be shown", indexPath: indexPath, underlying: error)
    }

    /// The line shown in place of a row or section that failed: `⚠ [0, 3] <what went wrong>`, `width` columns.
    private func errorLine(_ error: SourceError, width: Int) -> String {
        let reason = error.underlying.map { "\($0)" } ?? error.message
        let text = "⚠ \(error.indexPath.map { "\($0) " } ?? "")\(error.code): \(reason)"
        return TerminalStyle(foreground: .red).apply(to: DisplayWidth.fit(text, to: width), colour: colour)
    }

    /// The viewport as one string, lines separated by newlines (no trailing newline).
    public func renderToString() throws -> String {
        try render().joined(separator: "\n")
    }

    private func supplementaryLine(kind: SupplementaryKind, section: Int, dataSource: any DataSource<TerminalCell, TerminalSupplementaryView>) throws -> String {
        if let view = try dataSource.supplementaryView(kind: kind, inSection: section) {
            defer {
                if let key = issuedIdentifiers.removeValue(forKey: ObjectIdentifier(view)), supplementaryPool[key, default: []].count < 16 {
                    supplementaryPool[key, default: []].append(view)
                }
            }
            return view.render(width: width, colour: colour)
        }
        let text = dataSource.supplementaryText(kind: kind, inSection: section) ?? ""
        let style = kind == .header ? TerminalStyle(foreground: .cyan, bold: true) : TerminalStyle(dim: true)
        return style.apply(to: DisplayWidth.fit(text, to: width), colour: colour)
    }

    private func recycle(_ cell: TerminalCell) {
        guard let identifier = issuedIdentifiers.removeValue(forKey: ObjectIdentifier(cell)) else { return }
        if cellPool[identifier, default: []].count < max(8, height) { cellPool[identifier, default: []].append(cell) }
    }
}
