/// A row as a view's grouping, sorting and filtering closures see it: its collection and key, and its object and
/// metadata decoded on demand (at most once per row).
///
/// The one row type of every extension, ``/CanopyCore/ExtensionRow``, under the name views have always used (kept so
/// that code written against `ViewRow` compiles unchanged): see it for what a row reads and how long it may be used.
public typealias ViewRow = ExtensionRow

/// How a view puts rows into groups: a closure returning the group's name, or `nil` to leave the row out.
///
/// The variants say what the closure reads, so that the view re-runs it only when that part of a row changes (as
/// YapDatabase's withKey / withObject / withMetadata / withRow). The typed forms take a ``/CanopyCore/TypedCollection``: their
/// closure sees only that collection's rows (the view holds no other), decoded with its types and codec. For rows of
/// several collections, use ``byRow(_:)`` and decode each row by its collection (``/CanopyCore/ExtensionRow/object(in:)``).
///
/// The `many…` forms (``manyByObject(_:_:)`` and its siblings) put a row in a set of groups — a note under each of its
/// tags: see <doc:ManyGroups>.
public struct ViewGrouping: Sendable {
    let dependsOnObject: Bool
    let dependsOnMetadata: Bool
    /// The one collection a typed form sees, or `nil` for the forms that see every collection.
    let collection: String?
    /// The group of a row, for the forms that put a row in one group (unused when ``groupsClosure`` is set).
    let closure: @Sendable (ViewRow) throws -> String?
    /// The groups of a row, for the `many…` forms.
    let groupsClosure: (@Sendable (ViewRow) throws -> Set<String>)?
    /// The ``byObject(_:_:)`` form's closure with its types, so that a view sorted by a `byObject` form of the same
    /// collection reads each row's object once for both (``TypedPlacement``).
    var objectForm: (any ObjectGroupingForm)?

    /// Whether a row can be in several groups (a `many…` form).
    var isMany: Bool { groupsClosure != nil }

    init(dependsOnObject: Bool, dependsOnMetadata: Bool, collection: String?, closure: @escaping @Sendable (ViewRow) throws -> String?) {
        self.dependsOnObject = dependsOnObject
        self.dependsOnMetadata = dependsOnMetadata
        self.collection = collection
        self.closure = closure
        self.groupsClosure = nil
    }

    init(dependsOnObject: Bool, dependsOnMetadata: Bool, collection: String?, groups: @escaping @Sendable (ViewRow) throws -> Set<String>) {
        self.dependsOnObject = dependsOnObject
        self.dependsOnMetadata = dependsOnMetadata
        self.collection = collection
        self.closure = { _ in nil }
        self.groupsClosure = groups
    }

    /// Groups by collection and key only.
    public static func byKey(_ group: @escaping @Sendable (_ collection: String, _ key: String) -> String?) -> ViewGrouping {
        ViewGrouping(dependsOnObject: false, dependsOnMetadata: false, collection: nil) { row in group(row.collection, row.key) }
    }

    /// Groups the rows of `collection` by their objects; the view holds no row of another collection.
    public static func byObject<Object, Metadata>(
        _ collection: TypedCollection<Object, Metadata>, _ group: @escaping @Sendable (_ key: String, _ object: Object) -> String?
    ) -> ViewGrouping {
        var grouping = ViewGrouping(dependsOnObject: true, dependsOnMetadata: false, collection: collection.name) { row in
            try row.withObject(in: collection) { object in group(row.key, object) }
        }
        grouping.objectForm = ObjectGrouping(collection: collection, group: group)
        return grouping
    }

    /// Groups the rows of `collection` by their metadata (`nil` when a row has none); the view holds no row of
    /// another collection.
    public static func byMetadata<Object, Metadata>(
        _ collection: TypedCollection<Object, Metadata>, _ group: @escaping @Sendable (_ key: String, _ metadata: Metadata?) -> String?
    ) -> ViewGrouping {
        ViewGrouping(dependsOnObject: false, dependsOnMetadata: true, collection: collection.name) { row in
            group(row.key, try row.metadata(in: collection))
        }
    }

    /// Groups the rows of `collection` by object and metadata; the view holds no row of another collection.
    public static func byRow<Object, Metadata>(
        _ collection: TypedCollection<Object, Metadata>,
        _ group: @escaping @Sendable (_ key: String, _ object: Object, _ metadata: Metadata?) -> String?
    ) -> ViewGrouping {
        ViewGrouping(dependsOnObject: true, dependsOnMetadata: true, collection: collection.name) { row in
            try row.withObject(in: collection) { object in group(row.key, object, try row.metadata(in: collection)) }
        }
    }

    /// Groups rows of any collection by the whole row: the closure has the row's collection in hand and decodes what
    /// it needs (``/CanopyCore/ExtensionRow/object(in:)``, ``/CanopyCore/ExtensionRow/metadata(in:)``). Limit the collections with
    /// ``ViewOptions/allowedCollections``.
    public static func byRow(_ group: @escaping @Sendable (_ row: ViewRow) throws -> String?) -> ViewGrouping {
        ViewGrouping(dependsOnObject: true, dependsOnMetadata: true, collection: nil, closure: group)
    }

    /// A grouping from any closure over a ``ViewRow``, declaring what it reads.
    public static func custom(
        dependsOnObject: Bool, dependsOnMetadata: Bool, _ group: @escaping @Sendable (ViewRow) throws -> String?
    ) -> ViewGrouping {
        ViewGrouping(dependsOnObject: dependsOnObject, dependsOnMetadata: dependsOnMetadata, collection: nil, closure: group)
    }
}

