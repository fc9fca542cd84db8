import Foundation
import Synchronization

/// A child process for tests that need another process (a crash writer, a `canopy watch`): its standard output read
/// line by line on a thread of its own, and waits bounded by a timeout that kills it — so a hang fails the test
/// instead of hanging the run. The bounds are limits on a hang, never timings a test asserts on.
public final class ChildProcess: Sendable {
    private let process: Process
    private let lines = Mutex<(queued: [String], ended: Bool)>(([], false))
    /// Signalled once per line, and once at the end of the output.
    private let available = DispatchSemaphore(value: 0)
    private let exited = DispatchSemaphore(value: 0)
    /// The writing end of the child's standard input, when the test talks to it (``send(_:)``).
    private let input: FileHandle?

    /// Starts `executable` with `arguments`; its standard error goes to the test's. With `talking`, its standard input
    /// is a pipe the test writes lines to with ``send(_:)`` (a child that waits for the test's go-ahead, so that what
    /// it does between two lines never depends on how fast either process runs); otherwise it inherits the test's.
    public init(_ executable: String, _ arguments: [String], talking: Bool = false) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if talking {
            // A line sent to a child that has died must be an error, not a SIGPIPE that ends the whole test run.
            signal(SIGPIPE, SIG_IGN)
            let inputPipe = Pipe()
            process.standardInput = inputPipe
            input = inputPipe.fileHandleForWriting
        } else {
            input = nil
        }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.standardError
        let exited = self.exited
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        let handle = pipe.fileHandleForReading
        Thread { [self] in
            var buffer = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                    buffer.removeSubrange(buffer.startIndex...newline)
                    lines.withLock { $0.queued.append(line) }
                    available.signal()
                }
            }
            let rest = String(decoding: buffer, as: UTF8.self)
            lines.withLock { state in
                if !rest.isEmpty { state.queued.append(rest) }
                state.ended = true
            }
            if !rest.isEmpty { available.signal() }
            available.signal()
        }.start()
    }

    /// Writes `line` and a newline to the child's standard input (started with `talking: true`).
    /// - Throws: when the child was not started talking, or has closed its input (it died).
    public func send(_ line: String) throws {
        guard let input else { throw ChildProcessError(description: "send(_:) needs a child started with talking: true") }
        try input.write(contentsOf: Data((line + "\n").utf8))
    }

    /// The child's process id.
    public var processID: Int32 { process.processIdentifier }

    /// Whether the child has exited (without waiting, and without killing it).
    public var hasExited: Bool { !process.isRunning }

    /// The next line the child printed; `nil` at the end of its output or when none comes within `seconds`.
    public func nextLine(seconds: Int = 60) -> String? {
        guard available.wait(timeout: .now() + .seconds(seconds)) == .success else { return nil }
        return lines.withLock { state in
            if state.queued.isEmpty {
                available.signal()  // the end of the output: let later calls see it too
                return nil
            }
            return state.queued.removeFirst()
        }
    }

    /// Every remaining line, until the child closes its output (or `seconds` pass without a line).
    public func remainingLines(seconds: Int = 60) -> [String] {
        var result: [String] = []
        while let line = nextLine(seconds: seconds) { result.append(line) }
        return result
    }

    /// Waits for the child to exit and returns its status; kills it and returns `nil` when it takes longer than
    /// `seconds`.
    public func waitForExit(seconds: Int = 60) -> Int32? {
        if exited.wait(timeout: .now() + .seconds(seconds)) == .timedOut {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Kills the child with SIGKILL and waits for it; does nothing to a child that has already exited (its process id
    /// may belong to another process by now).
    public func kill9() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// A misuse of ``ChildProcess``.
public struct ChildProcessError: Error, CustomStringConvertible {
    /// What went wrong.
    public var description: String
}
