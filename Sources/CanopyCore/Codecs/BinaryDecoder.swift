import Foundation

/// The `Decoder` of ``BinaryCodec``: reads one value in place.
///
/// One instance serves a whole value tree: a nested value is decoded with the same instance, its position and coding
/// path saved and restored around the call. `superDecoder()` makes a separate instance.
final class BinaryDecoder: Decoder {
    private typealias Tag = BinaryFormat.Tag

    let reader: BinaryReader
    // The decoder is used by one thread during one decode call, and none of these properties is accessed while
    // another access to it is in progress, so the runtime's exclusivity checks (a large part of the cost of a small
    // value) are left out.

    /// The offset of the value's tag, or -1 when the value is absent (a `superDecoder` for a missing key): it then
    /// reads as nil.
    @exclusivity(unchecked) private var offset: Int
    /// The end of the value.
    @exclusivity(unchecked) private var limit: Int
    @exclusivity(unchecked) private var parent: BinaryCodingPathNode?
    @exclusivity(unchecked) private var key: (any CodingKey)?
    /// How many nested values are being decoded.
    @exclusivity(unchecked) private var depth = 0

    init(
        reader: BinaryReader,
        offset: Int,
        limit: Int,
        parent: BinaryCodingPathNode? = nil,
        key: (any CodingKey)? = nil
    ) {
        self.reader = reader
        self.offset = offset
        self.limit = limit
        self.parent = parent
        self.key = key
    }

