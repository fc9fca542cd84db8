import Testing
@testable import Canopy

/// The wait an observer makes between commits: woken by a commit, by its timeout, or by cancellation — and a wait
/// that a commit ended leaves nothing scheduled behind it (an idle observer after a busy spell costs nothing).
@Suite("CommitSignal")
struct CommitSignalTests {
    @Test("A thousand waits ended by commits arm the timeout timer once, not once each", .timeLimit(.minutes(1)))
    func waitsEndedByCommitsLeaveNoTimers() async {
        let signal = CommitSignal()
        for _ in 0..<1_000 {
            let generation = signal.generation
            async let waited: Void = signal.wait(after: generation, timeout: .seconds(30))
            // The commit comes while the waiter waits (its timeout pending), as an observer's next commit does.
            while signal.waiting == 0 { await Task.yield() }
            signal.fire()
            await waited
        }
        #expect(signal.generation == 1_000)
        #expect(signal.waiting == 0)
        #expect(signal.timerArmings == 1, "armed \(signal.timerArmings) times")
    }

    @Test("A wait past its timeout returns without a commit; a longer one still waits until the commit",
          .timeLimit(.minutes(1)))
    func timeoutsAreKeptPerWaiter() async {
        let signal = CommitSignal()
        let generation = signal.generation
        let long = Task { await signal.wait(after: generation, timeout: .seconds(600)) }
        // The short wait returns by its timeout alone: nothing fires the signal while it waits.
        await signal.wait(after: generation, timeout: .milliseconds(20))
        #expect(signal.generation == generation)
        // The long waiter is still there (the timer re-armed for its deadline); a commit ends it.
        signal.fire()
        await long.value
        #expect(signal.generation == generation + 1)
    }

    @Test("Waits with different timeouts each return by their own, with no commit (the timer re-arms for the next)",
          .timeLimit(.minutes(1)))
    func successiveTimeouts() async {
        let signal = CommitSignal()
        async let first: Void = signal.wait(after: 0, timeout: .milliseconds(10))
        async let second: Void = signal.wait(after: 0, timeout: .milliseconds(40))
        async let third: Void = signal.wait(after: 0, timeout: .milliseconds(80))
        _ = await (first, second, third)
        #expect(signal.generation == 0)
        #expect(signal.waiting == 0)
    }

    @Test("A wait whose generation has already moved returns at once, and cancellation ends a wait",
          .timeLimit(.minutes(1)))
    func staleGenerationAndCancellation() async {
        let signal = CommitSignal()
        signal.fire()
        await signal.wait(after: 0, timeout: .seconds(600))
        let waiting = Task { await signal.wait(after: signal.generation, timeout: .seconds(600)) }
        // Cancelled while it waits (not before it starts, which the wait's own check would catch): the cancellation
        // handler must end it.
        while signal.waiting == 0 { await Task.yield() }
        waiting.cancel()
        await waiting.value
        #expect(signal.waiting == 0)
        #expect(signal.generation == 1)
    }
}
