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

    /// Starts `executable` with `arguments`; its standard error goes to the test's.
    public init(_ executable: String, _ arguments: [String]) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
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

    /// The child's process id.
    public var processID: Int32 { process.processIdentifier }

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

    /// Kills the child with SIGKILL and waits for it.
    public func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
