/// One page of a view group: up to ``maxEntries`` entries in order, stored as one LMDB value.
///
/// Layout: group id (4 bytes big-endian), entry count (2 bytes big-endian), then entries. An entry is
/// `varint(orderLength) + order bytes`, where the order bytes are the sort key followed by the row key (collection id,
/// 4 bytes, then the key's UTF-8), so comparing order bytes orders entries and the row key is the suffix after the
/// sort key: `varint(sortKeyLength)` precedes the order bytes.
///
/// Pages stay at or under ``maxBytes`` so that LMDB keeps them inline in its leaf pages (no overflow pages to copy on
/// write), and so that two full pages fill one 4 KiB LMDB page: a node is 8 bytes of header, the 8-byte page id and
/// the value (with the store's 4-byte checksum), plus a 2-byte pointer, and a leaf holds 4,080 bytes
/// (2 × (2 + 8 + 8 + 2,016 + 4) = 4,076). The one exception is an entry larger than a page (a sort key over about
/// 2 KB): it gets a page of its own, which LMDB keeps in overflow pages. Pages are cut by bytes as well as by
/// entries, so a long sort key never makes its neighbours' pages grow past the bound.
struct ViewPage: Sendable {
    static let maxEntries = 64
    static let maxBytes = 2_016
    static let headerSize = 6

    var groupID: UInt32
    /// The encoded entries, back to back (without the header).
    private(set) var data: [UInt8]
    /// Start offset of each entry in `data`.
    private(set) var offsets: [Int]

    init(groupID: UInt32) {
        self.groupID = groupID
        data = []
        offsets = []
    }

    var count: Int { offsets.count }
    var byteSize: Int { Self.headerSize + data.count }
    /// Whether the page is past its bounds: more than ``maxEntries`` entries, or more than ``maxBytes`` bytes with
    /// more than one entry (an entry larger than a page has a page of its own).
    var isOverfull: Bool { count > Self.maxEntries || (byteSize > Self.maxBytes && count > 1) }

