import Synchronization

/// The arrays an intersection of several terms fills for each query (``SearchIndex``'s `listIntersection`): its
/// rarest list's row numbers (about 4,700 a query over a million rows in the benchmark) and a block's decoded rows.
/// Kept by the index from one query to the next, emptied, so that a query does not fault fresh memory in (about one
/// page fault a query at a million rows when each query allocated them). Holds no row of a previous query that a
/// query reads: each use starts empty.
struct SearchIntersectionScratch {
    var documents: [UInt64] = []
    var rowsBuffer: [UInt64] = []

    /// Larger arrays are not kept (a damaged directory's count asks for up to 2^20 rows): 2^17 rows, 1 MiB.
    static let keptCapacity = 1 << 17

    /// The index's scratch, or a new one when another query holds it.
    static func take(from slot: borrowing Mutex<SearchIntersectionScratch?>) -> SearchIntersectionScratch {
        slot.withLock { $0.take() } ?? SearchIntersectionScratch()
    }

    /// Empties the arrays (keeping their room when it is not too large) and gives them back to the index.
    consuming func giveBack(to slot: borrowing Mutex<SearchIntersectionScratch?>) {
        if documents.capacity > Self.keptCapacity { documents = [] } else { documents.removeAll(keepingCapacity: true) }
        if rowsBuffer.count > Self.keptCapacity { rowsBuffer = [] }
        let kept = self
        slot.withLock { $0 = kept }
    }
}
