extension ViewIndex {
    /// A group's chunks, in order, kept in blocks of up to ``blockSize`` (split in two past twice that).
    ///
    /// Why blocks: the directory is copy-on-write, and a write transaction's first change to a group copies what it
    /// changes away from the committed version that readers keep. With one flat array of chunks that is every chunk
    /// (two references each), and dropping an old version releases them again: in a group of a million rows (about
    /// 500 chunks) that was 34k of the 190k instructions of a one-row move in a manual list, and it grows with the
    /// group. With blocks, a change copies the array of blocks (a reference per block) and the block it changes
    /// (``blockSize`` chunks): about the square root of the chunks. Looking a chunk up walks the blocks' counts (a few
    /// dozen at most); iteration walks the blocks in order.
    struct ChunkList: RandomAccessCollection, MutableCollection, Sendable {
        /// Chunks per block. A change copies the array of blocks (a reference per block) and one block (two
        /// references per chunk), and dropping the old version releases them: about chunks / blockSize + 2 × blockSize
        /// references, least near the square root of half the chunks — 16 for the 250 to 500 chunks of a
        /// million-row group (32 cost a one-row move there about 3k more instructions).
        static let blockSize = 16

        /// A block: its chunks, and their entries (the sum of their ``Chunk/total``), so that finding the chunk of
        /// an entry, or the entries before a chunk, skips whole blocks.
        struct Block: Sendable {
            var chunks: [Chunk]
            var total: Int
        }

        private(set) var blocks: [Block] = []
        /// The number of chunks.
        private(set) var count = 0

        init() {}

        var startIndex: Int { 0 }
        var endIndex: Int { count }
        func index(after i: Int) -> Int { i + 1 }
        func index(before i: Int) -> Int { i - 1 }

        /// The block holding chunk `index` and the chunk's place in it. Indexes come from the directory's own
        /// bookkeeping (never from a caller or from disk); an index out of range traps, as an array's does.
        private func position(of index: Int) -> (block: Int, offset: Int) {
            var remaining = index
            for (block, contents) in blocks.enumerated() {
                if remaining < contents.chunks.count { return (block, remaining) }
                remaining -= contents.chunks.count
            }
            return (blocks.count, remaining)
        }

        subscript(index: Int) -> Chunk {
            // (_read, not get: reading a chunk's count or slots borrows it instead of copying it, two retains.)
            _read {
                let (block, offset) = position(of: index)
                yield blocks[block].chunks[offset]
            }
            _modify {
                let (block, offset) = position(of: index)
                let before = blocks[block].chunks[offset].total
                yield &blocks[block].chunks[offset]
                blocks[block].total += blocks[block].chunks[offset].total - before
            }
            set {
                let (block, offset) = position(of: index)
                blocks[block].total += newValue.total - blocks[block].chunks[offset].total
                blocks[block].chunks[offset] = newValue
            }
        }

        /// The page holding the entry at `index` (of the entries of all chunks) — its chunk, its place in the chunk —
        /// and the entry's offset in that page, or `nil` when `index` is past the last entry. Walks the blocks'
        /// totals, then one block's chunks, then one chunk's pages, reading them in place.
        func page(containingEntry index: Int) -> (chunk: Int, page: Int, offset: Int)? {
            var remaining = index
            var first = 0
            for contents in blocks {
                guard remaining < contents.total else {
                    remaining -= contents.total
                    first += contents.chunks.count
                    continue
                }
                for offset in contents.chunks.indices {
                    let total = contents.chunks[offset].total
                    guard remaining < total else {
                        remaining -= total
                        continue
                    }
                    for (page, slot) in contents.chunks[offset].slots.enumerated() {
                        if remaining < Int(slot.count) { return (first + offset, page, remaining) }
                        remaining -= Int(slot.count)
                    }
                    return nil
                }
                return nil
            }
            return nil
        }

