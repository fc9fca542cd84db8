import Foundation

/// A codec that stores values as JSON text with sorted keys, using Foundation's `JSONEncoder` and `JSONDecoder`.
///
/// Choose it when stored values should be readable by other programs, or for `Codable` implementations that
/// ``BinaryCodec`` rejects (those that write into a parent container after opening a later nested one). It is several
/// times slower and larger than ``BinaryCodec``.
///
/// The strategies are chosen so that every `Codable` value round-trips exactly:
/// - Dates use `.deferredToDate`: a number of seconds since 2001-01-01, written with as many digits as it takes to
///   read back the same `Double`. (ISO-8601 strings would lose sub-millisecond precision.)
/// - `Data` is a base64 string.
/// - Non-finite `Float` and `Double` values are the strings "nan", "inf" and "-inf", the same strings
///   ``Codecs/jsonText(from:codecName:prettyPrinted:)`` uses for the binary codec. (The default strategy would throw.)
///   NaN payloads and signs are not kept.
/// - Keys are written as the coding keys say, sorted, and slashes are not escaped.
///
/// A `nil` wrapped in another optional (`.some(.none)`) under a key reads back as `nil`, as JSON has one `null`.
public struct JSONCodec: Codec {
    static let codecName = "json"

    // JSONEncoder and JSONDecoder are Sendable: their options are copied at the start of each call, so one configured
    // instance serves every thread. Creating one per call costs a lock and several allocations.
    private static let sharedEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .deferredToDate
        encoder.dataEncodingStrategy = .base64
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return encoder
    }()

    private static let sharedDecoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .deferredToDate
        decoder.dataDecodingStrategy = .base64
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return decoder
    }()

    /// Creates the JSON codec.
    public init() {}

    /// "json", the name recorded in the database.
    public var name: String { Self.codecName }

    /// Encodes a value as UTF-8 JSON text with sorted keys.
    ///
    /// - Parameter value: The value to encode; any `Encodable` value, including a bare number or string.
    /// - Returns: The UTF-8 bytes of the JSON text.
    /// - Throws: `EncodingError` from `JSONEncoder`.
    public func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        [UInt8](try Self.sharedEncoder.encode(value))
    }

    /// Decodes a value from UTF-8 JSON text.
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - bytes: The UTF-8 bytes of the JSON text; copied once into a `Data`.
    /// - Returns: The decoded value.
    /// - Throws: `DecodingError` from `JSONDecoder`.
    public func decode<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer) throws -> T {
        try Self.sharedDecoder.decode(type, from: Data(bytes))
    }

    /// The stored text after checking that it is JSON, re-indented when asked.
    static func jsonText(from bytes: UnsafeRawBufferPointer, prettyPrinted: Bool) throws -> String {
        let isJSON = (try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])) != nil
        guard isJSON, let text = String(validating: bytes, as: UTF8.self) else {
            throw CodecError(code: .malformedBytes, message: "The bytes are not UTF-8 JSON text.")
        }
        return prettyPrinted ? JSONTextWriter.reindented(text) : text
    }
}
