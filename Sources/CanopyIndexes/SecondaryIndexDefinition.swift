/// What a ``SecondaryIndex`` records about its definition besides its indexer (``SecondaryIndex/options``).
///
/// The flags are optional so that the records of earlier versions (`{"collections":[…]}`, without them) still read:
/// they read as `nil`, which differs from any current definition, so such an index is rebuilt.
public struct SecondaryIndexDefinition: Codable, Equatable, Sendable {
    /// The collections indexed, sorted; `nil` for all.
    public var collections: [String]?
    /// Whether the indexed value reads the object.
    public var dependsOnObject: Bool?
    /// Whether the indexed value reads the metadata.
    public var dependsOnMetadata: Bool?

    /// Creates a definition.
    public init(collections: [String]?, dependsOnObject: Bool?, dependsOnMetadata: Bool?) {
        self.collections = collections
        self.dependsOnObject = dependsOnObject
        self.dependsOnMetadata = dependsOnMetadata
    }
}
