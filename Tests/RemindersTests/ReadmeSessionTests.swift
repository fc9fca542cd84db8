import CanopyTestSupport
import Foundation
import RemindersKit
import Testing

/// The README's first `reminders` session runs as written: a new user copies it first.
@Suite("reminders: the README's first session")
struct ReadmeSessionTests {
    /// The command lines of the README's `sh` block after the marker, comments (` # …`) removed.
    static func sessionLines() throws -> [String] {
        let readme = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../README.md"),
                                encoding: .utf8)
        let marker = try #require(readme.range(of: "<!-- this block is run by Tests/RemindersTests/ReadmeSessionTests.swift"))
        let after = readme[marker.upperBound...]
        let start = try #require(after.range(of: "```sh\n"))
        let end = try #require(after[start.upperBound...].range(of: "```"))
        return after[start.upperBound..<end.lowerBound].split(separator: "\n").map { line in
            String(line.replacingOccurrences(of: #"\s+# .*$"#, with: "", options: .regularExpression))
        }
    }

    @Test("every line of the session runs (tui, which needs a terminal, says so); the tags it adds show in list, search and by tag")
    func sessionRuns() throws {
        try withDatabasePath { path, _ in
            var outputs: [String: RunResult] = [:]
            for line in try Self.sessionLines() {
                let words = shellWords(line)
                #expect(Array(words.prefix(3)) == ["swift", "run", "reminders"], "\(line)")
                let arguments = Array(words.dropFirst(3))
                // --db before the subcommand, as a user adds it to any of these lines.
                let result = reminders(["--db", path] + arguments)
                if arguments.first == "tui" {
                    #expect(result.status == 1 && result.err.contains("needs a terminal"), "\(line): \(result)")
                } else {
                    #expect(result.status == 0 && result.err.isEmpty, "\(line): \(result)")
                }
                outputs[arguments.joined(separator: " ")] = result
            }
            let byTag = try #require(outputs["list --by-tag"]).out
            #expect(byTag.hasPrefix("#meetings\nTue 24 Nov 10:00–11:00  Team sync #work #meetings"), "\(byTag)")
            #expect(byTag.contains("#work\nTue 24 Nov 09:00        [ ] Send the slides #work"), "\(byTag)")
            let search = try #require(outputs["search work"]).out
            #expect(search.contains("#1  Team sync") && search.contains("#2  Send the slides"), "\(search)")
            // The session's last edits: #1 keeps only `work`, #2 is done.
            let now = reminders(["list", "--by-tag", "--db", path]).out
            #expect(now.hasPrefix("#work\nTue 24 Nov 10:00–11:00  Team sync #work ") && !now.contains("Send the slides"), "\(now)")
        }
    }
}
