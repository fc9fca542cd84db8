import Canopy
/// The error of the data source layer: a code you can switch on, a message that says what to do, and the context
/// (reuse identifier, key, index path) it happened at.
public struct SourceError: Error, Sendable, CustomStringConvertible {
    /// What went wrong; a code type that can grow without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name.
        public let rawValue: String
        /// Creates a code.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        /// The code's name.
        public var description: String { rawValue }

        /// The cell key (or supplementary key) chosen for an item has no registration in the factory.
        public static let unregisteredKey = Code("unregisteredKey")
        /// The container was asked for a reuse identifier that was never registered with it.
        public static let unregisteredIdentifier = Code("unregisteredIdentifier")
        /// A registered type or builder made a view of another type than the container's cell type.
        public static let typeMismatch = Code("typeMismatch")
        /// An index path (or section) outside the data source.
        public static let indexOutOfRange = Code("indexOutOfRange")
        /// A cell index's read transaction was used after the configuration call it was given to returned.
        public static let transactionExpired = Code("transactionExpired")
        /// An editing operation that the data source does not allow (no editing closures, or `canEdit` said no).
        public static let editingNotAllowed = Code("editingNotAllowed")
        /// A batch of updates that does not lead from the container's rows before to the data source's rows after.
        public static let invalidBatch = Code("invalidBatch")
    }

    /// What went wrong.
    public var code: Code
    /// A sentence that says what happened and what to do.
    public var message: String
    /// The index path involved, if any.
    public var indexPath: ViewIndexPath?
    /// The error that caused this one, if any (a `CanopyError` reading the store, an error thrown by a closure).
    public var underlying: (any Error)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, indexPath: ViewIndexPath? = nil, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.indexPath = indexPath
        self.underlying = underlying
    }

    /// Such as `unregisteredKey at [0, 3]: no cell is registered for key 'event'; registered keys: reminder`.
    public var description: String {
        var text = "\(code)"
        if let indexPath { text += " at \(indexPath)" }
        text += ": \(message)"
        if let underlying { text += " (\(underlying))" }
        return text
    }
}
