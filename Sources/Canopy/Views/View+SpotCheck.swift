extension View {
    /// How many groups the registration's spot check samples, spread over the groups in name order.
    static let spotCheckGroups = 32
    /// How many entries of each sampled group it recomputes: the first, the last and evenly spaced ones between.
    static let spotCheckEntriesPerGroup = 8
    /// How many rows outside the view (the first of the allowed collections, in stored-key order) it checks stay out.
    static let spotCheckRowsOutside = 64

    /// Recomputes the place of a sample of the view's stored entries, and of the first rows outside it, with the
    /// closures, and returns a sentence describing the first difference, or `nil` when the sample agrees.
    func spotCheck(_ reader: ViewReader) throws -> String? {
        let transaction = reader.transaction
        let groups = try reader.index.groups.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        for group in Self.spread(groups.count, Self.spotCheckGroups).map({ groups[$0] }) {
            let count = try reader.count(inGroup: group)
            for position in Self.spread(count, Self.spotCheckEntriesPerGroup) {
                for (id, order) in try reader.entries(inGroup: group, range: position..<(position + 1)) {
                    guard let rowKey = try transaction.storedRowKey(for: id), let stored = try transaction.storedRow(for: rowKey) else {
                        return "row \(id) of group '\(group)' no longer exists"
                    }
                    let row = ExtensionRow(stored)
                    defer { stored.endAccess() }
                    // A row whose closures throw cannot be compared: skipped, not a difference.
                    let computed: [Place]
                    do { computed = try self.places(of: row, rowKey: rowKey, in: transaction) } catch { continue }
                    guard let place = computed.first(where: { $0.group == group }) else {
                        if computed.isEmpty { return "row \(id) is in group '\(group)' but the closures leave it out" }
                        return "row \(id) is in group '\(group)' but the closures put it in \(Self.groupList(computed.map(\.group)))"
                    }
                    if place.order != order { return "row \(id) of group '\(group)' has another sort key than the closures give" }
                    // Every group of the row, not only the sampled one: a row of a many-group view whose set of groups
                    // changed keeps its entry in this group but may lack or keep others.
                    let storedEntries = try reader.entries(of: id)
                    if Set(storedEntries) != Set(computed.map { ViewEntry(group: $0.group, orderBytes: $0.order) }) {
                        return "row \(id) is in groups \(Self.groupList(storedEntries.map(\.group))) but the closures put it in \(Self.groupList(computed.map(\.group))), or order it otherwise in one of them"
                    }
                }
            }
        }
        guard let slot = try reader.attachmentSlot() else { return nil }
        var scanned = 0
        var problem: String?
        try transaction.scanRows(inCollections: viewOptions.allowedCollections) { stored in
            scanned += 1
            let attachment = try stored.attachment(at: slot)
            if attachment == nil || attachment == ViewTables.skippedMarker {
                let row = ExtensionRow(stored)
                defer { stored.endAccess() }
                if let place = (try? self.places(of: row, rowKey: stored.storedKey, in: transaction))?.first {
                    problem = attachment == nil
                        ? "row \(stored.id) is not in the view but the closures put it in group '\(place.group)'"
                        : "row \(stored.id) was skipped (it did not decode) but the closures now put it in group '\(place.group)'"
                    return false
                }
            }
            return scanned < Self.spotCheckRowsOutside
        }
        return problem
    }

    /// Group names for a message: `'a', 'b'`, or `no group`.
    static func groupList(_ groups: [String]) -> String {
        groups.isEmpty ? "no group" : groups.sorted().map { "'\($0)'" }.joined(separator: ", ")
    }

    /// `samples` indexes of `0..<count` spread evenly, the first and the last included (all of them when fewer).
    static func spread(_ count: Int, _ samples: Int) -> [Int] {
        guard count > samples else { return Array(0..<count) }
        guard samples > 1 else { return [0] }
        return (0..<samples).map { $0 * (count - 1) / (samples - 1) }
    }
}