    var codingPath: [any CodingKey] {
        BinaryCodingPathNode.path(parent: parent, key: key)
    }

    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// The payload of the container at the decoder's value, which must have the given tag.
    private func containerPayload(tag expected: UInt8, type: Any.Type) throws -> (start: Int, end: Int) {
        guard offset >= 0 else {
            throw DecodingError.valueNotFound(type, .init(
                codingPath: codingPath, debugDescription: "Expected \(type) but there is no value."))
        }
        do throws(BinaryReadError) {
            let tag = try reader.tag(at: offset, limit: limit)
            guard tag == expected else { throw reader.mismatch(tag, at: offset) }
            return try reader.containerPayload(at: offset, limit: limit)
        } catch {
            throw error.decodingError(type: type, codingPath: codingPath)
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        let (start, end) = try containerPayload(tag: Tag.map, type: KeyedDecodingContainer<Key>.self)
        return KeyedDecodingContainer(
            BinaryKeyedDecodingContainer<Key>(decoder: self, start: start, end: end, parent: parent, key: key))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (start, end) = try containerPayload(tag: Tag.array, type: (any UnkeyedDecodingContainer).self)
        return BinaryUnkeyedDecodingContainer(decoder: self, start: start, end: end, parent: parent, key: key)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        BinarySingleValueDecodingContainer(decoder: self)
    }

    // MARK: Values

    /// Whether the decoder's value is nil or absent.
    var isNil: Bool {
        get throws {
            guard offset >= 0 else { return true }
            do throws(BinaryReadError) {
                return try reader.tag(at: offset, limit: limit) == Tag.null
            } catch {
                throw error.decodingError(type: Optional<Any>.self, codingPath: codingPath)
            }
        }
    }

    /// Reads the decoder's value as a type the format has a tag for.
    @inline(__always)
    func readPrimitive<T: BinaryReadable>(_ type: T.Type) throws -> T {
        guard offset >= 0 else {
            throw DecodingError.valueNotFound(type, .init(
                codingPath: codingPath, debugDescription: "Expected \(type) but there is no value."))
        }
        var position = offset
        do throws(BinaryReadError) {
            return try T.read(from: reader, &position, limit: limit)
        } catch {
            throw error.decodingError(type: type, codingPath: codingPath)
        }
    }

    /// Whether ``readDirectly(_:at:limit:)`` reads the type.
    @inline(__always)
    private func isDirectlyReadable<T: Decodable>(_ type: T.Type) -> Bool {
        T.self == String.self || T.self == Int.self || T.self == Double.self || T.self == Bool.self
            || T.self == Date.self || T.self == Data.self
    }

    /// Reads an array of a type the format has a tag for, without the standard library's unspecialized `Array`
    /// decoding (used for `[String]`, `[Int]` and `[Double]`).
    ///
    /// Callers ignore its errors and decode the array through its `Decodable` implementation, which reports the fault
    /// with the element's coding path.
    private func readArray<Element: BinaryReadable>(
        _ type: Element.Type,
        at offset: Int,
        limit: Int
    ) throws(BinaryReadError) -> [Element] {
        let tag = try reader.tag(at: offset, limit: limit)
        guard tag == Tag.array else { throw reader.mismatch(tag, at: offset) }
        let payload = try reader.containerPayload(at: offset, limit: limit)
        var elements: [Element] = []
        // Every element takes at least two bytes.
        elements.reserveCapacity((payload.end - payload.start) / 2)
        var position = payload.start
        while position < payload.end {
            elements.append(try Element.read(from: reader, &position, limit: payload.end))
        }
        return elements
    }

    /// Reads the types the format has tags for directly, rather than through their `Decodable` implementations.
    ///
    /// Only for types for which ``isDirectlyReadable(_:)`` is true. (It does not return an optional: in unspecialized
    /// code, `T?` costs a metadata lookup on every call.)
    @inline(__always)
    private func readDirectly<T: Decodable>(_ type: T.Type, at offset: Int, limit: Int) throws(BinaryReadError) -> T {
        var position = offset
        if T.self == String.self {
            return unsafeBitCast(try reader.readString(&position, limit: limit), to: T.self)
        } else if T.self == Int.self {
            return unsafeBitCast(try reader.readInteger(Int.self, &position, limit: limit), to: T.self)
        } else if T.self == Double.self {
            return unsafeBitCast(try reader.readDouble(&position, limit: limit), to: T.self)
        } else if T.self == Bool.self {
            return unsafeBitCast(try reader.readBool(&position, limit: limit), to: T.self)
        } else if T.self == Date.self {
            return unsafeBitCast(try reader.readDate(&position, limit: limit), to: T.self)
        } else {
            return unsafeBitCast(try reader.readData(&position, limit: limit), to: T.self)
        }
    }

    /// Decodes the decoder's value.
    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        if offset >= 0 && isDirectlyReadable(type) {
            do throws(BinaryReadError) {
                return try readDirectly(type, at: offset, limit: limit)
            } catch {
                throw error.decodingError(type: type, codingPath: codingPath)
            }
        }
        // Written out rather than in a function that returns `T?`: in unspecialized code that costs a metadata lookup.
        if T.self == [String].self, offset >= 0, let array = try? readArray(String.self, at: offset, limit: limit) {
            return unsafeBitCast(array, to: T.self)
        } else if T.self == [Int].self, offset >= 0, let array = try? readArray(Int.self, at: offset, limit: limit) {
            return unsafeBitCast(array, to: T.self)
        } else if T.self == [Double].self, offset >= 0,
                  let array = try? readArray(Double.self, at: offset, limit: limit) {
            return unsafeBitCast(array, to: T.self)
        }
        return try T(from: self)
    }

    /// Decodes the value at `offset`, which ends at `limit`, under the path (parent, key).
    @inline(__always)
    func decodeNested<T: Decodable>(
        _ type: T.Type,
        at offset: Int,
        limit: Int,
        parent: @autoclosure () -> BinaryCodingPathNode?,
        key: @autoclosure () -> any CodingKey
    ) throws -> T {
        if isDirectlyReadable(type) {
            do throws(BinaryReadError) {
                return try readDirectly(type, at: offset, limit: limit)
            } catch {
                throw error.decodingError(
                    type: type, codingPath: BinaryCodingPathNode.path(parent: parent(), key: key()))
            }
        }
        if T.self == [String].self, let array = try? readArray(String.self, at: offset, limit: limit) {
            return unsafeBitCast(array, to: T.self)
        } else if T.self == [Int].self, let array = try? readArray(Int.self, at: offset, limit: limit) {
            return unsafeBitCast(array, to: T.self)
        } else if T.self == [Double].self, let array = try? readArray(Double.self, at: offset, limit: limit) {
            return unsafeBitCast(array, to: T.self)
        }
        guard depth < BinaryFormat.maximumDepth else {
            let cause = CodecError(
                code: .malformedBytes,
                message: "Values nest deeper than \(BinaryFormat.maximumDepth) levels.",
                offset: offset)
            throw DecodingError.dataCorrupted(.init(
                codingPath: BinaryCodingPathNode.path(parent: parent(), key: key()),
                debugDescription: cause.message,
                underlyingError: cause))
        }
        let saved = (self.offset, self.limit, self.parent, self.key)
        self.offset = offset
        self.limit = limit
        self.parent = parent()
        self.key = key()
        depth += 1
        defer {
            (self.offset, self.limit, self.parent, self.key) = saved
            depth -= 1
        }
        return try T(from: self)
    }
}

