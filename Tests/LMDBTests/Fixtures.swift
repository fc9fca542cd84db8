import CanopyTestSupport
import Foundation
import LMDB
import Testing

/// Opens an environment in a new temporary directory, runs `body`, then closes the environment and removes the
/// directory.
func withEnvironment<R>(
    _ options: EnvironmentOptions = .init(), _ body: (Environment, TemporaryDirectory) throws -> R
) throws -> R {
    try withTemporaryDirectory(prefix: "LMDBTests") { directory in
        let environment = try Environment(path: directory.path, options: options)
        // Keep the environment open until `body` is done; it closes when this closure returns, before the
        // directory is removed.
        return try withExtendedLifetime(environment) { try body(environment, directory) }
    }
}

/// The UTF-8 bytes of `text`.
func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// `number` as a 4-byte big-endian key, so that byte order is numeric order.
func key(_ number: Int) -> [UInt8] {
    withUnsafeBytes(of: UInt32(number).bigEndian) { Array($0) }
}

/// A deterministic value of `count` bytes that depends on `seed`.
func value(_ seed: Int, count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &* 7 &+ 1) }
}

/// Every entry of `database`, in key order, copied out of the map.
func entries(of database: Database, in txn: ReadTransaction) throws -> [[UInt8]: [UInt8]] {
    var result: [[UInt8]: [UInt8]] = [:]
    try txn.forEach(in: database) { key, value in
        result[Array(key)] = Array(value)
        return true
    }
    return result
}

/// The keys of `database` in the order ``ReadTransaction/forEach(in:from:reverse:_:)`` visits them.
func keys(of database: Database, in txn: ReadTransaction, from start: [UInt8]? = nil, reverse: Bool = false) throws -> [[UInt8]] {
    var result: [[UInt8]] = []
    try txn.forEach(in: database, from: start, reverse: reverse) { key, _ in
        result.append(Array(key))
        return true
    }
    return result
}

/// Expects `body` to throw an ``LMDBError`` with `code`, and returns the error for further checks.
@discardableResult
func expectError(
    _ code: LMDBError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) -> LMDBError? {
    let error = #expect(throws: LMDBError.self, sourceLocation: sourceLocation) { try body() }
    if let error {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    }
    return error
}

/// Whether the tests run as root, which ignores permission bits.
let isRoot = geteuid() == 0

/// Carries a value that is not `Sendable` to another thread.
///
/// Safe in these tests because the sender waits for the other thread to finish: one thread at a time uses the value,
/// which is exactly what LMDB allows for read transactions of an `MDB_NOTLS` environment.
struct Handover<Value>: @unchecked Sendable {
    let value: Value
}

/// The result of ``onAnotherThread(_:)``'s body.
///
/// Written by the thread before it signals, read by the caller after its wait: the semaphore orders the accesses.
private final class ThreadOutcome<R>: @unchecked Sendable {
    var result: Result<R, any Error>?
}

/// Runs `body` on a new thread and waits for it to finish, returning its result or rethrowing its error.
func onAnotherThread<R: Sendable>(_ body: @escaping @Sendable () throws -> R) throws -> R {
    let outcome = ThreadOutcome<R>()
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        outcome.result = Result { try body() }
        done.signal()
    }
    thread.start()
    done.wait()
    return try outcome.result!.get()
}
