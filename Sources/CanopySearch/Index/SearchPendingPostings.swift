import CanopyCore

/// Postings to be written to the `postings` table, in memory: a write transaction's changes (a posting per row and
/// word, or a removal), or a population's postings. Words are numbered once (a hash table over their bytes, kept in
/// one buffer); the postings are one log in the order they came (word number, row, body: 12 bytes), so that adding
/// one costs no allocation and no array per word. ``forEachTerm(_:)`` hands them out by word in byte order, each
/// word's rows by document number, each row once (its last change).
struct SearchPendingPostings {
    /// The words, back to back: word `w` is `wordBytes[wordStarts[w]..<wordStarts[w + 1]]`.
    private var wordBytes: [UInt8] = []
    private var wordStarts: [Int] = [0]
    private var wordHashes: [Int] = []
    /// Each word's first 8 bytes (``prefix(of:)``): a word of at most 8 bytes is its length and these.
    private var wordPrefixes: [UInt64] = []
    /// Open addressing over the words: `slots[i]` is 0 (free) or a word's (``slotValue(word:hash:)``: its number + 1 and
    /// its hash's high bits). Its count is a power of two, at least twice the words'.
    private var slots: [Int] = Array(repeating: 0, count: 64)
    /// The log: posting `p` is `entries[p]`, in the order they came (written one after the other: a log kept by word
    /// instead writes each posting to its word's place, a cache miss per posting while rows are indexed).
    private var entries: [Entry] = []
    /// A posting of the log: word number `word`, row `row` (its place in `rows`) and body code `body` (a compact body,
    /// or the number of a body in `bodies`: ``bufferedBit``). 12 bytes (24 when it held the document and the compact
    /// body whole): a bulk write logs a posting per word and row, and the log's pages are memory the process faults in.
    private struct Entry {
        var word: UInt32
        var row: UInt32
        var body: UInt32
    }
    /// The documents of the rows logged, by row: an entry names its row by its place here (4 bytes, not the 8 of a
    /// document). A row's postings are logged one after the other, so a row is added once per run of its postings and
    /// there are no more rows than postings.
    private var rows: [UInt64] = []
    /// The bodies that are not compact, back to back.
    private var bodies = ByteWriter(capacity: 0)
    /// Where each buffered body starts in `bodies`, by number.
    private var bufferedStarts: [Int] = []
    private let seed: UInt64 = {
        var hasher = Hasher()
        hasher.combine(0x5EA2C4 as UInt64)
        return UInt64(truncatingIfNeeded: hasher.finalize())
    }()

    /// The postings pending.
    var count: Int { entries.count }

    /// A body code (the low 32 bits of an entry) with this bit set is the number of a body in `bodies` (below it):
    /// its bytes are `bodies[bufferedStarts[b]..<]` up to the next one's start (an empty body is a removal). Without
    /// it, the code is a compact body's length, field and position, 7 bits each (``compactCode(length:field:position:)``).
    static let bufferedBit: UInt32 = 1 << 31

    /// The body code of a ``SearchPosting/compactBody(length:occurrences:)``: the 21 bits that vary (`length`, `field`
    /// and `position`, each below 128; the other three bytes are 1).
    @inline(__always)
    static func compactCode(length: Int, field: Int, position: Int) -> UInt32 {
        UInt32(truncatingIfNeeded: length & 0x7F | (field & 0x7F) << 7 | (position & 0x7F) << 14)
    }

    /// The compact body of a body code without ``bufferedBit`` (``compactCode(length:field:position:)`` undone).
    @inline(__always)
    static func compactBody(code: UInt32) -> UInt64 {
        let code = UInt64(code)
        return code & 0x7F | 1 << 8 | (code >> 7 & 0x7F) << 16 | 1 << 24 | 1 << 32 | (code >> 14 & 0x7F) << 40
    }

    /// The place in `rows` of row `document`, added when it is not the last row logged.
    @inline(__always)
    private mutating func row(of document: UInt64) -> Int {
        if let last = rows.last, last == document { return rows.count &- 1 }
        rows.append(document)
        return rows.count &- 1
    }

    /// Records row `document`'s posting of `term`, its body written by `encode` (nothing written: a removal).
    @inline(__always)
    mutating func append(term: UnsafeBufferPointer<UInt8>, document: UInt64, _ encode: (inout ByteWriter) -> Void) {
        let word = number(of: term, prefix: Self.prefix(of: term))
        let start = bodies.bytes.count
        let body = Self.bufferedBit | UInt32(truncatingIfNeeded: bufferedStarts.count)
        entries.append(Entry(word: UInt32(truncatingIfNeeded: word), row: UInt32(truncatingIfNeeded: row(of: document)), body: body))
        bufferedStarts.append(start)
        encode(&bodies)
    }

