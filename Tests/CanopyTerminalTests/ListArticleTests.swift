import Canopy
import CanopySource
import CanopyTerminal
import Foundation
import Testing

/// The example of the CanopySource article "Building a list", verbatim between the markers.
func buildingAListExample() throws -> (TerminalListView, AnyObject) {
    // ARTICLE-BEGIN
    struct Task: Identifiable, Equatable { let id: Int; var title: String; var done = false }

    let list = TerminalListView(width: 40, height: 10)
    let factory = Factory<Task, TerminalCell, TerminalSupplementaryView, TerminalListView, IndexPathIndex, IndexPathIndex>()
    factory.registerCell(.type(TerminalCell.self), in: list) { cell, task, _ in
        cell.columns = [TerminalColumn(task.done ? "[x]" : "[ ]", width: .fixed(3)), TerminalColumn(task.title)]
    }
    let source = StaticDatasource(items: [Task(id: 1, title: "Call Ada"), Task(id: 2, title: "Buy milk")],
                                  factory: factory, container: list, identity: .identifiable)
    list.dataSource = source
    source.items.insert(Task(id: 3, title: "Water the plants"), at: 0)   // one batch: an insert at [0, 0]
    source.items[2].done = true                                           // one batch: a reload of "Buy milk"
    source.editing = Editing(commitEdit: { [unowned source] action, task, _ in
        if action == .delete, let task { source.items.removeAll { $0.id == task.id } }   // one batch: a delete
    })
    try source.commitEdit(.delete, at: ViewIndexPath(section: 0, row: 1))   // "Call Ada"
    // ARTICLE-END
    #expect(source.lastUpdateError == nil && list.lastBatchError == nil)
    return (list, source)
}

@Suite("CanopySource article")
struct ListArticleTests {
    @Test("The 'Building a list' example is compiled here, verbatim, and its batches lead to the items")
    func example() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
        let article = try String(contentsOf: root.appendingPathComponent("Sources/CanopySource/CanopySource.docc/BuildingAList.md"), encoding: .utf8)
        let thisFile = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        let shown = LiveListTests.block(article, begin: "```swift\n", end: "```")
        let compiled = LiveListTests.block(thisFile, begin: "// ARTICLE-" + "BEGIN\n", end: "    // ARTICLE-" + "END")
        #expect(!compiled.isEmpty && shown == compiled, "the article's block and this file's differ: copy one onto the other")
        let (list, source) = try buildingAListExample()
        let lines = try withExtendedLifetime(source) { try list.render().map { $0.trimmingCharacters(in: .whitespaces) } }
        #expect(lines == ["[ ] Water the plants", "[x] Buy milk"])
    }
}
