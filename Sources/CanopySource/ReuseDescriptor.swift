/// A view a container can make and reuse: made with `init()`, reset by ``prepareForReuse()`` before it is dequeued
/// again.
public protocol ReusableView: AnyObject {
    /// Makes a fresh view.
    init()
    /// Clears what the last configuration set. The default does nothing.
    func prepareForReuse()
}

extension ReusableView {
    /// Does nothing.
    public func prepareForReuse() {}
}

/// How a container makes the views of one reuse identifier (TaylorSource's three descriptor cases): by type, by a
/// builder closure, or an identifier the container already knows.
public struct ReuseDescriptor<View> {
    /// Which of the three ways.
    public enum Kind: Hashable, Sendable {
        /// `init()` of a ``ReusableView`` type, named by its full identity (`String(reflecting:)`).
        case type(String)
        /// A closure that builds a view.
        case builder
        /// The container knows the identifier already (registered earlier, or built in).
        case registered
    }

    /// The reuse identifier.
    public let identifier: String
    /// How views are made.
    public let kind: Kind
    /// Makes a view, or `nil` for ``Kind/registered``.
    public let make: (() throws -> View)?

    /// Views made by `init()` of `type`; the identifier defaults to the type's full name (module included).
    ///
    /// - Parameters:
    ///   - type: the view type; a type that isn't a `View` makes ``SourceError/Code/typeMismatch`` when dequeued.
    ///   - identifier: the reuse identifier; default `String(reflecting: type)`.
    public static func type<T: ReusableView>(_ type: T.Type, identifier: String? = nil) -> ReuseDescriptor {
        let name = String(reflecting: type)
        return ReuseDescriptor(identifier: identifier ?? name, kind: .type(name)) {
            guard let view = T() as? View else {
                throw SourceError(.typeMismatch, "\(name) is not a \(String(reflecting: View.self)); register a subtype of the container's view type")
            }
            return view
        }
    }

    /// Views made by `build`.
    public static func builder(identifier: String, _ build: @escaping () -> View) -> ReuseDescriptor {
        ReuseDescriptor(identifier: identifier, kind: .builder, make: build)
    }

    /// An identifier the container already knows how to make views for.
    public static func registered(identifier: String) -> ReuseDescriptor {
        ReuseDescriptor(identifier: identifier, kind: .registered, make: nil)
    }
}

/// The kind of a supplementary view: a header, a footer, or a kind of your own.
public struct SupplementaryKind: Hashable, Sendable, CustomStringConvertible {
    /// The kind's name.
    public let rawValue: String
    /// A kind of your own (such as `"badge"`).
    public init(_ rawValue: String) { self.rawValue = rawValue }
    /// The section header.
    public static let header = SupplementaryKind("header")
    /// The section footer.
    public static let footer = SupplementaryKind("footer")
    /// The kind's name.
    public var description: String { rawValue }
}