    /// Past this many entries the log is a bulk write's: its room is reserved at once for
    /// ``SearchIndexWriter/pendingPostingsLimit`` entries (memory the process touches only as it writes them), so that
    /// it stops growing by copies — each a new region the process faults in page by page, twice the log's size in all.
    /// Below it (a transaction of a few rows), the log grows as an array does.
    static let bulkEntries = 1 << 16

    /// Records row `document`'s posting of each distinct word of `analysis` (its body written from the analysis).
    mutating func append(wordsOf analysis: SearchDocumentAnalysis, document: UInt64) {
        if entries.count >= Self.bulkEntries, entries.capacity < SearchIndexWriter.pendingPostingsLimit {
            entries.reserveCapacity(SearchIndexWriter.pendingPostingsLimit)
        }
        var row = -1
        analysis.forEachPosting { word, prefix, compact, term in
            if row < 0 { row = self.row(of: document) }
            if compact != 0 {
                let word = number(of: word, prefix: prefix)
                entries.append(Entry(word: UInt32(truncatingIfNeeded: word), row: UInt32(truncatingIfNeeded: row), body: compact))
            } else {
                append(term: word, document: document) { analysis.encodePosting(term, into: &$0) }
            }
        }
    }

    /// Forgets everything (keeping the memory for the next postings).
    mutating func removeAll() {
        wordBytes.removeAll(keepingCapacity: true)
        wordStarts.removeAll(keepingCapacity: true)
        wordStarts.append(0)
        wordHashes.removeAll(keepingCapacity: true)
        wordPrefixes.removeAll(keepingCapacity: true)
        for index in slots.indices { slots[index] = 0 }
        entries.removeAll(keepingCapacity: true)
        rows.removeAll(keepingCapacity: true)
        bodies.bytes.removeAll(keepingCapacity: true)
        bufferedStarts.removeAll(keepingCapacity: true)
    }

