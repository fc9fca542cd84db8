import Canopy
import CanopySource
import Testing

@Suite("Static and sectioned data sources")
struct StaticSourceTests {
    func makeFactory(_ container: TestContainer) -> Factory<String, TextCell, TextHeader, TestContainer, IndexPathIndex, IndexPathIndex> {
        let factory = Factory<String, TextCell, TextHeader, TestContainer, IndexPathIndex, IndexPathIndex>()
        factory.registerCell(.type(TextCell.self), in: container) { cell, item, index in cell.text = "\(index.indexPath.row): \(item)" }
        factory.registerHeaderText { "header \($0.indexPath.section)" }
        return factory
    }

    @Test("Static: one section, counts, items, cells, and bounds give nil or an error")
    func staticSource() throws {
        let container = TestContainer()
        let source = StaticDatasource(items: ["a", "b", "c"], factory: makeFactory(container), container: container, title: "Letters")
        #expect(source.numberOfSections == 1 && source.numberOfItems(inSection: 0) == 3 && source.numberOfItems == 3)
        #expect(source.numberOfItems(inSection: 1) == 0 && source.numberOfItems(inSection: -1) == 0)
        #expect(source.item(at: ViewIndexPath(section: 0, row: 2)) == "c")
        for bad in [ViewIndexPath(section: 0, row: -1), ViewIndexPath(section: 0, row: 3), ViewIndexPath(section: 1, row: 0), ViewIndexPath(section: -1, row: 0)] {
            #expect(source.item(at: bad) == nil)
            #expect(throws: SourceError.self) { try source.cell(at: bad) }
            #expect(!source.canEdit(at: bad))
        }
        #expect(try source.cell(at: ViewIndexPath(section: 0, row: 1)).text == "1: b")
        #expect(source.supplementaryText(kind: .header, inSection: 0) == "header 0")
        #expect(source.supplementaryText(kind: .header, inSection: 1) == nil)
        #expect(source.title == "Letters")
    }

    @Test("Sectioned: sections with their own header and footer text, counts, bounds")
    func sectionedSource() throws {
        let container = TestContainer()
        let source = SectionedDatasource(
            sections: [DatasourceSection(items: ["x"], header: "Fruit", footer: "1 fruit"), DatasourceSection(items: ["y", "z"])],
            factory: makeFactory(container), container: container)
        #expect(source.numberOfSections == 2 && source.numberOfItems(inSection: 1) == 2 && source.numberOfItems(inSection: 2) == 0)
        #expect(source.item(at: ViewIndexPath(section: 1, row: 1)) == "z")
        #expect(source.item(at: ViewIndexPath(section: 1, row: 2)) == nil && source.item(at: ViewIndexPath(section: 2, row: 0)) == nil)
        #expect(source.item(at: ViewIndexPath(section: -3, row: -1)) == nil)
        #expect(source.supplementaryText(kind: .header, inSection: 0) == "Fruit")
        #expect(source.supplementaryText(kind: .footer, inSection: 0) == "1 fruit")
        #expect(source.supplementaryText(kind: .header, inSection: 1) == "header 1")  // the factory's text
        #expect(source.supplementaryText(kind: .footer, inSection: 1) == nil)
        #expect(try source.cell(at: ViewIndexPath(section: 1, row: 0)).text == "0: y")
    }

    @Test("Editing closures are asked only in range; without them nothing is editable")
    func editing() throws {
        let container = TestContainer()
        let source = StaticDatasource(items: ["a", "b"], factory: makeFactory(container), container: container)
        #expect(!source.canEdit(at: ViewIndexPath(section: 0, row: 0)))
        #expect(throws: SourceError.self) { try source.commitEdit(.delete, at: ViewIndexPath(section: 0, row: 0)) }
        // (Unowned, as the Building a List article does: the data source holds its editing closures.)
        source.editing = Editing(canEdit: { item, _ in item == "b" }, commitEdit: { [unowned source] action, item, path in
            if action == .delete, item != nil { source.items.remove(at: path.row) }
        }, canMove: { _, _ in true }, commitMove: { [unowned source] from, to in source.items.swapAt(from.row, to.row) })
        #expect(!source.canEdit(at: ViewIndexPath(section: 0, row: 0)) && source.canEdit(at: ViewIndexPath(section: 0, row: 1)))
        #expect(throws: SourceError.self) { try source.commitEdit(.delete, at: ViewIndexPath(section: 0, row: 0)) }
        try source.commitEdit(.delete, at: ViewIndexPath(section: 0, row: 1))
        #expect(source.items == ["a"])
        #expect(throws: SourceError.self) { try source.commitMove(from: ViewIndexPath(section: 0, row: 0), to: ViewIndexPath(section: 3, row: 0)) }
    }

    /// A bespoke type composing a data source, as the provider protocol intends.
    final class Letters: DataSourceProvider {
        let container = TestContainer()
        let dataSource: StaticDatasource<String, TextCell, TextHeader, TestContainer>
        init() {
            let factory = Factory<String, TextCell, TextHeader, TestContainer, IndexPathIndex, IndexPathIndex>()
            factory.registerCell(.type(TextCell.self), in: container) { cell, item, _ in cell.text = item.uppercased() }
            dataSource = StaticDatasource(items: ["q"], factory: factory, container: container)
        }
    }

    @Test("A provider exposes its composed data source")
    func provider() throws {
        let letters = Letters()
        #expect(try letters.dataSource.cell(at: ViewIndexPath(section: 0, row: 0)).text == "Q")
    }
}
