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

    /// Creates a handle for collection `name`, stored with `codec` (the fast binary codec by default).
    public init(_ name: String, codec: any Codec = BinaryCodec()) {
        self.name = name
        self.codec = codec
    }
}

/// The metadata type of collections that keep no metadata.
public struct NoMetadata: Codable, Sendable, Hashable {
    /// Creates the (empty) value.
    public init() {}
}
