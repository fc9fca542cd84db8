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
        /// Chunks per block, about the square root of the chunks of a million-row group.
        static let blockSize = 32

        private(set) var blocks: [[Chunk]] = []
        /// Per block, the entries of its chunks (the sum of their ``Chunk/total``): finding the chunk of an entry, or
        /// the entries before a chunk, skips whole blocks.
        private(set) var blockTotals: [Int] = []
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
            for (block, chunks) in blocks.enumerated() {
                if remaining < chunks.count { return (block, remaining) }
                remaining -= chunks.count
            }
            return (blocks.count, remaining)
        }

        subscript(index: Int) -> Chunk {
            // (_read, not get: reading a chunk's count or slots borrows it instead of copying it, two retains.)
            _read {
                let (block, offset) = position(of: index)
                yield blocks[block][offset]
            }
            _modify {
                let (block, offset) = position(of: index)
                let before = blocks[block][offset].total
                yield &blocks[block][offset]
                blockTotals[block] += blocks[block][offset].total - before
            }
            set {
                let (block, offset) = position(of: index)
                blockTotals[block] += newValue.total - blocks[block][offset].total
                blocks[block][offset] = newValue
            }
        }

        /// The chunk holding the entry at `index` (of the entries of all chunks) and the entry's place among that
        /// chunk's entries, or `nil` when `index` is past the last entry.
        func chunk(containingEntry index: Int) -> (chunk: Int, remaining: Int)? {
            var remaining = index
            var first = 0
            for (block, total) in blockTotals.enumerated() {
                guard remaining < total else {
                    remaining -= total
                    first += blocks[block].count
                    continue
                }
                for (offset, chunk) in blocks[block].enumerated() {
                    if remaining < chunk.total { return (first + offset, remaining) }
                    remaining -= chunk.total
                }
                return nil
            }
            return nil
        }

        /// The entries of the chunks before chunk `index`.
        func entries(before index: Int) -> Int {
            var remaining = index
            var entries = 0
            for (block, chunks) in blocks.enumerated() {
                guard remaining >= chunks.count else {
                    for chunk in chunks.prefix(remaining) { entries += chunk.total }
                    return entries
                }
                remaining -= chunks.count
                entries += blockTotals[block]
            }
            return entries
        }

        /// The chunks in order, block by block (no lookup per chunk).
        struct Iterator: IteratorProtocol {
            fileprivate var blocks: IndexingIterator<[[Chunk]]>
            fileprivate var current: IndexingIterator<[Chunk]>?

            mutating func next() -> Chunk? {
                while true {
                    if let chunk = current?.next() { return chunk }
                    guard let block = blocks.next() else { return nil }
                    current = block.makeIterator()
                }
            }
        }

        func makeIterator() -> Iterator { Iterator(blocks: blocks.makeIterator(), current: nil) }

        /// Runs `body` on the last chunk, in place (appending pages while a directory is loaded).
        mutating func modifyLast<R>(_ body: (inout Chunk) -> R) -> R? {
            guard let block = blocks.indices.last, let offset = blocks[block].indices.last else { return nil }
            let before = blocks[block][offset].total
            defer { blockTotals[block] += blocks[block][offset].total - before }
            return body(&blocks[block][offset])
        }

        mutating func append(_ chunk: Chunk) {
            if let last = blocks.indices.last, blocks[last].count < Self.blockSize {
                blocks[last].append(chunk)
                blockTotals[last] += chunk.total
            } else {
                blocks.append([chunk])
                blockTotals.append(chunk.total)
            }
            count += 1
        }

        mutating func insert(_ chunk: Chunk, at index: Int) {
            guard index < count else { return append(chunk) }
            let (block, offset) = position(of: index)
            blocks[block].insert(chunk, at: offset)
            blockTotals[block] += chunk.total
            count += 1
            if blocks[block].count > 2 * Self.blockSize {
                let upper = Array(blocks[block][Self.blockSize...])
                blocks[block].removeSubrange(Self.blockSize...)
                let upperTotal = upper.reduce(0) { $0 + $1.total }
                blockTotals[block] -= upperTotal
                blocks.insert(upper, at: block + 1)
                blockTotals.insert(upperTotal, at: block + 1)
            }
        }

        @discardableResult
        mutating func remove(at index: Int) -> Chunk {
            let (block, offset) = position(of: index)
            let chunk = blocks[block].remove(at: offset)
            blockTotals[block] -= chunk.total
            count -= 1
            if blocks[block].isEmpty {
                blocks.remove(at: block)
                blockTotals.remove(at: block)
            }
            return chunk
        }
    }
}
