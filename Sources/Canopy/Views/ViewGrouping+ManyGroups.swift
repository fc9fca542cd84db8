/// The forms of ``ViewGrouping`` that put a row in several groups at once (a note under each of its tags).
///
/// The closure returns a set of group names; an empty set leaves the row out. The row has one entry per group, each
/// ordered by the view's ``ViewSorting``, whose closure gets the group: it may give the row the same sort key in every
/// group or one per group. Positions, counts, mappings and changesets work per group: a row that changes its set of
/// groups is, in each group, an insert, a delete, a move or an update. The form says what the closure reads, as for
/// the one-group forms. See <doc:ManyGroups>.
extension ViewGrouping {
    /// Puts a row in the groups its collection and key name.
    public static func manyByKey(_ groups: @escaping @Sendable (_ collection: String, _ key: String) -> Set<String>) -> ViewGrouping {
        ViewGrouping(dependsOnObject: false, dependsOnMetadata: false, collection: nil, groups: { row in groups(row.collection, row.key) })
    }

    /// Puts each row of `collection` in the groups its object names; the view holds no row of another collection.
    ///
    /// ```swift
    /// let byTag = View(
    ///     name: "by-tag",
    ///     grouping: .manyByObject(notes) { _, note in Set(note.tags) },
    ///     sorting: .byObject(notes) { _, _, note in SortKey(.ascending(note.title)) })
    /// ```
    public static func manyByObject<Object, Metadata>(
        _ collection: TypedCollection<Object, Metadata>, _ groups: @escaping @Sendable (_ key: String, _ object: Object) -> Set<String>
    ) -> ViewGrouping {
        ViewGrouping(dependsOnObject: true, dependsOnMetadata: false, collection: collection.name, groups: { row in
            try row.withObject(in: collection) { object in groups(row.key, object) }
        })
    }

    /// Puts each row of `collection` in the groups its metadata names (`nil` when a row has none); the view holds no
    /// row of another collection.
    public static func manyByMetadata<Object, Metadata>(
        _ collection: TypedCollection<Object, Metadata>, _ groups: @escaping @Sendable (_ key: String, _ metadata: Metadata?) -> Set<String>
    ) -> ViewGrouping {
        ViewGrouping(dependsOnObject: false, dependsOnMetadata: true, collection: collection.name, groups: { row in
            groups(row.key, try row.metadata(in: collection))
        })
    }

    /// Puts each row of `collection` in the groups its object and metadata name; the view holds no row of another
    /// collection.
    public static func manyByRow<Object, Metadata>(
        _ collection: TypedCollection<Object, Metadata>,
        _ groups: @escaping @Sendable (_ key: String, _ object: Object, _ metadata: Metadata?) -> Set<String>
    ) -> ViewGrouping {
        ViewGrouping(dependsOnObject: true, dependsOnMetadata: true, collection: collection.name, groups: { row in
            try row.withObject(in: collection) { object in groups(row.key, object, try row.metadata(in: collection)) }
        })
    }

    /// Puts rows of any collection in the groups the whole row names; the closure decodes what it needs by the row's
    /// collection (``/CanopyCore/ExtensionRow/object(in:)``). Limit the collections with ``ViewOptions/allowedCollections``.
    public static func manyByRow(_ groups: @escaping @Sendable (_ row: ViewRow) throws -> Set<String>) -> ViewGrouping {
        ViewGrouping(dependsOnObject: true, dependsOnMetadata: true, collection: nil, groups: groups)
    }

    /// A many-group grouping from any closure over a ``ViewRow``, declaring what it reads.
    public static func manyCustom(
        dependsOnObject: Bool, dependsOnMetadata: Bool, _ groups: @escaping @Sendable (ViewRow) throws -> Set<String>
    ) -> ViewGrouping {
        ViewGrouping(dependsOnObject: dependsOnObject, dependsOnMetadata: dependsOnMetadata, collection: nil, groups: groups)
    }
}
