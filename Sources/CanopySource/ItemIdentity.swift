import Canopy

/// How an in-memory data source tells its rows apart across changes: an identity per item (which row is which) and
/// an equality (whether a row that stayed must be reconfigured).
///
/// With an identity, assigning or mutating a ``StaticDatasource``'s items or a ``SectionedDatasource``'s sections
/// computes the changes and applies them to the container as one checked batch: inserts, deletes, moves, and reloads
/// of rows that stayed but changed (see `ListDiff`). Without one, the container reloads.
///
/// ```swift
/// struct Task: Identifiable, Equatable { let id: Int; var title: String }
/// let source = StaticDatasource(items: tasks, factory: factory, container: list, identity: .identifiable)
/// source.items.remove(at: 2)      // the list gets a batch: one delete
/// source.items[0].title = "Call"  // one reload
/// ```
public struct ItemIdentity<Item> {
    /// The batch from old sections to new ones; `nil` when identities are not unique (then the container reloads).
    @usableFromInline
    let batch: (_ old: [[Item]], _ oldSections: [String], _ new: [[Item]], _ newSections: [String]) -> BatchUpdates?

    @usableFromInline
    init(batch: @escaping (_ old: [[Item]], _ oldSections: [String], _ new: [[Item]], _ newSections: [String]) -> BatchUpdates?) {
        self.batch = batch
    }

    /// Items identified by `id` and compared by `isEqual`.
    ///
    /// Identities must be unique in the whole source (all sections): when two items share one, a change reloads the
    /// container instead of guessing which went where.
    @inlinable
    public static func by<ID: Hashable>(_ id: @escaping (Item) -> ID, isEqual: @escaping (Item, Item) -> Bool) -> ItemIdentity {
        ItemIdentity { old, oldSections, new, newSections in
            ListDiff.batch(from: old, sections: oldSections, to: new, sections: newSections, id: id, isEqual: isEqual)
        }
    }

    /// The batch from `old` to `new` items of one section (what ``StaticDatasource`` applies), or `nil` when an
    /// identity is not unique (reload instead).
    public func changes(from old: [Item], to new: [Item]) -> BatchUpdates? {
        batch([old], [""], [new], [""])
    }

    /// The batch from `old` to `new` sections (what ``SectionedDatasource`` applies: sections matched by
    /// ``DatasourceSection/id``, else header, else position), or `nil` when a section identifier or an item identity
    /// is not unique (reload instead).
    public func changes(from old: [DatasourceSection<Item>], to new: [DatasourceSection<Item>]) -> BatchUpdates? {
        batch(old.map(\.items), old.enumerated().map { $1.matchingID(at: $0) }, new.map(\.items), new.enumerated().map { $1.matchingID(at: $0) })
    }
}

extension ItemIdentity where Item: Equatable {
    /// Items identified by `id` and compared with `==`.
    @inlinable
    public static func by<ID: Hashable>(_ id: @escaping (Item) -> ID) -> ItemIdentity {
        by(id, isEqual: ==)
    }
}

extension ItemIdentity where Item: Identifiable & Equatable {
    /// Items identified by their `id` and compared with `==`.
    @inlinable
    public static var identifiable: ItemIdentity { by({ $0.id }, isEqual: ==) }
}

extension ItemIdentity where Item: Hashable {
    /// Items identified by their value: a changed item is another item (a delete and an insert), never a reload.
    @inlinable
    public static var value: ItemIdentity { by({ $0 }, isEqual: { _, _ in true }) }
}
