/// A cache key: a row's key with its hash computed once, when the key is made.
///
/// The dictionary of an ``ObjectCache`` uses that hash as is (`_rawHashValue(seed:)`), so a lookup hashes the key's
/// UTF-8 bytes once with a short multiply-mix loop instead of running SipHash over the string; equality compares the
/// hashes before the strings.
struct CacheKey: Hashable {
    let key: String
    let hash: Int

    @inline(__always)
    init(_ key: String) {
        self.key = key
        self.hash = CacheKey.hash(of: key)
    }

    static func == (lhs: CacheKey, rhs: CacheKey) -> Bool {
        lhs.hash == rhs.hash && lhs.key == rhs.key
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(hash)
    }

    // Dictionary asks for this; the hash is already well mixed, so the seed is only folded in.
    func _rawHashValue(seed: Int) -> Int {
        hash ^ seed
    }

    /// A 64-bit hash of the UTF-8 bytes of `key`: 8 bytes at a time, multiplied and rotated, then a final avalanche
    /// (MurmurHash3's finalizer) so that every bit of the result depends on every input byte.
    static func hash(of key: String) -> Int {
        // The bytes in place (a native string's own storage; a small string's copied to the stack by the standard
        // library), hashed by a function the closure inlines.
        if let hash = key.utf8.withContiguousStorageIfAvailable({ hash(of: UnsafeRawBufferPointer($0)) }) { return hash }
        // A string without contiguous UTF-8 (bridged): the same words, assembled byte by byte.
        var state = seed ^ UInt64(truncatingIfNeeded: key.utf8.count)
        var word: UInt64 = 0
        var filled: UInt64 = 0
        for byte in key.utf8 {
            word |= UInt64(byte) << (8 * filled)
            filled += 1
            if filled == 8 {
                state = mix(state, word)
                word = 0
                filled = 0
            }
        }
        if filled > 0 { state = mix(state, word) }
        return finalize(state)
    }

    private static let seed: UInt64 = 0x9E37_79B9_7F4A_7C15

    /// ``hash(of:)`` of the UTF-8 bytes `raw`.
    @inline(__always)
    private static func hash(of raw: UnsafeRawBufferPointer) -> Int {
        let count = raw.count
        var state = seed ^ UInt64(truncatingIfNeeded: count)
        var offset = 0
        while offset &+ 8 <= count {
            state = mix(state, raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            offset &+= 8
        }
        if offset < count {
            var tail: UInt64 = 0
            var shift: UInt64 = 0
            while offset < count {
                tail |= UInt64(raw.load(fromByteOffset: offset, as: UInt8.self)) &<< shift
                shift &+= 8
                offset &+= 1
            }
            state = mix(state, tail)
        }
        return finalize(state)
    }

    /// MurmurHash3's finalizer.
    @inline(__always)
    private static func finalize(_ value: UInt64) -> Int {
        var state = value
        state ^= state >> 33
        state &*= 0xFF51_AFD7_ED55_8CCD
        state ^= state >> 33
        state &*= 0xC4CE_B9FE_1A85_EC53
        state ^= state >> 33
        return Int(truncatingIfNeeded: state)
    }

    @inline(__always)
    private static func mix(_ state: UInt64, _ word: UInt64) -> UInt64 {
        let product = (state ^ word) &* 0x9FB2_1C65_1E98_DF25
        return (product << 29) | (product >> 35)
    }
}

/// The cache of one collection's values of one Swift type: an ``ObjectCache`` of keys to slots, and the values in
/// raw storage by slot.
///
/// Nothing on a hit is generic but the copy of the value out of its slot: the class is not generic (so finding it
/// and looking a key up never asks the runtime for generic metadata, which unspecialized code would on every call),
/// the caller checks the value type by its identifier, and the value is read from its slot as the caller's type.
/// Values live in chunks of 256 slots that never move; the code that must know the type to destroy or move a value
/// is captured when the cache is made.
final class CollectionCache {
    /// The collection whose values the cache holds.
    let collection: String
    /// The Swift type of the values (a collection read through handles of two types has two caches).
    let valueType: ObjectIdentifier
    @exclusivity(unchecked) private(set) var keys: ObjectCache
    /// Whether a hit through a handle of the binary codec found the collection's record to be of the binary codec
    /// since the cache was last emptied: later such hits skip the record's lookup. A collection's codec changes only
    /// by a migration, which empties its caches (in this connection directly, in others through the commit's
    /// `removedCollections`), and emptying clears this.
    @exclusivity(unchecked) var binaryRecordChecked = false
    private let stride: Int
    private let alignment: Int
    // Used under the connection's lock, never in overlapping accesses: without the runtime's exclusivity checks (one
    // per value set or read otherwise).
    @exclusivity(unchecked) private var chunks: [UnsafeMutableRawPointer] = []
    private let destroyValue: (UnsafeMutableRawPointer) -> Void
    private let moveValue: (_ from: UnsafeMutableRawPointer, _ to: UnsafeMutableRawPointer) -> Void
    private static let chunkShift = 8

    init<Value>(collection: String, limit: Int, valueType: Value.Type) {
        self.collection = collection
        self.valueType = ObjectIdentifier(Value.self)
        self.keys = ObjectCache(limit: limit)
        self.stride = max(1, MemoryLayout<Value>.stride)
        self.alignment = max(16, MemoryLayout<Value>.alignment)
        self.destroyValue = { $0.assumingMemoryBound(to: Value.self).deinitialize(count: 1) }
        self.moveValue = { from, to in
            to.assumingMemoryBound(to: Value.self).moveInitialize(from: from.assumingMemoryBound(to: Value.self), count: 1)
        }
    }

    deinit {
        removeAll()
        for chunk in chunks { chunk.deallocate() }
    }

