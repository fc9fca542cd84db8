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

/// The kind of a supplementary view: the header, the footer, or a kind of your own.
///
/// Kinds of your own live in their own namespace: `SupplementaryKind("header")` is a custom kind named "header", not
/// the section header (``header``), so a custom kind can never be drawn, or replaced, as a header by accident.
public struct SupplementaryKind: Hashable, Sendable, CustomStringConvertible {
    private enum Storage: Hashable, Sendable {
        case header
        case footer
        case custom(String)
    }
    private let storage: Storage

    /// A kind of your own (such as `"badge"`); never equal to ``header`` or ``footer``, whatever its name.
    public init(_ name: String) { storage = .custom(name) }
    private init(storage: Storage) { self.storage = storage }

    /// The section header.
    public static let header = SupplementaryKind(storage: .header)
    /// The section footer.
    public static let footer = SupplementaryKind(storage: .footer)

    /// The name of a custom kind; `nil` for the header and the footer.
    public var customName: String? {
        if case .custom(let name) = storage { return name }
        return nil
    }

    /// `header`, `footer`, or `custom(name)`.
    public var description: String {
        switch storage {
        case .header: "header"
        case .footer: "footer"
        case .custom(let name): "custom(\(name))"
        }
    }
}
