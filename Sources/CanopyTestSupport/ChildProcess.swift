import Foundation
import Synchronization

/// A child process for tests that need another process (a crash writer, a `canopy watch`): its standard output read
/// line by line on a thread of its own, its standard error kept (and passed on to the test's) so that a failure message
/// can say why the child failed (``errorOutput(seconds:)``), and waits bounded by a timeout that kills it — so a hang
/// fails the test instead of hanging the run. The bounds are limits on a hang, never timings a test asserts on.
public final class ChildProcess: Sendable {
    private let process: Process
    private let lines = Mutex<(queued: [String], ended: Bool)>(([], false))
    /// Signalled once per line, and once at the end of the output.
    private let available = DispatchSemaphore(value: 0)
    private let exited = DispatchSemaphore(value: 0)
    /// What the child wrote on its standard error so far.
    private let errors = Mutex<Data>(Data())
    /// Signalled once, when the child closes its standard error (it exited, or was killed).
    private let errorsEnded = DispatchSemaphore(value: 0)
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
        // A pipe drained on a thread of its own (a child that writes a lot never blocks on it): a test's failure message
        // can include it, where the test's own standard error may be filtered or interleaved with other tests'.
        let errorPipe = Pipe()
        process.standardError = errorPipe
        let exited = self.exited
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        let errorHandle = errorPipe.fileHandleForReading
        Thread { [self] in
            while true {
                let chunk = errorHandle.availableData
                if chunk.isEmpty { break }
                errors.withLock { $0.append(chunk) }
                FileHandle.standardError.write(chunk)
            }
            errorsEnded.signal()
        }.start()
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
    /// `seconds`. Once it has exited, every call returns its status at once.
    public func waitForExit(seconds: Int = 60) -> Int32? {
        if exited.wait(timeout: .now() + .seconds(seconds)) == .timedOut {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        exited.signal()  // for the next call
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// ``waitForExit(seconds:)`` without holding the calling thread: the wait runs on a thread of its own. When the
    /// waiting task is cancelled, the child is killed (so a test that ends early leaves no child running).
    public func exitStatus(seconds: Int = 60) async -> Int32? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Int32?, Never>) in
                Thread { [self] in continuation.resume(returning: waitForExit(seconds: seconds)) }.start()
            }
        } onCancel: {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
    }

    /// What the child wrote on its standard error, once it has closed it (it exited), or what it wrote within
    /// `seconds` otherwise (a grandchild may hold it open). For failure messages: "exited with status 1: CrashWriter: …".
    public func errorOutput(seconds: Int = 10) -> String {
        if errorsEnded.wait(timeout: .now() + .seconds(seconds)) == .success { errorsEnded.signal() }  // later calls too
        return String(decoding: errors.withLock { $0 }, as: UTF8.self)
    }

    /// "exited with status 1; its standard error: …" (or "was still running after `seconds` s and was killed"): the
    /// end of a failure message, after waiting for the child to exit.
    public func exitDescription(seconds: Int = 60) -> String {
        let status = waitForExit(seconds: seconds)
        let errors = errorOutput().trimmingCharacters(in: .whitespacesAndNewlines)
        let outcome: String
        if let status {
            outcome = process.terminationReason == .uncaughtSignal ? "was ended by signal \(status)" : "exited with status \(status)"
        } else {
            outcome = "was still running after \(seconds) s and was killed"
        }
        return outcome + (errors.isEmpty ? " and wrote nothing on its standard error" : "; its standard error: \(errors)")
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
