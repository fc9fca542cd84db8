import Foundation
import LMDB
import Synchronization

/// A write that has waited a while for another process's write transaction to end: who holds the write lock.
public struct WriteLockWait: Sendable, CustomStringConvertible {
    /// How long the write has waited so far.
    public var waited: Duration
    /// The process that holds the write lock, when it can be told (see `Environment.writeLockHolder()`).
    public var holderProcessID: Int32?
    /// That process's name (`/proc/<pid>/comm`), when known.
    public var holderName: String?

    /// The wait of a write to the database in `databasePath` that has waited `waited` so far: reads who holds the lock.
    public init(databasePath: String, waited: Duration) {
        let holder = Environment.writeLockHolder(lockFile: databasePath + "/lock.mdb")
        self.waited = waited
        holderProcessID = holder
        holderName = holder.flatMap { try? String(contentsOfFile: "/proc/\($0)/comm", encoding: .utf8) }?
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A sentence for people: "waiting 3 s for the write lock, held by process 1234 (reminders)".
    public var description: String {
        let seconds = Double(waited.components.seconds) + Double(waited.components.attoseconds) / 1e18
        let holder = holderProcessID.map { "held by process \($0)" + (holderName.map { " (\($0))" } ?? "") } ?? "held by another process"
        return String(format: "waiting %.0f s for the database's write lock, %@: it writes until its transaction ends", seconds, holder)
    }
}

extension Connection {
    /// Runs `body` in a write transaction like ``readWrite(_:)-14mnh``, and calls `report` once (on another thread) if the
    /// transaction has not begun after `delay` — another process holds the write lock — saying which process holds it.
    ///
    /// For tools, so that a write blocked behind another process's long transaction does not wait silently.
    @discardableResult
    public func readWrite<R>(
        reportingWaitAfter delay: Duration, _ report: @escaping @Sendable (WriteLockWait) -> Void,
        _ body: (ReadWriteTransaction) throws -> R
    ) throws -> R {
        let began = WaitFlag()
        let path = core.path
        let timer = DispatchWorkItem {
            guard !began.value.load(ordering: .acquiring) else { return }
            report(WriteLockWait(databasePath: path, waited: delay))
        }
        let nanoseconds = delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds)), execute: timer)
        defer { timer.cancel() }
        return try readWrite { txn in
            began.value.store(true, ordering: .releasing)
            return try body(txn)
        }
    }
}

/// Whether the write transaction began (set inside it, read by the timer).
private final class WaitFlag: Sendable {
    let value = Atomic<Bool>(false)
}
