import LMDB

/// A component that keeps derived state (an index, a view) up to date inside every write transaction.
///
/// The store hands each registered extension every change to a row (a ``RowChange``: insert, update, touch, removal)
/// through the ``ExtensionTransaction`` it creates per write transaction. The extension writes its own state in its own typed
/// tables (``ExtensionTable``, opened with ``ReadWriteTransaction/openTable(_:of:keys:values:)``) in the same
/// transaction, so rows and derived state commit or roll back together, and it may add a payload to the commit
/// notification. This protocol and the API it is handed are the whole interface: views (module `Canopy`) are built on
/// nothing else, and so can any other extension (a secondary index, a full-text index).
///
/// - Population: ``ReadTransaction/scanRows(inCollections:_:)`` visits every stored row once.
/// - Dependencies: an extension that reads another one's state names it in ``dependencies``. It must be registered
///   after them, hears of each change after them, and is rebuilt when one of them is.
/// - Other extensions: ``ReadTransaction/registeredExtension(named:as:)`` finds one; ``ReadTransaction/writer(of:)``
///   its state in the current transaction, typed as its ``Writer`` (`nil` in a read transaction).
/// - Reset: ``ExtensionCommit/isReset`` tells the extension, at commit, that it was rebuilt in the transaction.
///
/// Registration (``Database/register(_:)``) records the extension's name, kind, version tag and options, and the store
/// tracks, per extension, the snapshot its state is consistent with. When the version tag, kind or options changed,
/// the registration context says so and the extension rebuilds. A registration that finds the same definition and a
/// current state writes nothing (``checkStoredState(in:)``).
///
/// Currency: a write transaction never marks an extension's state consistent with its commit unless it was current
/// when the transaction began. An extension whose state lags (another process wrote rows without registering it) is
/// brought up to date first, at the start of the write: from the commit log's changed keys
/// (``ExtensionTransaction/catchUp(_:)``) when the log covers the gap, otherwise by a rebuild.
public protocol StoreExtension: AnyObject, Sendable {
    /// The unique name of the extension in the database.
    var name: String { get }
    /// What sort of extension this is, such as `"view"`; recorded so that tools can list extensions.
    var kind: String { get }
    /// Changing the tag makes the store ask the extension to rebuild its state.
    var versionTag: String { get }
    /// What the extension declares besides its closures, as a `Codable` value (see ``options``).
    associatedtype Options: Codable & Equatable & Sendable
    /// Everything the definition declares besides its closures (collections, parent, options), recorded with the
    /// registration as JSON with sorted keys (``recordedOptions()``) and compared, as a value, at the next one: a
    /// difference rebuilds the extension, as a new version tag does, and so does a recorded value that cannot be read
    /// as ``Options`` (``ExtensionRebuildReason/recordedOptionsUnreadable(recorded:reason:)``).
    var options: Options { get }
    /// The names of the extensions whose state this one reads (a filtered view's parent view). Registering it
    /// throws ``CanopyError/Code/extensionDependencyMissing`` unless they are registered; when one of them is rebuilt,
    /// this one is prepared again with a ``ExtensionRegistrationContext/rebuildReason`` saying so.
    var dependencies: [String] { get }

    /// Prepares the extension's storage in `transaction`: create tables, and rebuild when `context.needsRebuild`.
    func prepare(in transaction: ReadWriteTransaction, context: ExtensionRegistrationContext) throws

    /// The type of the object that keeps the extension's state up to date in one write transaction (its writer):
    /// what ``ReadTransaction/writer(of:)`` returns, typed, to a read of the extension inside a write transaction and
    /// to an extension that depends on this one.
    associatedtype Writer: ExtensionTransaction

    /// Creates the object that hears about the changes of one write transaction.
    func beginWrite(_ transaction: ReadWriteTransaction) throws -> Writer

    /// Removes the extension's storage (when it is unregistered with `dropStorage`).
    func dropStorage(in transaction: ReadWriteTransaction) throws

    /// Opens the extension's stored state for a registration that found the recorded definition unchanged and the
    /// state current, and checks it against the definition's closures where it can (a view recomputes the group and
    /// sort key of a sample of its stored entries). Called in a read transaction (the registration then writes
    /// nothing), and in the registration's write transaction after a catch-up.
    ///
    /// Return ``StoredStateCheck/usable`` when the state can be used as it is, ``StoredStateCheck/rebuild(because:)``
    /// when the closures disagree with it, ``StoredStateCheck/needsWrite`` (the default) when the extension can only
    /// be prepared in a write transaction.
    func checkStoredState(in transaction: ReadTransaction) throws -> StoredStateCheck
}

extension StoreExtension {
    /// No dependencies.
    public var dependencies: [String] { [] }
}

/// What the store knows, at registration, about an extension's stored state.
public struct ExtensionRegistrationContext: Sendable {
    /// The registration recorded by an earlier run, or `nil` the first time.
    public var previous: ExtensionRecord?
    /// The store's snapshot now.
    public var storeSnapshot: UInt64
    /// The snapshot the extension's stored state is consistent with, or `nil` if it has none.
    public var extensionSnapshot: UInt64?

    /// Why a rebuild is needed, or `nil` when the stored state can be used as it is (or is caught up from the commit
    /// log by the store).
    public var rebuildCause: ExtensionRebuildReason? {
        if let forcedRebuildReason { return forcedRebuildReason }
        return definitionRebuildReason ?? (catchesUp ? nil : lagRebuildReason)
    }

    /// ``rebuildCause`` as a sentence.
    public var rebuildReason: String? { rebuildCause?.description }

