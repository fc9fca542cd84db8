#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Lets a process grow (remap) an environment's memory map while it has read transactions open.
///
/// LMDB remaps the file when the map size changes (`mdb_env_set_mapsize`), and it documents that no transaction of
/// the process may be active then. What actually breaks is narrower: pointers into the old mapping — cursors, and
/// value buffers handed out by a read — held while the remap happens. A read transaction that is merely open (a
/// pinned snapshot between two uses, an observer waiting for the next commit) keeps only page numbers and its reader
/// slot, and carries on over the new mapping. So instead of "no open transaction", the rule this gate enforces is
/// "no LMDB call in progress": every use of a transaction happens inside ``Environment/withAccess(_:)`` (shared), and a
/// remap takes the gate exclusively, waiting for the uses in progress to end.
///
/// The gate is a writer-preferring read-write lock (so a stream of readers can't starve a remap), plus a per-thread
/// count of the scopes held on each environment so that nested scopes on one thread don't lock twice.
final class AccessGate: @unchecked Sendable {
    // @unchecked: the rwlock is a pthread object used only through its thread-safe functions; it lives at a stable
    // heap address from init to deinit.
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>
    /// Identifies the environment in the per-thread table.
    let identity: UInt

    init(identity: UInt) {
        self.identity = identity
        lock = .allocate(capacity: 1)
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        #if canImport(Glibc)
        // Writer preference: a waiting remap blocks new readers, so 8 threads reading in a loop can't starve it.
        pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        #endif
        pthread_rwlock_init(lock, &attributes)
        pthread_rwlockattr_destroy(&attributes)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    /// How many shared scopes the calling thread holds on this gate.
    var depthOnCurrentThread: Int { ThreadAccessTable.current.depth(of: identity) }

    /// Runs `body` holding the gate shared (re-entrant on one thread).
    @inline(__always)
    func shared<R>(_ body: () throws -> R) rethrows -> R {
        let table = ThreadAccessTable.current
        if table.increment(identity) == 1 { pthread_rwlock_rdlock(lock) }
        defer { if table.decrement(identity) == 0 { pthread_rwlock_unlock(lock) } }
        return try body()
    }

    /// Runs `body` holding the gate exclusively: no other thread is inside a shared scope meanwhile.
    ///
    /// The calling thread may hold the gate shared at most once (`allowingOwnScope`): that one scope is released for the
    /// duration and taken again afterwards. Returns `nil` without running `body` when the calling thread holds more
    /// scopes than allowed (an outer scope of its own might hold pointers into the map).
    func exclusive<R>(allowingOwnScope: Bool, _ body: () throws -> R) rethrows -> R? {
        let table = ThreadAccessTable.current
        let held = table.depth(of: identity)
        guard held == 0 || (held == 1 && allowingOwnScope) else { return nil }
        if held == 1 { pthread_rwlock_unlock(lock) }
        pthread_rwlock_wrlock(lock)
        defer {
            pthread_rwlock_unlock(lock)
            if held == 1 { pthread_rwlock_rdlock(lock) }
        }
        return try body()
    }
}

/// The shared scopes each thread holds, per environment: a short list, since a thread rarely uses more than one or two
/// environments at once.
final class ThreadAccessTable {
    // Without the runtime's exclusivity checks (four per transaction otherwise): a table belongs to one thread (its
    // thread-specific value), and no access to it overlaps another (none calls out while it holds the arrays).
    @exclusivity(unchecked) private var identities: [UInt] = []
    @exclusivity(unchecked) private var depths: [Int] = []

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            #if canImport(Darwin)
            Unmanaged<ThreadAccessTable>.fromOpaque(pointer).release()
            #else
            if let pointer { Unmanaged<ThreadAccessTable>.fromOpaque(pointer).release() }
            #endif
        }
        return key
    }()

    /// The calling thread's table.
    static var current: ThreadAccessTable {
        if let pointer = pthread_getspecific(key) {
            return Unmanaged<ThreadAccessTable>.fromOpaque(pointer).takeUnretainedValue()
        }
        let table = ThreadAccessTable()
        pthread_setspecific(key, Unmanaged.passRetained(table).toOpaque())
        return table
    }

    func depth(of identity: UInt) -> Int {
        for index in identities.indices where identities[index] == identity { return depths[index] }
        return 0
    }

    /// Adds one scope; returns the new depth.
    func increment(_ identity: UInt) -> Int {
        for index in identities.indices where identities[index] == identity {
            depths[index] += 1
            return depths[index]
        }
        identities.append(identity)
        depths.append(1)
        return 1
    }

    /// Removes one scope; returns the new depth.
    func decrement(_ identity: UInt) -> Int {
        for index in identities.indices where identities[index] == identity {
            depths[index] -= 1
            let depth = depths[index]
            if depth == 0 {
                identities.remove(at: index)
                depths.remove(at: index)
            }
            return depth
        }
        return 0
    }
}
