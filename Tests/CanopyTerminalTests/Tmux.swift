import CanopySource
import Foundation
import Testing

/// A tmux server of its own (a socket per test) running one command in a pseudo-terminal: keys in, screen out.
struct Tmux {
    static var executable: String? {
        ["/usr/bin/tmux", "/usr/local/bin/tmux"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    let tmux: String
    let socket = "canopy-test-\(UUID().uuidString.prefix(8))"

    /// Starts `command` in a `columns`×`lines` window that stays after the command exits (to read its status).
    init(command: String, columns: Int, lines: Int) throws {
        tmux = try #require(Tmux.executable, "tmux is needed for this test: `make deps` installs it (apt-get install tmux)")
        try run(["new-session", "-d", "-x", "\(columns)", "-y", "\(lines)", "exec \(command)", ";", "set-option", "-g", "remain-on-exit", "on"])
    }

    /// Runs tmux with `arguments` through `sh`, its output in a temporary file (a tmux server keeps inherited
    /// descriptors open, so a pipe would never reach end of file).
    @discardableResult
    func run(_ arguments: [String]) throws -> String {
        try Tmux.shell([tmux, "-L", socket] + arguments)
    }

    @discardableResult
    static func shell(_ words: [String]) throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tmux-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        func quote(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let command = words.map(quote).joined(separator: " ") + " </dev/null >\(quote(file)) 2>&1"
        var pid: pid_t = 0
        let words: [String] = ["/bin/sh", "-c", command]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        guard posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ) == 0 else { throw SourceError(.rowFailed, "could not run \(command)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1, errno == EINTR {}
        return (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
    }

    /// The screen, one string per line (trailing spaces kept off by tmux).
    func screen() throws -> [String] {
        try run(["capture-pane", "-p"]).split(separator: "\n", omittingEmptySubsequences: false).map(String.init).dropLast().map { $0 }
    }

    /// A tmux format of the pane, such as `#{pane_dead_status}`.
    func pane(_ format: String) throws -> String {
        try run(["display-message", "-p", format]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Waits (up to 15 s, no fixed sleep) until `condition` holds for the screen; returns the last screen seen.
    @discardableResult
    func waitForScreen(_ what: String, _ condition: ([String]) -> Bool) throws -> [String] {
        let deadline = Date().addingTimeInterval(15)
        var last: [String] = []
        while Date() < deadline {
            last = try screen()
            if condition(last) { return last }
            usleep(20_000)
        }
        Issue.record("timed out waiting for \(what); screen:\n\(last.joined(separator: "\n"))")
        return last
    }

    /// Waits until the pane's command exited; returns its exit status.
    func waitForExit() throws -> String {
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            // tmux marks the pane dead when its terminal closes, which can be before it has reaped the command:
            // wait until it knows the status (or, for a command killed by a signal, the signal).
            if try pane("#{pane_dead}") == "1" {
                let status = try pane("#{pane_dead_status}")
                if !status.isEmpty { return status }
                let signal = try pane("#{pane_dead_signal}")
                if !signal.isEmpty { return "signal \(signal)" }
            }
            usleep(20_000)
        }
        Issue.record("the command did not exit")
        return ""
    }

    func kill() { _ = try? run(["kill-server"]) }
}
