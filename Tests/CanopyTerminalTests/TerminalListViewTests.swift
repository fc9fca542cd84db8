import Canopy
import CanopySource
import CanopyTerminal
import CanopyTestSupport
import Testing

typealias StaticFactory = Factory<[String], TerminalCell, TerminalSupplementaryView, TerminalListView, IndexPathIndex, IndexPathIndex>

/// A list over fixed rows of columns: a 10-wide name, a flexible title, a 5-wide right-aligned count.
func makeList(_ rows: [[String]], width: Int, height: Int = 10, colour: Bool = false)
    -> (TerminalListView, SectionedDatasource<[String], TerminalCell, TerminalSupplementaryView, TerminalListView>) {
    let list = TerminalListView(width: width, height: height, colour: colour)
    let factory = StaticFactory()
    factory.registerCell(.type(TerminalCell.self), in: list) { cell, row, _ in
        cell.columns = [
            TerminalColumn(row[0], width: .fixed(10), style: TerminalStyle(foreground: .green)),
            TerminalColumn(row[1]),
            TerminalColumn(row[2], width: .fixed(5), alignment: .right),
        ]
    }
    let source = SectionedDatasource(sections: [DatasourceSection(items: rows, header: "Today", footer: "\(rows.count) items")],
                                     factory: factory, container: list)
    list.dataSource = source
    return (list, source)
}

/// Keeps objects alive for the length of a test.
func keepAlive(_ objects: Any...) { withExtendedLifetime(objects) {} }

/// A data source whose rows change behind the list's back (no batch, no reload): what a checked batch guards against.
final class SilentSource: DataSource {
    typealias Item = String
    var rows: [String]
    init(_ rows: [String]) { self.rows = rows }
    var numberOfSections: Int { 1 }
    func numberOfItems(inSection section: Int) -> Int { section == 0 ? rows.count : 0 }
    func item(at indexPath: ViewIndexPath) -> String? { indexPath.section == 0 && rows.indices.contains(indexPath.row) ? rows[indexPath.row] : nil }
    func cell(at indexPath: ViewIndexPath) throws -> TerminalCell {
        guard let item = item(at: indexPath) else { throw SourceError(.indexOutOfRange, "no row", indexPath: indexPath) }
        let cell = TerminalCell()
        cell.columns = [TerminalColumn(item)]
        return cell
    }
    func supplementaryView(kind: SupplementaryKind, inSection section: Int) -> TerminalSupplementaryView? { nil }
    func supplementaryText(kind: SupplementaryKind, inSection section: Int) -> String? { nil }
    func canEdit(at indexPath: ViewIndexPath) -> Bool { false }
    func editingStyle(at indexPath: ViewIndexPath) -> EditingStyle { .none }
    func commitEdit(_ action: EditAction, at indexPath: ViewIndexPath) throws {}
    func canMove(at indexPath: ViewIndexPath) -> Bool { false }
    func commitMove(from source: ViewIndexPath, to destination: ViewIndexPath) throws {}
}

let sampleRows = [["Ada", "Call about the garden party", "3"], ["東京タワー", "Visit 東京 with 👩‍👩‍👧 family", "12"],
                  ["Zoë", "Cafe\u{301} au lait, très bon", "100"]]

