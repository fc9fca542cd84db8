/// The log of a ``SearchPendingPostings``, kept by word: each word's entries (8 bytes each, in the order they came) in
/// a chain of chunks of one block of memory, so that its postings are read by word at commit without a sort, a
/// second copy of the log, or a gather of entries scattered over it.
///
/// A chunk is a header — its capacity in the high 32 bits, the start of the word's next chunk in the low 32 (0 while
/// it is the word's last: no next chunk starts at 0, where the first word's first chunk is) — and that many entries.
/// A word's first chunk holds 4 entries, each next one twice its previous, up to ``largestChunk``: a word seen once
/// takes 40 bytes, a frequent one about 8 bytes a posting.
///
/// A class, owned by one ``SearchPendingPostings`` and never shared: a word's chain end is updated and an entry
/// written through pointers, without the uniqueness check of an array's element written through a struct (two per
/// posting). Word numbers come from the log's own word table and every position from the chains: none is read from
/// disk or given by a caller.
final class SearchPostingChains {
    /// Where a word's entries are: its first and last chunk, the entries in the last, and in all.
    private struct Chain {
        var first: UInt32
        var last: UInt32
        var lastCount: UInt32
        var count: UInt32
    }

    // Unchecked for exclusivity: the log is used by one writer (or one population) on one thread, and no method
    // calls out while it changes a property.
    @exclusivity(unchecked) private var slots: UnsafeMutablePointer<UInt64>
    @exclusivity(unchecked) private var slotCapacity: Int
    /// The slots in use (headers and entries).
    @exclusivity(unchecked) private(set) var slotCount = 0
    @exclusivity(unchecked) private var chains: UnsafeMutablePointer<Chain>
    @exclusivity(unchecked) private var chainCapacity: Int
    /// The words with a chain (numbered from 0 in the order they were added).
    @exclusivity(unchecked) private(set) var wordCount = 0

    /// The most entries a chunk holds.
    static let largestChunk = 256
    /// The entries of a word's first chunk.
    static let firstChunk = 4

    init() {
        slotCapacity = 256
        slots = UnsafeMutablePointer.allocate(capacity: slotCapacity)
        chainCapacity = 64
        chains = UnsafeMutablePointer.allocate(capacity: chainCapacity)
    }

    deinit {
        slots.deallocate()
        chains.deallocate()
    }

    /// Makes room for `count` slots in all (memory that is touched only as it is written).
    @inline(__always)
    func reserve(slots count: Int) {
        if count > slotCapacity { grow(to: count) }
    }

    private func grow(to count: Int) {
        let grown = UnsafeMutablePointer<UInt64>.allocate(capacity: count)
        grown.moveInitialize(from: slots, count: slotCount)
        slots.deallocate()
        slots = grown
        slotCapacity = count
    }

    /// Adds a word with an empty chain: its number is ``wordCount`` before the call.
    func addWord() {
        if wordCount == chainCapacity {
            let grown = UnsafeMutablePointer<Chain>.allocate(capacity: chainCapacity * 2)
            grown.moveInitialize(from: chains, count: wordCount)
            chains.deallocate()
            chains = grown
            chainCapacity *= 2
        }
        let chunk = UInt32(truncatingIfNeeded: newChunk(capacity: Self.firstChunk))
        (chains + wordCount).initialize(to: Chain(first: chunk, last: chunk, lastCount: 0, count: 0))
        wordCount += 1
    }

    /// Adds `entry` to the end of word `word`'s chain (below ``wordCount``), in a new chunk when its last is full.
    @inline(__always)
    func add(_ entry: UInt64, word: Int) {
        let chain = chains + word
        if chain.pointee.lastCount == UInt32(truncatingIfNeeded: slots[Int(chain.pointee.last)] >> 32) {
            let next = newChunk(capacity: min(Int(chain.pointee.lastCount) &* 2, Self.largestChunk))
            slots[Int(chain.pointee.last)] |= UInt64(truncatingIfNeeded: next)
            chain.pointee.last = UInt32(truncatingIfNeeded: next)
            chain.pointee.lastCount = 0
        }
        slots[Int(chain.pointee.last) &+ 1 &+ Int(chain.pointee.lastCount)] = entry
        chain.pointee.lastCount &+= 1
        chain.pointee.count &+= 1
    }

    /// Appends an empty chunk of `capacity` entries and returns its start.
    private func newChunk(capacity: Int) -> Int {
        let start = slotCount
        if start + 1 + capacity > slotCapacity { grow(to: max(slotCapacity * 2, start + 1 + capacity)) }
        slots[start] = UInt64(truncatingIfNeeded: capacity) << 32
        slotCount = start + 1 + capacity
        return start
    }

    /// The entries of word `word`.
    func count(ofWord word: Int) -> Int { Int(chains[word].count) }

    /// Calls `body` with each entry of word `word`, in the order they were added.
    @inline(__always)
    func forEachEntry(ofWord word: Int, _ body: (UInt64) -> Void) {
        let chain = chains[word]
        var chunk = Int(chain.first)
        while true {
            let header = slots[chunk]
            let next = Int(truncatingIfNeeded: header & 0xFFFF_FFFF)
            // (Every chunk but the last is full.)
            let filled = next == 0 ? Int(chain.lastCount) : Int(truncatingIfNeeded: header >> 32)
            var position = chunk &+ 1
            let end = position &+ filled
            while position < end {
                body(slots[position])
                position &+= 1
            }
            if next == 0 { return }
            chunk = next
        }
    }

    /// Forgets every word and entry (keeping the memory).
    func removeAll() {
        slotCount = 0
        wordCount = 0
    }
}
