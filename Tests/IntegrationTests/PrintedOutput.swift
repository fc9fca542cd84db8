import Synchronization

/// What the README's quick start and the documentation examples print, captured by the tests that run them.
///
/// `print` below shadows the standard library's in this test module: it still prints, and inside
/// `PrintedOutput.$current.withValue(recorder) { ... }` it also records the line, so a test can check the output the
/// documentation promises (per task, so tests running in parallel don't mix their lines).
final class PrintedOutput: Sendable {
    @TaskLocal static var current: PrintedOutput?
    private let storage = Mutex<[String]>([])

    /// The lines printed so far.
    var lines: [String] { storage.withLock { $0 } }

    func record(_ line: String) { storage.withLock { $0.append(line) } }
}

/// Prints like `Swift.print`, and records the line in ``PrintedOutput/current``.
func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    let line = items.map { "\($0)" }.joined(separator: separator)
    PrintedOutput.current?.record(line)
    Swift.print(line, terminator: terminator)
}
