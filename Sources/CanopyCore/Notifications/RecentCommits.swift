/// The notifications of this process's most recent commits, oldest first, at most ``capacity`` of them: what
/// connections catching up and observers advancing read from memory instead of the persisted commit log.
///
/// A ring: a commit's notification takes the oldest one's place once the ring is full, so that keeping the last
/// `capacity` costs one notification's destruction per commit, with no array shifted (the array pruned in batches
/// moved 256 notifications every 64 commits: about 1,100 instructions a commit).
struct RecentCommits {
    let capacity: Int
    private var storage: [CommitNotification] = []
    /// The index in `storage` of the oldest notification (0 until the ring is full).
    private var start = 0

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    var count: Int { storage.count }

    /// The `index`-th notification, oldest first (`index` in `0..<count`).
    subscript(index: Int) -> CommitNotification {
        let position = start + index
        return storage[position < storage.count ? position : position - storage.count]
    }

    var first: CommitNotification? { storage.isEmpty ? nil : self[0] }
    var last: CommitNotification? { storage.isEmpty ? nil : self[storage.count - 1] }

    /// Forgets every notification (readers then take them from the persisted log).
    mutating func removeAll() {
        storage.removeAll()
        start = 0
    }

    /// Adds the newest notification, dropping the oldest when the ring is full.
    mutating func append(_ notification: CommitNotification) {
        guard storage.count == capacity else {
            storage.append(notification)
            return
        }
        storage[start] = notification
        start = start + 1 == capacity ? 0 : start + 1
    }
}