    /// Calls `body` with each word (in byte order) and its postings by document, each row once: the last posting
    /// logged for it (a row changed twice in a transaction). The log's memory is given back once it is in word order,
    /// before `body` writes the blocks (LMDB's pages for them can reuse it); the postings are then gone from the log:
    /// ``removeAll()`` it before logging more.
    mutating func forEachTerm(_ body: (_ term: [UInt8], _ postings: SearchPostingRun) throws -> Void) rethrows {
        let words = wordHashes.count
        guard words > 0 else { return }
        var entries: [Entry] = []
        swap(&entries, &self.entries)
        let sortedWords = wordBytes.withUnsafeBufferPointer { bytes in
            (0..<words).sorted { a, b in
                SearchDocumentAnalysis.compare(
                    UnsafeBufferPointer(rebasing: bytes[wordStarts[a]..<wordStarts[a + 1]]),
                    UnsafeBufferPointer(rebasing: bytes[wordStarts[b]..<wordStarts[b + 1]])) < 0
            }
        }
        // The log by word, in log order within a word (a counting sort: stable), each entry's row and body code in
        // 8 bytes: the log is read in order and each word's entries written to its own range, one after the other
        // (what a word's run is then made of is read in order too, not gathered over the log entry by entry).
        let count = entries.count
        var firsts = [Int](repeating: 0, count: words + 1)
        let byWord: [UInt64] = entries.withUnsafeBufferPointer { entries in
            firsts.withUnsafeMutableBufferPointer { firsts in
                // (Word numbers are below `words`: this table gave them.)
                for entry in entries { firsts[Int(entry.word) &+ 1] &+= 1 }
                for word in 0..<words { firsts[word &+ 1] &+= firsts[word] }
                var next = [Int](firsts)
                return next.withUnsafeMutableBufferPointer { next in
                    [UInt64](unsafeUninitializedCapacity: count) { sorted, initialized in
                        for entry in entries {
                            let word = Int(entry.word)
                            sorted[next[word]] = UInt64(entry.row) << 32 | UInt64(entry.body)
                            next[word] &+= 1
                        }
                        initialized = count
                    }
                }
            }
        }
        entries = []
        // Each word's run written straight from its range (its rows, body starts and bodies, each array at its exact
        // size, through pointers): the bodies are copied once, into the run the blocks are encoded from.
        try byWord.withUnsafeBufferPointer { byWord in
            try rows.withUnsafeBufferPointer { rows in
                try bufferedStarts.withUnsafeBufferPointer { bufferedStarts in
                    try bodies.bytes.withUnsafeBufferPointer { bodies in
                        let bodyCount = bodies.count
                        /// Where buffered body `number` ends: where the next one starts.
                        func end(_ number: Int) -> Int { number &+ 1 < bufferedStarts.count ? bufferedStarts[number &+ 1] : bodyCount }
                        for word in sortedWords {
                            let range = firsts[word]..<firsts[word + 1]
                            var bytes = 0
                            for rank in range {
                                let code = UInt32(truncatingIfNeeded: byWord[rank])
                                guard code & Self.bufferedBit != 0 else { bytes &+= SearchPosting.compactBodySize; continue }
                                let number = Int(code & ~Self.bufferedBit)
                                bytes &+= end(number) &- bufferedStarts[number]
                            }
                            var run = SearchPostingRun()
                            run.documents = [UInt64](unsafeUninitializedCapacity: range.count) { documents, count in
                                for (index, rank) in range.enumerated() { documents[index] = rows[Int(truncatingIfNeeded: byWord[rank] >> 32)] }
                                count = range.count
                            }
                            var starts = [Int](repeating: 0, count: range.count)
                            run.writer.bytes = [UInt8](unsafeUninitializedCapacity: bytes) { buffer, initialized in
                                guard let destination = buffer.baseAddress else { return }
                                var offset = 0
                                for (index, rank) in range.enumerated() {
                                    starts[index] = offset
                                    let code = UInt32(truncatingIfNeeded: byWord[rank])
                                    guard code & Self.bufferedBit != 0 else {
                                        let compact = Self.compactBody(code: code)
                                        UnsafeMutableRawPointer(destination + offset).storeBytes(
                                            of: UInt32(truncatingIfNeeded: compact).littleEndian, as: UInt32.self)
                                        UnsafeMutableRawPointer(destination + offset).storeBytes(
                                            of: UInt16(truncatingIfNeeded: compact >> 32).littleEndian, toByteOffset: 4, as: UInt16.self)
                                        offset &+= SearchPosting.compactBodySize
                                        continue
                                    }
                                    let number = Int(code & ~Self.bufferedBit)
                                    let start = bufferedStarts[number]
                                    let size = end(number) &- start
                                    if size > 0, let source = bodies.baseAddress {
                                        (destination + offset).initialize(from: source + start, count: size)
                                    }
                                    offset &+= size
                                }
                                initialized = offset
                            }
                            run.starts = starts
                            try body(Array(wordBytes[wordStarts[word]..<wordStarts[word + 1]]), run.normalized())
                        }
                    }
                }
            }
        }
    }

    /// The number of `term` (whose first 8 bytes are `prefix`, ``prefix(of:)``), given on first sight.
    @inline(__always)
    private mutating func number(of term: UnsafeBufferPointer<UInt8>, prefix: UInt64) -> Int {
        let hash = Self.hash(term, prefix: prefix, seed: seed)
        // A slot holds the hash's high 32 bits beside the word's number + 1: most probes of another word end at the
        // slot's own bits. A word is then compared by its length and first 8 bytes, and by the rest of its bytes only
        // past 8 (most words: none).
        let tag = UInt64(truncatingIfNeeded: hash) & 0xFFFF_FFFF_0000_0000
        let found: Int = slots.withUnsafeBufferPointer { slots in
            wordStarts.withUnsafeBufferPointer { starts in
                wordPrefixes.withUnsafeBufferPointer { prefixes in
                    wordBytes.withUnsafeBufferPointer { bytes in
                        let mask = slots.count &- 1
                        var slot = hash & mask
                        while true {
                            let occupant = UInt64(bitPattern: Int64(slots[slot]))
                            if occupant == 0 { return -1 &- slot }
                            if occupant & 0xFFFF_FFFF_0000_0000 == tag {
                                let word = Int(truncatingIfNeeded: occupant & 0xFFFF_FFFF) &- 1
                                let start = starts[word]
                                let count = starts[word &+ 1] &- start
                                if count == term.count, prefixes[word] == prefix {
                                    guard count > 8, let stored = bytes.baseAddress, let other = term.baseAddress else { return word }
                                    if Self.equalBytes(UnsafeRawPointer(stored + start + 8), UnsafeRawPointer(other + 8), count: count &- 8) { return word }
                                }
                            }
                            slot = (slot &+ 1) & mask
                        }
                    }
                }
            }
        }
        if found >= 0 { return found }
        let slot = -1 &- found
        let word = wordHashes.count
        wordBytes.append(contentsOf: term)
        wordStarts.append(wordBytes.count)
        wordHashes.append(hash)
        wordPrefixes.append(prefix)
        slots[slot] = Self.slotValue(word: word, hash: hash)
        if wordHashes.count * 2 > slots.count { grow() }
        return word
    }

