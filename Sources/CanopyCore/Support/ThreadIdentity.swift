#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Identifies threads, to notice a nested call on the thread that already holds a lock (an observer's gate, a
/// connection's lock).
public enum ThreadIdentity {
    /// A number identifying the calling thread (never 0).
    @inline(__always)
    public static func current() -> UInt { currentThreadID() }
}

/// A number identifying the calling thread (never 0), to notice a nested call on the thread that already holds a lock.
@inline(__always)
func currentThreadID() -> UInt {
    #if canImport(Darwin)
    return UInt(bitPattern: pthread_self())
    #else
    return UInt(pthread_self())
    #endif
}

/// A flag set once from any thread (a task's cancellation handler) and read by another (the writer).
final class CancellationFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    /// Whether ``set()`` was called.
    var isSet: Bool { flag.load(ordering: .acquiring) }
    /// Sets the flag.
    func set() { flag.store(true, ordering: .releasing) }
}
