import Canopy
import CanopySource
import Testing

/// TaylorSource's behaviours, and what it got wrong.
@Suite("TaylorSource parity")
struct ParityTests {
    func index(_ section: Int, _ row: Int) -> IndexPathIndex { IndexPathIndex(indexPath: ViewIndexPath(section: section, row: row)) }

    @Test("A custom kind named \"header\" is not the header: kinds are header, footer or a name of one's own")
    func customKindNamespace() throws {
        let custom = SupplementaryKind("header")
        #expect(custom != .header && custom.customName == "header" && SupplementaryKind.header.customName == nil)
        let container = TestContainer()
        let factory = ModelFactory()
        factory.registerSupplementaryView(kind: custom, .type(TextHeader.self), in: container) { view, _ in view.text = "custom" }
        #expect(!factory.hasSupplementary(kind: .header))
        #expect(try factory.supplementaryView(kind: .header, in: container, at: index(0, 0)) == nil)
        #expect(try factory.supplementaryView(kind: custom, in: container, at: index(0, 0))?.text == "custom")
    }

    @Test("SourceError carries the index path, reuse identifier and key as fields, and is Equatable; a wrong cell type says where")
    func errorFields() throws {
        let container = TestContainer()
        let factory = ModelFactory(cellKey: { model, _ in if case .text = model { "text" } else { "badge" } })
        factory.registerCell(.type(BadgeCell.self), in: container, key: "text") { _, _, _ in }
        let mismatch = try #require(throws: SourceError.self) { try factory.cell(for: .text("x"), in: container, at: index(2, 5)) }
        #expect(mismatch.code == .typeMismatch)
        #expect(mismatch.indexPath == ViewIndexPath(section: 2, row: 5))
        #expect(mismatch.reuseIdentifier == "CanopySourceTests.BadgeCell" && mismatch.key == "text")
        #expect(mismatch.description.contains("[2, 5]") && mismatch.description.contains("BadgeCell"))
        let unknown = try #require(throws: SourceError.self) { try factory.cell(for: .badge(1), in: container, at: index(0, 1)) }
        #expect(unknown.key == "badge" && unknown.code == .unregisteredKey)
        let again = try #require(throws: SourceError.self) { try factory.cell(for: .badge(1), in: container, at: index(0, 1)) }
        #expect(unknown == again && unknown != mismatch)
    }

    @Test("Editing styles per row: commitEdit refuses what canEdit or the row's style refuses (an insert no longer goes through)")
    func editingStyles() throws {
        let container = TestContainer()
        let factory = Factory<String, TextCell, TextHeader, TestContainer, IndexPathIndex, IndexPathIndex>()
        let source = StaticDatasource(items: ["locked", "deletable", "insert-here"], factory: factory, container: container)
        var committed: [String] = []
        source.editing = Editing(canEdit: { item, _ in item != "locked" },
                                 editingStyle: { item, _ in item == "insert-here" ? .insert : .delete },
                                 commitEdit: { action, item, _ in committed.append("\(action) \(item ?? "-")") })
        let path = { (row: Int) in ViewIndexPath(section: 0, row: row) }
        #expect([0, 1, 2, 3].map { source.editingStyle(at: path($0)) } == [.none, .delete, .insert, .none])
        #expect(throws: SourceError.self) { try source.commitEdit(.insert, at: path(0)) }   // canEdit says no
        #expect(throws: SourceError.self) { try source.commitEdit(.insert, at: path(1)) }   // the row offers delete
        #expect(throws: SourceError.self) { try source.commitEdit(.insert, at: path(7)) }   // out of range
        try source.commitEdit(.delete, at: path(1))
        try source.commitEdit(.insert, at: path(2))
        #expect(committed == ["delete deletable", "insert insert-here"])
    }

    @Test("Header and footer text are registered by key, as cells and supplementary views are")
    func textsByKey() {
        let factory = ModelFactory(supplementaryKey: { _, index in index.indexPath.section == 0 ? "first" : "other" })
        factory.registerHeaderText(key: "first") { _ in "First" }
        factory.registerHeaderText(key: "other") { "Section \($0.indexPath.section)" }
        factory.registerFooterText(key: "first") { _ in "end of first" }
        #expect(factory.supplementaryText(kind: .header, at: index(0, 0)) == "First")
        #expect(factory.supplementaryText(kind: .header, at: index(3, 0)) == "Section 3")
        #expect(factory.supplementaryText(kind: .footer, at: index(0, 0)) == "end of first")
        #expect(factory.supplementaryText(kind: .footer, at: index(1, 0)) == nil)
        #expect(factory.registeredTextKeys(kind: .header) == ["first", "other"])
    }

    @Test("Every source is a collection of its items")
    func collections() {
        let container = TestContainer()
        let factory = Factory<String, TextCell, TextHeader, TestContainer, IndexPathIndex, IndexPathIndex>()
        let flat = StaticDatasource(items: ["a", "b"], factory: factory, container: container)
        #expect(Array(flat) == ["a", "b"] && flat.count == 2)
        let sectioned = SectionedDatasource(sections: [DatasourceSection(items: ["a"]), DatasourceSection(items: []), DatasourceSection(items: ["b", "c"])],
                                            factory: factory, container: container)
        #expect(Array(sectioned) == ["a", "b", "c"] && sectioned.count == 3)
    }
}

@Suite("Section models")
struct SectionModelTests {
    struct CalendarModel: Equatable { var title: String; var icon: String }

    @Test("A section carries a model of its own, and its header view is configured from it")
    func headerFromModel() throws {
        let container = TestContainer()
        let factory = Factory<String, TextCell, TextHeader, TestContainer, IndexPathIndex, IndexPathIndex>()
        let source = SectionedDatasource(sections: [DatasourceSection(id: "work", items: ["a"], model: CalendarModel(title: "Work", icon: "💼")),
                                                    DatasourceSection(id: "none", items: ["b"])],
                                         factory: factory, container: container)
        factory.registerSupplementaryView(kind: .header, .type(TextHeader.self), in: container) { [unowned source] view, index in
            let model = source.section(at: index.indexPath.section)?.model(as: CalendarModel.self)
            view.text = model.map { "\($0.icon) \($0.title)" } ?? "(no model)"
        }
        #expect(try source.supplementaryView(kind: .header, inSection: 0)?.text == "💼 Work")
        #expect(try source.supplementaryView(kind: .header, inSection: 1)?.text == "(no model)")
        #expect(source.section(at: 0)?.model(as: String.self) == nil && source.section(at: 9) == nil)
    }
}
