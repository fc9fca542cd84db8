import Canopy

/// The read transaction a view-backed data source is pinned to, lent to one configuration call.
///
/// Valid only while the call it was given to runs: afterwards ``transaction()`` and ``withTransaction(_:)`` throw
/// ``SourceError/Code/transactionExpired`` instead of reading a transaction that no longer exists. Don't keep the
/// `ReadTransaction` itself beyond the call either (like every Canopy transaction, it never escapes its closure).
public final class PinnedRead {
    /// The snapshot the transaction reads: the data source's snapshot, the state its rows show.
    public let snapshot: UInt64
    private var current: ReadTransaction?

    init(_ transaction: ReadTransaction) {
        self.snapshot = transaction.snapshot
        self.current = transaction
    }

    /// Whether the call the transaction was lent to is still running.
    public var isValid: Bool { current != nil }

    /// The transaction, for reading related objects consistently with what the data source shows.
    /// - Throws: ``SourceError/Code/transactionExpired`` after the configuration call returned.
    public func transaction() throws -> ReadTransaction {
        guard let current else {
            throw SourceError(.transactionExpired,
                              "the read transaction at snapshot \(snapshot) was lent to one configuration call, which has returned; read inside the call")
        }
        return current
    }

    /// Runs `body` with the transaction.
    /// - Throws: ``SourceError/Code/transactionExpired`` after the configuration call returned; what `body` throws.
    public func withTransaction<R>(_ body: (ReadTransaction) throws -> R) throws -> R {
        try body(transaction())
    }

    func invalidate() { current = nil }
}

/// The cell index of a view-backed data source: the index path and the data source's pinned read transaction.
public struct ViewCellIndex: CellIndexing {
    /// Where the cell is shown.
    public var indexPath: ViewIndexPath
    /// The row the cell shows.
    public var rowID: RowID
    /// The read transaction the data source is pinned to, valid during the configuration call only.
    public var read: PinnedRead

    /// The transaction (see ``PinnedRead/transaction()``).
    /// - Throws: ``SourceError/Code/transactionExpired`` after the configuration call returned.
    public func transaction() throws -> ReadTransaction { try read.transaction() }
}

/// The supplementary index of a view-backed data source: the group, the section's index path and the pinned read.
public struct ViewSupplementaryIndex: SupplementaryIndexing {
    /// The group the section shows.
    public var group: String?
    /// The section, as `ViewIndexPath(section: s, row: 0)`.
    public var indexPath: ViewIndexPath
    /// The read transaction the data source is pinned to, valid during the configuration call only.
    public var read: PinnedRead

    /// The transaction (see ``PinnedRead/transaction()``).
    /// - Throws: ``SourceError/Code/transactionExpired`` after the configuration call returned.
    public func transaction() throws -> ReadTransaction { try read.transaction() }
}
