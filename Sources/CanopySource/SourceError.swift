import Canopy
/// The error of the data source layer: a code you can switch on, a message that says what to do, and the context
/// (reuse identifier, key, index path) it happened at.
public struct SourceError: Error, Sendable, Equatable, CustomStringConvertible {
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
        /// The container of an in-memory data source was released (data sources hold their container weakly).
        public static let containerReleased = Code("containerReleased")
        /// A row's item could not be read (a store error, a value that no longer decodes), or its cell could not be
        /// configured; ``SourceError/underlying`` says why.
        public static let rowFailed = Code("rowFailed")
    }

    /// What went wrong.
    public var code: Code
    /// A sentence that says what happened and what to do.
    public var message: String
    /// The index path involved, if any.
    public var indexPath: ViewIndexPath?
    /// The reuse identifier involved, if any.
    public var reuseIdentifier: String?
    /// The factory key involved (a cell or supplementary key), if any.
    public var key: String?
    /// The error that caused this one, if any (a `CanopyError` reading the store, an error thrown by a closure).
    public var underlying: (any Error)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, indexPath: ViewIndexPath? = nil, reuseIdentifier: String? = nil, key: String? = nil,
                underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.indexPath = indexPath
        self.reuseIdentifier = reuseIdentifier
        self.key = key
        self.underlying = underlying
    }

    /// Whether two errors have the same code, message, index path, reuse identifier and key, and underlying errors
    /// that describe themselves alike (errors in general are not `Equatable`).
    public static func == (lhs: SourceError, rhs: SourceError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.indexPath == rhs.indexPath
            && lhs.reuseIdentifier == rhs.reuseIdentifier && lhs.key == rhs.key
            && lhs.underlying.map { String(reflecting: $0) } == rhs.underlying.map { String(reflecting: $0) }
    }

    /// This error with the context a caller knows (index path, reuse identifier, key) filled in where it was missing.
    public func adding(indexPath: ViewIndexPath? = nil, reuseIdentifier: String? = nil, key: String? = nil) -> SourceError {
        var error = self
        if error.indexPath == nil { error.indexPath = indexPath }
        if error.reuseIdentifier == nil { error.reuseIdentifier = reuseIdentifier }
        if error.key == nil { error.key = key }
        return error
    }

    /// Such as `unregisteredKey at [0, 3] (key 'event'): no cell is registered for key 'event'; registered keys: reminder`.
    public var description: String {
        var text = "\(code)"
        if let indexPath { text += " at \(indexPath)" }
        var context: [String] = []
        if let key { context.append("key '\(key)'") }
        if let reuseIdentifier { context.append("identifier '\(reuseIdentifier)'") }
        if !context.isEmpty { text += " (\(context.joined(separator: ", ")))" }
        text += ": \(message)"
        if let underlying { text += " (\(underlying))" }
        return text
    }
}
