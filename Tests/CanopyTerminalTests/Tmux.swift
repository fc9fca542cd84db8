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
    /// Where the pane's shell writes the command's exit status (tmux 3.3a does not always reap a pane's process, so
    /// `#{pane_dead_status}` can stay empty: seen in CI).
    let statusFile = FileManager.default.temporaryDirectory.appendingPathComponent("tmux-status-\(UUID().uuidString)").path

    /// Starts `command` in a `columns`×`lines` window, under a shell that writes its exit status to ``statusFile``
    /// (the shell's own traps keep it alive through the Ctrl-C or SIGTERM sent to the command; the command starts with
    /// the default dispositions, as trapped signals are reset by exec).
    init(command: String, columns: Int, lines: Int) throws {
        tmux = try #require(Tmux.executable, "tmux is needed for this test: `make deps` installs it (apt-get install tmux)")
        let quotedStatus = "'" + statusFile.replacingOccurrences(of: "'", with: "'\\''") + "'"
        let script = "trap : INT TERM; \(command); echo $? > \(quotedStatus).tmp && mv \(quotedStatus).tmp \(quotedStatus)"
        try run(["new-session", "-d", "-x", "\(columns)", "-y", "\(lines)", script, ";", "set-option", "-g", "remain-on-exit", "on"])
    }

    /// The process id of the command (the child of the pane's shell), or `nil` while it has none.
    func commandPID() throws -> String? {
        let shell = try pane("#{pane_pid}")
        let children = (try? String(contentsOfFile: "/proc/\(shell)/task/\(shell)/children", encoding: .utf8)) ?? ""
        return children.split(separator: " ").first.map(String.init)
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

    /// Waits until the pane's command exited; returns its exit status as the shell saw it (128 + n for a command
    /// ended by signal n).
    func waitForExit() throws -> String {
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            if let status = try? String(contentsOfFile: statusFile, encoding: .utf8) {
                return status.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            usleep(20_000)
        }
        Issue.record("the command did not exit")
        return ""
    }

    func kill() {
        _ = try? run(["kill-server"])
        try? FileManager.default.removeItem(atPath: statusFile)
    }
}
