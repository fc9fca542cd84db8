import CanopySearch
import CanopyTestFixtures

/// The search index the `CrashWriter` keeps up to date with `--with-search`: each entry's part and `n<number>`, with
/// lists for prefixes of 2 letters (`n1*`), so kills land in their writes too.
public func crashWriterSearch() -> SearchIndex {
    SearchIndex(name: "entry-search", collections: [crashWriterEntries.name], fields: [SearchField("entry")], prefixLengths: [2]) { row in
        let entry = try row.object(as: CrashWriterEntry.self)
        return ["\(entry.part) n\(entry.number)"]
    }
}

/// A ranked results view over ``crashWriterSearch()`` (`--search-query` sets its query in another process).
public func crashWriterResults(_ index: SearchIndex) -> SearchResultsView {
    SearchResultsView.ranked(name: "entry-results", index: index)
}
