/// The keys of the store's `canopy.info` table, declared once: every read and write of the table names its key
/// through these, never by spelling it (see ``StoreTables``).
///
/// | key | value |
/// | --- | --- |
/// | `format` | the format tag |
/// | `state` | `canopy/4`: ``StoreState`` (the snapshot and each extension's consistent snapshot); since `canopy/5` the state is the commit log's newest entry, and an upgraded file holds ``StoreTables/movedStateRecord`` here |
/// | `attachment-slots` | ``AttachmentSlots`` |
/// | `feed` | the snapshot the change feed was enabled at (``ChangeFeedLog``) |
/// | `ext.<name>.state` | `canopy/4` and `canopy/5`: an extension's small state record; since `canopy/6` it is part of the state (the newest commit-log entry), and an upgraded file holds ``StoreTables/movedExtensionStateRecord`` here |
/// | `ext.<name>.skipped` | the rows an extension skipped (``SkippedRows``) |
/// | `migration.applied.<step>`, `migration.progress.<step>` | the migration records (``AppliedMigration``) |
enum StoreInfoKey {
    static let format = Array("format".utf8)
    static let state = Array("state".utf8)
    static let attachmentSlots = Array("attachment-slots".utf8)
    static let changeFeed = Array("feed".utf8)

    /// An extension's state record (`canopy/4` and `canopy/5`; read from files of those formats and moved by the
    /// upgrade).
    static func extensionState(of extensionName: String) -> [UInt8] {
        // `ext.<name>.state`, appended byte by byte: a file of those formats opened read-only reads it several times per
        // transaction, and an interpolated `String` copied into an array cost ~1k instructions.
        var key: [UInt8] = []
        key.reserveCapacity(ExtensionTableName.prefix.utf8.count + extensionName.utf8.count + 6)
        key.append(contentsOf: ExtensionTableName.prefix.utf8)
        key.append(contentsOf: extensionName.utf8)
        key.append(contentsOf: ".state".utf8)
        return key
    }

    /// The record of the rows an extension skipped.
    static func skippedRows(of extensionName: String) -> [UInt8] {
        Array(ExtensionTableName.skipped(of: extensionName).utf8)
    }

    /// The prefix of the records of applied migration steps.
    static let migrationAppliedPrefix = "migration.applied."
    /// The prefix of the records of migration steps in progress.
    static let migrationProgressPrefix = "migration.progress."

    /// The record of migration step `name`, applied.
    static func migrationApplied(_ name: String) -> [UInt8] { Array((migrationAppliedPrefix + name).utf8) }
    /// The record of migration step `name`, in progress.
    static func migrationProgress(_ name: String) -> [UInt8] { Array((migrationProgressPrefix + name).utf8) }
}
