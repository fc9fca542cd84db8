import Canopy

/// A row the `CrashWriter` child process writes: transaction `number` writes `"<number>-a"` and `"<number>-b"`.
public struct CrashWriterEntry: Codable, Sendable, Equatable {
    /// The transaction that wrote the row.
    public var number: Int
    /// `"a"` or `"b"`.
    public var part: String
    /// Filler that makes rows big (to grow the map quickly), or `nil`.
    public var payload: String?

    /// Creates an entry.
    public init(number: Int, part: String, payload: String? = nil) {
        self.number = number
        self.part = part
        self.payload = payload
    }
}

/// The collection the `CrashWriter` writes its entries to.
public let crashWriterEntries = TypedCollection<CrashWriterEntry, NoMetadata>("entries")

/// The view the `CrashWriter` keeps up to date with `--with-view` (and the cross-process observation test observes):
/// entries grouped by part, newest first.
///
/// Version tag `"1"` (the default) holds every entry; any other tag is a different definition that holds only the
/// entries with an even number — so two processes registering different tags disagree on the view's rows.
public func crashWriterView(versionTag: String = "1") -> View {
    let evenOnly = versionTag != "1"
    return View(
        name: "entries-by-part",
        grouping: .byObject(crashWriterEntries) { _, entry in evenOnly && entry.number % 2 != 0 ? nil : entry.part },
        sorting: .byObject(crashWriterEntries) { _, _, entry in SortKey(.descending(entry.number)) },
        versionTag: versionTag,
        options: ViewOptions(allowedCollections: [crashWriterEntries.name]))
}

/// The many-group view the `CrashWriter` keeps up to date with `--with-many-group-view`: every entry in the group of
/// its part, in "all", and — when its number is a multiple of 3 — in "third", newest first in each.
public func crashWriterManyGroupView() -> View {
    View(
        name: "entries-by-tags",
        grouping: .manyByObject(crashWriterEntries) { _, entry in
            Set([entry.part, "all"] + (entry.number % 3 == 0 ? ["third"] : []))
        },
        sorting: .byObject(crashWriterEntries) { _, _, entry in SortKey(.descending(entry.number)) },
        versionTag: "1",
        options: ViewOptions(allowedCollections: [crashWriterEntries.name]))
}

/// The manual list the `CrashWriter` keeps with `--with-manual-list`: a list of entries named `"focus"`.
public func crashWriterFocusList() -> View {
    ManualView.make(name: "focus", collections: [crashWriterEntries.name])
}

/// What commit `number` of the `CrashWriter` does to its focus list of `count` rows (before the commit): it inserts
/// `"<number>-a"` at `insertAt`, then moves the row at `move.from` to `move.to` (positions in the list after the
/// insertion). Every third commit inserts at the top, so neighbours run out of gaps and rows are renumbered.
public func crashWriterFocusStep(number: Int, count: Int) -> (insertAt: Int, move: (from: Int, to: Int)?) {
    let insertAt = number % 3 == 0 ? 0 : (number &* 7_919) % (count + 1)
    let after = count + 1
    guard after >= 2 else { return (insertAt, nil) }
    return (insertAt, ((number &* 31) % after, number % 2 == 0 ? 0 : (number &* 17) % after))
}

/// The focus list's keys after `commits` commits of the `CrashWriter` with `--with-manual-list` (from an empty list).
public func crashWriterFocusModel(commits: Int) -> [String] {
    var list: [String] = []
    guard commits > 0 else { return list }
    for number in 1...commits {
        let step = crashWriterFocusStep(number: number, count: list.count)
        list.insert("\(number)-a", at: step.insertAt)
        if let move = step.move { list.insert(list.remove(at: move.from), at: move.to) }
    }
    return list
}
