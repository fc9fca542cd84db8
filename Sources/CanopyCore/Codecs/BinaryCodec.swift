import Foundation

/// A compact, self-describing binary codec, several times faster and smaller than ``JSONCodec``.
///
/// Every value carries a one-byte tag, so stored bytes can be read without the Swift types that wrote them
/// (``Codecs/jsonText(from:codecName:prettyPrinted:)`` turns them into JSON).
///
/// ## Format, version 1
///
/// An encoded value is the format version byte `0x01` followed by one tagged value:
///
/// | tag    | value                  | payload                                                                |
/// | ------ | ---------------------- | ---------------------------------------------------------------------- |
/// | `0x00` | nil                    | none                                                                   |
/// | `0x01` | false                  | none                                                                   |
/// | `0x02` | true                   | none                                                                   |
/// | `0x03` | signed integer         | zigzag LEB128 varint of the `Int64`                                    |
/// | `0x04` | unsigned integer       | LEB128 varint of the `UInt64`                                          |
/// | `0x05` | `Float`                | 4 bytes, little-endian bit pattern                                     |
/// | `0x06` | `Double`               | 8 bytes, little-endian bit pattern                                     |
/// | `0x07` | string                 | varint byte count, then UTF-8                                          |
/// | `0x08` | bytes (`Data`)         | varint byte count, then the bytes                                      |
/// | `0x09` | `Date`                 | 8 bytes, little-endian `Double` seconds since 2001-01-01 00:00:00 UTC  |
/// | `0x0A` | array (unkeyed)        | `UInt32` little-endian byte count of the items, then the tagged items  |
/// | `0x0B` | map (keyed)            | `UInt32` little-endian byte count of the entries, then entries of      |
/// |        |                        | (varint key byte count, key UTF-8, tagged value)                       |
///
/// Containers record their size in bytes rather than their number of elements, so a decoder skips a nested value
/// without reading it; the size is patched in when the container is finished. Map keys are kept in the order they
/// were written (declaration order for synthesized `Codable`). `Date` and `Data` are written with their own tags
/// rather than through their `Codable` implementations; a `Date` keeps its own representation (seconds since 2001)
/// so that it round-trips exactly. Every integer type is written as a varint and checked against the range of the
/// type it is decoded as.
///
/// ## Rules for `Codable` implementations
///
/// The encoder writes straight into one buffer, so nested containers must be written in order: once a container has
/// been written to after a nested container was opened in it (or a sibling was opened), the earlier nested container
/// is finished, and writing into it throws `EncodingError.invalidValue`. Synthesized `Codable` and the standard
/// library's types never do that; for an implementation that does, use ``JSONCodec``. `superEncoder()` is supported.
///
/// As in JSON, a `nil` wrapped in another optional (`.some(.none)`) under a key reads back as `nil`, and when a key
/// is written twice the decoder finds the first value.
///
/// Every value is decoded through its type's `init(from:)`, unless the type opts in to the fast path for flat structs
/// with ``BinaryCodecSynthesizedDecoding``: a struct of strings, numbers, Bools and Dates whose `Decodable` is the
/// synthesized one is then decoded by writing the values straight into the struct, without `init(from:)`. The marker is
/// a promise the codec cannot check from values; a type whose `init(from:)` changes, checks or defaults what it reads
/// must not conform.
///
/// Decoding reads the bytes in place and checks every read against their bounds: truncated or corrupt bytes throw
/// `DecodingError.dataCorrupted` (with a ``CodecError`` of code ``CodecError/Code/malformedBytes`` as the underlying
/// error), never a crash.
public struct BinaryCodec: Codec {
    static let codecName = "binary"

    /// Creates the binary codec.
    public init() {}

    /// "binary", the name recorded in the database.
    public var name: String { Self.codecName }

