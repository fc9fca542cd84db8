import Canopy
import CanopyCore

/// A row as a search index's text closure sees it: its address, and its object or metadata decoded on demand.
public struct SearchRow {
    enum Source {
        case written(RowChange)
        case stored(StoredRow, ReadTransaction)
        case view(ViewRow)
    }

    /// The row's address.
    public let id: RowID
    let source: Source

    /// The object, decoded through `collection` (its types and codec).
    /// - Throws: ``/CanopyCore/CanopyError/Code/invalidArgument`` when the row is in another collection;
    ///   ``/CanopyCore/CanopyError/Code/codecMismatch`` when the collection was written with another codec; what
    ///   ``object(as:)`` throws.
    public func object<Object, Metadata>(in collection: TypedCollection<Object, Metadata>) throws -> Object {
        try check(collection)
        return try object(as: Object.self)
    }

    /// The metadata, decoded through `collection`, or `nil` when the row has none.
    /// - Throws: as ``object(in:)``.
    public func metadata<Object, Metadata>(in collection: TypedCollection<Object, Metadata>) throws -> Metadata? {
        try check(collection)
        return try metadata(as: Metadata.self)
    }

    private func check<Object, Metadata>(_ collection: TypedCollection<Object, Metadata>) throws {
        switch source {
        case .written(let row): try collection.checkRow(id, codecName: row.codecName)
        case .stored(let row, _): try collection.checkRow(id, codecName: row.codecName)
        case .view:
            guard id.collection == collection.name else {
                throw CanopyError(.invalidArgument, "the row is in collection '\(id.collection)', not '\(collection.name)'",
                                  collection: id.collection, key: id.key)
            }
        }
    }

    /// The object as `T`.
    /// - Throws: ``/CanopyCore/CanopyError/Code/decodingFailed`` when it is not a `T`.
    public func object<T: Decodable>(as type: T.Type) throws -> T {
        switch source {
        case .written(let row): return try row.object(as: T.self)
        case .stored(let row, let transaction):
            return try transaction.decodeStoredValue(T.self, from: try row.objectBytes(), codecName: row.codecName, id: id)
        case .view(let row): return try row.object(as: T.self)
        }
    }

    /// The metadata as `T`, or `nil` when the row has none.
    public func metadata<T: Decodable>(as type: T.Type) throws -> T? {
        switch source {
        case .written(let row): return try row.metadata(as: T.self)
        case .stored(let row, let transaction):
            guard let bytes = try row.metadataBytes() else { return nil }
            return try transaction.decodeStoredValue(T.self, from: bytes, codecName: row.codecName, id: id)
        case .view(let row): return try row.metadata(as: T.self)
        }
    }
}

/// A field of the rows a search index indexes: its name and its weight in ranking (a match in a field of weight 2
/// counts as two matches in a field of weight 1).
public struct SearchField: Codable, Hashable, Sendable {
    /// The field's name (shown with highlights; recorded in the index's options).
    public var name: String
    /// Its weight in ranking; 1 by default.
    public var weight: Double

    /// Creates a field.
    public init(_ name: String, weight: Double = 1) {
        self.name = name
        self.weight = weight
    }
}

/// A field of the objects of one collection: its name, weight and the text it reads from an object.
public struct ObjectSearchField<Object>: Sendable {
    /// The name and weight.
    public let field: SearchField
    @usableFromInline let text: @Sendable (Object) -> String?

    /// A field whose text `text` reads from an object (`nil`: the object has none).
    public init(_ name: String, weight: Double = 1, _ text: @escaping @Sendable (Object) -> String?) {
        self.field = SearchField(name, weight: weight)
        self.text = text
    }

    /// A field whose text is the object's property at `keyPath`.
    public init(_ name: String, weight: Double = 1, _ keyPath: KeyPath<Object, String> & Sendable) {
        self.init(name, weight: weight) { $0[keyPath: keyPath] }
    }

    /// A field whose text is the object's optional property at `keyPath`.
    public init(_ name: String, weight: Double = 1, _ keyPath: KeyPath<Object, String?> & Sendable) {
        self.init(name, weight: weight) { $0[keyPath: keyPath] }
    }
}
