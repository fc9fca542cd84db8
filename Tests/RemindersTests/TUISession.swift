import CanopyTestSupport
import Foundation
import Testing

/// `reminders tui` on a database, in a tmux session of a private server (a pseudo-terminal of the size asked for, no
/// colour), for tests that press keys and read the screen. `stop()` ends the server (call it in a `defer`).
struct TUISession {
    /// The tmux executable.
    let tmux: String
    /// The private server's socket name (`tmux -L`).
    let socket: String

    /// Starts `reminders tui --db path` at `columns` × `lines`.
    /// - Throws: when tmux or the built `reminders` is missing (`make deps` installs tmux), or tmux fails to start.
    init(database path: String, columns: Int, lines: Int) throws {
        let found = ["/usr/bin/tmux", "/usr/local/bin/tmux"].first { FileManager.default.isExecutableFile(atPath: $0) }
        tmux = try #require(found, "tmux is needed for this test: `make deps` installs it (apt-get install tmux)")
        let binary = try #require(LiveTests.remindersBinary, "the reminders executable was not built")
        socket = "canopy-test-\(UUID().uuidString.prefix(8))"
        try LiveTests.shell(tmux, ["-L", socket, "new-session", "-d", "-s", "tui", "-x", "\(columns)", "-y", "\(lines)",
                                   "env NO_COLOR=1 TERM=xterm \(binary) tui --db '\(path)'"], captureOutput: false)
    }

    /// The screen's text, line by line.
    func screen() throws -> String { try LiveTests.shell(tmux, ["-L", socket, "capture-pane", "-p", "-t", "tui"]).output }

    /// The status line: the screen's last line that is not empty.
    func statusLine() throws -> String { try screen().split(separator: "\n").last.map(String.init) ?? "" }

    /// Types `keys` (tmux key names: `Enter`, `BSpace`, `Home`; `-l` first sends the rest literally).
    func keys(_ keys: String...) throws { try LiveTests.shell(tmux, ["-L", socket, "send-keys", "-t", "tui"] + keys) }

    /// Resizes the terminal.
    func resize(columns: Int, lines: Int) throws {
        try LiveTests.shell(tmux, ["-L", socket, "resize-window", "-t", "tui", "-x", "\(columns)", "-y", "\(lines)"])
    }

    /// Whether `condition` holds of `text` (the screen by default) within 15 seconds, polling every 20 ms.
    func waitUntil(_ text: () throws -> String, _ condition: (String) -> Bool) throws -> Bool {
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            if condition(try text()) { return true }
            usleep(20_000)
        }
        return false
    }

    /// Whether `condition` holds of the screen within 15 seconds.
    func waitUntil(_ condition: (String) -> Bool) throws -> Bool { try waitUntil(screen, condition) }

    /// Ends the tmux server (and the tui in it).
    func stop() { _ = try? LiveTests.shell(tmux, ["-L", socket, "kill-server"]) }
}
