import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs each `canopy` command in a child process (the same executable, started again), so that a crash inside
/// liblmdb — which trusts the file's pages: a damaged branch page can make it read outside the map — ends with a
/// report and exit status 1, never with a signal.
///
/// The child writes where it is (the phase, the table, how many entries it has read, the last key) into a page of
/// memory it shares with the parent (a deleted temporary file, mapped by both): no system call per entry. When the
/// child dies by a signal, the parent reads that page; when the crash was not in a table walk, it runs a walk of every
/// table in another contained child (`canopy walk-tables`, hidden) to find the table and the region of pages that
/// crash. The child ends itself when the parent dies (a pipe the parent holds open), so a killed `canopy` leaves no
/// process behind.
///
/// `CANOPY_CONTAINMENT=off` runs commands in the process itself (a crash then ends `canopy` by its signal).
enum CrashContainment {
    /// The environment variable that tells a child where its breadcrumb page and parent pipe are: `"<page fd>,<pipe fd>"`.
    static let childVariable = "CANOPY_CONTAINED_CHILD"

    /// Runs `arguments` in a contained child and returns the exit status to use, or `nil` when this process is the
    /// child, containment is off, or no child can be started (then the caller runs the command itself).
    static func runContained(_ arguments: [String]) -> Int32? {
        let environment = ProcessInfo.processInfo.environment
        guard environment[childVariable] == nil, environment["CANOPY_CONTAINMENT"] != "off" else { return nil }
        guard let child = ContainedChild.start(arguments) else { return nil }
        // Ctrl-C reaches the whole process group: the child decides what it means; this process waits for it.
        signal(SIGINT, SIG_IGN)
        signal(SIGQUIT, SIG_IGN)
        let end = child.wait()
        switch end {
        case .exited(let status):
            return status
        case .signalled(let number):
            if [SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT].contains(number) { return 128 + number }
            let report = DamageReport(command: arguments.first ?? "canopy", signal: number, breadcrumb: child.breadcrumb.read())
            writeError(report.text(walk: report.needsWalk ? walkTables(at: report.breadcrumb.databasePath) : nil))
            return CLIFailure.Status.failed.rawValue
        }
    }

    /// Walks every table of the database at `path` in another contained child; what it found.
    private static func walkTables(at path: String) -> DamageReport.Walk? {
        guard !path.isEmpty, let child = ContainedChild.start(["walk-tables", path], quiet: true) else { return nil }
        switch child.wait() {
        case .exited(let status):
            return status == 0 ? .completed : .failed
        case .signalled(let number):
            return .crashed(signal: number, breadcrumb: child.breadcrumb.read())
        }
    }

    /// Called first in `main`: in a contained child, maps the breadcrumb page and ends the process when the parent dies.
    static func startChildIfContained() {
        guard let value = ProcessInfo.processInfo.environment[childVariable] else { return }
        let parts = value.split(separator: ",").compactMap { Int32($0) }
        guard parts.count == 2 else { return }
        Breadcrumb.attach(descriptor: parts[0])
        let pipe = parts[1]
        // The parent holds the pipe's write end: end of file means it died (kill -9 included).
        Thread {
            var byte: UInt8 = 0
            while read(pipe, &byte, 1) < 0 && errno == EINTR {}
            _exit(CLIFailure.Status.failed.rawValue)
        }.start()
    }

    static func writeError(_ text: String) {
        let line = "error: " + text + "\n"
        _ = line.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
    }
}

/// How a contained child ended.
enum ChildEnd {
    case exited(Int32)
    case signalled(Int32)
}

/// A running contained child: this executable started again with the same standard input, output and error.
struct ContainedChild {
    let processID: pid_t
    let breadcrumb: Breadcrumb.Reader
    /// The write end of the liveness pipe (closed when this process ends).
    let pipeWrite: Int32

    static func start(_ arguments: [String], quiet: Bool = false) -> ContainedChild? {
        guard let reader = Breadcrumb.Reader.create() else { return nil }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        let executable = "/proc/self/exe"
        guard access(executable, X_OK) == 0 else { return nil }
        var environment = ProcessInfo.processInfo.environment
        environment[CrashContainment.childVariable] = "\(reader.descriptor),\(ends[0])"
        // The report replaces the Swift runtime's crash dump (pages of registers), unless the user asks for it.
        if environment["SWIFT_BACKTRACE"] == nil { environment["SWIFT_BACKTRACE"] = "enable=no" }
        let argv = [CommandLine.arguments.first ?? "canopy"] + arguments
        let envp = environment.map { "\($0.key)=\($0.value)" }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The child gets the default action for the signals this process ignores while it waits.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in [SIGINT, SIGQUIT, SIGPIPE] { sigaddset(&defaults, number) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if quiet {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        var processID: pid_t = 0
        let status = withCStrings(argv) { argvPointers in
            withCStrings(envp) { envPointers in
                posix_spawn(&processID, executable, &actions, &attributes, argvPointers, envPointers)
            }
        }
        close(ends[0])
        guard status == 0 else {
            close(ends[1])
            return nil
        }
        return ContainedChild(processID: processID, breadcrumb: reader, pipeWrite: ends[1])
    }

    /// Waits for the child to end.
    func wait() -> ChildEnd {
        var status: Int32 = 0
        while waitpid(processID, &status, 0) < 0 {
            if errno != EINTR { return .exited(CLIFailure.Status.failed.rawValue) }
        }
        close(pipeWrite)
        // WIFEXITED / WTERMSIG by hand: the C macros are not imported.
        let signalNumber = status & 0x7F
        if signalNumber == 0 { return .exited((status >> 8) & 0xFF) }
        return .signalled(signalNumber)
    }
}

/// Passes `strings` to `body` as a NULL-terminated array of C strings.
private func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
    var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    pointers.append(nil)
    defer { for pointer in pointers { free(pointer) } }
    return body(pointers)
}
