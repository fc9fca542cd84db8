import ArgumentParser
import Canopy

/// A command's failure: the message for standard error (what happened and what to do) and the exit code.
public struct CLIFailure: Error, CustomStringConvertible {
    /// The process exit codes of `canopy`.
    public enum Status: Int32, Sendable {
        /// Success.
        case success = 0
        /// A check failed, or what was asked for was not found.
        case failed = 1
        /// The command line was malformed.
        case usage = 2
        /// The database cannot be opened: missing, not a Canopy database, a newer format, no permission.
        case cannotOpen = 3
    }

    /// The exit code.
    public var status: Status
    /// The message.
    public var message: String

    /// Creates a failure.
    public init(_ status: Status, _ message: String) {
        self.status = status
        self.message = message
    }

    /// The message.
    public var description: String { message }

    /// A failure for `error`: Canopy's errors that mean "cannot open" exit with 3, others with 1.
    static func from(_ error: any Error) -> CLIFailure {
        if let failure = error as? CLIFailure { return failure }
        if let canopy = error as? CanopyError {
            switch canopy.code {
            case .incompatibleFormat:
                // The message says what to do (upgrade, or which release reads it).
                return CLIFailure(.cannotOpen, "cannot open the database: \(canopy.message)")
            case .cannotOpen where canopy.message.contains("symbolic link"):
                return CLIFailure(.cannotOpen, "cannot open the database: \(canopy.message)")
            case .cannotOpen, .alreadyOpen:
                return CLIFailure(.cannotOpen, "cannot open the database: \(canopy.message)" + (canopy.path.map { " (\($0))" } ?? "")
                                  + ". Pass the directory that holds a Canopy database's data.mdb and lock.mdb.")
            case .foreignDatabase:
                return CLIFailure(.cannotOpen, "cannot open the database: not a Canopy database: \(canopy.message)" + (canopy.path.map { " (\($0))" } ?? "")
                                  + ". Pass the directory that holds a Canopy database's data.mdb and lock.mdb.")
            case .permissionDenied:
                return CLIFailure(.cannotOpen, "cannot open the database: \(canopy.message)")
            case .staleView:
                return CLIFailure(.failed, "stale view: \(canopy.message)")
            default:
                return CLIFailure(.failed, canopy.description)
            }
        }
        return CLIFailure(.failed, "\(error)")
    }
}
