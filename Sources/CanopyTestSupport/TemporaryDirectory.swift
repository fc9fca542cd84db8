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

    /// Deletes the directory and everything in it.
    public func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}
