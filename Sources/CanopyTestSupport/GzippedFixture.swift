import Foundation

/// Why a gzipped database fixture could not be unpacked.
public struct FixtureUnpackError: Error, CustomStringConvertible {
    /// What failed, naming the fixture.
    public let description: String
}

/// Unpacks the gzipped `data.mdb` at `fixture` (database files written by earlier releases, kept in the test
/// targets' Fixtures/) into a new database directory `db` inside `directory`, and returns that directory's path.
/// - Throws: ``FixtureUnpackError`` when `gzip -dc` fails (a missing or damaged fixture); file errors as thrown.
public func unpackGzippedDatabase(_ fixture: URL, into directory: TemporaryDirectory) throws -> String {
    let path = directory.appending("db")
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    let gunzip = Process()
    gunzip.executableURL = URL(fileURLWithPath: "/bin/gzip")
    gunzip.arguments = ["-dc", fixture.path]
    _ = FileManager.default.createFile(atPath: path + "/data.mdb", contents: nil)
    let output = try FileHandle(forWritingTo: URL(fileURLWithPath: path + "/data.mdb"))
    gunzip.standardOutput = output
    try gunzip.run()
    gunzip.waitUntilExit()
    try output.close()
    guard gunzip.terminationStatus == 0 else {
        throw FixtureUnpackError(description: "gzip -dc \(fixture.path) failed with status \(gunzip.terminationStatus)")
    }
    return path
}
