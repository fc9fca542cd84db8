#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Canopy
import CanopySource

/// The write end of the running runner's signal pipe: a signal handler can reach only globals, and writes one byte.
nonisolated(unsafe) private var signalPipeWrite: Int32 = -1

/// Owns the loop of a live terminal list: a title line, the list, a status line; keys, resizes, signals and the data
/// sources' pushes — so that an app is its list, its cells and its key bindings.
///
/// ``run()`` puts the terminal in raw mode on the alternate screen and restores both when it returns: on `q`, at the
/// end of input, on SIGINT or SIGTERM, and when a key binding throws. It waits in one `poll(2)` on the keyboard,
/// the signals and every followed data source's ``/CanopySource/CommitWakeup``: an idle list costs nothing, and a commit of any
/// process shows at once. Keys: ↑ ↓ PgUp PgDn Home End move the selection, `q` quits, Ctrl-L repaints; ``bind(_:_:)``
/// adds (or replaces) keys. SIGWINCH lays the list out again for the new size and repaints the whole screen.
///
/// ```swift
/// let runner = TerminalRunner(list: list, title: "Notes · q quits")
/// runner.follow(source)                       // a ViewDatasource: commits show as they happen
/// runner.bind(.character("d")) { runner in runner.status = "d pressed" }
/// exit(try runner.run().exitStatus)
/// ```
public final class TerminalRunner {
    /// Why ``run()`` returned.
    public enum Outcome: Hashable, Sendable {
        /// `q` (or ``stop()`` from a key binding).
        case quit
        /// The input ended (the terminal closed).
        case endOfInput
        /// SIGINT or SIGTERM arrived (the terminal was restored first).
        case signal(Int32)

        /// The exit status for the process: 0, or 128 + the signal's number (as a shell reports it).
        public var exitStatus: Int32 {
            if case .signal(let number) = self { return 128 + number }
            return 0
        }
    }

    /// A data source the runner follows: its wake-up and how to apply what arrived.
    private struct Followed {
        /// Asked at each turn of the loop: a segmented source rings with the segment it shows.
        let wakeupNow: () -> CommitWakeup
        let apply: () throws -> Bool
    }

    /// The list shown between the title and the status line.
    public let list: TerminalListView
    /// The first line, in bold; `nil`: no title line.
    public var title: String?
    /// The last line (messages, prompts). Cleared at each key press before the key is handled, so a message shows
    /// until the next key.
    public var status: String = ""
    /// Shown in place of the rows when the list is empty; `nil`: nothing.
    public var emptyText: String?
    /// Called after pushes were applied to the list (to update a title, count rows, ...).
    public var didApplyPushes: ((TerminalRunner) -> Void)?
    /// Sees every key first; returns `true` when it handled the key (a prompt that takes typed characters).
    public var interceptKey: ((Key, TerminalRunner) throws -> Bool)?
    /// The terminal's size (columns, lines), asked at start and at each SIGWINCH; by default that of standard output.
    public var terminalSize: () -> (columns: Int, lines: Int)? = { TerminalDevice.size(fileDescriptor: 1) }
    /// The descriptor keys are read from.
    public var inputDescriptor: Int32 = 0

    private let screen: TerminalScreen
    /// The terminal's lines at the last layout (a frame never has more).
    private var terminalLines: Int?
    private var bindings: [Key: (TerminalRunner) throws -> Void] = [:]
    private var followed: [Followed] = []
    private var running = false

    /// A runner for `list`, drawing through `write` (by default standard output).
    public init(list: TerminalListView, title: String? = nil, write: @escaping (String) -> Void = TerminalScreen.writeToStandardOutput) {
        self.list = list
        self.title = title
        self.screen = TerminalScreen(write: write)
        list.showsSelection = true
    }

    /// Follows `source`: when its wake-up rings (a commit of any process), the runner applies what arrived to the
    /// list and redraws.
    public func follow<Source: LiveDataSource>(_ source: Source) {
        followed.append(Followed(wakeupNow: { source.wakeup }, apply: { try source.applyPendingChanges() }))
    }

