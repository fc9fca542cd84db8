/// The in-memory directory of a view's pages: per group, the pages in order with their entry counts and first
/// entries, in chunks with running totals.
///
/// It answers position queries without scanning a group: finding the page for an entry is two binary searches
/// (over chunks, then pages in a chunk) comparing first-entry bytes; the rank of a page is the sum of the chunk totals
/// before it plus the page counts before it in its chunk. With pages of up to 64 entries and chunks of up to 128 pages,
/// a group of a million rows has about 250 to 500 chunks, so every query touches a few hundred integers at most.
///
/// It is a value (copy-on-write): a write transaction mutates its own copy, and the committed copy is kept per view
/// version for readers at that version. A transaction's first change to a group copies the block of chunks it changes
/// and the chunk itself (``ChunkList``), not every chunk of the group. It is rebuilt from the page table when a reader meets a version it has not
/// seen (another process wrote).
struct ViewIndex: Sendable {
    /// A page as it is added to the directory.
    struct PageRef: Sendable, Hashable {
        var id: UInt64
        var count: Int
        var first: [UInt8]
    }

    /// A page in a chunk: plain integers, so that copying a chunk (a write transaction's first change to it, as the
    /// committed index keeps the old one) is a memory copy, with no reference count per page. Its first entry lives in
    /// the chunk's ``Chunk/firstBytes``.
    struct Slot: Sendable, Hashable {
        var id: UInt64
        var count: Int32
        var firstStart: Int32
        var firstLength: Int32
    }

    struct Chunk: Sendable {
        private(set) var slots: [Slot] = []
        /// The pages' first entries, back to back; a replaced first entry leaves garbage until the chunk compacts.
        private(set) var firstBytes: [UInt8] = []
        var total: Int = 0

        init() {}

        init(pages: some Sequence<PageRef>) {
            for page in pages { append(page) }
        }

        var pageCount: Int { slots.count }

        /// The pages with their first entries (allocates: for walks over the whole directory).
        var pages: [PageRef] { slots.indices.map { PageRef(id: slots[$0].id, count: Int(slots[$0].count), first: first(of: $0)) } }

        func first(of page: Int) -> [UInt8] {
            let slot = slots[page]
            return Array(firstBytes[Int(slot.firstStart)..<Int(slot.firstStart + slot.firstLength)])
        }

        /// Whether the first entry of `page` is `<= order` (byte order).
        @inline(__always)
        func first(of page: Int, isAtMost order: [UInt8]) -> Bool {
            let slot = slots[page]
            return firstBytes.withUnsafeBufferPointer { arena in
                order.withUnsafeBufferPointer { other in
                    let length = Int(slot.firstLength)
                    let common = min(length, other.count)
                    if common > 0, let base = arena.baseAddress, let otherBase = other.baseAddress {
                        let result = memcmp(base + Int(slot.firstStart), otherBase, common)
                        if result != 0 { return result < 0 }
                    }
                    return length <= other.count
                }
            }
        }

        private mutating func store(_ first: [UInt8]) -> (start: Int32, length: Int32) {
            if firstBytes.count > 4_096 && firstBytes.count > 2 * liveBytes() { compact() }
            let start = Int32(firstBytes.count)
            firstBytes.append(contentsOf: first)
            return (start, Int32(first.count))
        }

        private func liveBytes() -> Int { slots.reduce(0) { $0 + Int($1.firstLength) } }

        private mutating func compact() {
            var arena: [UInt8] = []
            arena.reserveCapacity(liveBytes())
            for i in slots.indices {
                let start = Int(slots[i].firstStart)
                let length = Int(slots[i].firstLength)
                slots[i].firstStart = Int32(arena.count)
                arena.append(contentsOf: firstBytes[start..<(start + length)])
            }
            firstBytes = arena
        }

        mutating func append(_ page: PageRef) {
            let (start, length) = store(page.first)
            slots.append(Slot(id: page.id, count: Int32(page.count), firstStart: start, firstLength: length))
            total += page.count
        }

