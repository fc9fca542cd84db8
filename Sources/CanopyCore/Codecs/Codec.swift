/// Turns Codable values into bytes and back; the codec's name is recorded in the database per collection so tools
/// without the app's types can decode stored bytes.
///
/// Canopy ships two codecs: ``BinaryCodec`` (compact and fast, the default choice) and ``JSONCodec`` (readable, and
/// tolerant of any `Codable` implementation). A codec has no state that changes, so one value can be shared by every
/// thread.
///
/// ```swift
/// let codec: any Codec = .binary
/// let bytes = try codec.encode(reminder)
/// let copy = try bytes.withUnsafeBytes { try codec.decode(Reminder.self, from: $0) }
/// ```
public protocol Codec: Sendable {
    /// The name recorded in the database ("json", "binary").
    ///
    /// ``Codecs/named(_:)`` maps a name back to a built-in codec. A custom codec should choose a name that the
    /// built-in ones do not use.
    var name: String { get }

    /// Encodes a value into a new array of bytes.
    ///
    /// - Parameter value: The value to encode.
    /// - Returns: The encoded bytes.
    /// - Throws: `EncodingError` when the value's `Encodable` implementation rejects it or uses the encoder in a way
    ///   the codec cannot represent; ``CodecError`` with code ``CodecError/Code/unsupportedValue`` when the value
    ///   exceeds a limit of the codec's format.
    func encode<T: Encodable>(_ value: T) throws -> [UInt8]

    /// Decodes a value from bytes this codec wrote.
    ///
    /// The bytes are only read during the call; the decoded value does not refer to them afterwards.
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - bytes: The encoded bytes.
    /// - Returns: The decoded value.
    /// - Throws: `DecodingError` when the bytes do not hold a valid encoding of `type`, including when they are
    ///   truncated or corrupt.
    func decode<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer) throws -> T
}

extension Codec where Self == BinaryCodec {
    /// The compact, self-describing binary codec; see ``BinaryCodec``.
    public static var binary: BinaryCodec { BinaryCodec() }
}

extension Codec where Self == JSONCodec {
    /// The JSON codec, with sorted keys; see ``JSONCodec``.
    public static var json: JSONCodec { JSONCodec() }
}

/// Built-in codecs by name, and conversion of stored bytes to JSON text without the app's types.
public enum Codecs {
    /// The built-in codec recorded under a name.
    ///
    /// - Parameter name: A codec name as recorded in the database: "json" or "binary".
    /// - Returns: ``JSONCodec`` for "json", ``BinaryCodec`` for "binary", `nil` for any other name.
    public static func named(_ name: String) -> (any Codec)? {
        switch name {
        case JSONCodec.codecName: JSONCodec()
        case BinaryCodec.codecName: BinaryCodec()
        default: nil
        }
    }

    /// JSON text of bytes written by the named built-in codec.
    ///
    /// Tools use this to show stored values without the app's types. For "json" the stored text is returned as it
    /// is (after checking that it is JSON), or re-indented when `prettyPrinted` is true. For "binary" the value is
    /// converted as described in ``BinaryCodec``: map keys in stored order (declaration order for synthesized
    /// `Codable`), dates as ISO-8601 strings in UTC with milliseconds, `Data` as base64 strings, and non-finite
    /// numbers as the strings "nan", "inf" and "-inf".
    ///
    /// - Parameters:
    ///   - bytes: The stored bytes.
    ///   - codecName: The name of the codec that wrote them.
    ///   - prettyPrinted: Whether to indent the text over several lines (two spaces a level).
    /// - Returns: The JSON text.
    /// - Throws: ``CodecError`` with code ``CodecError/Code/unknownCodec`` when `codecName` is not a built-in codec,
    ///   or ``CodecError/Code/malformedBytes`` when the bytes are not a valid encoding.
    public static func jsonText(
        from bytes: UnsafeRawBufferPointer,
        codecName: String,
        prettyPrinted: Bool = false
    ) throws -> String {
        switch codecName {
        case JSONCodec.codecName:
            return try JSONCodec.jsonText(from: bytes, prettyPrinted: prettyPrinted)
        case BinaryCodec.codecName:
            return try BinaryCodec.jsonText(from: bytes, prettyPrinted: prettyPrinted)
        default:
            throw CodecError(
                code: .unknownCodec,
                message: "No built-in codec is named \"\(codecName)\"; the built-in codecs are \"json\" and \"binary\"."
            )
        }
    }
}

/// An error of a codec itself (not of Codable's type checks, which stay DecodingError/EncodingError).
///
/// Decoding corrupt bytes throws `DecodingError.dataCorrupted` whose underlying error is a `CodecError` with code
/// ``Code/malformedBytes`` and the offset of the fault.
public struct CodecError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of a ``CodecError``; new kinds may be added, so a `switch` over codes needs a `default` case.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: Sendable, Hashable {
            case unknownCodec
            case malformedBytes
            case unsupportedValue
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// No built-in codec has the requested name.
        public static let unknownCodec = Code(.unknownCodec)

        /// The bytes are truncated, corrupt, or were not written by the codec.
        public static let malformedBytes = Code(.malformedBytes)

        /// The value cannot be represented by the codec's format, such as a container larger than 4 GiB.
        public static let unsupportedValue = Code(.unsupportedValue)

        /// The code's name, such as "malformedBytes".
        public var description: String {
            switch base {
            case .unknownCodec: "unknownCodec"
            case .malformedBytes: "malformedBytes"
            case .unsupportedValue: "unsupportedValue"
            }
        }
    }

    /// The kind of error, to switch on.
    public var code: Code

    /// What went wrong, and what to do about it when that is known.
    public var message: String

    /// The byte offset in the encoded value where the fault was found, when the error concerns stored bytes.
    public var offset: Int?

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - code: The kind of error.
    ///   - message: What went wrong.
    ///   - offset: The byte offset of the fault in the encoded value, if any.
    public init(code: Code, message: String, offset: Int? = nil) {
        self.code = code
        self.message = message
        self.offset = offset
    }

    /// The code, the offset when there is one, and the message.
    public var description: String {
        if let offset {
            "CodecError.\(code) at byte \(offset): \(message)"
        } else {
            "CodecError.\(code): \(message)"
        }
    }
}