/// The keyed container of ``BinaryDecoder``.
///
/// Synthesized `Decodable` asks for keys in the order they were written, so each lookup first tries the entry after
/// the previous one found, and only then scans the whole map. The container is itself the coding-path node of the
/// values in it.
final class BinaryKeyedDecodingContainer<Key: CodingKey>: BinaryCodingPathNode, KeyedDecodingContainerProtocol {
    private typealias Tag = BinaryFormat.Tag

    private let decoder: BinaryDecoder
    private let reader: BinaryReader
    private let start: Int
    private let end: Int
    /// The offset of the entry after the last one found. Used by one thread during one decode call, never in
    /// overlapping accesses, so without the runtime's exclusivity checks.
    @exclusivity(unchecked) private var cursor: Int

    init(decoder: BinaryDecoder, start: Int, end: Int, parent: BinaryCodingPathNode?, key: (any CodingKey)?) {
        self.decoder = decoder
        self.reader = decoder.reader
        self.start = start
        self.end = end
        self.cursor = start
        super.init(parent: parent, lastKey: key)
    }

    private func path(_ key: some CodingKey) -> [any CodingKey] {
        BinaryCodingPathNode.path(parent: self, key: key)
    }

    var allKeys: [Key] {
        var keys: [Key] = []
        var position = start
        // Stops at the first corrupt entry: decoding a value under a key reports the fault.
        while position < end {
            let entry = position
            guard let name = try? reader.utf8String(&position, limit: end, start: entry),
                  let next = try? reader.skip(at: position, limit: end)
            else { break }
            if let key = Key(stringValue: name) { keys.append(key) }
            position = next
        }
        return keys
    }

    /// The offset of the value under `key`, or `nil` when the map has no such key.
    @inline(__always)
    private func find(_ key: Key) throws(BinaryReadError) -> Int? {
        var name = key.stringValue
        if cursor < end {
            var position = cursor
            let length = try reader.length(&position, limit: end)
            if reader.bytes(at: position, length: length, equal: &name) { return position + length }
        }
        return try scan(for: &name)
    }

    private func scan(for name: inout String) throws(BinaryReadError) -> Int? {
        var position = start
        while position < end {
            let length = try reader.length(&position, limit: end)
            let valueOffset = position + length
            if reader.bytes(at: position, length: length, equal: &name) { return valueOffset }
            position = try reader.skip(at: valueOffset, limit: end)
        }
        return nil
    }

    /// The offset of the value under `key`; throws `keyNotFound` when there is none.
    @inline(__always)
    private func valueOffset(forKey key: Key, type: Any.Type) throws -> Int {
        let found: Int?
        do throws(BinaryReadError) {
            found = try find(key)
        } catch {
            throw error.decodingError(type: type, codingPath: codingPath)
        }
        guard let found else {
            throw DecodingError.keyNotFound(key, .init(
                codingPath: codingPath,
                debugDescription: "No value associated with key \(key) (\"\(key.stringValue)\")."))
        }
        return found
    }

    /// The offset of the value under `key`, or `nil` when there is none.
    @inline(__always)
    private func valueOffsetIfPresent(forKey key: Key, type: Any.Type) throws -> Int? {
        do throws(BinaryReadError) {
            return try find(key)
        } catch {
            throw error.decodingError(type: type, codingPath: codingPath)
        }
    }

    /// The end of the value at `offset`.
    @inline(__always)
    private func valueEnd(at offset: Int, forKey key: Key, type: Any.Type) throws -> Int {
        do throws(BinaryReadError) {
            return try reader.skip(at: offset, limit: end)
        } catch {
            throw error.decodingError(type: type, codingPath: path(key))
        }
    }