        mutating func insert(_ page: PageRef, at position: Int) {
            let (start, length) = store(page.first)
            slots.insert(Slot(id: page.id, count: Int32(page.count), firstStart: start, firstLength: length), at: position)
            total += page.count
        }

        mutating func remove(at position: Int) {
            total -= Int(slots[position].count)
            slots.remove(at: position)
        }

        mutating func setCount(_ count: Int, at position: Int) {
            total += count - Int(slots[position].count)
            slots[position].count = Int32(count)
        }

        mutating func setFirst(_ first: [UInt8], at position: Int) {
            let (start, length) = store(first)
            slots[position].firstStart = start
            slots[position].firstLength = length
        }

        /// Moves the upper half of the pages into a new chunk, returned. Copies slots and first entries as they are
        /// (no array per page): a directory loaded from storage has full chunks, which a write's first insertion
        /// splits.
        mutating func splitUpperHalf() -> Chunk {
            let half = slots.count / 2
            let upper = Chunk(slots: slots[half...], arena: firstBytes)
            self = Chunk(slots: slots[..<half], arena: firstBytes)
            return upper
        }

        /// A chunk of `source`'s pages, whose first entries are in `arena`.
        private init(slots source: ArraySlice<Slot>, arena: [UInt8]) {
            slots.reserveCapacity(source.count)
            firstBytes.reserveCapacity(source.reduce(0) { $0 + Int($1.firstLength) })
            arena.withUnsafeBufferPointer { arena in
                for var slot in source {
                    let start = Int(slot.firstStart)
                    slot.firstStart = Int32(firstBytes.count)
                    firstBytes.append(contentsOf: arena[start..<(start + Int(slot.firstLength))])
                    total += Int(slot.count)
                    slots.append(slot)
                }
            }
        }
    }

    struct Group: Sendable {
        var id: UInt32
        var chunks = ChunkList()
        var count = 0

        mutating func append(_ page: PageRef) {
            if chunks.modifyLast({ $0.pageCount }) ?? ViewIndex.maxPagesPerChunk >= ViewIndex.maxPagesPerChunk {
                chunks.append(Chunk())
            }
            chunks.modifyLast { $0.append(page) }
            count += page.count
        }
    }

    /// The most pages a chunk holds before it splits in two.
    static let maxPagesPerChunk = 128

    /// The view's version: advanced by every commit that changed the view.
    var version: UInt64 = 0
    var nextPageID: UInt64 = 1
    var nextGroupID: UInt32 = 1
    /// Non-empty groups by name.
    var groups: [String: Group] = [:]
    /// Every group name ever given an id (ids are kept so that pages need no rewriting).
    var groupIDs: [String: UInt32] = [:]
    var groupNames: [UInt32: String] = [:]
    /// The pages the commit that made this version wrote, decoded, exactly as it wrote them (none when it wrote more
    /// than ``committedPageLimit``, or when the index was loaded from the tables): a reader at this version, and the
    /// next write transaction, take a page from here instead of reading and decoding it again. The pages a commit
    /// changed are the ones its observers look up (where its rows went and came from). Valid for this version only,
    /// like the rest of the index: a write transaction's copy starts without them (``ViewWriter``).
    var committedPages: [UInt64: ViewPage] = [:]
    /// The most pages a commit leaves in ``committedPages`` (a bulk write keeps none: 2 KiB each, per cached version).
    static let committedPageLimit = 16

    var totalCount: Int { groups.values.reduce(0) { $0 + $1.count } }

    // MARK: Locating

    /// A page's place: chunk and page index within the group.
    struct Location: Hashable {
        var chunk: Int
        var page: Int
    }

    /// The page that holds (or would hold) `order` in `group`: the last page whose first entry is `<= order`, or the
    /// first page when `order` sorts before all. `nil` when the group has no pages.
    func locate(_ order: [UInt8], in group: Group) -> Location? {
        group.chunks.lastPage(withFirstEntryAtMost: order).map { Location(chunk: $0.chunk, page: $0.page) }
    }

    /// The number of entries of `group` before the page at `location`.
    func rank(of location: Location, in group: Group) -> Int {
        var total = group.chunks.entries(before: location.chunk)
        let slots = group.chunks[location.chunk].slots
        for p in 0..<location.page { total += Int(slots[p].count) }
        return total
    }

