import CanopyCore

/// A row as a search index's text closure sees it: its address, and its object or metadata decoded on demand.
///
/// The one row type of every extension, ``/CanopyCore/ExtensionRow``, under the name search indexes have always used
/// (kept so that code written against `SearchRow` compiles unchanged). A search results view hands its index the row
/// its own closures see: the same value, so what one decoded the other does not decode again.
public typealias SearchRow = ExtensionRow

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
