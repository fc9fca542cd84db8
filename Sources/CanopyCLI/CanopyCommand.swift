import ArgumentParser
import Canopy
import Foundation
import LMDB

/// The `canopy` command: inspect, page through, watch, check, back up, export and import any Canopy database, without
/// the app's code.
struct CanopyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "canopy",
        abstract: "Inspect and maintain any Canopy database, without the app's code.",
        discussion: """
            Every command takes the database directory (the one holding data.mdb and lock.mdb). Inspection opens it \
            read-only and never changes it, also while another process writes. Read commands print JSON with --json.

            Exit codes: 0 success, 1 a check failed, something was not found, a destructive command (delete, drop-view) \
            ran without --yes and changed nothing, or the database is damaged (a crash \
            inside LMDB is contained in a child process and reported), 2 usage, 3 the database cannot be opened \
            (missing, not a Canopy database, a newer format, no permission).
            """,
        version: CanopyVersion.description,
        subcommands: [
            Info.self, Collections.self, Keys.self, Get.self, Views.self, Groups.self, ViewRows.self, Watch.self,
            Stat.self, Verify.self, Backup.self, Export.self, Import.self, Readers.self, Upgrade.self, WalkTables.self, Changes.self,
            Extensions.self, Migrations.self, Delete.self, DropView.self,
        ])
}

/// Runs `canopy` commands.
public enum CanopyCLI {
    /// Runs the command line of this process and exits with its status.
    ///
    /// The command runs in a child process (this executable again), so that a crash inside liblmdb on a damaged file
    /// ends with a report and status 1, never a signal (see `CrashContainment`).
    public static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        CrashContainment.startChildIfContained()
        if let status = CrashContainment.runContained(arguments) { exit(status) }
        let status = await run(arguments)
        exit(status)
    }

    /// Runs one command line (without the program name), writing to `console`, and returns the exit status.
    ///
    /// - Parameters:
    ///   - arguments: the arguments, such as `["info", "/tmp/app.canopy", "--json"]`.
    ///   - console: where to write; a capturing console in tests.
    /// - Returns: 0 success, 1 check failed or not found, 2 usage, 3 cannot open.
    public static func run(_ arguments: [String], console: Console = .standard) async -> Int32 {
        await Console.$current.withValue(console) {
            var command: any ParsableCommand
            do {
                command = try CanopyCommand.parseAsRoot(arguments)
            } catch {
                let message = CanopyCommand.fullMessage(for: error)
                if CanopyCommand.exitCode(for: error) == .success {
                    console.line(message)
                    return 0
                }
                console.error(message)
                return CLIFailure.Status.usage.rawValue
            }
            do {
                if var asyncCommand = command as? any AsyncParsableCommand {
                    try await asyncCommand.run()
                } else {
                    try command.run()
                }
                return 0
            } catch let exit as ExitCode {
                return exit.rawValue
            } catch let error where !(error is CLIFailure) && !(error is CanopyError) && !(error is LMDBError) {
                // Argument parser errors (help requested, validation) can also surface here.
                let code = CanopyCommand.exitCode(for: error)
                if code == .success {
                    console.line(CanopyCommand.fullMessage(for: error))
                    return 0
                }
                if error is ValidationError || code == .validationFailure {
                    console.error(CanopyCommand.fullMessage(for: error))
                    return CLIFailure.Status.usage.rawValue
                }
                let failure = CLIFailure.from(error)
                console.error("error: \(failure.message)")
                return failure.status.rawValue
            } catch {
                let failure = CLIFailure.from(error)
                console.error("error: \(failure.message)")
                return failure.status.rawValue
            }
        }
    }
}
