import Foundation

/// A child process run to its end, at most `seconds` (then killed: a hang ends as ``timedOut``, never hangs the test
/// run): its exit status or signal, and what it printed on standard output and standard error (through files, so a
/// child that prints a lot never blocks on a full pipe). The bound is a limit on a hang, never a timing a test asserts.
public struct ChildRun: Sendable {
    /// The exit status, or the signal that ended the child when ``signalled``.
    public var status: Int32
    /// Whether a signal ended the child.
    public var signalled: Bool
    /// Whether the child was killed after `seconds`.
    public var timedOut: Bool
    /// What it printed on standard output.
    public var output: String
    /// What it printed on standard error.
    public var errors: String

    /// Runs `executable` with `arguments` and the test's environment with `environment` on top, and waits for it.
    /// - Parameter currentDirectory: the child's working directory (relative paths in `arguments` are relative to
    ///   it); the test process's when `nil`.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], seconds: Double = 120, currentDirectory: String? = nil
    ) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory, isDirectory: true) }
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let outputFile = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-child-\(UUID().uuidString)")
        let errorFile = outputFile.appendingPathExtension("err")
        _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: outputFile)
            try? FileManager.default.removeItem(at: errorFile)
        }
        process.standardOutput = try FileHandle(forWritingTo: outputFile)
        process.standardError = try FileHandle(forWritingTo: errorFile)
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        timedOut = exited.wait(timeout: .now() + seconds) == .timedOut
        if timedOut { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        status = process.terminationStatus
        signalled = process.terminationReason == .uncaughtSignal
        output = (try? String(contentsOf: outputFile, encoding: .utf8)) ?? ""
        errors = (try? String(contentsOf: errorFile, encoding: .utf8)) ?? ""
    }
}
