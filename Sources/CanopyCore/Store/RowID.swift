/// The address of a row: a collection and a key in it.
public struct RowID: Hashable, Sendable, Comparable, CustomStringConvertible, Codable {
    /// The collection's name.
    public var collection: String
    /// The key within the collection.
    public var key: String

    /// Creates a row address.
    public init(collection: String, key: String) {
        self.collection = collection
        self.key = key
    }

    /// Orders by collection, then key (as the UTF-8 bytes compare, like the store's own order).
    public static func < (lhs: RowID, rhs: RowID) -> Bool {
        if lhs.collection != rhs.collection { return lhs.collection.utf8.lexicographicallyPrecedes(rhs.collection.utf8) }
        return lhs.key.utf8.lexicographicallyPrecedes(rhs.key.utf8)
    }

    /// Hashes the key only: an app has few collections, so rows of different collections with one key share a bucket
    /// and equality tells them apart, while every cache lookup hashes one string instead of two.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(key)
    }

    /// Whether both name the same collection and key.
    public static func == (lhs: RowID, rhs: RowID) -> Bool {
        lhs.key == rhs.key && lhs.collection == rhs.collection
    }

    /// `collection/key`.
    public var description: String { "\(collection)/\(key)" }
}