    /// Runs `action` when `key` is pressed (it replaces the built-in meaning of the key, `q` included). An error it
    /// throws is shown on the status line.
    public func bind(_ key: Key, _ action: @escaping (TerminalRunner) throws -> Void) {
        bindings[key] = action
    }

    /// Ends ``run()`` after the current key (from a key binding).
    public func stop() { running = false }

    /// Ctrl-L.
    public static let repaintKey = Key.character("\u{0C}")

    // MARK: Drawing

    /// The number of lines around the list: the title (if any) and the status line.
    private var chromeLines: Int { (title == nil ? 0 : 1) + 1 }

    /// Fits the list to `size` (columns, lines).
    public func layout(columns: Int, lines: Int) {
        list.width = max(1, columns)
        list.height = max(1, lines - chromeLines)
        terminalLines = max(1, lines)
    }

    /// The screen's lines: title, the list's viewport padded to its height, status — each exactly the list's width.
    public func frame() -> [String] {
        let width = list.width
        let blank = String(repeating: " ", count: width)
        var lines: [String] = []
        if let title { lines.append(TerminalStyle(bold: true).apply(to: DisplayWidth.fit(title, to: width), colour: list.colour)) }
        do {
            lines += try list.render()
        } catch {
            status = "error: \(error)"
        }
        if list.numberOfRows == 0, list.numberOfLines == 0, let emptyText { lines.append(DisplayWidth.fit(emptyText, to: width)) }
        let listEnd = (title == nil ? 0 : 1) + list.height
        if lines.count > listEnd { lines.removeLast(lines.count - listEnd) }
        while lines.count < listEnd { lines.append(blank) }
        lines.append(TerminalStyle(dim: true).apply(to: DisplayWidth.fit(status, to: width), colour: list.colour))
        // A terminal too short for the title, a row and the status: the title goes first, then rows; the status stays.
        if let terminalLines, lines.count > terminalLines {
            if title != nil { lines.removeFirst() }
            while lines.count > terminalLines, lines.count > 1 { lines.remove(at: lines.count - 2) }
        }
        return lines
    }

    /// Draws the frame, rewriting only changed lines; `repaint`: clears the screen and rewrites every line.
    private func draw(repaint: Bool = false) {
        if repaint { screen.clear() }
        screen.draw(frame())
    }

    // MARK: Keys

    /// Handles one key as ``run()`` does: the status clears, then the interceptor, the bindings, navigation, `q`
    /// and Ctrl-L. Returns whether the screen must be repainted whole.
    @discardableResult
    public func handle(_ key: Key) -> Bool {
        status = ""
        do {
            if let interceptKey, try interceptKey(key, self) { return false }
            if let action = bindings[key] {
                try action(self)
                return false
            }
        } catch {
            status = "error: \(error)"
            return false
        }
        if list.handle(key) { return false }
        if key == .character("q") { running = false }
        return key == Self.repaintKey
    }

    /// Applies the pushes of the followed data sources whose wake-up rang (all of them with `all`).
    private func applyPushes(readable: [Bool], all: Bool) {
        var changed = false
        for (index, source) in followed.enumerated() where all || readable[index] {
            source.wakeupNow().acknowledge()
            do {
                if try source.apply() { changed = true }
            } catch {
                status = "error: \(error)"
            }
        }
        if changed { didApplyPushes?(self) }
    }

    // MARK: The loop

