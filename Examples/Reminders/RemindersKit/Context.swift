import CanopyTerminal
import Foundation

/// What a command needs from the world: the environment, "now", the time zone, where output goes, and whether it is
/// a terminal. Tests run commands in-process with a context of their own.
public struct RemindersContext {
    /// The environment variables.
    public var environment: [String: String]
    /// The current time.
    public var now: Date
    /// The time zone dates are read and shown in.
    public var timeZone: TimeZone
    /// Writes to standard output.
    public var output: (String) -> Void
    /// Writes to standard error.
    public var errorOutput: (String) -> Void
    /// Whether standard output is a terminal.
    public var isTerminal: Bool
    /// Whether standard input is a terminal (needed by `tui`).
    public var inputIsTerminal: Bool
    /// The terminal's size, when it is one.
    public var terminalSize: (columns: Int, lines: Int)?
    /// How long the demo pauses between steps (0 in tests).
    public var demoPause: Duration

    /// Creates a context.
    public init(environment: [String: String], now: Date, timeZone: TimeZone, output: @escaping (String) -> Void,
                errorOutput: @escaping (String) -> Void, isTerminal: Bool = false, inputIsTerminal: Bool = false,
                terminalSize: (columns: Int, lines: Int)? = nil, demoPause: Duration = .zero) {
        self.environment = environment
        self.now = now
        self.timeZone = timeZone
        self.output = output
        self.errorOutput = errorOutput
        self.isTerminal = isTerminal
        self.inputIsTerminal = inputIsTerminal
        self.terminalSize = terminalSize
        self.demoPause = demoPause
    }

    /// The context of the running process. `REMINDERS_NOW` (`2026-11-25 10:00`) overrides the current time.
    public static func live() -> RemindersContext {
        let environment = ProcessInfo.processInfo.environment
        let timeZone = TimeZone.current
        var now = Date()
        if let text = environment["REMINDERS_NOW"], let parsed = try? DateInput(now: now, timeZone: timeZone).parse(text) { now = parsed }
        let isTerminal = isatty(1) == 1
        return RemindersContext(
            environment: environment, now: now, timeZone: timeZone,
            output: { TerminalScreen.writeToStandardOutput($0) },
            errorOutput: { FileHandle.standardError.write(Data($0.utf8)) },
            isTerminal: isTerminal, inputIsTerminal: isatty(0) == 1, terminalSize: TerminalDevice.size(fileDescriptor: 1),
            demoPause: .milliseconds(isTerminal ? 250 : 0))
    }

    /// This context with dates read and shown in `zone` (the database's, once it is open).
    public func inZone(_ zone: TimeZone) -> RemindersContext {
        var zoned = self
        zoned.timeZone = zone
        return zoned
    }

    /// Writes `text` and a newline to standard output.
    public func print(_ text: String = "") { output(text + "\n") }

    /// Whether to colour output: a terminal, and `NO_COLOR` unset.
    public var colour: Bool { TerminalColorPolicy.isEnabled(isTerminal: isTerminal, environment: environment) }

    /// The width to render lists at.
    public var width: Int { terminalSize?.columns ?? Int(environment["COLUMNS"] ?? "") ?? 80 }

    /// `--db`, else `$XDG_DATA_HOME/reminders`, else `~/.local/share/reminders`.
    public func databasePath(_ option: String?) -> String {
        if let option { return option }
        if let data = environment["XDG_DATA_HOME"], !data.isEmpty { return (data as NSString).appendingPathComponent("reminders") }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return (home as NSString).appendingPathComponent(".local/share/reminders")
    }
}