    var count: Int { keys.count }

    /// Where the value of `slot` lives (valid until the cache changes).
    @inline(__always)
    func address(of slot: Int) -> UnsafeMutableRawPointer {
        chunks[slot &>> Self.chunkShift] + (slot & ((1 << Self.chunkShift) - 1)) &* stride
    }

    /// The slot of `key`'s value (made the most recently used), or `nil`.
    @inline(__always)
    func slot(for key: CacheKey) -> Int? {
        keys.slot(for: key)
    }

    /// The value in `slot`, which must hold a value of `Value` (the caller checked ``valueType``).
    @inline(__always)
    func value<Value>(at slot: Int, as type: Value.Type) -> Value {
        address(of: slot).assumingMemoryBound(to: Value.self).pointee
    }

    /// Stores `value` (of the cache's type) for `key`. Returns whether the cache holds one value more than before.
    func set<Value>(_ value: Value, for key: CacheKey) -> Bool {
        guard let (slot, isNew) = keys.set(key) else { return false }
        if isNew {
            while slot &>> Self.chunkShift >= chunks.count {
                chunks.append(UnsafeMutableRawPointer.allocate(byteCount: stride << Self.chunkShift, alignment: alignment))
            }
            address(of: slot).initializeMemory(as: Value.self, to: value)
            return true
        }
        address(of: slot).assumingMemoryBound(to: Value.self).pointee = value
        return false
    }

    /// Removes the value for `key`; returns whether there was one.
    func remove(_ key: CacheKey) -> Bool {
        guard let (slot, movedFrom) = keys.remove(key) else { return false }
        destroyValue(address(of: slot))
        if let movedFrom { moveValue(address(of: movedFrom), address(of: slot)) }
        return true
    }

    /// Removes the least recently used value; returns whether there was one.
    func removeLeastRecentlyUsed() -> Bool {
        guard let key = keys.leastRecentlyUsed else { return false }
        return remove(key)
    }

    /// Removes every value (keeping the storage).
    func removeAll() {
        for slot in 0..<keys.count { destroyValue(address(of: slot)) }
        keys.removeAll()
        binaryRecordChecked = false
    }

    func checkInvariants() -> Bool { keys.checkInvariants() }
}

/// A connection's decoded values (its objects, or its metadata): one typed cache per collection and Swift type, at
/// most `limit` values in all.
///
/// A hit finds its collection's cache by comparing the collection name and type with those of the cache used last
/// (no dictionary lookup, no `Any` cast), then looks the key up with its precomputed hash and copies the value out of
/// its slot. When the total reaches `limit`, the least recently used value of the cache being filled is evicted (or,
/// when that cache holds only the new value, one of another cache): recency is kept per collection.
final class ObjectCaches {
    let limit: Int
    // Used under the connection's lock, never in overlapping accesses: without the runtime's exclusivity checks.
    @exclusivity(unchecked) private var caches: [CollectionCache] = []
    @exclusivity(unchecked) private var last: CollectionCache?
    /// Values held in all caches.
    @exclusivity(unchecked) private(set) var count = 0

    init(limit: Int) {
        self.limit = max(0, limit)
    }

    /// The cache of `collection` for values of the type `valueType` identifies, or `nil` when there is none.
    @inline(__always)
    func cache(for collection: String, type valueType: ObjectIdentifier) -> CollectionCache? {
        if let last, last.valueType == valueType, last.collection == collection { return last }
        for cache in caches where cache.valueType == valueType && cache.collection == collection {
            last = cache
            return cache
        }
        return nil
    }

    /// Caches `value` for `key` in `collection` (and drops values of other types cached for that key).
    func set<Value>(_ value: Value, forKey key: String, in collection: String) {
        guard limit > 0 else { return }
        let cacheKey = CacheKey(key)
        let cache: CollectionCache
        if let found = self.cache(for: collection, type: ObjectIdentifier(Value.self)) {
            cache = found
        } else {
            cache = CollectionCache(collection: collection, limit: limit, valueType: Value.self)
            caches.append(cache)
            last = cache
        }
        if caches.count > 1 {
            for other in caches where other !== cache && other.collection == collection && other.remove(cacheKey) { count -= 1 }
        }
        guard cache.set(value, for: cacheKey) else { return }
        count += 1
        if count > limit {
            if cache.count > 1 {
                _ = cache.removeLeastRecentlyUsed()
                count -= 1
            } else if let other = caches.first(where: { $0 !== cache && $0.count > 0 }), other.removeLeastRecentlyUsed() {
                count -= 1
            }
        }
    }

    /// Drops the values cached for `key` in `collection` (of every type).
    func remove(key: String, in collection: String) {
        guard count > 0 else { return }
        let cacheKey = CacheKey(key)
        for cache in caches where cache.collection == collection && cache.remove(cacheKey) { count -= 1 }
    }

    /// Drops every value cached for `collection`.
    func removeAll(inCollection collection: String) {
        for cache in caches where cache.collection == collection {
            count -= cache.count
            cache.removeAll()
        }
    }

    /// Drops every value.
    func removeAll() {
        // Emptied in place too: a scan that holds one of them sees it empty, not stale.
        for cache in caches { cache.removeAll() }
        caches.removeAll()
        last = nil
        count = 0
    }

    /// The number of values cached for `collection` (for tests).
    func count(inCollection collection: String) -> Int {
        caches.filter { $0.collection == collection }.reduce(0) { $0 + $1.count }
    }

    /// Checks every cache's list and index agree and the total is right (for tests).
    func checkInvariants() -> Bool {
        caches.allSatisfy { $0.checkInvariants() } && caches.reduce(0) { $0 + $1.count } == count && count <= limit
    }
}
