/// The groups a run of placements met lately, with their ids: a view's rows mostly go to a few groups, and comparing a
/// few (usually short) names costs less than hashing each row's group name into the directory. Population
/// (``View/populate(in:tables:reason:)``) and a writer's new entries (``ViewWriter/deferInsert(_:sortKeyLength:)``)
/// both find a row's group id here first.
///
/// A group's id never changes once assigned (ids are kept even when a group empties), so a remembered id stays right
/// for as long as the directory it came from: the caller keeps one per population or per writer.
struct RecentGroups {
    /// How many groups are kept (a view with more groups finds the others through `assign`).
    static let limit = 16

    private var groups: [(name: String, id: UInt32)] = []

    /// The id of `group`: remembered, or given by `assign` (which looks it up or creates it) and remembered.
    @inline(__always)
    mutating func id(of group: String, assign: (String) throws -> UInt32) rethrows -> UInt32 {
        for recent in groups where recent.name == group { return recent.id }
        return try remember(group, assign: assign)
    }

    private mutating func remember(_ group: String, assign: (String) throws -> UInt32) rethrows -> UInt32 {
        let id = try assign(group)
        if groups.count >= Self.limit { groups.removeFirst() }
        groups.append((group, id))
        return id
    }
}
