import Foundation

/// A fresh, empty directory under the system's temporary directory, made for one test.
///
/// Use ``withTemporaryDirectory(_:)``, which creates the directory and removes it, with everything in it, when the body
/// returns or throws.
struct TemporaryDirectory: Sendable {
    /// The directory.
    let url: URL

    /// The directory's path.
    var path: String { url.path }

    /// The path of `name` inside the directory; nothing is created.
    func path(_ name: String) -> String {
        url.appendingPathComponent(name).path
    }

    /// Creates the directory `name` inside this one and returns its path.
    func makeSubdirectory(_ name: String) throws -> String {
        let path = path(name)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        return path
    }
}

/// Runs `body` with a new empty temporary directory, and removes the directory afterwards.
///
/// Anything opened in the directory (such as an ``Environment``) should not outlive `body`.
func withTemporaryDirectory<R>(_ body: (TemporaryDirectory) throws -> R) throws -> R {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("LMDBTests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
    defer { try? FileManager.default.removeItem(at: url) }
    return try body(TemporaryDirectory(url: url))
}
