/// A least-recently-used index of keys to slots (the keys of one collection's cached values), owned by one connection
/// and used under its lock. The values live elsewhere, by slot (see ``CollectionCache``): this type knows nothing of
/// their type, so none of its code is generic.
///
/// Entries live in an array linked as a doubly linked list (indices, not references), so a hit costs a dictionary
/// lookup (on the key's precomputed hash, see ``CacheKey``) and a few index writes, with no allocation. Slots are
/// dense: `0..<count`.
struct ObjectCache {
    private struct Node {
        var id: CacheKey
        var previous: Int
        var next: Int
    }

    let limit: Int
    private var index: [CacheKey: Int] = [:]
    private var nodes: [Node] = []
    private var head = -1  // most recently used
    private var tail = -1  // least recently used

    init(limit: Int) {
        self.limit = max(0, limit)
        index.reserveCapacity(min(self.limit, 64))
    }

    var count: Int { index.count }

    /// The slot of `id`'s value, made the most recently used; `nil` when absent.
    @inline(__always)
    mutating func slot(for id: CacheKey) -> Int? {
        guard let slot = index[id] else { return nil }
        moveToFront(slot)
        return slot
    }

    /// The slot for `id`'s value, made the most recently used: its own, a new one (`isNew`: its value is to be
    /// initialized), or at the limit the least recently used entry's (its value is to be replaced). `nil` when the
    /// limit is 0.
    mutating func set(_ id: CacheKey) -> (slot: Int, isNew: Bool)? {
        guard limit > 0 else { return nil }
        if let slot = index[id] {
            moveToFront(slot)
            return (slot, false)
        }
        let slot: Int
        let isNew: Bool
        if nodes.count < limit {
            slot = nodes.count
            nodes.append(Node(id: id, previous: -1, next: -1))
            isNew = true
        } else {
            slot = tail
            unlink(slot)
            index[nodes[slot].id] = nil
            nodes[slot] = Node(id: id, previous: -1, next: -1)
            isNew = false
        }
        index[id] = slot
        linkFront(slot)
        return (slot, isNew)
    }

    /// The key of the least recently used entry.
    var leastRecentlyUsed: CacheKey? { tail >= 0 ? nodes[tail].id : nil }

    /// Removes the entry for `id`. Returns its slot (whose value is to be destroyed) and, when the last slot's entry
    /// moved into it to keep the slots dense, that last slot (whose value is to be moved into the freed one).
    mutating func remove(_ id: CacheKey) -> (slot: Int, movedFrom: Int?)? {
        guard let slot = index.removeValue(forKey: id) else { return nil }
        unlink(slot)
        // Keep the array dense: move the last node into the freed slot.
        let last = nodes.count - 1
        if slot != last {
            let moved = nodes[last]
            let wasHead = head == last
            let wasTail = tail == last
            nodes[slot] = moved
            if moved.previous >= 0 { nodes[moved.previous].next = slot }
            if moved.next >= 0 { nodes[moved.next].previous = slot }
            if wasHead { head = slot }
            if wasTail { tail = slot }
            index[moved.id] = slot
        }
        nodes.removeLast()
        return (slot, slot != last ? last : nil)
    }

    mutating func removeAll() {
        index.removeAll(keepingCapacity: true)
        nodes.removeAll(keepingCapacity: true)
        head = -1
        tail = -1
    }

    private mutating func unlink(_ slot: Int) {
        // The links only: copying the node would retain its key.
        let (previous, next) = (nodes[slot].previous, nodes[slot].next)
        if previous >= 0 { nodes[previous].next = next } else { head = next }
        if next >= 0 { nodes[next].previous = previous } else { tail = previous }
        nodes[slot].previous = -1
        nodes[slot].next = -1
    }

    private mutating func linkFront(_ slot: Int) {
        nodes[slot].previous = -1
        nodes[slot].next = head
        if head >= 0 { nodes[head].previous = slot }
        head = slot
        if tail < 0 { tail = slot }
    }

    /// ``unlink(_:)`` then ``linkFront(_:)``, through one pointer to the nodes (one uniqueness check instead of one
    /// per write): the whole cost of a hit besides the lookup. `slot` is not the head, so it has a previous node.
    private mutating func moveToFront(_ slot: Int) {
        guard head != slot else { return }
        let oldHead = head
        var newTail = tail
        nodes.withUnsafeMutableBufferPointer { nodes in
            let (previous, next) = (nodes[slot].previous, nodes[slot].next)
            nodes[previous].next = next
            if next >= 0 { nodes[next].previous = previous } else { newTail = previous }
            nodes[slot].previous = -1
            nodes[slot].next = oldHead
            nodes[oldHead].previous = slot
        }
        tail = newTail
        head = slot
    }

    /// Checks the list and the index agree (for tests).
    func checkInvariants() -> Bool {
        var seen = 0
        var slot = head
        var previous = -1
        while slot >= 0 {
            guard nodes[slot].previous == previous, index[nodes[slot].id] == slot else { return false }
            previous = slot
            slot = nodes[slot].next
            seen += 1
            if seen > nodes.count { return false }
        }
        return seen == index.count && seen == nodes.count && previous == tail && index.count <= max(limit, 0)
    }
}
