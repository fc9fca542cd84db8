import Foundation

/// A fresh directory under the system's temporary folder, removed by ``remove()``.
public struct TemporaryDirectory: Sendable {
    /// The directory's absolute path.
    public let path: String

    /// Creates a new, empty directory whose name starts with `prefix`.
    public init(prefix: String = "canopy-test") throws {
        let base = FileManager.default.temporaryDirectory
        let url = base.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        path = url.path
    }

    /// A path inside the directory (not created).
    public func appending(_ component: String) -> String {
        (path as NSString).appendingPathComponent(component)
    }

    /// Creates the directory `name` inside this one and returns its path.
    public func makeSubdirectory(_ name: String) throws -> String {
        let subdirectory = appending(name)
        try FileManager.default.createDirectory(atPath: subdirectory, withIntermediateDirectories: false)
        return subdirectory
    }

    /// Deletes the directory and everything in it.
    public func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Runs `body` with a new, empty ``TemporaryDirectory`` and removes it, with everything in it, when `body` returns or
/// throws. Anything opened in it (an environment, a database) should not outlive `body`.
public func withTemporaryDirectory<R>(prefix: String = "canopy-test", _ body: (TemporaryDirectory) throws -> R) throws -> R {
    let directory = try TemporaryDirectory(prefix: prefix)
    defer { directory.remove() }
    return try body(directory)
}
