import Canopy
import Foundation

/// A note as version 1 of the model-evolution tests' app wrote it.
public struct EvolutionNoteV1: Codable, Sendable, Equatable {
    /// The title.
    public var title: String
    /// The day it is filed under ("2026-11-24").
    public var day: String
    /// Creates a note.
    public init(title: String, day: String) {
        self.title = title
        self.day = day
    }
}

/// A note as version 2 of the app reads it: a new non-optional property, `priority`, and `day` renamed `filedUnder`.
public struct EvolutionNote: Codable, Sendable, Equatable {
    /// The title.
    public var title: String
    /// The day it is filed under.
    public var filedUnder: String
    /// 0 (none) to 3; notes of version 1 get 1.
    public var priority: Int
    /// Creates a note.
    public init(title: String, filedUnder: String, priority: Int) {
        self.title = title
        self.filedUnder = filedUnder
        self.priority = priority
    }
}

/// The collection of the model-evolution tests.
public let evolutionNotesV1 = TypedCollection<EvolutionNoteV1, NoMetadata>("notes")
/// The same collection, read with version 2's type.
public let evolutionNotes = TypedCollection<EvolutionNote, NoMetadata>("notes")

/// Version 1's view: notes by day, by title.
public func evolutionViewV1() -> View {
    View(
        name: "notes-by-day",
        grouping: .byObject(evolutionNotesV1) { _, note in note.day },
        sorting: .byObject(evolutionNotesV1) { _, _, note in SortKey(note.title) },
        versionTag: "1")
}

/// Version 2's view: notes by day, by priority (highest first), then title.
public func evolutionViewV2() -> View {
    View(
        name: "notes-by-day",
        grouping: .byObject(evolutionNotes) { _, note in note.filedUnder },
        sorting: .byObject(evolutionNotes) { _, _, note in SortKey(.descending(note.priority), .ascending(note.title)) },
        versionTag: "2")
}

/// Version 2's migration: one typed step from version 1's notes.
public func evolutionMigrator(batchSize: Int = 10_000, progress: (@Sendable (String, Int) -> Void)? = nil) -> Migrator {
    var migrator = Migrator(batchSize: batchSize)
    migrator.progress = progress
    migrator.append(.typed("notes-priority-and-filedUnder", collection: "notes", from: EvolutionNoteV1.self, to: EvolutionNote.self) { _, old in
        EvolutionNote(title: old.title, filedUnder: old.day, priority: 1)
    })
    return migrator
}
