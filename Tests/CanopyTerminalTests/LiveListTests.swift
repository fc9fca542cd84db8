import Canopy
import CanopySource
import CanopyTerminal
import CanopyTestSupport
import Foundation
import Testing

/// The model and view of Examples/LiveList (the article's example), registered identically by the test process so
/// that it can write notes as a second process.
private struct Note: Codable, Sendable { var title: String; var list: String }
private let notes = TypedCollection<Note, NoMetadata>("notes")

private func openNotes(_ path: String) throws -> Database {
    let database = try Database(path: path)
    try database.register(View(name: "by-list",
                               grouping: .byObject(notes) { _, note in note.list },
                               sorting: .byObject(notes) { _, _, note in SortKey(.ascending(note.title)) }))
    return database
}

@Suite("A live terminal list in 30 lines", .serialized, .ownThread)
struct LiveListTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")

    /// The lines between the markers, trimmed.
    static func block(_ text: String, begin: String, end: String) -> [String] {
        guard let start = text.range(of: begin), let stop = text[start.upperBound...].range(of: end) else { return [] }
        return text[start.upperBound..<stop.lowerBound].split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
    }

    @Test("The article shows the example's code, verbatim, and it is at most 30 lines")
    func articleShowsExample() throws {
        let article = try String(contentsOf: Self.root.appendingPathComponent("Sources/CanopyTerminal/CanopyTerminal.docc/LiveTerminalList.md"), encoding: .utf8)
        let example = try String(contentsOf: Self.root.appendingPathComponent("Examples/LiveList/main.swift"), encoding: .utf8)
        let shown = Self.block(article, begin: "```swift\n", end: "```")
        let compiled = Self.block(example, begin: "// ARTICLE-BEGIN\n", end: "// ARTICLE-END")
        #expect(!compiled.isEmpty && shown == compiled, "the article's block and Examples/LiveList/main.swift differ: copy one onto the other")
        #expect(compiled.count <= 30)
    }

    @Test("In tmux: another process's notes show at once; d deletes; resizing 100×30 → 60×15 → 100×30 lays rows out again and repaints, no stale or lost lines; q restores the terminal",
          .timeLimit(.minutes(2)))
    func liveListInTmux() throws {
        let binary = try #require(builtExecutable(named: "live-list"), "the live-list example was not built")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("notes")
        let database = try openNotes(path)
        try database.newConnection().readWrite { txn in
            try txn.set(Note(title: "Aardvark", list: "home"), forKey: "n0", in: notes)
            try txn.set(Note(title: "Buy milk", list: "home"), forKey: "n1", in: notes)
        }

        let tmux = try Tmux(command: "env NO_COLOR=1 TERM=xterm '\(binary)' '\(path)'", columns: 100, lines: 30)
        defer { tmux.kill() }
        try tmux.waitForScreen("the first note") { $0.contains { $0.contains("Buy milk") } }
        // A second process (this one) commits: the list shows it without a key press (the inotify wake-up).
        try database.newConnection().readWrite { try $0.set(Note(title: "Call Ada", list: "work"), forKey: "n2", in: notes) }
        // d deletes the selected note (the first); the change comes back through the data source's push, and the
        // status line says so until the next key (it must survive the resizes below).
        try tmux.run(["send-keys", "d"])
        try tmux.waitForScreen("the delete") { screen in
            !screen.contains { $0.contains("Aardvark") } && screen.last?.hasPrefix("Deleted #n0.") == true
        }

        /// The screen is exactly the frame for `columns`×`lines`: title, the two groups, blank lines, the status line.
        func expectFrame(columns: Int, lines: Int, status: String = "Deleted #n0.") throws {
            let screen = try tmux.waitForScreen("a \(columns)×\(lines) frame") { screen in
                screen.count == lines && screen.contains { $0.hasSuffix("#n2") && $0.count == columns } && screen.last == status
            }
            let rows = screen.map { $0.replacingOccurrences(of: " +$", with: "", options: .regularExpression) }
            #expect(rows.count == lines)
            #expect(rows.first?.hasPrefix("Notes") == true, "\(rows)")
            // The id column is right-aligned at the new width: each row was laid out again, not kept from before.
            let milk = try #require(rows.first { $0.contains("Buy milk") })
            let ada = try #require(rows.first { $0.contains("Call Ada") })
            #expect(milk.hasPrefix(">") && milk.hasSuffix("#n1") && milk.count == columns, "\(milk)")
            #expect(ada.hasSuffix("#n2") && ada.count == columns, "\(ada)")
            #expect(Array(rows[1...4]) == ["home", milk, "work", ada], "\(rows)")
            // Nothing else anywhere: the lines between the list and the status line are blank (no stale lines).
            #expect(rows[5..<(lines - 1)].allSatisfy { $0.isEmpty }, "stale lines: \(rows)")
            #expect(rows[lines - 1] == status, "\(rows)")
        }
        try expectFrame(columns: 100, lines: 30)
        try tmux.run(["resize-window", "-x", "60", "-y", "15"])
        try expectFrame(columns: 60, lines: 15)
        try tmux.run(["resize-window", "-x", "100", "-y", "30"])
        try expectFrame(columns: 100, lines: 30)

        try tmux.run(["send-keys", "q"])
        let status = try tmux.waitForExit()
        #expect(status == "0", "exit status \(status); screen: \((try? tmux.screen()) ?? [])")
        #expect(try tmux.pane("#{alternate_on}") == "0", "the alternate screen was left")
    }

    @Test("In tmux: SIGTERM restores the terminal and exits with 143", .timeLimit(.minutes(1)))
    func terminateRestores() throws {
        let binary = try #require(builtExecutable(named: "live-list"), "the live-list example was not built")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("notes")
        let tmux = try Tmux(command: "env NO_COLOR=1 TERM=xterm '\(binary)' '\(path)'", columns: 80, lines: 20)
        defer { tmux.kill() }
        try tmux.waitForScreen("the title") { $0.first?.hasPrefix("Notes") == true }
        #expect(try tmux.pane("#{alternate_on}") == "1")
        let pid = try #require(try tmux.commandPID(), "the command's process was not found")
        try Tmux.shell(["/bin/kill", "-TERM", pid])
        #expect(try tmux.waitForExit() == "143")
        #expect(try tmux.pane("#{alternate_on}") == "0", "the alternate screen was left")
    }

    @Test("In tmux: Ctrl-C (SIGINT) restores the terminal and exits with 130", .timeLimit(.minutes(1)))
    func interruptRestores() throws {
        let binary = try #require(builtExecutable(named: "live-list"), "the live-list example was not built")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let tmux = try Tmux(command: "env NO_COLOR=1 TERM=xterm '\(binary)' '\(directory.appending("notes"))'", columns: 80, lines: 20)
        defer { tmux.kill() }
        try tmux.waitForScreen("the title") { $0.first?.hasPrefix("Notes") == true }
        try tmux.run(["send-keys", "C-c"])
        #expect(try tmux.waitForExit() == "130")
        #expect(try tmux.pane("#{alternate_on}") == "0", "the alternate screen was left")
    }
}
