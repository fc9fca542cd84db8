import Canopy
import CanopySource
import CanopyTerminal
import Testing

@Suite("Terminal runner")
struct TerminalRunnerTests {
    func makeRunner(_ items: [String]) -> (TerminalRunner, StaticDatasource<String, TerminalCell, TerminalSupplementaryView, TerminalListView>) {
        let list = TerminalListView(width: 20, height: 4)
        let factory = Factory<String, TerminalCell, TerminalSupplementaryView, TerminalListView, IndexPathIndex, IndexPathIndex>()
        factory.registerCell(.type(TerminalCell.self), in: list) { cell, item, _ in cell.columns = [TerminalColumn(item)] }
        let source = StaticDatasource(items: items, factory: factory, container: list, identity: .value)
        list.dataSource = source
        return (TerminalRunner(list: list, title: "Title", write: { _ in }), source)
    }

    @Test("A frame is the title, the list padded to its height and the status line, each exactly the width")
    func frame() {
        let (runner, _) = makeRunner(["a", "b"])
        runner.layout(columns: 12, lines: 6)
        runner.status = "hello"
        let frame = runner.frame()
        #expect(frame.count == 6 && frame.allSatisfy { DisplayWidth.of($0) == 12 }, "\(frame)")
        #expect(frame.map { $0.trimmingCharacters(in: .whitespaces) } == ["Title", "> a", "b", "", "", "hello"])
    }

    @Test("Keys: navigation, bindings that replace built-ins, q, Ctrl-L; the status clears at each key; a binding's error shows")
    func keys() {
        let (runner, source) = makeRunner(["a", "b", "c"])
        runner.layout(columns: 20, lines: 6)
        runner.status = "old message"
        runner.handle(.down)
        #expect(runner.status == "" && runner.list.selectedIndexPath == ViewIndexPath(section: 0, row: 1))
        #expect(runner.handle(TerminalRunner.repaintKey), "Ctrl-L asks for a full repaint")
        struct Refused: Error {}
        runner.bind(.character("x")) { _ in throw Refused() }
        runner.handle(.character("x"))
        #expect(runner.status.hasPrefix("error: "))
        var deleted: [String] = []
        runner.bind(.character("q")) { runner in
            deleted.append(source.items.removeFirst())
            runner.status = "q rebound"
        }
        runner.handle(.character("q"))
        #expect(deleted == ["a"] && runner.status == "q rebound")
        var intercepted: [Key] = []
        runner.interceptKey = { key, _ in intercepted.append(key); return key == .down }
        runner.handle(.down)
        runner.handle(.up)
        #expect(intercepted == [.down, .up] && runner.list.selectedIndexPath == ViewIndexPath(section: 0, row: 0))
    }
}

@Suite("Terminal runner, small terminals")
struct TerminalRunnerSizeTests {
    @Test("A frame never has more lines than the terminal: the title goes first, the status line stays")
    func tinyTerminal() {
        let list = TerminalListView(width: 20, height: 4)
        let factory = Factory<String, TerminalCell, TerminalSupplementaryView, TerminalListView, IndexPathIndex, IndexPathIndex>()
        factory.registerCell(.type(TerminalCell.self), in: list) { cell, item, _ in cell.columns = [TerminalColumn(item)] }
        let source = StaticDatasource(items: ["a", "b", "c"], factory: factory, container: list)
        list.dataSource = source
        let runner = TerminalRunner(list: list, title: "Title", write: { _ in })
        runner.status = "status"
        for lines in [1, 2, 3] {
            runner.layout(columns: 10, lines: lines)
            let frame = runner.frame().map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(frame.count == lines && frame.last == "status", "\(lines): \(frame)")
        }
    }

    @Test("A viewport that grows shows the lines above too: a list scrolled in a small terminal comes back to its top")
    func growingViewport() throws {
        let list = TerminalListView(width: 20, height: 1)
        let factory = Factory<String, TerminalCell, TerminalSupplementaryView, TerminalListView, IndexPathIndex, IndexPathIndex>()
        factory.registerCell(.type(TerminalCell.self), in: list) { cell, item, _ in cell.columns = [TerminalColumn(item)] }
        factory.registerHeaderText { _ in "Header" }
        let source = StaticDatasource(items: (0..<10).map { "row \($0)" }, factory: factory, container: list)
        list.dataSource = source
        #expect(try list.render().map { $0.trimmingCharacters(in: .whitespaces) } == ["row 0"])   // scrolled to the selection
        list.height = 4
        #expect(try list.render().map { $0.trimmingCharacters(in: .whitespaces) } == ["Header", "row 0", "row 1", "row 2"])
    }
}