    /// Parses a stored page; throws on malformed bytes (never traps).
    ///
    /// One pass over the entries' two varints each, read in place with the one-byte case inlined (a page read per
    /// changed page and per observer lookup: the reading was most of a one-row update's page cost), then one copy of
    /// the entries' bytes.
    init(decoding bytes: UnsafeRawBufferPointer) throws {
        guard bytes.count >= Self.headerSize, let base = bytes.baseAddress else { throw ByteReader.Malformed(offset: 0) }
        groupID = bytes.loadBigEndianUInt32(at: 0)
        let count = Int(bytes[4]) << 8 | Int(bytes[5])
        let limit = bytes.count
        var position = Self.headerSize
        offsets = try [Int](unsafeUninitializedCapacity: count) { starts, initialized in
            initialized = 0
            while initialized < count {
                starts[initialized] = position - Self.headerSize
                let sortKeyLength: UInt64
                let length: UInt64
                if position + 2 <= limit, base.load(fromByteOffset: position, as: UInt8.self) | base.load(fromByteOffset: position + 1, as: UInt8.self) < 0x80 {
                    // Both lengths in one byte each: the common case (order bytes under 128 bytes).
                    sortKeyLength = UInt64(base.load(fromByteOffset: position, as: UInt8.self))
                    length = UInt64(base.load(fromByteOffset: position + 1, as: UInt8.self))
                    position += 2
                } else {
                    do throws(VarInt.Malformed) {
                        sortKeyLength = try VarInt.read(base, at: &position, limit: limit)
                        length = try VarInt.read(base, at: &position, limit: limit)
                    } catch {
                        throw ByteReader.Malformed(offset: error.offset)
                    }
                }
                // The row key follows the sort key within the order bytes: a sort key longer than them (a changed
                // byte) would make the row key's range run backwards, which ``rowKey(at:)`` must never see.
                guard sortKeyLength <= length, length <= UInt64(limit - position) else { throw ByteReader.Malformed(offset: position) }
                position += Int(length)
                initialized += 1
            }
        }
        guard position == limit else { throw ByteReader.Malformed(offset: position) }
        // Room for a few inserts without growing (a written page takes one or a few entries per transaction).
        var entries: [UInt8] = []
        entries.reserveCapacity(limit - Self.headerSize + 256)
        entries.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[Self.headerSize...]).assumingMemoryBound(to: UInt8.self))
        data = entries
    }

    var encoded: [UInt8] {
        var bytes = [UInt8]()
        bytes.reserveCapacity(byteSize)
        withUnsafeBytes(of: groupID.bigEndian) { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(count >> 8))
        bytes.append(UInt8(count & 0xFF))
        bytes.append(contentsOf: data)
        return bytes
    }

    /// Writes the encoded page into `buffer` (exactly ``byteSize`` bytes; LMDB's reserved space for the value).
    func write(into buffer: UnsafeMutableRawBufferPointer) {
        buffer.storeBytes(of: groupID.bigEndian, toByteOffset: 0, as: UInt32.self)
        buffer[4] = UInt8(count >> 8)
        buffer[5] = UInt8(count & 0xFF)
        data.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[Self.headerSize...]).copyMemory(from: $0) }
    }

    /// The (sortKeyLength, orderStart, orderEnd) of entry `i` within `data`.
    @inline(__always)
    private func bounds(_ i: Int) -> (sortKeyLength: Int, start: Int, end: Int) {
        var offset = offsets[i]
        let sortKeyLength = Self.readVarint(data, &offset)
        let length = Self.readVarint(data, &offset)
        return (sortKeyLength, offset, offset + length)
    }

    /// A varint of the page's bytes (validated when the page was decoded; 0 past the end, never a trap).
    @inline(__always)
    private static func readVarint(_ data: [UInt8], _ offset: inout Int) -> Int {
        data.withUnsafeBytes { VarInt.readInt($0, at: &offset) } ?? 0
    }

    /// The order bytes of entry `i`.
    func orderBytes(at i: Int) -> [UInt8] {
        let b = bounds(i)
        return Array(data[b.start..<b.end])
    }

    /// The row key (collection id + key) of entry `i`.
    func rowKey(at i: Int) -> ArraySlice<UInt8> {
        let b = bounds(i)
        return data[(b.start + b.sortKeyLength)..<b.end]
    }

    /// Compares entry `i`'s order bytes with `order`.
    @inline(__always)
    func compare(_ i: Int, _ order: [UInt8]) -> Int {
        data.withUnsafeBufferPointer { page in
            order.withUnsafeBufferPointer { other in Self.compare(entryAt: offsets[i], in: page, with: other) }
        }
    }

    /// Compares the order bytes of the entry at `offset` of `page` with `other`, reading the entry's two varints in
    /// place (bounds-checked: `page` was validated when decoded).
    @inline(__always)
    private static func compare(entryAt offset: Int, in page: UnsafeBufferPointer<UInt8>, with other: UnsafeBufferPointer<UInt8>) -> Int {
        var position = offset
        _ = readVarint(page, &position)  // sort key length
        let length = readVarint(page, &position)
        let available = max(0, min(length, page.count - position))
        let common = min(available, other.count)
        if common > 0, let pageBase = page.baseAddress, let otherBase = other.baseAddress {
            let result = memcmp(pageBase + position, otherBase, common)
            if result != 0 { return result < 0 ? -1 : 1 }
        }
        return available == other.count ? 0 : (available < other.count ? -1 : 1)
    }

    @inline(__always)
    private static func readVarint(_ page: UnsafeBufferPointer<UInt8>, _ offset: inout Int) -> Int {
        VarInt.readInt(UnsafeRawBufferPointer(page), at: &offset) ?? 0
    }

    /// The index of the first entry whose order bytes are `>= order`: one binary search over the page's bytes, with
    /// no reference counting per probe.
    func lowerBound(_ order: [UInt8]) -> Int {
        data.withUnsafeBufferPointer { page in
            order.withUnsafeBufferPointer { other in
                offsets.withUnsafeBufferPointer { starts in
                    var low = 0
                    var high = starts.count
                    while low < high {
                        let mid = (low + high) / 2
                        if Self.compare(entryAt: starts[mid], in: page, with: other) < 0 { low = mid + 1 } else { high = mid }
                    }
                    return low
                }
            }
        }
    }

    /// The index of the entry with exactly these order bytes, if present.
    func index(of order: [UInt8]) -> Int? {
        let i = lowerBound(order)
        return i < count && compare(i, order) == 0 ? i : nil
    }

    /// Inserts an entry in order; returns its index.
    ///
    /// The entry's bytes are spliced in: the page grows by the entry's size and the bytes after it move once (no
    /// element-wise `replaceSubrange`, no buffer per insert).
    @discardableResult
    mutating func insert(order: [UInt8], sortKeyLength: Int) -> Int {
        let i = lowerBound(order)
        let size = Self.varintSize(sortKeyLength) + Self.varintSize(order.count) + order.count
        let at = i < count ? offsets[i] : data.count
        let end = data.count
        // Grow by exactly `size` bytes (their values are overwritten below).
        VarInt.append(UInt64(sortKeyLength), to: &data)
        VarInt.append(UInt64(order.count), to: &data)
        data.append(contentsOf: order)
        if at < end {
            data.withUnsafeMutableBytes { page in
                guard let base = page.baseAddress else { return }
                (base + at + size).copyMemory(from: base + at, byteCount: end - at)
                var position = at
                position += VarInt.write(UInt64(sortKeyLength), to: base + position)
                position += VarInt.write(UInt64(order.count), to: base + position)
                order.withUnsafeBytes { source in
                    if let from = source.baseAddress { (base + position).copyMemory(from: from, byteCount: source.count) }
                }
            }
        }
        offsets.insert(at, at: i)
        offsets.withUnsafeMutableBufferPointer { starts in
            for j in (i + 1)..<starts.count { starts[j] += size }
        }
        return i
    }

    /// Removes entry `i`: the bytes after it move once, and the page shrinks.
    mutating func remove(at i: Int) {
        let start = offsets[i]
        let end = i + 1 < count ? offsets[i + 1] : data.count
        let size = end - start
        let total = data.count
        if end < total {
            data.withUnsafeMutableBytes { page in
                guard let base = page.baseAddress else { return }
                (base + start).copyMemory(from: base + end, byteCount: total - end)
            }
        }
        data.removeLast(size)
        offsets.remove(at: i)
        offsets.withUnsafeMutableBufferPointer { starts in
            for j in i..<starts.count { starts[j] -= size }
        }
    }

    /// Splits an overfull page (``isOverfull``) into pages within the bounds: this page keeps the lowest entries, and
    /// the pages that follow it are returned in order (empty when the page was within its bounds).
    ///
    /// A page over ``maxEntries`` with small entries is cut in the middle (two half-full pages, room for inserts on
    /// both sides); a page over ``maxBytes`` is cut where its bytes are halved, and again while a part is past the
    /// bounds, so an entry larger than a page ends on a page of its own (an insert makes at most three pages).
    mutating func splitToFit() -> [ViewPage] {
        guard isOverfull else { return [] }
        var upper = splitOff(from: splitIndex())
        let between = splitToFit()
        let above = upper.splitToFit()
        return between + [upper] + above
    }

    /// Where ``splitToFit()`` cuts: the middle entry when the bytes fit, otherwise the entry boundary that best
    /// halves the bytes (in `1..<count`: both parts keep an entry).
    private func splitIndex() -> Int {
        guard byteSize > Self.maxBytes else { return count / 2 }
        var best = 1
        var bestLarger = Int.max
        for i in 1..<count {
            let larger = max(offsets[i], data.count - offsets[i])
            if larger < bestLarger { (best, bestLarger) = (i, larger) }
        }
        return best
    }

    /// Moves the entries from `index` on into a new page of the same group, returned.
    private mutating func splitOff(from index: Int) -> ViewPage {
        let cut = offsets[index]
        var upper = ViewPage(groupID: groupID)
        upper.data = Array(data[cut...])
        upper.offsets = offsets[index...].map { $0 - cut }
        data.removeSubrange(cut...)
        offsets.removeSubrange(index...)
        return upper
    }

    /// Appends an entry known to sort after every entry of the page (bulk loading).
    mutating func append(order: ArraySlice<UInt8>, sortKeyLength: Int) {
        offsets.append(data.count)
        VarInt.append(UInt64(sortKeyLength), to: &data)
        VarInt.append(UInt64(order.count), to: &data)
        data.append(contentsOf: order)
    }

    /// The encoded size an entry would take.
    static func entrySize(orderLength: Int) -> Int {
        orderLength + varintSize(orderLength) + 2
    }

    static func varintSize(_ value: Int) -> Int {
        VarInt.size(of: UInt64(value))
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
