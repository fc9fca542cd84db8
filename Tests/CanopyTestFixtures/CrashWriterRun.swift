import CanopyTestSupport

/// Runs the `CrashWriter` child over the database at `path` without fsync (`none`), with `arguments` (no extension
/// unless they name one), reads what it prints and waits for it to exit. The bound is a limit on a hang: past it the
/// child is killed.
/// - Throws: when the executable was not built next to the tests, or the child did not exit with status 0 (the message
///   says how it ended and what it wrote on its standard error).
public func runCrashWriter(_ path: String, _ arguments: [String], seconds: Int = 120) throws {
    guard let executable = builtExecutable(named: "CrashWriter") else { throw CrashWriterFailure("the CrashWriter executable was not built") }
    let child = try ChildProcess(executable, [path, "none"] + arguments)
    _ = child.remainingLines(seconds: seconds)
    let status = child.waitForExit(seconds: seconds)
    guard status == 0 else {
        throw CrashWriterFailure("CrashWriter \(arguments.joined(separator: " ")): "
            + (status == nil ? "still running after \(seconds) s, killed" : child.exitDescription(seconds: 0)))
    }
}

/// Why ``runCrashWriter(_:_:seconds:)`` failed.
public struct CrashWriterFailure: Error, CustomStringConvertible {
    /// What went wrong.
    public var description: String

    init(_ description: String) { self.description = description }
}
