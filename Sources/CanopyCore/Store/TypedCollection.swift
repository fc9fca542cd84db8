/// A collection name bound to the Swift types of its objects and metadata and to the codec that stores them.
///
/// A collection is a namespace of keys, like YapDatabase's collections. The first write through a handle records the
/// codec's name for the collection in the database; later access through a handle with another codec fails with
/// ``CanopyError/Code/codecMismatch`` instead of misreading bytes.
///
/// ```swift
/// struct Reminder: Codable, Sendable { var title: String; var done: Bool }
/// let reminders = TypedCollection<Reminder, NoMetadata>("reminders")
/// ```
public struct TypedCollection<Object: Codable & Sendable, Metadata: Codable & Sendable>: Sendable {
    /// The collection's name.
    public let name: String
    /// The codec objects and metadata are stored with.
    public let codec: any Codec
    /// Whether `codec` is the binary codec: told once here, as the dynamic type of an existential is a call into the
    /// runtime (about 50 instructions), which a typed read past the cache would otherwise make every time.
    @usableFromInline let usesBinaryCodec: Bool

    /// Creates a handle for collection `name`, stored with `codec` (the fast binary codec by default).
    public init(_ name: String, codec: any Codec = BinaryCodec()) {
        self.name = name
        self.codec = codec
        usesBinaryCodec = Swift.type(of: codec) == BinaryCodec.self
    }
}

/// The metadata type of collections that keep no metadata.
public struct NoMetadata: Codable, Sendable, Hashable {
    /// Creates the (empty) value.
    public init() {}
}

extension TypedCollection {
    /// Checks that a row read by an extension (a view's or an index's closure) belongs to this collection and was
    /// stored with this handle's codec, before its bytes are decoded as `Object` or `Metadata`.
    ///
    /// - Parameters:
    ///   - id: the row.
    ///   - codecName: the codec recorded for the row's collection.
    /// - Throws: ``CanopyError/Code/invalidArgument`` when the row is in another collection;
    ///   ``CanopyError/Code/codecMismatch`` when the collection was written with another codec.
    public func checkRow(_ id: RowID, codecName: String) throws {
        try id.checkTyped(collection: name, codec: codec, recordedCodec: codecName)
    }
}

extension RowID {
    /// ``TypedCollection/checkRow(_:codecName:)`` with the collection's name and codec: for the extensions' typed
    /// closures, which run unspecialized, where a call on the generic collection asks the runtime for its metadata
    /// (on every row, about as much as the comparisons themselves).
    ///
    /// - Parameters:
    ///   - name: the collection the caller's typed handle is for.
    ///   - codec: the handle's codec.
    ///   - codecName: the codec recorded for the row's collection.
    /// - Throws: ``CanopyError/Code/invalidArgument`` when the row is in another collection;
    ///   ``CanopyError/Code/codecMismatch`` when the collection was written with another codec.
    public func checkTyped(collection name: String, codec: any Codec, recordedCodec codecName: String) throws {
        guard self.collection == name else {
            throw CanopyError(.invalidArgument, "the row is in collection '\(self.collection)', not in '\(name)': read it through a handle of its own collection",
                              collection: self.collection, key: key)
        }
        guard codecName == codec.name else {
            throw CanopyError(
                .codecMismatch,
                "the collection is stored with codec '\(codecName)' but was accessed with codec '\(codec.name)'; use a handle with the codec it was written with",
                collection: self.collection, key: key)
        }
    }
}
