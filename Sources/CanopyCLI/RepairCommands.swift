import ArgumentParser
import Canopy
import Foundation

/// The views and indexes recorded in the database that lag the store after a command wrote rows without their
/// closures: the app brings them up to date (from the commit log, or rebuilt) when it next registers them or writes.
func staleExtensions(in connection: Canopy.Connection) throws -> [String] {
    try connection.read { txn in
        let snapshots = try txn.extensionSnapshots()
        return try txn.extensionRecords().filter { (snapshots.extensions[$0.name] ?? 0) < snapshots.store }.map(\.name).sorted()
    }
}

extension CanopyCommand {
    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete one row, or every row whose key starts with a prefix (a row the app cannot read, say).",
            discussion: """
                Without --yes nothing changes: the command says what it would delete and exits with 1. The app's \
                views and indexes are not here to be kept up to date, so every one recorded in the database becomes \
                stale (never wrong) and is brought up to date when the app next registers it or writes; the output names them. \
                Example: canopy delete ./db notes n42 --yes
                """)

        @OptionGroup var database: DatabaseArgument
        @Argument(help: "The collection.") var collection: String
        @Argument(help: "The key of the row to delete.") var key: String?
        @Option(help: "Delete every row whose key starts with this prefix instead of one key.") var prefix: String?
        @Flag(help: "Really delete.") var yes = false
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if (key == nil) == (prefix == nil) { throw ValidationError("pass either a KEY or --prefix PREFIX") }
        }

        func run() throws {
            let db = try database.open(readOnly: !yes)
            let connection = db.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
            let keys: [String] = try connection.read { txn in
                _ = try txn.requireCollection(collection)
                if let key {
                    guard try txn.exists(key: key, inCollection: collection) else {
                        throw CLIFailure(.failed, "no row '\(key)' in collection '\(collection)'; nothing was deleted (list keys with `canopy keys`)")
                    }
                    return [key]
                }
                return try txn.keys(inCollection: collection, prefix: prefix ?? "")
            }
            let what = key.map { "row '\($0)'" } ?? "\(keys.count) row\(keys.count == 1 ? "" : "s") with keys starting with '\(prefix ?? "")'"
            guard yes else {
                throw CLIFailure(.failed, "would delete \(what) of collection '\(collection)'; nothing was changed: pass --yes to delete")
            }
            let deleted = try connection.readWrite { txn in try txn.remove(keys: keys, inCollection: collection) }
            let stale = try staleExtensions(in: connection)
            if output.json {
                console.line(JSONValue.members([("collection", .string(collection)), ("deleted", .int(deleted)),
                                                ("staleExtensions", .array(stale.map { .string($0) }))]).text)
            } else {
                console.line("deleted \(deleted) row\(deleted == 1 ? "" : "s") of collection '\(collection)'")
                if !stale.isEmpty {
                    console.line("views and indexes marked stale (brought up to date when the app next registers them or writes): \(stale.joined(separator: ", "))")
                }
            }
        }
    }

    struct DropView: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "drop-view",
            abstract: "Delete a view, filtered view or index: its registration, its tables and what it attached to rows.",
            discussion: """
                Without --yes nothing changes: the command says what it would drop and exits with 1. A view that \
                filtered views depend on is refused until they are dropped. An app that still registers the extension \
                rebuilds it from the rows at its next registration. Example: \
                canopy drop-view ./db notes-by-day --yes
                """)

        @OptionGroup var database: DatabaseArgument
        @Argument(help: "The extension's name (see `canopy extensions`).") var name: String
        @Flag(help: "Really drop.") var yes = false
        @OptionGroup var output: OutputOptions

        func run() throws {
            let db = try database.open(readOnly: !yes)
            let records = try db.recordedExtensions()
            guard let record = records.first(where: { $0.name == name }) else {
                let known = records.map(\.name).sorted()
                throw CLIFailure(.failed, "no extension named '\(name)' is recorded; the extensions are: \(known.isEmpty ? "none" : known.joined(separator: ", "))")
            }
            let dependents = records.filter { PersistedExtensionOptions.parent(in: $0.options) == name }.map(\.name).sorted()
            // A filtered view's entries come from its parent's: dropping the parent under it would leave it wrong.
            guard dependents.isEmpty else {
                throw CLIFailure(.failed, "the filtered view\(dependents.count == 1 ? "" : "s") \(dependents.joined(separator: ", ")) depend\(dependents.count == 1 ? "s" : "") on '\(name)'; drop \(dependents.count == 1 ? "it" : "them") first. Nothing was changed")
            }
            guard yes else {
                throw CLIFailure(.failed, "would drop the \(record.kind) '\(name)'; nothing was changed: pass --yes to drop it")
            }
            try db.unregisterExtension(named: name, dropStorage: true)
            if output.json {
                console.line(JSONValue.members([("dropped", .string(name)), ("kind", .string(record.kind))]).text)
            } else {
                console.line("dropped the \(record.kind) '\(name)'")
            }
        }
    }
}

/// Reads what extensions record in their options, without their types.
enum PersistedExtensionOptions {
    /// The parent a filtered view records, if any.
    static func parent(in options: String) -> String? {
        (try? JSONValue.parse(options))?["parent"]?.stringValue
    }
}
