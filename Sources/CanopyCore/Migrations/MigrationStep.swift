import Foundation

/// One named step of a ``Migrator``: a change to the stored rows of one collection that the app's new types need.
///
/// Steps are applied once each, in the order the migrator lists them, and recorded in the database under their name:
/// never rename a step that shipped, and add new steps at the end.
///
/// - Typed: ``typed(_:collection:from:to:_:)`` decodes each object as the old type and writes the new one.
/// - Untyped (no app types, through the codec recorded for the collection): ``transform(_:collection:_:)`` over a
///   ``StoredValue``, and ``renameKey(_:collection:from:to:)``, ``addKey(_:collection:_:value:)``,
///   ``removeKey(_:collection:_:)``, ``changeValue(_:collection:key:_:)`` built on it.
/// - Collection level: ``renameCollection(_:from:to:)``, ``deleteCollection(_:collection:)``,
///   ``changeCodec(_:collection:to:object:metadata:)``.
///
/// Row steps change objects; metadata is kept as it is.
public struct MigrationStep: Sendable {
    /// The name recorded in the database once the step is applied.
    public let name: String
    /// The collection the step changes (for a rename, the one it renames).
    public let collection: String
    let action: Action

    /// What a step does.
    enum Action: Sendable {
        /// Rewrites objects one by one: the new bytes, or `nil` to keep the row as it is.
        case rewrite(@Sendable (_ key: String, _ object: UnsafeRawBufferPointer, _ codecName: String) throws -> [UInt8]?)
        case renameCollection(to: String)
        case deleteCollection
        /// Re-encodes every object and metadata value with `codec`: `convert(bytes, fromCodec, isMetadata)`.
        case changeCodec(to: any Codec, convert: @Sendable (_ bytes: UnsafeRawBufferPointer, _ from: any Codec, _ isMetadata: Bool) throws -> [UInt8])
    }

    // MARK: Typed

    /// Decodes each object of `collection` as `Old` and stores `convert(key, old)` in its place.
    ///
    /// Keep `Old` in the app as long as databases written before the step may be opened (a copy of the type as it
    /// was, renamed, such as `NoteV1`). Rows that already decode as `New` are not skipped: every row must decode as
    /// `Old`, or the step fails naming the row.
    ///
    /// ```swift
    /// migrator.append(.typed("note-archived", collection: "notes", from: NoteV1.self, to: Note.self) { _, old in
    ///     Note(title: old.title, body: old.body, archived: false)
    /// })
    /// ```
    public static func typed<Old: Decodable & SendableMetatype, New: Encodable & SendableMetatype>(
        _ name: String, collection: String, from old: Old.Type, to new: New.Type,
        _ convert: @escaping @Sendable (_ key: String, _ old: Old) throws -> New
    ) -> MigrationStep {
        MigrationStep(name: name, collection: collection, action: .rewrite { key, bytes, codecName in
            guard let codec = Codecs.named(codecName) else {
                throw CodecError(code: .unknownCodec, message: "The collection's codec \"\(codecName)\" is not a built-in codec.")
            }
            let value: Old
            do {
                value = try codec.decode(Old.self, from: bytes)
            } catch {
                throw MigrationRowError(message: DecodingExplanation.message(for: error, decoding: Old.self, codecName: codecName), underlying: error)
            }
            return try codec.encode(try convert(key, value))
        })
    }

    // MARK: Untyped

    /// Reads each object of `collection` as a ``StoredValue`` (through the collection's recorded codec, without the
    /// app's types), lets `body` change it, and writes it back when it changed.
    public static func transform(
        _ name: String, collection: String, _ body: @escaping @Sendable (_ key: String, _ value: inout StoredValue) throws -> Void
    ) -> MigrationStep {
        MigrationStep(name: name, collection: collection, action: .rewrite { key, bytes, codecName in
            let original = try StoredValue(decoding: bytes, codecName: codecName)
            var value = original
            try body(key, &value)
            return value == original ? nil : try value.encoded(codecName: codecName)
        })
    }

    /// Renames the key `old` to `new` in each object that has it (a renamed property, or a changed `CodingKeys`).
    public static func renameKey(_ name: String, collection: String, from old: String, to new: String) -> MigrationStep {
        transform(name, collection: collection) { _, value in
            guard let moved = value[old] else { return }
            value[old] = nil
            value[new] = moved
        }
    }

    /// Adds `key` with `value` to each object that lacks it (a new non-optional property with a default).
    public static func addKey(_ name: String, collection: String, _ key: String, value: StoredValue) -> MigrationStep {
        transform(name, collection: collection) { _, object in
            if object[key] == nil { object[key] = value }
        }
    }

    /// Removes `key` from each object that has it.
    public static func removeKey(_ name: String, collection: String, _ key: String) -> MigrationStep {
        transform(name, collection: collection) { _, object in object[key] = nil }
    }

    /// Replaces the value under `key` of each object that has it with `change(value)` (a property whose type changed).
    ///
    /// ```swift
    /// // priority was a string ("high"), it is now an Int.
    /// .changeValue("priority-number", collection: "tasks", key: "priority") { value in
    ///     value == .string("high") ? .int(2) : .int(0)
    /// }
    /// ```
    public static func changeValue(
        _ name: String, collection: String, key: String, _ change: @escaping @Sendable (StoredValue) throws -> StoredValue
    ) -> MigrationStep {
        transform(name, collection: collection) { _, object in
            if let current = object[key] { object[key] = try change(current) }
        }
    }

    // MARK: Collections

    /// Moves every row of `old` (objects and metadata) to collection `new`, which must have no rows; `new` is stored
    /// with `old`'s codec. The step fails when `new` has rows of its own.
    public static func renameCollection(_ name: String, from old: String, to new: String) -> MigrationStep {
        MigrationStep(name: name, collection: old, action: .renameCollection(to: new))
    }

    /// Removes every row of `collection`.
    public static func deleteCollection(_ name: String, collection: String) -> MigrationStep {
        MigrationStep(name: name, collection: collection, action: .deleteCollection)
    }

    /// Re-encodes every object (as `Object`) and metadata value (as `Metadata`) of `collection` with `codec`, and
    /// records the new codec for the collection. Typed, so that a `Date` or `Data` comes back as itself (the JSON codec
    /// writes dates as numbers, which an untyped conversion could not tell from a `Double`).
    ///
    /// It runs in one transaction whatever the batch size (a collection has one codec). Every connection, in this
    /// process or another, reads the codec of its own snapshot: once it reads past the change, a handle with the old
    /// codec gets ``CanopyError/Code/codecMismatch`` and one with the new codec decodes (the apps still running the
    /// old code then fail with that error rather than misread bytes: ship the new handle with the migration).
    public static func changeCodec<Object: Codable & SendableMetatype, Metadata: Codable & SendableMetatype>(
        _ name: String, collection: String, to codec: any Codec, object: Object.Type, metadata: Metadata.Type
    ) -> MigrationStep {
        MigrationStep(name: name, collection: collection, action: .changeCodec(to: codec) { bytes, from, isMetadata in
            do {
                if isMetadata { return try codec.encode(try from.decode(Metadata.self, from: bytes)) }
                return try codec.encode(try from.decode(Object.self, from: bytes))
            } catch let error as DecodingError {
                throw MigrationRowError(
                    message: DecodingExplanation.message(for: error, decoding: isMetadata ? Metadata.self : Object.self, codecName: from.name),
                    underlying: error)
            }
        })
    }
}

/// A row a step could not read, with the explanation of the decode that failed.
struct MigrationRowError: Error, CustomStringConvertible {
    var message: String
    var underlying: any Error
    var description: String { message }
}
