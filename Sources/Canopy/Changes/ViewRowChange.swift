/// Where a row stands in a view: its group and its order bytes within the group.
///
/// `orderBytes` is the row's sort key followed by the tie-break (collection, key), so comparing the bytes
/// lexicographically orders rows exactly as the view does, without decoding anything.
public struct ViewEntry: Hashable, Sendable, Comparable {
    /// The group the row is in.
    public var group: String
    /// The order bytes (sort key, then collection and key).
    public var orderBytes: [UInt8]

    /// Creates an entry.
    public init(group: String, orderBytes: [UInt8]) {
        self.group = group
        self.orderBytes = orderBytes
    }

    /// Orders by group name, then by order bytes.
    public static func < (lhs: ViewEntry, rhs: ViewEntry) -> Bool {
        if lhs.group != rhs.group { return lhs.group.utf8.lexicographicallyPrecedes(rhs.group.utf8) }
        return lhs.orderBytes.lexicographicallyPrecedes(rhs.orderBytes)
    }
}

/// What happened to one row of a view over a commit or a span of commits, consolidated per row.
///
/// `original` is where the row was at the start of the span (`nil`: not in the view), `final` where it is at the end
/// (`nil`: not in the view). Mappings turn records into index-path changes: neither → nothing (inserted then deleted);
/// only `final` → insert; only `original` → delete; both, with `reinserted` or a different entry → move (a delete
/// followed by an insert is a move even at the same index); both and equal → update.
public struct ViewRowChange: Hashable, Sendable {
    /// The row.
    public var id: RowID
    /// The row's place at the start of the span, or `nil` when it was not in the view.
    public var original: ViewEntry?
    /// The row's place at the end of the span, or `nil` when it is not in the view.
    public var final: ViewEntry?
    /// Whether the object changed (set, replaced or touched).
    public var objectChanged: Bool
    /// Whether the metadata changed.
    public var metadataChanged: Bool
    /// Whether the row left the view and came back within the span.
    public var reinserted: Bool

    /// Creates a record.
    public init(id: RowID, original: ViewEntry?, final: ViewEntry?, objectChanged: Bool, metadataChanged: Bool, reinserted: Bool) {
        self.id = id
        self.original = original
        self.final = final
        self.objectChanged = objectChanged
        self.metadataChanged = metadataChanged
        self.reinserted = reinserted
    }

    /// Combines this record (earlier) with `later`, for the same row: the earliest original, the latest final, flags
    /// or-ed; leaving the view and coming back counts as reinserted.
    public func followed(by later: ViewRowChange) -> ViewRowChange {
        let leftAndCameBack = (final == nil && later.final != nil && original != nil) || later.reinserted
        return ViewRowChange(
            id: id, original: original, final: later.final,
            objectChanged: objectChanged || later.objectChanged, metadataChanged: metadataChanged || later.metadataChanged,
            reinserted: (reinserted && later.final != nil) || (leftAndCameBack && original != nil && later.final != nil))
    }
}

/// The changes of one view in one commit, as carried in ``/CanopyCore/CommitNotification/extensionPayloads``.
public struct ViewCommitChanges: Hashable, Sendable {
    /// The rows that changed: one record per row, or, when ``recordsPerGroup``, one per row and group.
    public var rows: [ViewRowChange]
    /// Whether the view was rebuilt (or reset) in this commit: the changes cannot be expressed row by row and a UI must
    /// reload.
    public var isReset: Bool
    /// Whether the view's rows can be in several groups (a `many…` grouping, or a filtered view over one): each record
    /// is then about one group of its row — its original and final entries, when both are set, are in that group —
    /// and a row has a record for each group it was or is in. A row that changes its set of groups is, in each group,
    /// an insert, a delete, a move or an update. Otherwise a record follows its row across groups (a change of group is
    /// a move).
    public var recordsPerGroup: Bool

    /// Creates a value.
    public init(rows: [ViewRowChange], isReset: Bool, recordsPerGroup: Bool = false) {
        self.rows = rows
        self.isReset = isReset
        self.recordsPerGroup = recordsPerGroup
    }
}

/// Which consolidated record a ``ViewRowChange`` belongs to: its row, and — in a view whose rows can be in many groups
/// (``ViewCommitChanges/recordsPerGroup``) — its group.
struct ViewChangeKey: Hashable, Sendable {
    var id: RowID
    var group: String?

    /// The key of `change`, per group or per row.
    init(_ change: ViewRowChange, perGroup: Bool) {
        id = change.id
        group = perGroup ? (change.original ?? change.final)?.group : nil
    }

    init(id: RowID, group: String?) {
        self.id = id
        self.group = group
    }
}