        /// The last page whose first entry is `<= order` (byte order) — its chunk and its place in the chunk — or the
        /// first page when `order` sorts before all; `nil` without chunks. Binary searches over the blocks' first
        /// chunks, then over one block's chunks, then over one chunk's pages: no walk of the blocks per probe, as
        /// subscripting by chunk index would take (a million-row group has 16 blocks).
        func lastPage(withFirstEntryAtMost order: [UInt8]) -> (chunk: Int, page: Int)? {
            var low = 0
            var high = blocks.count - 1
            while low < high {
                let mid = (low + high + 1) / 2
                if blocks[mid].chunks[0].first(of: 0, isAtMost: order) { low = mid } else { high = mid - 1 }
            }
            guard low < blocks.count else { return nil }
            let block = low
            low = 0
            high = blocks[block].chunks.count - 1
            while low < high {
                let mid = (low + high + 1) / 2
                if blocks[block].chunks[mid].first(of: 0, isAtMost: order) { low = mid } else { high = mid - 1 }
            }
            let offset = low
            low = 0
            high = blocks[block].chunks[offset].pageCount - 1
            while low < high {
                let mid = (low + high + 1) / 2
                if blocks[block].chunks[offset].first(of: mid, isAtMost: order) { low = mid } else { high = mid - 1 }
            }
            let chunksBefore = blocks[..<block].reduce(0) { $0 + $1.chunks.count }
            return (chunksBefore + offset, low)
        }

        /// The entries of the chunks before chunk `index`.
        func entries(before index: Int) -> Int {
            var remaining = index
            var entries = 0
            for contents in blocks {
                guard remaining >= contents.chunks.count else {
                    for chunk in contents.chunks.prefix(remaining) { entries += chunk.total }
                    return entries
                }
                remaining -= contents.chunks.count
                entries += contents.total
            }
            return entries
        }

        /// The chunks in order, block by block (no lookup per chunk).
        struct Iterator: IteratorProtocol {
            fileprivate var blocks: IndexingIterator<[Block]>
            fileprivate var current: IndexingIterator<[Chunk]>?

            mutating func next() -> Chunk? {
                while true {
                    if let chunk = current?.next() { return chunk }
                    guard let block = blocks.next() else { return nil }
                    current = block.chunks.makeIterator()
                }
            }
        }

        func makeIterator() -> Iterator { Iterator(blocks: blocks.makeIterator(), current: nil) }

        /// Runs `body` on the last chunk, in place (appending pages while a directory is loaded).
        mutating func modifyLast<R>(_ body: (inout Chunk) -> R) -> R? {
            guard let block = blocks.indices.last, let offset = blocks[block].chunks.indices.last else { return nil }
            let before = blocks[block].chunks[offset].total
            defer { blocks[block].total += blocks[block].chunks[offset].total - before }
            return body(&blocks[block].chunks[offset])
        }

        mutating func append(_ chunk: Chunk) {
            if let last = blocks.indices.last, blocks[last].chunks.count < Self.blockSize {
                blocks[last].chunks.append(chunk)
                blocks[last].total += chunk.total
            } else {
                blocks.append(Block(chunks: [chunk], total: chunk.total))
            }
            count += 1
        }

        mutating func insert(_ chunk: Chunk, at index: Int) {
            guard index < count else { return append(chunk) }
            let (block, offset) = position(of: index)
            blocks[block].chunks.insert(chunk, at: offset)
            blocks[block].total += chunk.total
            count += 1
            if blocks[block].chunks.count > 2 * Self.blockSize {
                let upper = Array(blocks[block].chunks[Self.blockSize...])
                blocks[block].chunks.removeSubrange(Self.blockSize...)
                let upperTotal = upper.reduce(0) { $0 + $1.total }
                blocks[block].total -= upperTotal
                blocks.insert(Block(chunks: upper, total: upperTotal), at: block + 1)
            }
        }

        @discardableResult
        mutating func remove(at index: Int) -> Chunk {
            let (block, offset) = position(of: index)
            let chunk = blocks[block].chunks.remove(at: offset)
            blocks[block].total -= chunk.total
            count -= 1
            if blocks[block].chunks.isEmpty { blocks.remove(at: block) }
            return chunk
        }
    }
}