    /// The first 8 bytes of `bytes` as a big-endian integer, zero-padded past a shorter word (what
    /// ``SearchDocumentAnalysis`` sorts a row's words by): a word holds no 0 byte, so a word of at most 8 bytes is its
    /// length and these.
    @inline(__always)
    static func prefix(of bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        guard let base = bytes.baseAddress else { return 0 }
        if bytes.count >= 8 { return UInt64(bigEndian: UnsafeRawPointer(base).loadUnaligned(as: UInt64.self)) }
        // (The bytes little-endian, swapped: the first byte on top, the missing ones zero at the bottom.)
        return loadTail(UnsafeRawPointer(base), count: bytes.count).byteSwapped
    }

    /// What a slot holds for word `word` of hash `hash`: the hash's high 32 bits, then the word's number + 1 (below
    /// 2^32: every word has a log entry of 12 bytes in memory).
    @inline(__always)
    private static func slotValue(word: Int, hash: Int) -> Int {
        Int(bitPattern: UInt(truncatingIfNeeded: UInt64(truncatingIfNeeded: hash) & 0xFFFF_FFFF_0000_0000 | UInt64(word &+ 1)))
    }

    /// A seeded multiply-and-shift hash of a word's bytes (`prefix`, its first 8 bytes: ``prefix(of:)``, then the
    /// rest 8 at a time; a word is a few bytes: `Hasher`'s SipHash costs more than the rest of adding a posting). The
    /// seed is random per process (from `Hasher`'s), so that texts cannot be chosen to collide.
    @inline(__always)
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>, prefix: UInt64, seed: UInt64) -> Int {
        let count = bytes.count
        var hash = (seed ^ (UInt64(truncatingIfNeeded: count) &* 0x9E37_79B9_7F4A_7C15) ^ prefix) &* 0xBF58_476D_1CE4_E5B9
        hash ^= hash >> 29
        if count > 8, let base = bytes.baseAddress {
            let raw = UnsafeRawPointer(base)
            var offset = 8
            while offset + 8 <= count {
                hash = (hash ^ raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* 0xBF58_476D_1CE4_E5B9
                hash ^= hash >> 29
                offset += 8
            }
            hash ^= loadTail(raw + offset, count: count - offset)
        }
        hash = hash &* 0x94D0_49BB_1331_11EB
        hash ^= hash >> 31
        return Int(truncatingIfNeeded: hash)
    }

    /// Whether the `count` bytes at `a` and `b` are equal.
    @inline(__always)
    static func equalBytes(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count: Int) -> Bool {
        var offset = 0
        while offset + 8 <= count {
            if a.loadUnaligned(fromByteOffset: offset, as: UInt64.self) != b.loadUnaligned(fromByteOffset: offset, as: UInt64.self) { return false }
            offset += 8
        }
        return loadTail(a + offset, count: count - offset) == loadTail(b + offset, count: count - offset)
    }

    /// The `count` bytes at `bytes` (fewer than 8) as an integer, little-endian: at most three loads (4, 2 and 1
    /// bytes), not one per byte.
    @inline(__always)
    static func loadTail(_ bytes: UnsafeRawPointer, count: Int) -> UInt64 {
        var value: UInt64 = 0
        var offset = 0
        if count & 4 != 0 {
            value = UInt64(bytes.loadUnaligned(as: UInt32.self))
            offset = 4
        }
        if count & 2 != 0 {
            value |= UInt64(bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self)) << (8 * UInt64(offset))
            offset += 2
        }
        if count & 1 != 0 { value |= UInt64(bytes.load(fromByteOffset: offset, as: UInt8.self)) << (8 * UInt64(offset)) }
        return value
    }

    private mutating func grow() {
        var grown = [Int](repeating: 0, count: slots.count * 2)
        let mask = grown.count - 1
        for (word, hash) in wordHashes.enumerated() {
            var slot = hash & mask
            while grown[slot] != 0 { slot = (slot + 1) & mask }
            grown[slot] = Self.slotValue(word: word, hash: hash)
        }
        slots = grown
    }
}
