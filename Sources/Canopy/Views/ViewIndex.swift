/// The in-memory directory of a view's pages: per group, the pages in order with their entry counts and first
/// entries, in chunks with running totals.
///
/// It answers position queries without scanning a group: finding the page for an entry is two binary searches
/// (over chunks, then pages in a chunk) comparing first-entry bytes; the rank of a page is the sum of the chunk totals
/// before it plus the page counts before it in its chunk. With pages of up to 64 entries and chunks of up to 128 pages,
/// a group of a million rows has about 120 chunks, so every query touches a few hundred integers at most.
///
/// It is a value (copy-on-write): a write transaction mutates its own copy, and the committed copy is kept per view
/// version for readers at that version. It is rebuilt from the page table when a reader meets a version it has not
/// seen (another process wrote).
struct ViewIndex: Sendable {
    struct PageRef: Sendable, Hashable {
        var id: UInt64
        var count: Int
        var first: [UInt8]
    }

    struct Chunk: Sendable {
        var pages: [PageRef]
        var total: Int
    }

    struct Group: Sendable {
        var id: UInt32
        var chunks: [Chunk] = []
        var count = 0

        mutating func append(_ page: PageRef) {
            if chunks.isEmpty || chunks[chunks.count - 1].pages.count >= ViewIndex.maxPagesPerChunk {
                chunks.append(Chunk(pages: [], total: 0))
            }
            chunks[chunks.count - 1].pages.append(page)
            chunks[chunks.count - 1].total += page.count
            count += page.count
        }
    }

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
        guard !group.chunks.isEmpty else { return nil }
        var low = 0
        var high = group.chunks.count - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if lessOrEqual(group.chunks[mid].pages[0].first, order) { low = mid } else { high = mid - 1 }
        }
        let chunk = group.chunks[low]
        var pageLow = 0
        var pageHigh = chunk.pages.count - 1
        while pageLow < pageHigh {
            let mid = (pageLow + pageHigh + 1) / 2
            if lessOrEqual(chunk.pages[mid].first, order) { pageLow = mid } else { pageHigh = mid - 1 }
        }
        return Location(chunk: low, page: pageLow)
    }

    @inline(__always)
    func lessOrEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        !rhs.lexicographicallyPrecedes(lhs)
    }

    /// The number of entries of `group` before the page at `location`.
    func rank(of location: Location, in group: Group) -> Int {
        var total = 0
        for c in 0..<location.chunk { total += group.chunks[c].total }
        let pages = group.chunks[location.chunk].pages
        for p in 0..<location.page { total += pages[p].count }
        return total
    }

    /// The page holding the entry at `index` of `group`, and the entry's offset in that page.
    func location(ofIndex index: Int, in group: Group) -> (Location, offset: Int)? {
        guard index >= 0, index < group.count else { return nil }
        var remaining = index
        for (c, chunk) in group.chunks.enumerated() {
            if remaining >= chunk.total {
                remaining -= chunk.total
                continue
            }
            for (p, page) in chunk.pages.enumerated() {
                if remaining < page.count { return (Location(chunk: c, page: p), remaining) }
                remaining -= page.count
            }
        }
        return nil
    }

    func page(at location: Location, in group: Group) -> PageRef {
        group.chunks[location.chunk].pages[location.page]
    }

    /// The location of the page after `location`, if any.
    func next(after location: Location, in group: Group) -> Location? {
        if location.page + 1 < group.chunks[location.chunk].pages.count {
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

    /// Returns whether the group is now empty.
    private static func update(_ group: inout Group, at location: Location, count: Int, first: [UInt8]?) -> Bool {
        let old = group.chunks[location.chunk].pages[location.page].count
        group.count += count - old
        group.chunks[location.chunk].total += count - old
        if count == 0 {
            group.chunks[location.chunk].pages.remove(at: location.page)
            if group.chunks[location.chunk].pages.isEmpty { group.chunks.remove(at: location.chunk) }
        } else {
            group.chunks[location.chunk].pages[location.page].count = count
            if let first { group.chunks[location.chunk].pages[location.page].first = first }
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
            group.chunks[location.chunk].pages.insert(page, at: location.page + 1)
            group.chunks[location.chunk].total += page.count
            if group.chunks[location.chunk].pages.count > Self.maxPagesPerChunk {
                let upper = Array(group.chunks[location.chunk].pages[(group.chunks[location.chunk].pages.count / 2)...])
                group.chunks[location.chunk].pages.removeLast(upper.count)
                group.chunks[location.chunk].total -= upper.reduce(0) { $0 + $1.count }
                group.chunks.insert(Chunk(pages: upper, total: upper.reduce(0) { $0 + $1.count }), at: location.chunk + 1)
            }
        } else {
            group.chunks.insert(Chunk(pages: [page], total: page.count), at: 0)
        }
        group.count += page.count
    }

    /// Appends a page at the end of a group (bulk loading and rebuilding from storage).
    mutating func appendPage(_ page: PageRef, to name: String, groupID: UInt32) {
        groups[name, default: Group(id: groupID)].append(page)
    }
}
