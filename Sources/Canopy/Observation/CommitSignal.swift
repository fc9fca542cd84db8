import Dispatch
import Synchronization

/// Wakes waiters when something fires it (a commit, a wake-up): a generation counter and the continuations waiting for
/// it to move. ``ViewObserver`` fires one at each commit; CanopySource's `CommitWakeup` at each ring.
///
/// A waiter's timeout is kept by one timer per signal, armed for the earliest deadline of the waiters: a waiter woken
/// by ``fire()`` leaves nothing scheduled behind it. (Each wait used to schedule its own `asyncAfter`, which ran at
/// its deadline whether or not the waiter was still there: an observer of a busy database left one wake-up per commit
/// for the poll interval after it — two seconds' worth of commits, each a wake-up of a dispatch thread for nothing.)
public final class CommitSignal: Sendable {
    private struct Waiter {
        let continuation: CheckedContinuation<Void, Never>
        let deadline: UInt64
    }

    private struct State {
        var generation: UInt64 = 0
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0
        /// Made at the first wait that has to wait; cancelled when the signal goes.
        var timer: (any DispatchSourceTimer)?
        /// The uptime (nanoseconds) the timer is armed for, or `nil` when it is not armed.
        var armedDeadline: UInt64?
        /// How many times the timer was armed (for tests: a fired signal's waiters leave no arming behind).
        var armings = 0
    }
    private let state = Mutex(State())

    /// A signal that has not fired.
    public init() {}

    deinit {
        state.withLock { $0.timer?.cancel() }
    }

    /// How many times it fired.
    public var generation: UInt64 { state.withLock { $0.generation } }

    /// How many times the timeout timer has been armed since the signal was made (a waiter whose deadline comes
    /// before every armed one arms it; the timer arms itself again for the next deadline when it runs).
    var timerArmings: Int { state.withLock { $0.armings } }

    /// How many waiters are waiting (for tests).
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// A commit happened: wake every waiter. The timer stays armed: when it runs it finds no waiter due and arms itself
    /// for the next waiter's deadline, if any, so a stream of commits costs one timer run per timeout, not one per wait.
    public func fire() {
        let waiters = state.withLock { state in
            state.generation &+= 1
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.continuation.resume() }
    }

    /// Returns when the generation is past `generation`, after `timeout`, or when the task is cancelled.
    public func wait(after generation: UInt64, timeout: Duration) async {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        let nanoseconds = max(0, timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000)
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let deadline = DispatchTime.now().uptimeNanoseconds &+ UInt64(nanoseconds)
                let ready = state.withLock { state in
                    if state.generation != generation || Task.isCancelled { return true }
                    state.waiters[id] = Waiter(continuation: continuation, deadline: deadline)
                    arm(&state, for: deadline)
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            resume(id)
        }
    }

    /// Arms the timer for `deadline` unless it is armed for an earlier one. Called with the state locked.
    private func arm(_ state: inout State, for deadline: UInt64) {
        if let armed = state.armedDeadline, armed <= deadline { return }
        let timer: any DispatchSourceTimer
        if let made = state.timer {
            timer = made
        } else {
            timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global())
            timer.setEventHandler { [weak self] in self?.timerRan() }
            timer.schedule(deadline: DispatchTime(uptimeNanoseconds: deadline))
            timer.activate()
            state.timer = timer
            state.armedDeadline = deadline
            state.armings += 1
            return
        }
        timer.schedule(deadline: DispatchTime(uptimeNanoseconds: deadline))
        state.armedDeadline = deadline
        state.armings += 1
    }

    /// The timer ran: resumes the waiters whose deadline has passed and arms the timer for the next one.
    private func timerRan() {
        let now = DispatchTime.now().uptimeNanoseconds
        let due = state.withLock { state -> [Waiter] in
            state.armedDeadline = nil
            var due: [Waiter] = []
            var next: UInt64?
            for (id, waiter) in state.waiters {
                if waiter.deadline <= now {
                    due.append(waiter)
                    state.waiters[id] = nil
                } else if next.map({ waiter.deadline < $0 }) ?? true {
                    next = waiter.deadline
                }
            }
            if let next { arm(&state, for: next) }
            return due
        }
        for waiter in due { waiter.continuation.resume() }
    }

    private func resume(_ id: UInt64) {
        let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
        waiter?.continuation.resume()
    }
}
