@testable import Canopy
import CanopyTestSupport
import Testing

/// The page directory against a model, through chunk and block splits and removals at the real sizes (a group needs
/// more than ``ViewIndex/maxPagesPerChunk`` × ``ViewIndex/ChunkList/blockSize`` pages, about 130k rows, before its
/// chunks take a second block: too many for the views' own tests, so the directory is driven directly here).
@Suite("View index: chunks and blocks split, empty and answer position queries as the model does")
struct ViewIndexChunkTests {
    struct ModelPage {
        var id: UInt64
        var count: Int
        var first: UInt64
    }

    static func bytes(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) } }

    /// The directory's pages in order, with where they are.
    static func pages(_ group: ViewIndex.Group) -> [(ViewIndex.Location, ViewIndex.PageRef)] {
        group.chunks.enumerated().flatMap { c, chunk in chunk.pages.enumerated().map { (ViewIndex.Location(chunk: c, page: $0), $1) } }
    }

    @Test("Random page insertions, count changes and removals over several chunks", arguments: [1 as UInt64, 2, 3])
    func againstModel(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        var index = ViewIndex()
        let name = "all"
        let groupID = index.groupID(for: name)
        var model: [ModelPage] = []
        for i in 0..<(ViewIndex.maxPagesPerChunk * ViewIndex.ChunkList.blockSize * 2 + 100) {
            let page = ModelPage(id: index.newPageID(), count: Int(random.next() % 64) + 1, first: UInt64(i + 1) << 32)
            model.append(page)
            index.appendPage(ViewIndex.PageRef(id: page.id, count: page.count, first: Self.bytes(page.first)), to: name, groupID: groupID)
        }
        for step in 0..<6_000 {
            let context = "seed \(seed), step \(step)"
            guard let group = index.groups[name] else { Issue.record("the group went away; \(context)"); return }
            // Half the steps in the first quarter of the group, so that its chunks split until their block does.
            let position = Int(random.next() % UInt64(step % 2 == 0 ? max(1, model.count / 4) : model.count))
            let location = try #require(index.locate(Self.bytes(model[position].first), in: group), "\(context)")
            #expect(index.page(at: location, in: group).id == model[position].id, "\(context)")
            switch random.next() % 10 {
            case 0..<6:
                // A page split: a new page right after this one, its first entry between the two pages' firsts.
                let upper = position + 1 < model.count ? model[position + 1].first : model[position].first + (1 << 32)
                guard upper - model[position].first >= 2 else { continue }
                let page = ModelPage(id: index.newPageID(), count: Int(random.next() % 64) + 1, first: model[position].first + (upper - model[position].first) / 2)
                model.insert(page, at: position + 1)
                index.insertPage(ViewIndex.PageRef(id: page.id, count: page.count, first: Self.bytes(page.first)), after: location, in: name, groupID: groupID)
            case 6..<8:
                let count = Int(random.next() % 64) + 1
                model[position].count = count
                index.updatePage(at: location, in: name, count: count, first: nil)
            default:
                guard model.count > 1 else { continue }
                model.remove(at: position)
                index.updatePage(at: location, in: name, count: 0, first: nil)
            }
            guard step % 500 == 0 || step == 5_999, let group = index.groups[name] else { continue }
            // The whole directory against the model.
            let listed = Self.pages(group)
            #expect(listed.map(\.1.id) == model.map(\.id), "\(context)")
            #expect(group.count == model.reduce(0) { $0 + $1.count }, "\(context)")
            #expect(group.chunks.allSatisfy { $0.pageCount > 0 && $0.pageCount <= ViewIndex.maxPagesPerChunk }, "\(context)")
            #expect(group.chunks.blocks.allSatisfy { !$0.chunks.isEmpty && $0.chunks.count <= 2 * ViewIndex.ChunkList.blockSize }, "\(context)")
            #expect(group.chunks.blocks.reduce(0) { $0 + $1.chunks.count } == group.chunks.count, "\(context)")
            #expect(group.chunks.blocks.allSatisfy { $0.total == $0.chunks.reduce(0) { $0 + $1.total } }, "\(context)")
            #expect(Array(group.chunks).count == group.chunks.count, "\(context)")
            #expect(group.chunks.allSatisfy { $0.total == $0.pages.reduce(0) { $0 + $1.count } }, "\(context)")
            var rank = 0
            for ((location, ref), page) in zip(listed, model) {
                #expect(index.rank(of: location, in: group) == rank, "\(context)")
                #expect(ref.count == page.count, "\(context)")
                rank += page.count
            }
            for _ in 0..<200 {
                let entry = Int(random.next() % UInt64(group.count))
                let (location, offset) = try #require(index.location(ofIndex: entry, in: group), "\(context)")
                let before = index.rank(of: location, in: group)
                #expect(before + offset == entry && offset < Int(index.page(at: location, in: group).count), "\(context)")
            }
            #expect(index.location(ofIndex: group.count, in: group) == nil, "\(context)")
            // An entry between pages' first entries (or before all) is located in the last page whose first entry
            // is not after it, across chunks and blocks, as a linear search of the model finds it. (Its own generator:
            // the steps above stay those of the seed.)
            var probes = SeededRandom(seed: seed &* 1_000_003 &+ UInt64(step))
            for _ in 0..<200 {
                let order = probes.next() % ((model.last?.first ?? 0) + (1 << 33))
                let expected = model.lastIndex { $0.first <= order } ?? 0
                let location = try #require(index.locate(Self.bytes(order), in: group), "\(context)")
                #expect(index.page(at: location, in: group).id == model[expected].id, "\(context), order \(order)")
            }
            var steps = 0
            var cursor = index.locate([], in: group)
            while let current = cursor { steps += 1; cursor = index.next(after: current, in: group) }
            #expect(steps == model.count, "\(context)")
        }
        #expect((index.groups[name]?.chunks.blocks.count ?? 0) > 3, "seed \(seed): the blocks never split")
    }
}
