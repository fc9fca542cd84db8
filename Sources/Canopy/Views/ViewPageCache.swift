/// Decoded pages of one view at one committed version (``ViewIndex/version``), shared by this process's readers and
/// writers, and carried from version to version by this process's commits of the view.
///
/// A one-row update reads the pages its row leaves and enters in every view, and its observers read pages to find
/// where rows went: each read was an LMDB lookup, the page's checksum and a decode (about 4k instructions, four to
/// six per observed two-view update). A page of a version never changes, and the version's index says which pages
/// exist, so a page decoded once answers every later read at that version. When this process commits the version
/// that follows (a writer that began at the cached version), the pages the commit wrote replace theirs, the pages it
/// deleted leave, and the rest stay valid: the cache moves to the new version. Any other version (another process's
/// commit, a rebuild, a reader pinned at an older snapshot) neither reads nor fills it; a writer that began elsewhere
/// restarts it from the pages it wrote.
///
/// Versions are the same keys as the committed directories the view keeps (``View/index(in:)``), and follow the
/// same rules: unique per committed state of the file (a commit's snapshot), forgotten when the view is prepared
/// again (another database may repeat them).
struct ViewPageCache {
    /// The version the pages are of, or `nil` before the first page.
    private(set) var version: UInt64?
    private var pages: [UInt64: ViewPage] = [:]
    /// The most pages kept (about 2 KiB each): past it, a page leaves for each page that comes.
    static let limit = 2_048

    /// Page `id` of `version`, when cached.
    func page(_ id: UInt64, version: UInt64) -> ViewPage? {
        version == self.version ? pages[id] : nil
    }

    /// Keeps `page`, read as stored at `version` (ignored when the cache holds another version's pages).
    mutating func insert(_ page: ViewPage, id: UInt64, version: UInt64) {
        if self.version == nil { self.version = version }
        guard version == self.version else { return }
        if pages.count >= Self.limit, pages[id] == nil { pages.remove(at: pages.startIndex) }
        pages[id] = page
    }

    /// A commit of this process made `version` from `start`, writing `written` and deleting `deleted` (`written` is
    /// `nil` when the commit does not know every page it changed: it wrote some before its end).
    mutating func committed(_ version: UInt64, from start: UInt64?, written: [UInt64: ViewPage]?, deleted: Set<UInt64>) {
        guard let written, written.count <= Self.limit else {
            self = ViewPageCache(version: version)
            return
        }
        if start == nil || start != self.version || pages.count + written.count > Self.limit {
            self = ViewPageCache(version: version, pages: written)
            return
        }
        self.version = version
        for id in deleted { pages[id] = nil }
        for (id, page) in written { pages[id] = page }
    }

    /// Forgets every page.
    mutating func removeAll() {
        self = ViewPageCache()
    }
}