/// How a view orders rows within a group: a ``SortKey`` per row (ties are broken by collection, then key).
///
/// As for ``ViewGrouping``, the typed forms take a ``/CanopyCore/TypedCollection`` and see only its rows; ``byRow(_:)`` sees rows
/// of any collection.
public struct ViewSorting: Sendable {
    let dependsOnObject: Bool
    let dependsOnMetadata: Bool
    /// The one collection a typed form sees, or `nil` for the forms that see every collection.
    let collection: String?
    let closure: @Sendable (_ group: String, _ row: ViewRow) throws -> SortKey
    /// The ``byObject(_:_:)`` form's closure with its types (an `ObjectSorting`), for ``TypedPlacement``.
    var objectForm: (any Sendable)?

    /// Sorts by collection and key only.
    public static func byKey(_ sortKey: @escaping @Sendable (_ group: String, _ collection: String, _ key: String) -> SortKey) -> ViewSorting {
        ViewSorting(dependsOnObject: false, dependsOnMetadata: false, collection: nil) { group, row in sortKey(group, row.collection, row.key) }
    }

    /// Sorts the rows of `collection` by their objects; the view holds no row of another collection.
    public static func byObject<Object, Metadata>(
        _ collection: TypedCollection<Object, Metadata>,
        _ sortKey: @escaping @Sendable (_ group: String, _ key: String, _ object: Object) -> SortKey
    ) -> ViewSorting {
        var sorting = ViewSorting(dependsOnObject: true, dependsOnMetadata: false, collection: collection.name) { group, row in
            try row.withObject(in: collection) { object in sortKey(group, row.key, object) }
        }
        sorting.objectForm = ObjectSorting(collection: collection, sortKey: sortKey)
        return sorting
    }

    /// Sorts the rows of `collection` by their metadata; the view holds no row of another collection.
    public static func byMetadata<Object, Metadata>(
        _ collection: TypedCollection<Object, Metadata>,
        _ sortKey: @escaping @Sendable (_ group: String, _ key: String, _ metadata: Metadata?) -> SortKey
    ) -> ViewSorting {
        ViewSorting(dependsOnObject: false, dependsOnMetadata: true, collection: collection.name) { group, row in
            sortKey(group, row.key, try row.metadata(in: collection))
        }
    }

    /// Sorts the rows of `collection` by object and metadata; the view holds no row of another collection.
    public static func byRow<Object, Metadata>(
        _ collection: TypedCollection<Object, Metadata>,
        _ sortKey: @escaping @Sendable (_ group: String, _ key: String, _ object: Object, _ metadata: Metadata?) -> SortKey
    ) -> ViewSorting {
        ViewSorting(dependsOnObject: true, dependsOnMetadata: true, collection: collection.name) { group, row in
            try row.withObject(in: collection) { object in sortKey(group, row.key, object, try row.metadata(in: collection)) }
        }
    }

    /// Sorts rows of any collection by the whole row, which the closure decodes by its collection.
    public static func byRow(_ sortKey: @escaping @Sendable (_ group: String, _ row: ViewRow) throws -> SortKey) -> ViewSorting {
        ViewSorting(dependsOnObject: true, dependsOnMetadata: true, collection: nil, closure: sortKey)
    }

    /// A sorting from any closure, declaring what it reads.
    public static func custom(
        dependsOnObject: Bool, dependsOnMetadata: Bool, _ sortKey: @escaping @Sendable (_ group: String, _ row: ViewRow) throws -> SortKey
    ) -> ViewSorting {
        ViewSorting(dependsOnObject: dependsOnObject, dependsOnMetadata: dependsOnMetadata, collection: nil, closure: sortKey)
    }
}

/// Options of a view.
public struct ViewOptions: Sendable, Hashable {
    /// When set, only rows of these collections are considered (the others are skipped without running the closures).
    public var allowedCollections: Set<String>? {
        didSet { onlyCollection = Self.onlyCollection(of: allowedCollections) }
    }
    /// The collection when ``allowedCollections`` holds just one (every typed view): checked on every row written, by
    /// comparing its name rather than hashing it.
    private var onlyCollection: String?
    /// Re-run the closures when a row is touched (by default a touch is reported as an update in place).
    public var rerunOnTouch: Bool
    /// Fail instead of skipping rows the closures cannot decode.
    ///
    /// By default a row whose object or metadata does not decode (``/CanopyCore/CanopyError/Code/decodingFailed``, such as a row
    /// written by an older model) is left out of the view and recorded (``/CanopyCore/SkippedRows``, read with
    /// ``/CanopyCore/ReadTransaction/skippedRows(ofExtension:)``) while the view populates or is written, so that one such row does
    /// not fail the registration; it enters the view once it is rewritten. With `strictDecoding` the registration or
    /// the write fails with that error instead. Other errors a closure throws always fail.
    public var strictDecoding: Bool

    /// Creates options.
    public init(allowedCollections: Set<String>? = nil, rerunOnTouch: Bool = false, strictDecoding: Bool = false) {
        self.allowedCollections = allowedCollections
        self.onlyCollection = Self.onlyCollection(of: allowedCollections)
        self.rerunOnTouch = rerunOnTouch
        self.strictDecoding = strictDecoding
    }

    func allows(_ collection: String) -> Bool {
        if let onlyCollection { return onlyCollection == collection }
        return allowedCollections?.contains(collection) ?? true
    }

    private static func onlyCollection(of collections: Set<String>?) -> String? {
        guard let collections, collections.count == 1 else { return nil }
        return collections.first
    }
}
