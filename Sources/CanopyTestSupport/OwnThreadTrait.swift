import Testing

/// Runs each test (each case of a parameterized one) on a thread of its own (an ``OwnThreadExecutor`` preferred by the
/// test's task), off Swift's cooperative pool: `@Suite(.ownThread)` or `@Test(.ownThread)`.
///
/// For two kinds of tests:
/// - tests that **wait** (for a child process, a tmux screen, a semaphore, a watcher's line): on the pool, a
///   synchronous wait holds one of its threads (one per core, two on CI) for seconds, and every suspended async test
///   resumes, and every time limit is checked, only when a thread is free. In a full run under load an async test
///   waited behind them past its one-minute limit;
/// - async tests whose progress must not depend on the pool being free (a loop woken by commits, such as
///   `ViewDatasource.changes()`): their nonisolated code resumes on their own thread. Code isolated to an actor (the
///   main actor) still runs on that actor's executor, so such a test is not `@MainActor`.
///
/// Waiting is then the operating system's business (a sleeping thread costs nothing) and the pool is left to the
/// tests that compute.
public struct OwnThreadTrait: TestTrait, SuiteTrait, TestScoping {
    /// Applies to every test of a suite that has it.
    public var isRecursive: Bool { true }

    /// Runs `function` with an own thread's executor preferred (for a test case; a suite's scope runs as it is).
    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        guard testCase != nil else { return try await function() }
        let executor = OwnThreadExecutor(name: "test: \(test.name)")
        defer { executor.stop() }
        try await withTaskExecutorPreference(executor) { try await function() }
    }
}

extension Trait where Self == OwnThreadTrait {
    /// Runs each test on a thread of its own, off Swift's cooperative pool (see ``OwnThreadTrait``).
    public static var ownThread: Self { Self() }
}
