import CanopyCore

/// A flat struct whose hand-written `init(from:)` lowercases its name: the binary codec must return what that
/// initializer returns, whatever value of the type it decoded first (the decode property test; `CrashWriter
/// --read-transforming` reads them in a fresh process).
public struct LowercasedTag: Codable, Sendable, Equatable {
    /// The name, lowercased when decoded.
    public var name: String
    /// A count, kept as read.
    public var count: Int

    /// Creates a tag as written (not lowercased).
    public init(name: String, count: Int) {
        self.name = name
        self.count = count
    }

    /// Decodes the name lowercased.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name).lowercased()
        count = try container.decode(Int.self, forKey: .count)
    }
}

/// A flat struct whose hand-written `init(from:)` clamps its level to `0...10`.
public struct ClampedLevel: Codable, Sendable, Equatable {
    /// A label, kept as read.
    public var label: String
    /// The level, clamped to `0...10` when decoded.
    public var level: Int

    /// Creates a level as written (not clamped).
    public init(label: String, level: Int) {
        self.label = label
        self.level = level
    }

    /// Decodes the level clamped to `0...10`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        label = try container.decode(String.self, forKey: .label)
        level = min(10, max(0, try container.decode(Int.self, forKey: .level)))
    }
}

/// The collections of the decode property test: keys `tag-…` and `level-…`.
public let transformingTags = TypedCollection<LowercasedTag, NoMetadata>("tags")
/// See ``transformingTags``.
public let transformingLevels = TypedCollection<ClampedLevel, NoMetadata>("levels")

/// Reads `key` (from ``transformingTags`` when it starts with `tag-`, else from ``transformingLevels``) and describes
/// the decoded value as one line: `key<TAB>field<TAB>field`, or `key<TAB>missing`.
public func describeTransformingRow(_ key: String, in txn: ReadTransaction) throws -> String {
    if key.hasPrefix("tag-") {
        guard let tag = try txn.object(forKey: key, in: transformingTags) else { return "\(key)\tmissing" }
        return "\(key)\t\(tag.name)\t\(tag.count)"
    }
    guard let level = try txn.object(forKey: key, in: transformingLevels) else { return "\(key)\tmissing" }
    return "\(key)\t\(level.label)\t\(level.level)"
}
