/// Creates manual views: lists in the order the app (its user) gives them, rather than an order computed from rows.
///
/// A manual view is a ``View`` with one group: the app inserts rows at positions, moves them and removes them with a
/// ``ManualListEditor`` (``CanopyCore/ReadWriteTransaction/manualList(_:)``). Everything that reads views works on it unchanged:
/// ``CanopyCore/ReadTransaction/view(_:)`` and its position queries (as cheap as in any view), ``ViewMappings``,
/// ``ViewObserver`` and its changesets (a move is a move), data sources, and the `canopy` tool.
///
/// ```swift
/// let focus = ManualView.make(name: "focus", collections: ["reminders"])
/// try database.register(focus)
/// try database.readWrite { txn in
///     let list = try txn.manualList("focus")
///     try list.append(key: "milk", inCollection: "reminders")
///     try list.insert(key: "bread", inCollection: "reminders", at: 0)
///     try list.move(from: 1, to: 0)
/// }
/// ```
///
/// Rules:
/// 1. A row is in the list once; it must exist in one of the view's collections when it is inserted.
/// 2. Removing a row from the store removes it from the list; writing a row again under the same key does not put it
///    back — also when a process that does not register the list removed it (or removed and wrote it again): the
///    catch-up sees it. Updating a row keeps its place (the changeset reports an update).
/// 3. The order is stored in the view's own `order` table (gapped 64-bit keys: a move writes one key, and where no
///    gap is left only a few rows around the place are renumbered) and survives reopening and rebuilding the view.
/// 4. A move writes no row: the list's `order` table and pages change, the row's record (which carries only a mark
///    that the row is in the list) does not, so other views report nothing and caches keep the row. An insertion or
///    removal sets or clears that mark through ``/CanopyCore/ReadWriteTransaction/placeAgain(_:inExtension:asUpdated:)``, which
///    tells no other extension.
/// 5. The view is recorded with the kind ``View/manualKind``; a list recorded as `"view"` by an earlier build (order
///    keys in the rows' records) is rebuilt in this format when it is registered. A filtered view over a manual list
///    is refused.
public enum ManualView {
    /// A manual view named `name` over rows of `collections`, whose one group is `group` (the view's name when `nil`).
    ///
    /// Changing `collections` or `group` rebuilds the view's pages at registration; the order is kept.
    public static func make(name: String, collections: Set<String>, group: String? = nil, versionTag: String = "1") -> View {
        View(manualName: name, group: group ?? name, versionTag: versionTag, collections: collections)
    }
}
