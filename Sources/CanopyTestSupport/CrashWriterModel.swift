import Canopy

/// A row the `CrashWriter` child process writes: transaction `number` writes `"<number>-a"` and `"<number>-b"`.
public struct CrashWriterEntry: Codable, Sendable, Equatable {
    /// The transaction that wrote the row.
    public var number: Int
    /// `"a"` or `"b"`.
    public var part: String

    /// Creates an entry.
    public init(number: Int, part: String) {
        self.number = number
        self.part = part
    }
}

/// The collection the `CrashWriter` writes its entries to.
public let crashWriterEntries = TypedCollection<CrashWriterEntry, NoMetadata>("entries")

/// The view the `CrashWriter` keeps up to date with `--with-view` (and the cross-process observation test observes):
/// entries grouped by part, newest first.
public func crashWriterView() -> View {
    View(
        name: "entries-by-part",
        grouping: .byObject(CrashWriterEntry.self) { _, _, entry in entry.part },
        sorting: .byObject(CrashWriterEntry.self) { _, _, _, entry in SortKey(.descending(entry.number)) },
        versionTag: "1",
        options: ViewOptions(allowedCollections: [crashWriterEntries.name]))
}