    func contains(_ key: Key) -> Bool {
        // A corrupt map contains nothing; decoding reports the fault.
        (try? find(key)) != nil
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        let offset = try valueOffset(forKey: key, type: Optional<Any>.self)
        do throws(BinaryReadError) {
            guard try reader.tag(at: offset, limit: end) == Tag.null else { return false }
        } catch {
            throw error.decodingError(type: Optional<Any>.self, codingPath: path(key))
        }
        cursor = offset + 1
        return true
    }

    @inline(__always)
    private func decodePrimitive<T: BinaryReadable>(_ type: T.Type, forKey key: Key) throws -> T {
        var position = try valueOffset(forKey: key, type: type)
        do throws(BinaryReadError) {
            let value = try T.read(from: reader, &position, limit: end)
            cursor = position
            return value
        } catch {
            throw error.decodingError(type: type, codingPath: path(key))
        }
    }

    @inline(__always)
    private func decodePrimitiveIfPresent<T: BinaryReadable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard var position = try valueOffsetIfPresent(forKey: key, type: type) else { return nil }
        do throws(BinaryReadError) {
            if try reader.tag(at: position, limit: end) == Tag.null {
                cursor = position + 1
                return nil
            }
            let value = try T.read(from: reader, &position, limit: end)
            cursor = position
            return value
        } catch {
            throw error.decodingError(type: type, codingPath: path(key))
        }
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decodePrimitive(type, forKey: key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try decodePrimitive(type, forKey: key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decodePrimitive(type, forKey: key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decodePrimitive(type, forKey: key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decodePrimitive(type, forKey: key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decodePrimitive(type, forKey: key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decodePrimitive(type, forKey: key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decodePrimitive(type, forKey: key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decodePrimitive(type, forKey: key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decodePrimitive(type, forKey: key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decodePrimitive(type, forKey: key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decodePrimitive(type, forKey: key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decodePrimitive(type, forKey: key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decodePrimitive(type, forKey: key) }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        try decodePrimitiveIfPresent(type, forKey: key)
    }

    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        try decodePrimitiveIfPresent(type, forKey: key)
    }

    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        try decodePrimitiveIfPresent(type, forKey: key)
    }

    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? {
        try decodePrimitiveIfPresent(type, forKey: key)
    }

    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        try decodePrimitiveIfPresent(type, forKey: key)
    }

    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? {
        try decodePrimitiveIfPresent(type, forKey: key)
    }

    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? {
        try decodePrimitiveIfPresent(type, forKey: key)
    }

    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? {
        try decodePrimitiveIfPresent(type, forKey: key)
    }

    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? {
        try decodePrimitiveIfPresent(type, forKey: key)
    }

    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? {
        try decodePrimitiveIfPresent(type, forKey: key)
    }

    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? {
        try decodePrimitiveIfPresent(type, forKey: key)
    }

    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? {
        try decodePrimitiveIfPresent(type, forKey: key)
    }

    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? {
        try decodePrimitiveIfPresent(type, forKey: key)
    }

    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? {
        try decodePrimitiveIfPresent(type, forKey: key)
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let offset = try valueOffset(forKey: key, type: type)
        let valueEnd = try valueEnd(at: offset, forKey: key, type: type)
        let value = try decoder.decodeNested(type, at: offset, limit: valueEnd, parent: self, key: key)
        cursor = valueEnd
        return value
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let offset = try valueOffsetIfPresent(forKey: key, type: type) else { return nil }
        let valueEnd = try valueEnd(at: offset, forKey: key, type: type)
        if valueEnd == offset + 1, reader.isNull(at: offset) {
            cursor = valueEnd
            return nil
        }
        let value = try decoder.decodeNested(type, at: offset, limit: valueEnd, parent: self, key: key)
        cursor = valueEnd
        return value
    }

    /// The payload of the container under `key`, which must have the given tag.
    private func nestedPayload(forKey key: Key, tag expected: UInt8, type: Any.Type) throws -> (start: Int, end: Int) {
        let offset = try valueOffset(forKey: key, type: type)
        do throws(BinaryReadError) {
            let tag = try reader.tag(at: offset, limit: end)
            guard tag == expected else { throw reader.mismatch(tag, at: offset) }
            let payload = try reader.containerPayload(at: offset, limit: end)
            cursor = payload.end
            return payload
        } catch {
            throw error.decodingError(type: type, codingPath: path(key))
        }
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type,
        forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        let payload = try nestedPayload(forKey: key, tag: Tag.map, type: KeyedDecodingContainer<NestedKey>.self)
        return KeyedDecodingContainer(BinaryKeyedDecodingContainer<NestedKey>(
            decoder: decoder, start: payload.start, end: payload.end, parent: self, key: key))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        let payload = try nestedPayload(forKey: key, tag: Tag.array, type: (any UnkeyedDecodingContainer).self)
        return BinaryUnkeyedDecodingContainer(
            decoder: decoder, start: payload.start, end: payload.end, parent: self, key: key)
    }

    func superDecoder() throws -> any Decoder {
        try superDecoder(name: BinarySuperKey())
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        try superDecoder(name: key)
    }

    /// A decoder for the value under `key`; like JSONDecoder's, it reads as nil when the key is missing.
    private func superDecoder(name key: some CodingKey) throws -> any Decoder {
        var name = key.stringValue
        let found: Int?
        do throws(BinaryReadError) {
            found = try scan(for: &name)
        } catch {
            throw error.decodingError(type: (any Decoder).self, codingPath: codingPath)
        }
        guard let found else {
            return BinaryDecoder(reader: reader, offset: -1, limit: 0, parent: self, key: key)
        }
        let valueEnd: Int
        do throws(BinaryReadError) {
            valueEnd = try reader.skip(at: found, limit: end)
        } catch {
            throw error.decodingError(type: (any Decoder).self, codingPath: path(key))
        }
        cursor = valueEnd
        return BinaryDecoder(reader: reader, offset: found, limit: valueEnd, parent: self, key: key)
    }
}

/// The unkeyed container of ``BinaryDecoder``.
struct BinaryUnkeyedDecodingContainer: UnkeyedDecodingContainer {
    private typealias Tag = BinaryFormat.Tag

    private let decoder: BinaryDecoder
    private let start: Int
    private let end: Int
    private var position: Int
    private let parent: BinaryCodingPathNode?
    private let key: (any CodingKey)?
    private var node: BinaryCodingPathNode?
    private(set) var currentIndex = 0

    init(decoder: BinaryDecoder, start: Int, end: Int, parent: BinaryCodingPathNode?, key: (any CodingKey)?) {
        self.decoder = decoder
        self.start = start
        self.end = end
        self.position = start
        self.parent = parent
        self.key = key
    }

    var codingPath: [any CodingKey] {
        BinaryCodingPathNode.path(parent: parent, key: key)
    }

    private var elementPath: [any CodingKey] {
        codingPath + [BinaryIndexKey(currentIndex)]
    }

    private mutating func pathNode() -> BinaryCodingPathNode? {
        guard let key else { return parent }
        if let node { return node }
        let created = BinaryCodingPathNode(parent: parent, lastKey: key)
        node = created
        return created
    }

    /// The number of elements, counted on each call (the format stores the byte size, not the count); `nil` when
    /// the bytes are corrupt.
    var count: Int? {
        var count = 0
        var offset = start
        while offset < end {
            guard let next = try? decoder.reader.skip(at: offset, limit: end) else { return nil }
            offset = next
            count += 1
        }
        return count
    }

    var isAtEnd: Bool { position >= end }

    private func atEndError(_ type: Any.Type) -> DecodingError {
        .valueNotFound(type, .init(codingPath: elementPath, debugDescription: "Unkeyed container is at end."))
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else { throw atEndError(Optional<Any>.self) }
        do throws(BinaryReadError) {
            guard try decoder.reader.tag(at: position, limit: end) == Tag.null else { return false }
        } catch {
            throw error.decodingError(type: Optional<Any>.self, codingPath: elementPath)
        }
        position += 1
        currentIndex += 1
        return true
    }

    @inline(__always)
    private mutating func decodePrimitive<T: BinaryReadable>(_ type: T.Type) throws -> T {
        guard !isAtEnd else { throw atEndError(type) }
        var offset = position
        do throws(BinaryReadError) {
            let value = try T.read(from: decoder.reader, &offset, limit: end)
            position = offset
            currentIndex += 1
            return value
        } catch {
            throw error.decodingError(type: type, codingPath: elementPath)
        }
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try decodePrimitive(type) }
    mutating func decode(_ type: String.Type) throws -> String { try decodePrimitive(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try decodePrimitive(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try decodePrimitive(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try decodePrimitive(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try decodePrimitive(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try decodePrimitive(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try decodePrimitive(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try decodePrimitive(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try decodePrimitive(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try decodePrimitive(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try decodePrimitive(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try decodePrimitive(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try decodePrimitive(type) }

    /// The end of the next element.
    private func elementEnd(_ type: Any.Type) throws -> Int {
        guard !isAtEnd else { throw atEndError(type) }
        do throws(BinaryReadError) {
            return try decoder.reader.skip(at: position, limit: end)
        } catch {
            throw error.decodingError(type: type, codingPath: elementPath)
        }
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let valueEnd = try elementEnd(type)
        let value = try decoder.decodeNested(
            type, at: position, limit: valueEnd, parent: pathNode(), key: BinaryIndexKey(currentIndex))
        position = valueEnd
        currentIndex += 1
        return value
    }

    /// The payload of the next element, a container with the given tag.
    private mutating func nestedPayload(tag expected: UInt8, type: Any.Type) throws -> (start: Int, end: Int) {
        guard !isAtEnd else { throw atEndError(type) }
        do throws(BinaryReadError) {
            let tag = try decoder.reader.tag(at: position, limit: end)
            guard tag == expected else { throw decoder.reader.mismatch(tag, at: position) }
            return try decoder.reader.containerPayload(at: position, limit: end)
        } catch {
            throw error.decodingError(type: type, codingPath: elementPath)
        }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
        let payload = try nestedPayload(tag: Tag.map, type: KeyedDecodingContainer<NestedKey>.self)
        let container = BinaryKeyedDecodingContainer<NestedKey>(
            decoder: decoder, start: payload.start, end: payload.end,
            parent: pathNode(), key: BinaryIndexKey(currentIndex))
        position = payload.end
        currentIndex += 1
        return KeyedDecodingContainer(container)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let payload = try nestedPayload(tag: Tag.array, type: (any UnkeyedDecodingContainer).self)
        let container = BinaryUnkeyedDecodingContainer(
            decoder: decoder, start: payload.start, end: payload.end,
            parent: pathNode(), key: BinaryIndexKey(currentIndex))
        position = payload.end
        currentIndex += 1
        return container
    }

    mutating func superDecoder() throws -> any Decoder {
        let valueEnd = try elementEnd((any Decoder).self)
        let decoder = BinaryDecoder(
            reader: decoder.reader, offset: position, limit: valueEnd,
            parent: pathNode(), key: BinaryIndexKey(currentIndex))
        position = valueEnd
        currentIndex += 1
        return decoder
    }
}

/// The single value container of ``BinaryDecoder``: reads the decoder's current value.
struct BinarySingleValueDecodingContainer: SingleValueDecodingContainer {
    private let decoder: BinaryDecoder

    init(decoder: BinaryDecoder) {
        self.decoder = decoder
    }

    var codingPath: [any CodingKey] { decoder.codingPath }

    func decodeNil() -> Bool {
        // A corrupt tag is not nil; decoding the value reports the fault.
        (try? decoder.isNil) ?? false
    }

    func decode(_ type: Bool.Type) throws -> Bool { try decoder.readPrimitive(type) }
    func decode(_ type: String.Type) throws -> String { try decoder.readPrimitive(type) }
    func decode(_ type: Double.Type) throws -> Double { try decoder.readPrimitive(type) }
    func decode(_ type: Float.Type) throws -> Float { try decoder.readPrimitive(type) }
    func decode(_ type: Int.Type) throws -> Int { try decoder.readPrimitive(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decoder.readPrimitive(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decoder.readPrimitive(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decoder.readPrimitive(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decoder.readPrimitive(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try decoder.readPrimitive(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.readPrimitive(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.readPrimitive(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.readPrimitive(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.readPrimitive(type) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try decoder.decodeValue(type)
    }
}
