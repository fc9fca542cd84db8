import Foundation
import Testing

/// A `CrashWriter` child process for tests that need another process: its output read line by line, and a wait
/// with a timeout that kills it (so a hang fails the test instead of hanging the run).
final class ChildProcess {
    let process = Process()
    private let output = Pipe()
    private var buffer = Data()
    private let exited = DispatchSemaphore(value: 0)

    /// Starts `CrashWriter` with `arguments`.
    init(_ arguments: [String]) throws {
        let writer = try #require(CrashTests.writerPath, "the CrashWriter executable was not built")
        process.executableURL = URL(fileURLWithPath: writer)
        process.arguments = arguments
        process.standardOutput = output
        let exited = self.exited
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
    }

    var processID: Int32 { process.processIdentifier }

    /// The next line the child printed, or `nil` at the end of its output.
    func readLine() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                return line
            }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty {
                guard !buffer.isEmpty else { return nil }
                defer { buffer.removeAll() }
                return String(decoding: buffer, as: UTF8.self)
            }
            buffer.append(chunk)
        }
    }

    /// Every remaining line of output (reads until the child closes its output).
    func remainingLines() -> [String] {
        var lines: [String] = []
        while let line = readLine() { lines.append(line) }
        return lines
    }

    /// Waits for the child to exit; kills it and returns `nil` when it takes longer than `seconds`.
    func waitForExit(seconds: Int) -> Int32? {
        if exited.wait(timeout: .now() + .seconds(seconds)) == .timedOut {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Kills the child with SIGKILL and waits for it.
    func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
