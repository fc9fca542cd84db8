import Canopy
import CanopySource
import Testing

enum Model {
    case text(String)
    case badge(Int)
}

typealias ModelFactory = Factory<Model, TextCell, TextHeader, TestContainer, IndexPathIndex, IndexPathIndex>

@Suite("Factory")
struct FactoryTests {
    func index(_ section: Int, _ row: Int) -> IndexPathIndex { IndexPathIndex(indexPath: ViewIndexPath(section: section, row: row)) }

    @Test("Cells are chosen by key among registrations and configured with the item and index")
    func cellsByKey() throws {
        let container = TestContainer()
        let factory = ModelFactory(cellKey: { model, _ in if case .text = model { "text" } else { "badge" } })
        factory.registerCell(.type(TextCell.self), in: container, key: "text") { cell, model, index in
            if case .text(let text) = model { cell.text = "\(text) at \(index.indexPath)" }
        }
        factory.registerCell(.builder(identifier: "badge-cell") { TextCell() }, in: container, key: "badge") { cell, model, _ in
            if case .badge(let count) = model { cell.text = "(\(count))" }
        }
        #expect(factory.registeredCellKeys == ["badge", "text"])
        #expect(try factory.cell(for: .text("hello"), in: container, at: index(0, 2)).text == "hello at [0, 2]")
        #expect(try factory.cell(for: .badge(3), in: container, at: index(1, 0)).text == "(3)")
        #expect(container.cellDescriptors.keys.sorted() == ["CanopySourceTests.TextCell", "badge-cell"])
    }

    @Test("A key with no registration is a typed error that lists the registered keys")
    func unknownKey() throws {
        let container = TestContainer()
        let factory = ModelFactory(cellKey: { model, _ in if case .text = model { "text" } else { "badge" } })
        factory.registerCell(.type(TextCell.self), in: container, key: "text") { _, _, _ in }
        let error = try #require(throws: SourceError.self) { try factory.cell(for: .badge(1), in: container, at: index(0, 0)) }
        #expect(error.code == .unregisteredKey)
        #expect(error.message.contains("'badge'") && error.message.contains("registered keys: text"))
        #expect(error.indexPath == ViewIndexPath(section: 0, row: 0))
    }

    @Test("Types are identified by full identity: a type that isn't the cell type is a typeMismatch error")
    func typeIdentity() throws {
        let container = TestContainer()
        let factory = ModelFactory()
        factory.registerCell(.type(BadgeCell.self), in: container) { _, _, _ in }
        #expect(container.cellDescriptors.keys.contains("CanopySourceTests.BadgeCell"))
        let error = try #require(throws: SourceError.self) { try factory.cell(for: .text("x"), in: container, at: index(0, 0)) }
        #expect(error.code == .typeMismatch)
    }

    @Test("Header text without footer text, and footer without header")
    func headerAndFooterText() {
        let headerOnly = ModelFactory()
        headerOnly.registerHeaderText { "Section \($0.indexPath.section)" }
        #expect(headerOnly.supplementaryText(kind: .header, at: index(2, 0)) == "Section 2")
        #expect(headerOnly.supplementaryText(kind: .footer, at: index(2, 0)) == nil)
        #expect(!headerOnly.hasSupplementary(kind: .footer))

        let footerOnly = ModelFactory()
        footerOnly.registerFooterText { "\($0.indexPath.section) items" }
        #expect(footerOnly.supplementaryText(kind: .header, at: index(0, 0)) == nil)
        #expect(footerOnly.supplementaryText(kind: .footer, at: index(0, 0)) == "0 items")
    }

    @Test("Supplementary views of custom kinds are returned and configured; unregistered kinds give nil, unknown keys an error")
    func customKinds() throws {
        let container = TestContainer()
        let badge = SupplementaryKind("badge")
        let factory = ModelFactory(supplementaryKey: { kind, index in kind == badge && index.indexPath.section > 0 ? "other" : "default" })
        factory.registerSupplementaryView(kind: badge, .type(TextHeader.self), in: container) { view, index in
            view.text = "badge \(index.indexPath.section)"
        }
        factory.registerSupplementaryView(kind: .header, .builder(identifier: "h") { TextHeader() }, in: container) { view, _ in
            view.text = "header"
        }
        #expect(try factory.supplementaryView(kind: badge, in: container, at: index(0, 0))?.text == "badge 0")
        #expect(try factory.supplementaryView(kind: .header, in: container, at: index(0, 0))?.text == "header")
        #expect(try factory.supplementaryView(kind: .footer, in: container, at: index(0, 0)) == nil)
        let error = try #require(throws: SourceError.self) { try factory.supplementaryView(kind: badge, in: container, at: index(1, 0)) }
        #expect(error.code == .unregisteredKey && error.message.contains("'other'"))
    }
}