    /// The page holding the entry at `index` of `group`, and the entry's offset in that page.
    func location(ofIndex index: Int, in group: Group) -> (Location, offset: Int)? {
        guard index >= 0, index < group.count, let found = group.chunks.page(containingEntry: index) else { return nil }
        return (Location(chunk: found.chunk, page: found.page), found.offset)
    }

    func page(at location: Location, in group: Group) -> Slot {
        group.chunks[location.chunk].slots[location.page]
    }

    /// The location of the page after `location`, if any.
    func next(after location: Location, in group: Group) -> Location? {
        if location.page + 1 < group.chunks[location.chunk].pageCount {
            return Location(chunk: location.chunk, page: location.page + 1)
        }
        if location.chunk + 1 < group.chunks.count { return Location(chunk: location.chunk + 1, page: 0) }
        return nil
    }

    // MARK: Changing

    /// The id of `name`, assigning a new one if needed.
    mutating func groupID(for name: String) -> UInt32 {
        if let id = groupIDs[name] { return id }
        let id = nextGroupID
        nextGroupID += 1
        groupIDs[name] = id
        groupNames[id] = name
        return id
    }

    mutating func newPageID() -> UInt64 {
        defer { nextPageID += 1 }
        return nextPageID
    }

    /// Records a page's new count and first entry; removes it when empty.
    ///
    /// Mutates the group in place in the dictionary (through its index), so that no chunk array is copied: copying a
    /// group out and back would copy (and retain every first entry of) the chunk being changed.
    mutating func updatePage(at location: Location, in name: String, count: Int, first: [UInt8]?) {
        guard let slot = groups.index(forKey: name) else { return }
        let emptied = Self.update(&groups.values[slot], at: location, count: count, first: first)
        if emptied { groups.remove(at: slot) }
    }

    /// As ``updatePage(at:in:count:first:)``, for the group at `slot` of ``groups`` (found by the caller: its name
    /// is not hashed again). The slot is valid until a group is added or removed.
    mutating func updatePage(at location: Location, inGroupAt slot: [String: Group].Index, count: Int, first: [UInt8]?) {
        let emptied = Self.update(&groups.values[slot], at: location, count: count, first: first)
        if emptied { groups.remove(at: slot) }
    }

    /// Returns whether the group is now empty.
    private static func update(_ group: inout Group, at location: Location, count: Int, first: [UInt8]?) -> Bool {
        let old = Int(group.chunks[location.chunk].slots[location.page].count)
        group.count += count - old
        if count == 0 {
            group.chunks[location.chunk].remove(at: location.page)
            if group.chunks[location.chunk].pageCount == 0 { group.chunks.remove(at: location.chunk) }
        } else {
            group.chunks[location.chunk].setCount(count, at: location.page)
            if let first { group.chunks[location.chunk].setFirst(first, at: location.page) }
        }
        return group.count == 0
    }

    /// Inserts a page right after `location` (or as the first page of an empty group when `location` is nil).
    mutating func insertPage(_ page: PageRef, after location: Location?, in name: String, groupID: UInt32) {
        if groups[name] == nil { groups[name] = Group(id: groupID) }
        guard let slot = groups.index(forKey: name) else { return }
        Self.insert(page, after: location, into: &groups.values[slot])
    }

    private static func insert(_ page: PageRef, after location: Location?, into group: inout Group) {
        if let location {
            group.chunks[location.chunk].insert(page, at: location.page + 1)
            if group.chunks[location.chunk].pageCount > Self.maxPagesPerChunk {
                let upper = group.chunks[location.chunk].splitUpperHalf()
                group.chunks.insert(upper, at: location.chunk + 1)
            }
        } else {
            group.chunks.insert(Chunk(pages: [page]), at: 0)
        }
        group.count += page.count
    }

    /// Appends a page at the end of a group (bulk loading and rebuilding from storage).
    mutating func appendPage(_ page: PageRef, to name: String, groupID: UInt32) {
        groups[name, default: Group(id: groupID)].append(page)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