@Suite("Terminal list view")
struct TerminalListViewTests {
    @Test("A wide terminal: columns aligned, wide and combining characters measured by display width")
    func wideSnapshot() throws {
        let (list, keep1) = makeList(sampleRows, width: 50)
        defer { keepAlive(keep1) }
        let text = try list.renderToString()
        #expect(text == """
        Today                                             
        Ada        Call about the garden party           3
        東京タワー Visit 東京 with 👩‍👩‍👧 family            12
        Zoë        Café au lait, très bon              100
        3 items                                           
        """)
        for line in try list.render() { #expect(DisplayWidth.of(line) == 50) }
    }

    @Test("A narrow terminal truncates by display width with an ellipsis and keeps the columns")
    func narrowSnapshot() throws {
        let (list, keep2) = makeList(sampleRows, width: 28)
        defer { keepAlive(keep2) }
        let text = try list.renderToString()
        #expect(text == """
        Today                       
        Ada        Call about…     3
        東京タワー Visit 東京…    12
        Zoë        Café au la…   100
        3 items                     
        """)
        for line in try list.render() { #expect(DisplayWidth.of(line) == 28) }
    }

    @Test("A narrow row drops fixed columns, the rightmost first, before the flexible title goes below its minimum")
    func narrowRowKeepsTheTitle() {
        // The shape of an agenda row in `reminders tui`: time, title, calendar, ID.
        func row(_ title: String) -> [TerminalColumn] {
            [TerminalColumn("09:00–09:15", width: .fixed(11)), TerminalColumn(title),
             TerminalColumn("Personal", width: .fixed(10)), TerminalColumn("#12", width: .fixed(5), alignment: .right)]
        }
        let expected: [(width: Int, line: String)] = [
            (60, "09:00–09:15 Lunch with Ada at the café      Personal     #12"),
            (40, "09:00–09:15 Lunch with… Personal     #12"),
            (36, "09:00–09:15 Lunch with A… Personal  "),  // 7 left for the title: the ID goes
            (30, "09:00–09:15 Lunch with Ada at…"),  // then the calendar: the title has the room
            (20, "09:00–09:15 Lunch w…"),
            (18, "Lunch with Ada at…"),  // the time goes last
            (8, "Lunch w…"),
            (2, "L…"),
            (0, ""),
        ]
        for (width, line) in expected {
            let laidOut = TerminalCell.layout(row("Lunch with Ada at the café"), width: width, colour: false)
            #expect(laidOut == line, "width \(width)")
            #expect(DisplayWidth.of(laidOut) == width, "width \(width)")
            // Which columns show depends on the widths only: every row of the list keeps the same columns.
            #expect(TerminalCell.shownColumns(row(""), width: width).count == TerminalCell.shownColumns(row("Lunch with Ada at the café"), width: width).count)
        }
        // A title that asks for more room keeps it; a row of fixed columns only is cut at the right, as before.
        let wide = [TerminalColumn("09:00", width: .fixed(5)), TerminalColumn("Lunch with Ada", minimumWidth: 14), TerminalColumn("#12", width: .fixed(3))]
        #expect(TerminalCell.layout(wide, width: 20, colour: false) == "09:00 Lunch with Ada")
        let fixedOnly = [TerminalColumn("09:00", width: .fixed(5)), TerminalColumn("#12", width: .fixed(3))]
        #expect(TerminalCell.layout(fixedOnly, width: 7, colour: false) == "09:00 …")
    }

    @Test("Widths from the caller at the ends of Int (huge fixed columns, a huge minimum, a negative row width) lay out without a trap")
    func extremeWidths() {
        let huge = TerminalColumn("abc", width: .fixed(Int.max))
        let title = TerminalColumn("title")
        // Huge fixed columns next to a title: dropped, the title keeps the row.
        #expect(TerminalCell.layout([huge, title, huge], width: 10, colour: false) == "title     ")
        #expect(TerminalCell.shownColumns([huge, title, huge], width: 10).count == 1)
        // Fixed columns only: cut at the right, as any row of fixed columns.
        #expect(TerminalCell.layout([huge, huge, TerminalColumn("#1", width: .fixed(2))], width: 5, colour: false) == "abc  ")
        // A title that asks for more than any row has: every fixed column goes, the title takes the row.
        let greedy = TerminalColumn("t", minimumWidth: Int.max)
        #expect(TerminalCell.layout([TerminalColumn("09:00", width: .fixed(5)), greedy, greedy], width: 7, colour: false) == "t   t  ")
        #expect(TerminalCell.layout([huge, title], width: Int.min, colour: false) == "")
    }

    @Test("A list or row size from the caller beyond any terminal (Int.max) is taken as the largest size: it renders instead of allocating without bound")
    func hugeListSize() throws {
        let (list, keep) = makeList([["Ada", "Notes", "3"], ["Bo", "Plans", "12"]], width: Int.max, height: Int.max)
        defer { keepAlive(keep) }
        #expect(list.width == TerminalListView.maximumSize && list.height == TerminalListView.maximumSize)
        let lines = try list.render()
        #expect(!lines.isEmpty && lines.allSatisfy { $0.utf8.count == TerminalListView.maximumSize })  // (ASCII: bytes are columns)
        list.width = Int.max
        list.height = 0
        #expect(list.width == TerminalListView.maximumSize && list.height == 1)
        #expect(TerminalCell.layout([TerminalColumn("title")], width: Int.max, colour: false).count == TerminalListView.maximumSize)
        #expect(DisplayWidth.fit("title", to: Int.max).count == TerminalListView.maximumSize)
        let runner = TerminalRunner(list: list)
        runner.layout(columns: Int.max, lines: Int.max)
        #expect(runner.frame().allSatisfy { $0.utf8.count == TerminalListView.maximumSize })
    }

    @Test("Colour only when enabled: escape sequences with colour, none with NO_COLOR or off a terminal")
    func colour() throws {
        let (coloured, keep3) = makeList(sampleRows, width: 40, colour: true)
        defer { keepAlive(keep3) }
        #expect(try coloured.renderToString().contains("\u{1B}[32mAda"))
        let (plain, keep4) = makeList(sampleRows, width: 40, colour: false)
        defer { keepAlive(keep4) }
        #expect(!(try plain.renderToString().contains("\u{1B}")))
        #expect(TerminalColorPolicy.isEnabled(isTerminal: true, environment: [:]))
        #expect(!TerminalColorPolicy.isEnabled(isTerminal: true, environment: ["NO_COLOR": "1"]))
        #expect(TerminalColorPolicy.isEnabled(isTerminal: true, environment: ["NO_COLOR": ""]))
        #expect(!TerminalColorPolicy.isEnabled(isTerminal: false, environment: [:]))
        #expect(!TerminalColorPolicy.isEnabled(isTerminal: true, environment: ["TERM": "dumb"]))
    }

    @Test("Display widths: ASCII 1, CJK and emoji 2, combining marks 0; truncation never splits a wide character")
    func displayWidth() {
        #expect(DisplayWidth.of("abc") == 3)
        #expect(DisplayWidth.of("東京") == 4)
        #expect(DisplayWidth.of("e\u{301}") == 1)
        #expect(DisplayWidth.of("👍") == 2)
        #expect(DisplayWidth.truncate("東京タワー", to: 4) == "東…")
        #expect(DisplayWidth.fit("東京タワー", to: 4) == "東… ")
        #expect(DisplayWidth.fit("a\tb\nc", to: 5) == "a b c")
    }

    @Test("The viewport renders only the rows it shows, and scrolls to keep the selection in view")
    func viewport() throws {
        let rows = (0..<1000).map { ["n\($0)", "row \($0)", "\($0)"] }
        let (list, keep5) = makeList(rows, width: 30, height: 5)
        defer { keepAlive(keep5) }
        list.showsSelection = true
        _ = try list.render()
        #expect(list.cellsConfigured == 4)  // header + 4 rows
        list.handle(.end)
        let lines = try list.render()
        #expect(lines.count == 5)
        #expect(lines[3].hasPrefix("  n998"))
        #expect(lines[4].hasPrefix("> n999"))
        #expect(list.cellsConfigured <= 9)
        list.handle(.home)
        list.handle(.down)
        #expect(list.selectedIndexPath == ViewIndexPath(section: 0, row: 1))
        list.handle(.pageDown)
        #expect(list.selectedIndexPath == ViewIndexPath(section: 0, row: 5))
    }

    @Test("A wrong batch is a typed error; the list reloads and shows the data source's state")
    func wrongBatchRecovers() throws {
        let list = TerminalListView(width: 40, height: 10)
        let source = SilentSource(["Ada", "Bob", "Cy"])
        list.dataSource = source
        _ = try list.render()
        source.rows.append("New")
        // Claims nothing changed although a row was added.
        let error = try #require(throws: SourceError.self) { try list.performBatchUpdates(BatchUpdates(reloadedRows: [ViewIndexPath(section: 0, row: 0)])) }
        #expect(error.code == .invalidBatch)
        #expect(error.message.contains("invalid number of rows in section 0: 3 before"))
        #expect(list.lastBatchError?.code == .invalidBatch)
        #expect(list.sectionCounts == [4])
        #expect(try list.render().map { $0.trimmingCharacters(in: .whitespaces) } == ["Ada", "Bob", "Cy", "New"])

        for bad in [BatchUpdates(insertedRows: [ViewIndexPath(section: 0, row: 9)]),
                    BatchUpdates(deletedRows: [ViewIndexPath(section: 0, row: 0)], reloadedRows: [ViewIndexPath(section: 0, row: 0)]),
                    BatchUpdates(insertedSections: [1])] {
            #expect(throws: SourceError.self) { try list.performBatchUpdates(bad) }
        }
        source.rows.removeFirst()
        try list.performBatchUpdates(BatchUpdates(deletedRows: [ViewIndexPath(section: 0, row: 0)]))
        #expect(list.lastBatchError == nil && list.sectionCounts == [3])
    }

    @Test("The reuse pool hands back cells after rendering instead of making new ones")
    func reusePool() throws {
        final class CountingCell: TerminalCell {
            nonisolated(unsafe) static var made = 0
            required init() { CountingCell.made += 1 }
        }
        let list = TerminalListView(width: 20, height: 3)
        let factory = StaticFactory()
        factory.registerCell(.type(CountingCell.self), in: list) { cell, row, _ in cell.columns = [TerminalColumn(row[0])] }
        let source = StaticDatasource(items: (0..<100).map { ["\($0)"] }, factory: factory, container: list)
        list.dataSource = source
        for _ in 0..<20 {
            list.handle(.pageDown)
            _ = try list.render()
        }
        #expect(list.cellsConfigured > 20)
        #expect(CountingCell.made <= 3)
    }

    @Test("The screen rewrites only the lines that changed")
    func screenDiff() {
        var written = ""
        let screen = TerminalScreen { written += $0 }
        screen.draw(["a", "b", "c"])
        #expect(screen.linesRewritten == 3)
        written = ""
        screen.draw(["a", "B", "c"])
        #expect(screen.linesRewritten == 1)
        #expect(written == "\u{1B}[2;1HB\u{1B}[0m\u{1B}[K")
        screen.draw(["a"])
        #expect(screen.linesRewritten == 2)
    }

    @Test("Keys: arrows, paging, home/end and characters from raw bytes")
    func keys() {
        let bytes: [UInt8] = Array("\u{1B}[A\u{1B}[B\u{1B}[5~\u{1B}[6~\u{1B}[H\u{1B}[Fq ".utf8)
        #expect(Key.parse(bytes) == [.up, .down, .pageUp, .pageDown, .home, .end, .character("q"), .character(" ")])
    }
}
