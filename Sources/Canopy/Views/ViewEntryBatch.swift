#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Entries of a view collected to be placed in bulk, then sorted into the pages' order: a population's every entry
/// (``View/populate(in:tables:reason:)``), and a writer's entries of rows that entered the view in its transaction
/// (``ViewWriter/insertPendingEntries()``). Both then fill pages from the sorted batch with ``ViewPageFiller``.
///
/// The entries' order bytes live back to back in one arena (no array per entry to allocate, retain and free), each
/// entry with its first eight bytes as an integer, which settles most comparisons without reading the arena.
struct ViewEntryBatch {
    /// One entry: its group, and where its order bytes (sort key, then row key) are in the arena.
    struct Entry {
        var groupID: UInt32
        var sortKeyLength: Int32
        var start: Int
        var length: Int32
        /// The order bytes' first eight bytes, big-endian, zero-padded: comparing two orders them as their bytes do,
        /// or ties.
        var prefix: UInt64
    }

    private(set) var entries: [Entry] = []
    private var arena: [UInt8] = []

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }

    /// Adds an entry of group `groupID` whose order bytes are `order`, the first `sortKeyLength` of them its sort key.
    mutating func add(groupID: UInt32, order: some Collection<UInt8>, sortKeyLength: Int) {
        if entries.isEmpty {
            entries.reserveCapacity(256)
            arena.reserveCapacity(256 * 32)
        }
        let start = arena.count
        arena.append(contentsOf: order)
        let length = arena.count - start
        let prefix = arena.withUnsafeBufferPointer { Self.prefix(of: UnsafeBufferPointer(rebasing: $0[start..<(start + length)])) }
        entries.append(Entry(groupID: groupID, sortKeyLength: Int32(sortKeyLength), start: start, length: Int32(length), prefix: prefix))
    }

    /// Adds an entry of group `groupID` whose order bytes are `sortKey` then `rowKey` (without concatenating them
    /// first).
    mutating func add(groupID: UInt32, sortKey: [UInt8], rowKey: [UInt8]) {
        if entries.isEmpty {
            entries.reserveCapacity(256)
            arena.reserveCapacity(256 * 32)
        }
        let start = arena.count
        arena.append(contentsOf: sortKey)
        arena.append(contentsOf: rowKey)
        let length = arena.count - start
        let prefix = arena.withUnsafeBufferPointer { Self.prefix(of: UnsafeBufferPointer(rebasing: $0[start..<(start + length)])) }
        entries.append(Entry(groupID: groupID, sortKeyLength: Int32(sortKey.count), start: start, length: Int32(length), prefix: prefix))
    }

    /// The order bytes of `entry`.
    func order(of entry: Entry) -> ArraySlice<UInt8> {
        arena[entry.start..<(entry.start + Int(entry.length))]
    }

    /// The sort key of `entry` (its order bytes without the row key).
    func sortKey(of entry: Entry) -> ArraySlice<UInt8> {
        arena[entry.start..<(entry.start + Int(entry.sortKeyLength))]
    }

    /// The row key of `entry` (its order bytes after the sort key).
    func rowKey(of entry: Entry) -> ArraySlice<UInt8> {
        arena[(entry.start + Int(entry.sortKeyLength))..<(entry.start + Int(entry.length))]
    }

    /// Removes the entries for which `remove` returns `true` (their bytes stay in the arena, unused).
    mutating func removeAll(where remove: (Entry) throws -> Bool) rethrows {
        try entries.removeAll(where: remove)
    }

    /// Sorts the entries by group id, then order bytes: the pages' order.
    ///
    /// Rows often come in their sort order within a group (a population in key order of rows keyed by time, an app
    /// appending): the entries are first spread by group (one pass, stable, when the group ids are dense, as a
    /// directory assigns them), and each group is sorted only if it is not already (one comparison per entry).
    mutating func sort() {
        guard entries.count > 1 else { return }
        let arena = self.arena
        if Self.isSorted(entries[...], arena) { return }
        var low = UInt32.max
        var high = UInt32.min
        for entry in entries {
            low = min(low, entry.groupID)
            high = max(high, entry.groupID)
        }
        let span = Int(high - low) + 1
        guard span <= max(64, entries.count) else {
            entries.sort { Self.precedes($0, $1, arena) }
            return
        }
        if span > 1 {
            // Counting sort by group: stable, so each group keeps the order its entries came in.
            var starts = [Int](repeating: 0, count: span + 1)
            for entry in entries { starts[Int(entry.groupID - low) + 1] += 1 }
            for group in 0..<span { starts[group + 1] += starts[group] }
            let unsorted = entries
            entries.withUnsafeMutableBufferPointer { sorted in
                for entry in unsorted {
                    let group = Int(entry.groupID - low)
                    sorted[starts[group]] = entry
                    starts[group] += 1
                }
            }
        }
        var start = entries.startIndex
        while start < entries.endIndex {
            let groupID = entries[start].groupID
            var end = start + 1
            while end < entries.endIndex, entries[end].groupID == groupID { end += 1 }
            if !Self.isSorted(entries[start..<end], arena) { Self.sortGroup(&entries, start..<end, arena) }
            start = end
        }
    }

    /// Sorts `entries[range]`, entries of one group, by their order bytes: by a key of eight bytes with a stable radix
    /// sort, least significant byte first, over the three most significant key bytes that are not the same in every
    /// entry; then each run of entries equal in those by its whole bytes. The key is the eight bytes after those every entry of the group starts with (a
    /// sort key's type tag, a date's high bytes, a shared word): from the start, dates a second apart or titles with a
    /// common word tie in runs of hundreds. Merge-sorting a bulk insert's 100,000 entries of a view by comparisons cost
    /// about 700 instructions an entry; the radix passes cost a few tens per varying byte.
    private static func sortGroup(_ entries: inout [Entry], _ range: Range<Int>, _ arena: [UInt8]) {
        guard range.count >= 64 else {
            entries[range].sort { precedes($0, $1, arena) }
            return
        }
        var source: [(key: UInt64, entry: Entry)] = arena.withUnsafeBufferPointer { bytes in
            // The length of the bytes every entry starts with.
            let first = entries[range.lowerBound]
            var shared = Int(first.length)
            for entry in entries[range] {
                var length = 0
                let limit = min(shared, Int(entry.length))
                while length < limit, bytes[first.start + length] == bytes[entry.start + length] { length += 1 }
                shared = length
            }
            return entries[range].map { entry in
                var key: UInt64 = 0
                let available = min(8, Int(entry.length) - shared)
                for i in 0..<max(0, available) { key |= UInt64(bytes[entry.start + shared + i]) << UInt64(56 - 8 * i) }
                return (key, entry)
            }
        }
        var common = UInt64.max
        var any: UInt64 = 0
        for item in source {
            common &= item.key
            any |= item.key
        }
        // The radix passes cover the three most significant bytes that vary (enough to leave few ties among up to
        // millions of entries); entries equal in those are then sorted by comparison.
        let varying = common ^ any
        let shifts = stride(from: 56, through: 0, by: -8).filter { (varying >> UInt64($0)) & 0xFF != 0 }.prefix(3).reversed()
        var mask: UInt64 = 0
        for shift in shifts { mask |= 0xFF << UInt64(shift) }
        var target = source
        var counts = [Int](repeating: 0, count: 257)
        for shift in shifts.map(UInt64.init) {
            for i in counts.indices { counts[i] = 0 }
            for item in source { counts[Int((item.key >> shift) & 0xFF) + 1] += 1 }
            for i in 1..<counts.count { counts[i] += counts[i - 1] }
            source.withUnsafeBufferPointer { from in
                target.withUnsafeMutableBufferPointer { to in
                    for item in from {
                        let bucket = Int((item.key >> shift) & 0xFF)
                        to[counts[bucket]] = item
                        counts[bucket] += 1
                    }
                }
            }
            swap(&source, &target)
        }
        // Equal in the bytes sorted on: ordered by their whole bytes.
        var start = 0
        while start < source.count {
            var end = start + 1
            while end < source.count, source[end].key & mask == source[start].key & mask { end += 1 }
            if end - start > 1 { source[start..<end].sort { precedes($0.entry, $1.entry, arena) } }
            start = end
        }
        entries.replaceSubrange(range, with: source.lazy.map(\.entry))
    }

    /// Whether `entries` are in the pages' order.
    private static func isSorted(_ entries: ArraySlice<Entry>, _ arena: [UInt8]) -> Bool {
        var previous: Entry?
        for entry in entries {
            if let previous, precedes(entry, previous, arena) { return false }
            previous = entry
        }
        return true
    }

    /// Byte order of (group id, order bytes): the pages' order.
    @inline(__always)
    static func precedes(_ a: Entry, _ b: Entry, _ arena: [UInt8]) -> Bool {
        if a.groupID != b.groupID { return a.groupID < b.groupID }
        if a.prefix != b.prefix { return a.prefix < b.prefix }
        return arena.withUnsafeBufferPointer { bytes in
            guard let base = bytes.baseAddress else { return false }
            let common = Int(min(a.length, b.length))
            if common > 0 {
                let result = memcmp(base + a.start, base + b.start, common)
                if result != 0 { return result < 0 }
            }
            return a.length < b.length
        }
    }

    /// Whether two entries have the same group and order bytes.
    func isEqual(_ a: Entry, _ b: Entry) -> Bool {
        a.groupID == b.groupID && a.prefix == b.prefix && order(of: a) == order(of: b)
    }

    private static func prefix(of bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var value: UInt64 = 0
        for i in 0..<min(8, bytes.count) { value |= UInt64(bytes[i]) << UInt64(56 - 8 * i) }
        return value
    }
}
