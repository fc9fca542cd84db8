import Foundation

/// The path of the executable `name` built with the tests (the crash writer, `canopy`, `reminders`): found next to
/// the test bundle, or in `.build/debug` of the current directory; `nil` when it was not built.
public func builtExecutable(named name: String) -> String? {
    var directory = URL(fileURLWithPath: CommandLine.arguments.first ?? "").deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = directory.appendingPathComponent(name).path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        directory.deleteLastPathComponent()
    }
    let fallback = FileManager.default.currentDirectoryPath + "/.build/debug/" + name
    return FileManager.default.isExecutableFile(atPath: fallback) ? fallback : nil
}
