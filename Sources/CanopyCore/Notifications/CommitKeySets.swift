import Synchronization

/// The keys a commit changed, by collection — a ``CommitNotification``'s ``CommitNotification/changedObjects``,
/// ``CommitNotification/changedMetadata`` and ``CommitNotification/removedKeys`` — either as those sets, or as the
/// committing transaction's change log left them, turned into sets only when someone asks for them.
///
/// A bulk write's commit lists every key it wrote: building 100,000 `String`s into hashed sets cost about 550
/// instructions a row (and random memory accesses) at every such commit, while what the commit itself needs — the
/// persisted log's bytes, other connections' cache invalidation — walks the keys once. So the sets are built on first
/// use (a public accessor, equality), once, under a lock; the walks (``forEachKey(in:_:)``, the persisted bytes) read
/// the log as it is. Both give the same keys, each once.
final class CommitKeySets: Sendable {
    /// The three maps of a notification.
    struct Maps: Sendable, Hashable {
        var changedObjects: [String: Set<String>]
        var changedMetadata: [String: Set<String>]
        var removedKeys: [String: Set<String>]

        subscript(kind: Kind) -> [String: Set<String>] {
            switch kind {
            case .changedObjects: changedObjects
            case .changedMetadata: changedMetadata
            case .removedKeys: removedKeys
            }
        }
    }

    /// Which map.
    enum Kind: CaseIterable {
        case changedObjects, changedMetadata, removedKeys
    }

    /// One collection's keys of one map as the change log kept them: `listed` (rows the transaction created, without
    /// a hash), `single` (the one existing row a transaction changed in the collection while it changed no other,
    /// without a hash either: a one-row commit builds no hashed set) and `hashed` (every other change). No key is in
    /// two of them, and none is listed twice (``ChangeLog`` sees to it).
    struct LoggedKeys: Sendable {
        var collection: String
        var listed: [String]
        var single: String?
        var hashed: Set<CacheKey>

        init(collection: String, listed: [String], single: String? = nil, hashed: Set<CacheKey>) {
            self.collection = collection
            self.listed = listed
            self.single = single
            self.hashed = hashed
        }

        var isEmpty: Bool { listed.isEmpty && single == nil && hashed.isEmpty }
        var count: Int { listed.count + (single == nil ? 0 : 1) + hashed.count }

        /// The keys, each once.
        func forEach(_ body: (String) throws -> Void) rethrows {
            for key in listed { try body(key) }
            if let single { try body(single) }
            for key in hashed { try body(key.key) }
        }

        var strings: Set<String> {
            var set = Set<String>(minimumCapacity: count)
            forEach { set.insert($0) }
            return set
        }
    }

    /// One map's ``LoggedKeys``, a collection's each, with the first kept inline: a commit that wrote one collection
    /// allocates no array for it.
    struct LoggedParts: Sendable {
        private var first: LoggedKeys?
        private var rest: [LoggedKeys] = []

        init() {}

        mutating func append(_ part: LoggedKeys) {
            if first == nil { first = part } else { rest.append(part) }
        }

        var count: Int { first == nil ? 0 : 1 + rest.count }
        var isEmpty: Bool { first == nil }

        /// Calls `body` with each part, in the order appended.
        func forEach(_ body: (LoggedKeys) throws -> Void) rethrows {
            guard let first else { return }
            try body(first)
            for part in rest { try body(part) }
        }

        /// The number of keys of all parts.
        var keyCount: Int {
            var count = 0
            forEach { count += $0.count }
            return count
        }
    }

    /// The change log's keys: per map, per collection (collections without keys left out).
    struct Logged: Sendable {
        var changedObjects = LoggedParts()
        var changedMetadata = LoggedParts()
        var removedKeys = LoggedParts()

        var maps: Maps {
            func map(_ parts: LoggedParts) -> [String: Set<String>] {
                var map: [String: Set<String>] = [:]
                map.reserveCapacity(parts.count)
                parts.forEach { map[$0.collection] = $0.strings }
                return map
            }
            return Maps(changedObjects: map(changedObjects), changedMetadata: map(changedMetadata), removedKeys: map(removedKeys))
        }
    }

    private let logged: Logged?
    private let built: Mutex<Maps?>

    /// Key sets given as sets.
    init(_ maps: Maps) {
        logged = nil
        built = Mutex(maps)
    }

    /// Key sets kept as the change log left them, built into sets on first use.
    init(logged: Logged) {
        self.logged = logged
        built = Mutex(nil)
    }

    /// The three maps (built on first use).
    var maps: Maps {
        built.withLock { maps in
            if let maps { return maps }
            let made = logged?.maps ?? Maps(changedObjects: [:], changedMetadata: [:], removedKeys: [:])
            maps = made
            return made
        }
    }

    /// The map `kind` by collection, each collection's keys once: from the change log without building sets when the
    /// notification was made from one.
    func parts(_ kind: Kind) -> [LoggedKeys] {
        var parts: [LoggedKeys] = []
        forEachPart(kind) { parts.append($0) }
        return parts
    }

    /// Calls `body` with each collection's keys of the map `kind` (``parts(_:)`` without an array).
    func forEachPart(_ kind: Kind, _ body: (LoggedKeys) throws -> Void) rethrows {
        if let logged {
            switch kind {
            case .changedObjects: try logged.changedObjects.forEach(body)
            case .changedMetadata: try logged.changedMetadata.forEach(body)
            case .removedKeys: try logged.removedKeys.forEach(body)
            }
            return
        }
        for (collection, keys) in maps[kind] { try body(LoggedKeys(collection: collection, listed: Array(keys), hashed: [])) }
    }

    /// The number of collections of the map `kind`.
    func partCount(_ kind: Kind) -> Int {
        if let logged {
            switch kind {
            case .changedObjects: return logged.changedObjects.count
            case .changedMetadata: return logged.changedMetadata.count
            case .removedKeys: return logged.removedKeys.count
            }
        }
        return maps[kind].count
    }

    /// The number of keys of the three maps (a key changed and removed counted twice: it is listed twice).
    var keyCount: Int {
        if let logged { return logged.changedObjects.keyCount + logged.changedMetadata.keyCount + logged.removedKeys.keyCount }
        let maps = maps
        return Kind.allCases.reduce(0) { count, kind in maps[kind].values.reduce(count) { $0 + $1.count } }
    }

    /// Calls `body` with each collection and key of the map `kind` (each key once per collection), without building
    /// sets.
    func forEachKey(in kind: Kind, _ body: (_ collection: String, _ key: String) -> Void) {
        guard logged != nil else {
            // (Given as sets — another process's commit, decoded —: walked as they are, not copied into parts.)
            for (collection, keys) in maps[kind] { for key in keys { body(collection, key) } }
            return
        }
        forEachPart(kind) { part in part.forEach { body(part.collection, $0) } }
    }

    /// Whether the sets were built (someone asked for them): the commit's own work (the persisted log, other
    /// connections' caches, the change feed) walks the log's keys and never builds them.
    var areBuilt: Bool { built.withLock { $0 != nil } }

    /// Whether the map `kind` lists no collection (no set is built).
    func isEmpty(_ kind: Kind) -> Bool {
        partCount(kind) == 0
    }
}
