import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a command writes: standard output and standard error of the process, or buffers in tests.
///
/// Commands find it in ``Console/current`` (a task-local value), so that tests run them in-process and read what they
/// printed.
public final class Console: Sendable {
    private let sink: Sink
    private let captured = Mutex<(output: String, errors: String)>(("", ""))
    /// Whether the output goes to a terminal (then commands may draw progress and tables for people).
    public let outputIsTerminal: Bool
    /// Whether standard error goes to a terminal.
    public let errorsAreTerminal: Bool

    private enum Sink: Sendable {
        case process
        case capture
    }

    private init(sink: Sink, outputIsTerminal: Bool, errorsAreTerminal: Bool) {
        self.sink = sink
        self.outputIsTerminal = outputIsTerminal
        self.errorsAreTerminal = errorsAreTerminal
    }

    /// The process's standard output and standard error.
    public static let standard = Console(sink: .process, outputIsTerminal: isatty(1) == 1, errorsAreTerminal: isatty(2) == 1)

    /// A console that keeps what is written, for tests; read it with ``output`` and ``errors``. With
    /// `outputIsTerminal`, commands write as they do for a terminal (a list view instead of plain columns).
    public static func capturing(outputIsTerminal: Bool = false) -> Console {
        Console(sink: .capture, outputIsTerminal: outputIsTerminal, errorsAreTerminal: false)
    }

    /// The console of the running command.
    @TaskLocal public static var current: Console = .standard

    /// Everything written to the output so far (capturing consoles only).
    public var output: String { captured.withLock { $0.output } }
    /// Everything written to standard error so far (capturing consoles only).
    public var errors: String { captured.withLock { $0.errors } }

    /// Writes `text` and a newline to the output, flushing it (so `watch` lines reach a pipe at once).
    public func line(_ text: String = "") { write(text + "\n") }

    /// Writes `text` to the output.
    public func write(_ text: String) {
        switch sink {
        case .process:
            Self.writeAll(1, text)
        case .capture:
            captured.withLock { $0.output += text }
        }
    }

    /// Writes `text` and a newline to standard error.
    public func error(_ text: String) {
        switch sink {
        case .process:
            Self.writeAll(2, text + "\n")
        case .capture:
            captured.withLock { $0.errors += text + "\n" }
        }
    }

    /// Redraws a one-line progress indicator on standard error when it is a terminal; does nothing otherwise.
    public func progress(_ text: String) {
        guard case .process = sink, errorsAreTerminal else { return }
        Self.writeAll(2, "\r\u{1B}[2K" + text)
    }

    /// Ends a progress line started by ``progress(_:)``.
    public func endProgress() {
        guard case .process = sink, errorsAreTerminal else { return }
        Self.writeAll(2, "\r\u{1B}[2K")
    }

    /// Writes all of `text` to a file descriptor, unbuffered (a closed pipe just ends the writing).
    private static func writeAll(_ descriptor: Int32, _ text: String) {
        var text = text
        text.withUTF8 { buffer in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(descriptor, base + offset, buffer.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }
}