    /// Encodes a value in the binary format.
    ///
    /// - Parameter value: The value to encode; any `Encodable` value, including a bare number or string.
    /// - Returns: The format version byte followed by the tagged value.
    /// - Throws: `EncodingError.invalidValue` when the value's `encode(to:)` writes into a container that a later
    ///   nested container has already finished (see "Rules for `Codable` implementations" above) or rejects the
    ///   value itself; ``CodecError`` with code ``CodecError/Code/unsupportedValue`` for a container larger than
    ///   4 GiB.
    public func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        try encode(value, into: BinaryEncodingState())
    }

    /// ``encode(_:)`` into `state`, which must be empty (new, or emptied by ``BinaryEncodingState/reset()``).
    func encode<T: Encodable>(_ value: T, into state: BinaryEncodingState) throws -> [UInt8] {
        state.append(BinaryFormat.version)
        let encoder = BinaryEncoder(state: state, slot: .pending(state.count), parent: nil, key: nil)
        try encoder.encodeValue(value)
        return try state.finish()
    }

    /// ``encode(_:)`` with a root encoder whose state is empty (new, or emptied by ``BinaryEncodingState/reset()``):
    /// for a caller that encodes many values one after another and keeps one encoder and buffer for them (a write
    /// transaction).
    func encode<T: Encodable>(_ value: T, root encoder: BinaryEncoder) throws -> [UInt8] {
        encoder.state.append(BinaryFormat.version)
        encoder.restartRoot()
        try encoder.encodeValue(value)
        return try encoder.state.finish()
    }

    /// Decodes a value from bytes in the binary format.
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - bytes: The encoded bytes; read in place, never copied as a whole.
    /// - Returns: The decoded value.
    /// - Throws: `DecodingError.dataCorrupted` when the bytes are truncated, corrupt, or of another format version;
    ///   `DecodingError.typeMismatch`, `.valueNotFound` or `.keyNotFound` when they hold a value of another shape;
    ///   `DecodingError.dataCorrupted` when a number does not fit the type it is decoded as.
    public func decode<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer) throws -> T {
        try decode(T.self, from: bytes, entry: FlatDecodePlans.entry(for: T.self))
    }

    /// ``decode(_:from:)`` with what ``FlatDecodePlans`` holds for `T`, for a caller that remembers it.
    func decode<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer, entry: FlatDecodePlans.Entry?) throws -> T {
        switch entry {
        case .plan(let plan)?: return try decodeFlat(T.self, plan: plan, from: bytes)
        case .general?: return try decodeGeneral(T.self, from: bytes)
        case nil: return try decodeLearning(T.self, from: bytes)
        }
    }

    /// Decodes through the fast path for flat structs (BinaryFlatDecoding.swift), or through the general path when the
    /// bytes are anything but the plan's map.
    private func decodeFlat<T: Decodable>(_ type: T.Type, plan: FlatDecodePlan, from bytes: UnsafeRawBufferPointer) throws -> T {
        // The value is assembled in a 256-byte scratch on the stack (the plan's fields are at most 8-byte aligned),
        // not in `withUnsafeTemporaryAllocation`, which in unspecialized code asks the runtime for metadata on every
        // call. A larger struct takes the general path.
        guard plan.size <= MemoryLayout<FlatScratch>.size, MemoryLayout<T>.alignment <= MemoryLayout<FlatScratch>.alignment else {
            return try decodeGeneral(T.self, from: bytes)
        }
        var scratch = FlatScratch()
        let decoded = withUnsafeMutableBytes(of: &scratch) { plan.decode(into: $0.baseAddress.unsafelyUnwrapped, from: bytes) }
        guard decoded else { return try decodeGeneral(T.self, from: bytes) }
        return withUnsafeMutableBytes(of: &scratch) { $0.baseAddress.unsafelyUnwrapped.assumingMemoryBound(to: T.self).move() }
    }

    /// Decodes `T` for the first time: through the general path; for a type that opted in to the fast path
    /// (``BinaryCodecSynthesizedDecoding``), recording what its `init(from:)` asks for, to lay out its plan.
    private func decodeLearning<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer) throws -> T {
        // Only types that promise a synthesized `Decodable` may take the fast path: whether an `init(from:)` changes
        // what it reads cannot be learned from values (a lowercasing init leaves a lowercase value as it is).
        guard T.self is any BinaryCodecSynthesizedDecoding.Type, FlatFieldKind(T.self) == nil else {
            FlatDecodePlans.remember(.general, for: T.self)
            return try decodeGeneral(T.self, from: bytes)
        }
        let reader = BinaryReader(bytes)
        let end: Int
        do throws(BinaryReadError) {
            end = try reader.checkedRoot()
        } catch {
            throw error.decodingError(type: type, codingPath: [])
        }
        let recorder = FlatCallRecorder()
        let decoder = BinaryDecoder(reader: reader, offset: BinaryFormat.headerSize, limit: end)
        let value = try T(from: FlatRecordingDecoder(base: decoder, recorder: recorder))
        if let plan = FlatDecodePlan.learn(T.self, value: value, recorder: recorder) {
            FlatDecodePlans.remember(.plan(plan), for: T.self)
        } else {
            FlatDecodePlans.remember(.general, for: T.self)
        }
        return value
    }

    /// Decodes through `Decodable` (the general path).
    func decodeGeneral<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer) throws -> T {
        let reader = BinaryReader(bytes)
        let end: Int
        do throws(BinaryReadError) {
            end = try reader.checkedRoot()
        } catch {
            throw error.decodingError(type: type, codingPath: [])
        }
        let decoder = BinaryDecoder(reader: reader, offset: BinaryFormat.headerSize, limit: end)
        return try decoder.decodeValue(type)
    }
}
