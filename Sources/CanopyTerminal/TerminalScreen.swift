#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Draws frames (lines) on a terminal in place, rewriting only the lines that differ from the previous frame.
///
/// ``enter()`` switches to the alternate screen and hides the cursor; ``leave()`` restores both. Output goes to a
/// closure so that tests can capture it.
public final class TerminalScreen {
    private let write: (String) -> Void
    private var previous: [String] = []
    /// How many lines the last ``draw(_:)`` rewrote.
    public private(set) var linesRewritten = 0

    /// A screen writing through `write` (by default to standard output, unbuffered).
    public init(write: @escaping (String) -> Void = TerminalScreen.writeToStandardOutput) {
        self.write = write
    }

    /// Writes `text` to file descriptor 1 at once.
    public static func writeToStandardOutput(_ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return -1 }
                return Glibc.write(1, base + offset, buffer.count - offset)
            }
            if written < 0, errno == EINTR { continue }   // a signal (a resize) interrupted the write: go on
            if written <= 0 { return }
            offset += written
        }
    }

    /// Switches to the alternate screen, hides the cursor and clears.
    public func enter() {
        write("\u{1B}[?1049h\u{1B}[?25l\u{1B}[2J")
        previous = []
    }

    /// Shows the cursor and leaves the alternate screen.
    public func leave() {
        write("\u{1B}[0m\u{1B}[?25h\u{1B}[?1049l")
    }

    /// Draws `lines` from the top of the screen, rewriting only changed lines and clearing lines the previous frame
    /// had beyond the new one.
    public func draw(_ lines: [String]) {
        var output = ""
        var rewritten = 0
        for (index, line) in lines.enumerated() where index >= previous.count || previous[index] != line {
            output += "\u{1B}[\(index + 1);1H" + line + "\u{1B}[0m\u{1B}[K"
            rewritten += 1
        }
        if previous.count > lines.count {
            for index in lines.count..<previous.count {
                output += "\u{1B}[\(index + 1);1H\u{1B}[K"
                rewritten += 1
            }
        }
        previous = lines
        linesRewritten = rewritten
        if !output.isEmpty { write(output) }
    }

    /// Forgets the previous frame: the next draw rewrites every line.
    public func invalidate() { previous = [] }

    /// Clears the whole screen and forgets the previous frame (after a resize, whose reflow leaves unknown content
    /// on the terminal, and for Ctrl-L): the next draw rewrites every line on a blank screen.
    public func clear() {
        write("\u{1B}[0m\u{1B}[H\u{1B}[2J")
        previous = []
    }
}

/// The terminal of the process: its size, raw mode, and key input.
public enum TerminalDevice {
    /// The size of the terminal on `fileDescriptor` (columns, lines), or `nil` when it isn't a terminal.
    public static func size(fileDescriptor: Int32 = 1) -> (columns: Int, lines: Int)? {
        var size = winsize()
        guard ioctl(fileDescriptor, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0, size.ws_row > 0 else { return nil }
        return (Int(size.ws_col), Int(size.ws_row))
    }

    /// Puts the terminal on `fileDescriptor` in raw mode (no echo, no line buffering, no signals from keys) and returns
    /// the settings to restore with ``restore(_:fileDescriptor:)``, or `nil` when it isn't a terminal.
    public static func enterRawMode(fileDescriptor: Int32 = 0) -> termios? {
        var original = termios()
        guard tcgetattr(fileDescriptor, &original) == 0 else { return nil }
        var raw = original
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON | IEXTEN)
        raw.c_iflag &= ~tcflag_t(IXON | ICRNL)
        guard tcsetattr(fileDescriptor, TCSAFLUSH, &raw) == 0 else { return nil }
        return original
    }

    /// Restores settings saved by ``enterRawMode(fileDescriptor:)``.
    public static func restore(_ settings: termios, fileDescriptor: Int32 = 0) {
        var settings = settings
        _ = tcsetattr(fileDescriptor, TCSAFLUSH, &settings)
    }

    /// The keys pressed within `timeoutMilliseconds` (empty when none), read from `fileDescriptor`; `nil` at end of
    /// input.
    public static func readKeys(fileDescriptor: Int32 = 0, timeoutMilliseconds: Int32) -> [Key]? {
        var descriptor = pollfd(fd: fileDescriptor, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, timeoutMilliseconds)
        guard ready > 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(fileDescriptor, $0.baseAddress, $0.count) }
        if count == 0 { return nil }
        if count < 0 { return errno == EINTR || errno == EAGAIN ? [] : nil }
        return Key.parse(Array(buffer[0..<count]))
    }
}
