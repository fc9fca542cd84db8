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
