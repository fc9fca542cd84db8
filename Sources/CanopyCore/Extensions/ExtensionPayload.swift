/// How an extension's commit change value becomes bytes in the persisted commit log, and back: declared once per
/// extension. Only other processes (and observers that fell behind this process's recent commits) decode the bytes;
/// observers in the committing process get the value itself.
public protocol ExtensionPayloadCoding {
    /// The typed change value an extension returns at commit.
    associatedtype Value: Sendable
    /// The value's bytes in the commit log.
    static func encode(_ value: Value) -> [UInt8]
    /// The value of bytes ``encode(_:)`` wrote.
    /// - Throws: ``CanopyError/Code/corruptStore`` (or another typed error) when the bytes are malformed.
    static func decode(_ bytes: [UInt8]) throws -> Value
}

/// What an extension adds to a commit (``ExtensionTransaction/prepareCommit(_:)``): a typed `Sendable` value,
/// delivered in memory to observers in this process, and its bytes for the persisted commit log.
public struct ExtensionPayload: Sendable {
    /// The bytes the commit log keeps.
    public let bytes: [UInt8]
    /// The typed value, when the extension declared a coding.
    let value: (any Sendable)?

    /// A typed value, encoded once for the commit log with `coding`.
    public init<Coding: ExtensionPayloadCoding>(_ value: Coding.Value, coding: Coding.Type) {
        self.bytes = Coding.encode(value)
        self.value = value
    }

    /// Bytes only: observers read them with ``CommitNotification/extensionPayloads``.
    public init(bytes: [UInt8]) {
        self.bytes = bytes
        self.value = nil
    }
}

extension CommitNotification {
    /// The change value extension `name` returned at this commit, as `coding` declares it: the value itself when the
    /// commit was made in this process (no bytes decoded), otherwise decoded from the commit log's bytes. `nil` when
    /// the extension added nothing.
    /// - Throws: what `coding` throws for malformed bytes.
    public func extensionChange<Coding: ExtensionPayloadCoding>(named name: String, coding: Coding.Type) throws -> Coding.Value? {
        if let value = typedExtensionChanges.values[name] as? Coding.Value { return value }
        guard let bytes = extensionPayloads[name] else { return nil }
        return try Coding.decode(bytes)
    }
}

/// The typed change values of a commit made in this process, by extension name. Not part of the notification's
/// equality or hash (they are its payloads' bytes, as values) and never encoded.
struct TypedExtensionChanges: Sendable, Hashable {
    var values: [String: any Sendable] = [:]

    static func == (lhs: Self, rhs: Self) -> Bool { true }
    func hash(into hasher: inout Hasher) {}
}
