import Foundation
import Synchronization

/// An executor with one thread of its own: the jobs enqueued on it run on that thread, in order, never on Swift's
/// cooperative pool.
///
/// Swift Testing runs every test on the cooperative pool, which has one thread per core (two on CI). A synchronous
/// test that waits (for a child process, a tmux screen, a semaphore) holds one of them for as long as it waits, and a
/// suspended async test resumes only when a thread is free: behind every test start queued meanwhile. Under load
/// that delay passed a one-minute time limit (`OwnThreadTrait` says how tests use this executor to stay off the
/// pool).
public final class OwnThreadExecutor: TaskExecutor, SerialExecutor, @unchecked Sendable {
    // @unchecked: the queue is behind its mutex and the semaphore is thread-safe; the thread is the only consumer.
    private let jobs = Mutex<(queue: [UnownedJob], stopped: Bool)>(([], false))
    private let available = DispatchSemaphore(value: 0)

    /// Starts the thread, which runs jobs until ``stop()``.
    public init(name: String = "canopy-test-thread") {
        let thread = Thread { [self] in
            while true {
                available.wait()
                let next: UnownedJob?? = jobs.withLock { state in
                    if state.stopped { return .none }
                    return state.queue.isEmpty ? .some(nil) : .some(state.queue.removeFirst())
                }
                guard let next else { return }
                next?.runSynchronously(isolatedTo: asUnownedSerialExecutor(), taskExecutor: asUnownedTaskExecutor())
            }
        }
        thread.name = name
        thread.start()
    }

    /// Queues `job` for the thread.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.queue.append(job) }
        available.signal()
    }

    /// Ends the thread after the job it runs (jobs still queued never run: call it once the work is done).
    public func stop() {
        jobs.withLock { $0.stopped = true }
        available.signal()
    }
}
