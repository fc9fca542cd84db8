/// A view's grouping and sorting over one collection's objects, read once per row: made at the view's creation when
/// both are the `byObject` forms of one ``/CanopyCore/TypedCollection``.
///
/// Each form alone reads the row's object for its own closure (``/CanopyCore/ExtensionRow/withObject(in:_:)``: a check
/// of the row's collection and codec, and the object lent in place). Placing a row runs both closures, so a view of two
/// typed forms read it twice; this reads it once and hands the same value to both, which is what the two closures
/// would have seen (the row's object as a read returns it).
struct TypedPlacement: Sendable {
    /// The row's group and sort key, or `nil` when the grouping leaves it out.
    let place: @Sendable (_ row: ExtensionRow) throws -> (group: String, sortKey: SortKey)?

    /// The placement of a `byObject` grouping and a `byObject` sorting of the same collection and types, or `nil`.
    init?(grouping: ViewGrouping, sorting: ViewSorting) {
        guard let form = grouping.objectForm, let place = form.placement(sortedBy: sorting) else { return nil }
        self.place = place
    }
}

/// The closure of a `byObject` grouping with its types (``ViewGrouping/objectForm``).
protocol ObjectGroupingForm: Sendable {
    /// One closure placing a row by this grouping and `sorting`, when `sorting` is a `byObject` form of the same
    /// collection and types; otherwise `nil`.
    func placement(sortedBy sorting: ViewSorting) -> (@Sendable (ExtensionRow) throws -> (group: String, sortKey: SortKey)?)?
}

/// ``ObjectGroupingForm`` for objects of `Object` in `collection`.
struct ObjectGrouping<Object: Codable & Sendable, Metadata: Codable & Sendable>: ObjectGroupingForm {
    let collection: TypedCollection<Object, Metadata>
    let group: @Sendable (_ key: String, _ object: Object) -> String?

    func placement(sortedBy sorting: ViewSorting) -> (@Sendable (ExtensionRow) throws -> (group: String, sortKey: SortKey)?)? {
        guard let sort = sorting.objectForm as? ObjectSorting<Object, Metadata>, sort.collection.name == collection.name,
              sort.collection.codec.name == collection.codec.name else { return nil }
        let collection = collection
        let group = group
        let sortKey = sort.sortKey
        return { row in
            try row.withObject(in: collection) { object -> (group: String, sortKey: SortKey)? in
                let key = row.key
                guard let name = group(key, object) else { return nil }
                return (name, sortKey(name, key, object))
            }
        }
    }
}

/// The closure of a `byObject` sorting with its types (``ViewSorting/objectForm``).
struct ObjectSorting<Object: Codable & Sendable, Metadata: Codable & Sendable>: Sendable {
    let collection: TypedCollection<Object, Metadata>
    let sortKey: @Sendable (_ group: String, _ key: String, _ object: Object) -> SortKey
}