    /// Runs the list until `q`, the end of input, SIGINT or SIGTERM, restoring the terminal before it returns.
    ///
    /// - Returns: why it stopped (``Outcome/exitStatus`` is the process's exit status).
    /// - Throws: `SourceError` ``CanopySource/SourceError/Code/runnerUnavailable`` when there is no terminal (``terminalSize`` is
    ///   `nil`), another runner is running in this process (one terminal, one loop) or the loop can't wait; errors of
    ///   key bindings and pushes show on the status line.
    public func run() throws -> Outcome {
        guard let size = terminalSize() else {
            throw SourceError(.runnerUnavailable,
                              "standard output is not a terminal; a TerminalRunner draws on one (print TerminalListView.render() instead)")
        }
        guard signalPipeWrite < 0 else {
            throw SourceError(.runnerUnavailable, "another TerminalRunner is running in this process; run one at a time")
        }
        var pipeEnds: [Int32] = [-1, -1]
        guard pipe(&pipeEnds) == 0 else { throw SourceError(.runnerUnavailable, "could not make the signal pipe (errno \(errno))") }
        for end in pipeEnds {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        signalPipeWrite = pipeEnds[1]
        let signals = [SIGINT, SIGTERM, SIGWINCH]
        var previous: [sigaction] = []
        for number in signals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(signalPipeWrite, &byte, 1)
            }
            sigemptyset(&action.sa_mask)
            // Writes and reads interrupted by a resize carry on (poll(2) still returns EINTR, and the loop turns).
            action.sa_flags = SA_RESTART
            var old = sigaction()
            sigaction(number, &action, &old)
            previous.append(old)
        }
        let savedTerminal = TerminalDevice.enterRawMode(fileDescriptor: inputDescriptor)
        screen.enter()
        defer {
            screen.leave()
            if let savedTerminal { TerminalDevice.restore(savedTerminal, fileDescriptor: inputDescriptor) }
            for (index, number) in signals.enumerated() {
                var old = previous[index]
                sigaction(number, &old, nil)
            }
            signalPipeWrite = -1
            close(pipeEnds[0])
            close(pipeEnds[1])
        }
        layout(columns: size.columns, lines: size.lines)
        applyPushes(readable: [], all: true)
        running = true
        var repaint = true
        while running {
            draw(repaint: repaint)
            repaint = false
            var descriptors = [pollfd(fd: inputDescriptor, events: Int16(POLLIN), revents: 0),
                               pollfd(fd: pipeEnds[0], events: Int16(POLLIN), revents: 0)]
            let wakeups = followed.map { $0.wakeupNow() }
            descriptors += wakeups.map { pollfd(fd: $0.fileDescriptor, events: Int16(POLLIN), revents: 0) }
            // Without inotify (or a wake-up pipe), other processes' commits are looked for every 200 ms.
            let looks = wakeups.contains { !$0.isActive || $0.fileDescriptor < 0 }
            let ready = poll(&descriptors, nfds_t(descriptors.count), looks ? 200 : -1)
            if ready < 0 {
                if errno == EINTR { continue }
                throw SourceError(.runnerUnavailable, "poll failed (errno \(errno))")
            }
            if descriptors[1].revents != 0 {
                var bytes = [UInt8](repeating: 0, count: 16)
                let count = bytes.withUnsafeMutableBytes { read(pipeEnds[0], $0.baseAddress, $0.count) }
                for byte in bytes.prefix(max(0, count)) {
                    let number = Int32(byte)
                    if number == SIGWINCH {
                        if let size = terminalSize() { layout(columns: size.columns, lines: size.lines) }
                        repaint = true
                    } else {
                        return .signal(number)
                    }
                }
            }
            if descriptors[0].revents != 0 {
                var bytes = [UInt8](repeating: 0, count: 256)
                let count = bytes.withUnsafeMutableBytes { read(inputDescriptor, $0.baseAddress, $0.count) }
                if count == 0 || (count < 0 && errno != EINTR && errno != EAGAIN) { return .endOfInput }
                for key in Key.parse(Array(bytes.prefix(max(0, count)))) where running {
                    if handle(key) { repaint = true }
                }
            }
            applyPushes(readable: descriptors.dropFirst(2).map { $0.revents != 0 }, all: ready == 0)
        }
        return .quit
    }
}

extension TerminalRunner {
    /// Runs an app whose `body` sets up a runner and runs it, then exits the process: with the outcome's
    /// ``Outcome/exitStatus``, or, when `body` throws (a database that can't be opened, no terminal), after printing
    /// `error: …` to standard error, with status 1 — never a crash.
    public static func runApp(_ body: () throws -> Outcome) -> Never {
        do {
            exit(try body().exitStatus)
        } catch {
            let bytes = Array("error: \(error)\n".utf8)
            _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
            exit(1)
        }
    }
}

extension SourceError.Code {
    /// A ``TerminalRunner`` could not run: another one runs in this process, or the system refused a pipe or a poll.
    public static let runnerUnavailable = SourceError.Code("runnerUnavailable")
}
