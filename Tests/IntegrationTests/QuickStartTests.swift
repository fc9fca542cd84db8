import CanopyTestSupport
import Foundation
import Testing

@Suite("README quick start")
struct QuickStartTests {
    static let testsFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()

    /// QuickStart.swift is the README's quick-start block, verbatim, so compiling this target compiles the README.
    @Test func readmeQuickStartIsTheCompiledFile() throws {
        let readme = try String(contentsOf: Self.testsFolder.appendingPathComponent("../../README.md"), encoding: .utf8)
        let block = try #require(swiftBlock(after: "<!-- quick-start", in: readme), "README has no quick start")
        let compiled = try String(contentsOf: Self.testsFolder.appendingPathComponent("QuickStart.swift"), encoding: .utf8)
        #expect(block == compiled, "README's quick start and Tests/IntegrationTests/QuickStart.swift differ: copy one onto the other")
    }

    /// Runs the quick start and checks that it prints what the README's comments promise.
    @Test func quickStartRuns() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let output = PrintedOutput()
        try PrintedOutput.$current.withValue(output) {
            try quickStart(folder: directory.appending("db"))
        }
        #expect(output.lines == [
            #"home ["Water plants", "Buy milk"]"#,
            #"work ["Call Ada"]"#,
            "move reminders/r1 [0, 1] -> [1, 0]",
            "by-list@3 [home: 1, work: 2]",
        ])
    }
}