    /// Whether the extension must rebuild its state from the rows.
    public var needsRebuild: Bool { rebuildCause != nil }

    /// A rebuild needed by the definition (new, another tag, kind or options) or a missing state.
    var definitionRebuildReason: ExtensionRebuildReason? {
        guard let previous else { return .firstRegistration }
        if previous.versionTag != currentVersionTag { return .versionTagChanged(from: previous.versionTag, to: currentVersionTag) }
        if previous.kind != currentKind { return .kindChanged(from: previous.kind, to: currentKind) }
        switch optionsComparison {
        case .same: break
        case .changed(let recorded, let current): return .definitionChanged(from: recorded, to: current)
        case .unreadable(let recorded, let reason): return .recordedOptionsUnreadable(recorded: recorded, reason: reason)
        }
        guard extensionSnapshot != nil else { return .noStoredState }
        return nil
    }

    /// The state lags the store's snapshot.
    var lagRebuildReason: ExtensionRebuildReason? {
        guard let extensionSnapshot, extensionSnapshot != storeSnapshot else { return nil }
        return .missedWrites(extensionSnapshot: extensionSnapshot, storeSnapshot: storeSnapshot)
    }

    let currentVersionTag: String
    let currentKind: String
    /// The extension's options against the recorded ones (``RecordedOptionsComparison/same`` without a record).
    let optionsComparison: RecordedOptionsComparison
    /// Set when a dependency was rebuilt in this transaction, or the stored state failed its check.
    var forcedRebuildReason: ExtensionRebuildReason?
    /// Set when the store catches the lagging state up from the commit log instead of rebuilding it.
    var catchesUp = false
    /// In a rebuild, the attachment slot the extension used until now (retired: new attachments go to a new slot).
    /// Rows still carry their old attachments there until they are written again, so a rebuild can tell a row whose
    /// record was replaced (removed and written again, which drops every attachment) from one that kept its record.
    public internal(set) var retiredAttachmentSlot: AttachmentSlot?
}

/// An extension's registration as recorded in the database.
public struct ExtensionRecord: Codable, Sendable, Hashable {
    /// The extension's name.
    public var name: String
    /// Its kind, such as `"view"`.
    public var kind: String
    /// Its version tag when it was registered.
    public var versionTag: String
    /// Its options description.
    public var options: String
    /// The store snapshot at registration.
    public var registeredAtSnapshot: UInt64
    /// The snapshot of the commit that last rebuilt the extension's state (`nil` in records written before it was
    /// recorded): an extension that depends on this one and is older than that must be rebuilt, not caught up.
    public var rebuiltAtSnapshot: UInt64?

    /// Creates a record.
    public init(name: String, kind: String, versionTag: String, options: String, registeredAtSnapshot: UInt64, rebuiltAtSnapshot: UInt64? = nil) {
        self.name = name
        self.kind = kind
        self.versionTag = versionTag
        self.options = options
        self.registeredAtSnapshot = registeredAtSnapshot
        self.rebuiltAtSnapshot = rebuiltAtSnapshot
    }
}

/// Keeps an extension's state up to date during one write transaction: the extension's writer.
///
/// Its surface is handling a change and finishing the commit. Every mutation of a row reaches it as one
/// ``RowChange`` (``handle(_:)``), in the order of the mutations, after the writers of the extensions it depends on;
/// it writes its own tables and answers with what it wants done to its attachment of the row (``AttachmentEdit``),
/// which the store writes with the row's record, once. Nothing it is called from writes the store's records for it.
/// All methods run on the writer's thread, inside the transaction. Throwing rolls back the whole transaction.
public protocol ExtensionTransaction: AnyObject {
    /// One row changed (inserted, updated, touched or removed: ``RowChange/kind``). Returns the edit of the
    /// extension's attachment of the row (ignored for a removal: the record goes).
    func handle(_ change: RowChange) throws -> AttachmentEdit
    /// The transaction is about to commit: write any pending state and return what the commit changed for the
    /// extension's observers, or `nil`: a typed value with the coding that puts it in the persisted commit log
    /// (``ExtensionPayload/init(_:coding:)``); observers in this process get the value itself.
    func prepareCommit(_ commit: ExtensionCommit) throws -> ExtensionPayload?
    /// The transaction committed (by default nothing happens).
    func didCommit(snapshot: UInt64)
    /// The transaction rolled back (by default nothing happens).
    func didRollback()
    /// Brings the extension's state up to date with rows written by processes that did not register it, at the start
    /// of a write transaction (or of a registration), before any other change is told. Returns the edits of the
    /// extension's attachments of the missed rows (the store writes them), or `nil` when it cannot (the default): the
    /// store then rebuilds the extension. What it changes is part of this transaction's changes (a view reports the
    /// rows it moves in its commit payload).
    func catchUp(_ missed: MissedWrites) throws -> [StoredRowKey: AttachmentEdit]?
}

extension ExtensionTransaction {
    /// Nothing to do at commit.
    public func didCommit(snapshot: UInt64) {}
    /// Nothing to undo.
    public func didRollback() {}
}

/// What the store tells an extension at commit.
public struct ExtensionCommit: Sendable, Hashable {
    /// The snapshot the commit creates.
    public var snapshot: UInt64
    /// Whether the extension was rebuilt (its state reset) in this transaction: observers of its state must reload
    /// rather than apply changes.
    public var isReset: Bool

    /// Creates the commit information (the store makes it; a test of a writer on its own too).
    public init(snapshot: UInt64, isReset: Bool) {
        self.snapshot = snapshot
        self.isReset = isReset
    }
}
