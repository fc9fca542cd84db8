/// A least-recently-used cache of decoded values by row, owned by one connection and used under its lock.
///
/// Entries live in an array linked as a doubly linked list (indices, not references), so a hit costs a dictionary
/// lookup and a few index writes, with no allocation.
struct ObjectCache {
    private struct Node {
        var id: RowID
        var value: Any
        var previous: Int
        var next: Int
    }

    let limit: Int
    private var index: [RowID: Int] = [:]
    private var nodes: [Node] = []
    private var head = -1  // most recently used
    private var tail = -1  // least recently used

    init(limit: Int) {
        self.limit = max(0, limit)
        index.reserveCapacity(min(self.limit, 4096))
    }

    var count: Int { index.count }

    mutating func value(for id: RowID) -> Any? {
        guard let slot = index[id] else { return nil }
        moveToFront(slot)
        return nodes[slot].value
    }

    mutating func set(_ value: Any, for id: RowID) {
        guard limit > 0 else { return }
        if let slot = index[id] {
            nodes[slot].value = value
            moveToFront(slot)
            return
        }
        let slot: Int
        if nodes.count < limit {
            slot = nodes.count
            nodes.append(Node(id: id, value: value, previous: -1, next: -1))
        } else {
            slot = tail
            unlink(slot)
            index[nodes[slot].id] = nil
            nodes[slot] = Node(id: id, value: value, previous: -1, next: -1)
        }
        index[id] = slot
        linkFront(slot)
    }

    mutating func remove(_ id: RowID) {
        guard let slot = index.removeValue(forKey: id) else { return }
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
    }

    mutating func removeAll(inCollection collection: String) {
        for id in index.keys where id.collection == collection { remove(id) }
    }

    mutating func removeAll() {
        index.removeAll(keepingCapacity: true)
        nodes.removeAll(keepingCapacity: true)
        head = -1
        tail = -1
    }

    private mutating func unlink(_ slot: Int) {
        let node = nodes[slot]
        if node.previous >= 0 { nodes[node.previous].next = node.next } else { head = node.next }
        if node.next >= 0 { nodes[node.next].previous = node.previous } else { tail = node.previous }
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

    private mutating func moveToFront(_ slot: Int) {
        guard head != slot else { return }
        unlink(slot)
        linkFront(slot)
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
