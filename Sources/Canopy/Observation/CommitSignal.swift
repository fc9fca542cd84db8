import Dispatch
import Synchronization

/// Wakes waiters when something fires it (a commit, a wake-up): a generation counter and the continuations waiting for
/// it to move. ``ViewObserver`` fires one at each commit; CanopySource's `CommitWakeup` at each ring.
public final class CommitSignal: Sendable {
    private struct State {
        var generation: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0
    }
    private let state = Mutex(State())

    /// A signal that has not fired.
    public init() {}

    /// How many times it fired.
    public var generation: UInt64 { state.withLock { $0.generation } }

    /// A commit happened: wake every waiter.
    public func fire() {
        let waiters = state.withLock { state in
            state.generation &+= 1
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns when the generation is past `generation`, after `timeout`, or when the task is cancelled.
    public func wait(after generation: UInt64, timeout: Duration) async {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state in
                    if state.generation != generation || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if ready {
                    continuation.resume()
                    return
                }
                let nanoseconds = max(0, timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000)
                DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { [self] in
                    resume(id)
                }
            }
        } onCancel: {
            resume(id)
        }
    }

    private func resume(_ id: UInt64) {
        let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
        waiter?.resume()
    }
}
