/// What ``Database/register(_:)`` did with an extension's stored state.
///
/// A registration compares the definition with the one recorded in the database (version tag, kind and ``StoreExtension/options``
/// — everything the definition declares) and the extension's stored state with the store's snapshot:
///
/// - same definition, state current, the extension's own check passes (a view recomputes a sample of its entries):
///   ``current``, and nothing is written — the registration is a read;
/// - same definition, but rows were written by processes that did not register the extension: ``caughtUp(rows:)``
///   from the commit log's changed keys when the log covers the gap;
/// - otherwise ``rebuilt(_:)``, saying why.
public enum RegistrationOutcome: Sendable, Hashable, CustomStringConvertible {
    /// The recorded definition and stored state were used as they are; nothing was written.
    case current
    /// The extension missed writes of other processes and was brought up to date from the commit log: `rows` rows
    /// were looked at again.
    case caughtUp(rows: Int)
    /// The extension was (re)built from the rows.
    case rebuilt(ExtensionRebuildReason)

    /// Whether the registration wrote nothing.
    public var isCurrent: Bool { self == .current }

    /// A sentence for logs.
    public var description: String {
        switch self {
        case .current: "current (nothing written)"
        case .caughtUp(let rows): "caught up from the commit log (\(rows) row\(rows == 1 ? "" : "s") looked at again)"
        case .rebuilt(let reason): "rebuilt: \(reason)"
        }
    }
}

/// Why an extension was rebuilt from the rows.
public enum ExtensionRebuildReason: Sendable, Hashable, CustomStringConvertible {
    /// It was never registered in this database.
    case firstRegistration
    /// Its version tag changed.
    case versionTagChanged(from: String, to: String)
    /// Its kind changed.
    case kindChanged(from: String, to: String)
    /// What it declares (``StoreExtension/options``: collections, parent, options) changed without a new version tag.
    case definitionChanged(from: String, to: String)
    /// The options recorded with it cannot be read as the extension's ``StoreExtension/Options`` (a damaged or
    /// hand-edited record): what it was built with is unknown, so it is rebuilt rather than trusted.
    case recordedOptionsUnreadable(recorded: String, reason: String)
    /// The database records it, but not its stored state.
    case noStoredState
    /// Processes that did not register it wrote rows, and the commit log no longer covers them (or the extension
    /// cannot catch up from changed keys).
    case missedWrites(extensionSnapshot: UInt64, storeSnapshot: UInt64)
    /// An extension it depends on was rebuilt.
    case dependencyRebuilt(String)
    /// Its check of the stored state at registration found state its closures no longer produce (a view's
    /// recomputed sample differs from the stored entries): the closures changed without a new version tag.
    case storedStateMismatch(String)

    /// A sentence for logs and errors.
    public var description: String {
        switch self {
        case .firstRegistration: "first registration"
        case .versionTagChanged(let from, let to): "version tag changed from '\(from)' to '\(to)'"
        case .kindChanged(let from, let to): "kind changed from '\(from)' to '\(to)'"
        case .definitionChanged(let from, let to): "definition changed from \(from) to \(to) (without a new version tag)"
        case .recordedOptionsUnreadable(let recorded, let reason): "the recorded options \(recorded) cannot be read (\(reason))"
        case .noStoredState: "no stored state"
        case .missedWrites(let extensionSnapshot, let storeSnapshot):
            "the database was written (snapshot \(extensionSnapshot) → \(storeSnapshot)) while the extension was not registered, beyond what the commit log covers"
        case .dependencyRebuilt(let name): "its dependency '\(name)' was rebuilt"
        case .storedStateMismatch(let detail): "the stored state does not match what the closures compute now (\(detail)): the closures changed without a new version tag"
        }
    }
}

/// What an extension says about its stored state when a registration finds its definition unchanged (see
/// ``StoreExtension/checkStoredState(in:)``).
public enum StoredStateCheck: Sendable, Hashable {
    /// The stored state was opened and agrees with the definition: the extension is ready without a write.
    case usable
    /// The stored state must be rebuilt, for this reason (a sentence).
    case rebuild(because: String)
    /// The extension cannot open or check its state without a write transaction: the registration prepares it in
    /// one (``StoreExtension/prepare(in:context:)``, without a rebuild).
    case needsWrite
}

/// The rows an extension missed: written by processes that did not register it, between the snapshot its state is
/// consistent with and the store's, as the commit log records them (keys, not values). Handed to
/// ``ExtensionTransaction/catchUp(_:)``.
public struct MissedWrites {
    /// The snapshot the extension's state is consistent with.
    public let fromSnapshot: UInt64
    /// The store's snapshot (the state the transaction starts from).
    public let toSnapshot: UInt64
    /// Every row changed or removed in the gap, once, in stored-key order.
    public let rows: [MissedRow]
    /// Collections whose rows were all removed in the gap (``ReadWriteTransaction/removeAll(inCollection:)``).
    public let removedCollections: Set<String>
    /// Whether every row of every collection was removed in the gap.
    public let removedEverything: Bool
}

/// One row an extension missed (see ``MissedWrites``).
public struct MissedRow {
    /// The row's address.
    public let id: RowID
    /// The row's stored key.
    public let storedKey: StoredRowKey
    /// The row as stored now (an update or touch of what changed in the gap), or `nil` when it no longer exists. Its
    /// previous attachments are those of its record now: an extension's attachment there is the one the extension
    /// last wrote, unless the row was removed and written again in the gap (then it has none). Return the edits of
    /// the extension's attachments from ``ExtensionTransaction/catchUp(_:)``; the store writes them.
    public let current: RowChange?
    /// Whether the object changed (or the row was removed) in the gap.
    public let objectChanged: Bool
    /// Whether the metadata changed (or the row was removed) in the gap.
    public let metadataChanged: Bool
}

extension ExtensionTransaction {
    /// By default an extension cannot catch up from changed keys: the store rebuilds it.
    public func catchUp(_ missed: MissedWrites) throws -> [StoredRowKey: AttachmentEdit]? { nil }
}

extension StoreExtension {
    /// By default the registration prepares the extension in a write transaction.
    public func checkStoredState(in transaction: ReadTransaction) throws -> StoredStateCheck { .needsWrite }
}
