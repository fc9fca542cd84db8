import CanopyTestSupport
import Foundation
import Testing

@Suite("README quick start")
struct QuickStartTests {
    static let testsFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()

    /// QuickStart.swift is the README's quick-start block, verbatim, so compiling this target compiles the README.
    @Test func readmeQuickStartIsTheCompiledFile() throws {
        let readme = try String(contentsOf: Self.testsFolder.appendingPathComponent("../../README.md"), encoding: .utf8)
        let marker = try #require(readme.range(of: "<!-- quick-start"))
        let afterMarker = readme[marker.upperBound...]
        let start = try #require(afterMarker.range(of: "```swift\n"))
        let end = try #require(afterMarker[start.upperBound...].range(of: "```"))
        let block = String(afterMarker[start.upperBound..<end.lowerBound])
        let compiled = try String(contentsOf: Self.testsFolder.appendingPathComponent("QuickStart.swift"), encoding: .utf8)
        #expect(block == compiled, "README's quick start and Tests/CanopyTests/QuickStart.swift differ: copy one onto the other")
    }

    @Test func quickStartRuns() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try quickStart(folder: directory.appending("db"))
    }
}
