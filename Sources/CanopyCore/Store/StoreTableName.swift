/// The names of the store's own LMDB databases, declared once: every open, check and message names a table through
/// these, never by spelling it (see ``StoreTables`` for what each holds, and ``StoreInfoKey`` for the keys of
/// `canopy.info`). Extensions' tables are `ext.<extension>.<table>` (``ExtensionTableName``).
enum StoreTableName {
    /// The prefix of every table of the store.
    static let prefix = "canopy."
    /// `format`, `state`, attachment slots, the feed's start, extensions' state records, migration records.
    static let info = "canopy.info"
    /// Collection name → id and codec.
    static let collections = "canopy.collections"
    /// Row key → row record (flags, attachments, object).
    static let objects = "canopy.objects"
    /// Row key → metadata bytes.
    static let metadata = "canopy.metadata"
    /// Snapshot → commit notification (and the change feed's records).
    static let commits = "canopy.commits"
    /// Extension name → registration record (JSON).
    static let extensions = "canopy.extensions"
    /// Change feed consumer → checkpoint.
    static let feedConsumers = "canopy.feed-consumers"

    /// Whether `name` is a table of the store or of an extension (the tables a check or an upgrade covers).
    static func isCanopyTable(_ name: String) -> Bool {
        name.hasPrefix(prefix) || name.hasPrefix(ExtensionTableName.prefix)
    }
}
