import Foundation

/// The `Encoder` of ``BinaryCodec``: writes one value at the end of the shared buffer.
///
/// One instance serves a whole value tree: a nested value is encoded with the same instance, its slot and coding path
/// saved and restored around the call. `superEncoder()` makes a separate instance for the superclass's value.
final class BinaryEncoder: Encoder {
    /// Where the value this encoder writes stands.
    enum Slot {
        /// Not written yet; it goes at this offset, which must still be the end of the buffer.
        case pending(Int)
        /// A keyed container with its header at this offset.
        case map(Int)
        /// An unkeyed container with its header at this offset.
        case array(Int)
        /// An empty map written by `superEncoder()` at this offset, replaceable while it is the end of the buffer.
        case placeholder(Int)
    }

    let state: BinaryEncodingState
    // Used by one thread during one encode call, never in overlapping accesses: no runtime exclusivity checks.
    @exclusivity(unchecked) private var slot: Slot
    @exclusivity(unchecked) private var parent: BinaryCodingPathNode?
    @exclusivity(unchecked) private var key: (any CodingKey)?

    init(state: BinaryEncodingState, slot: Slot, parent: BinaryCodingPathNode?, key: (any CodingKey)?) {
        self.state = state
        self.slot = slot
        self.parent = parent
        self.key = key
        state.liveEncoders += 1
    }

    deinit { state.liveEncoders -= 1 }

    /// Makes this root encoder write a new value at the end of its state, after ``BinaryEncodingState/reset()``
    /// (a caller that reuses them: ``ReadWriteTransaction``).
    func restartRoot() {
        slot = .pending(state.count)
        parent = nil
        key = nil
    }

    var codingPath: [any CodingKey] {
        BinaryCodingPathNode.path(parent: parent, key: key)
    }

    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        var header = -1
        switch slot {
        case .pending(let offset) where state.count == offset:
            header = state.openContainer(tag: BinaryFormat.Tag.map)
            slot = .map(header)
        case .map(let existing):
            header = existing
        case .placeholder(let offset) where state.count == offset + BinaryFormat.containerHeaderSize:
            state.reopen(offset)
            header = offset
            slot = .map(offset)
        default:
            state.record(misuse("a keyed container"))
        }
        return KeyedEncodingContainer(
            BinaryKeyedEncodingContainer<Key>(encoder: self, header: header, parent: parent, key: key))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        var header = -1
        switch slot {
        case .pending(let offset) where state.count == offset:
            header = state.openContainer(tag: BinaryFormat.Tag.array)
            slot = .array(header)
        case .array(let existing):
            header = existing
        case .placeholder(let offset) where state.count == offset + BinaryFormat.containerHeaderSize:
            state.removeLast(BinaryFormat.containerHeaderSize)
            header = state.openContainer(tag: BinaryFormat.Tag.array)
            slot = .array(header)
        default:
            state.record(misuse("an unkeyed container"))
        }
        return BinaryUnkeyedEncodingContainer(encoder: self, header: header, parent: parent, key: key)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        BinarySingleValueEncodingContainer(encoder: self)
    }

    private func misuse(_ what: String) -> EncodingError {
        .invalidValue(what, .init(
            codingPath: codingPath,
            debugDescription: """
                Asked for \(what) for a value that already has another container or value, or after its parent \
                was written to again. The binary codec needs nested containers to be written in order; use \
                JSONCodec for this type.
                """))
    }

    /// Checks that a single value may be written now, and makes room for it.
    func beginSingleValue(_ value: @autoclosure () -> Any) throws {
        switch slot {
        case .pending(let offset) where state.count == offset:
            return
        case .placeholder(let offset) where state.count == offset + BinaryFormat.containerHeaderSize:
            state.removeLast(BinaryFormat.containerHeaderSize)
            slot = .pending(offset)
        default:
            throw EncodingError.invalidValue(value(), .init(
                codingPath: codingPath,
                debugDescription: """
                    A single value container was asked to encode a value where a value or container was already \
                    written, or after its parent was written to again.
                    """))
        }
    }

    /// Writes the types the format has tags for directly, rather than through their `Encodable` implementations.
    ///
    /// - Returns: `false` when `value` is of another type.
    @inline(__always)
    private func writeDirectly<T: Encodable>(_ value: T) -> Bool {
        if T.self == String.self {
            state.appendString(unsafeBitCast(value, to: String.self))
        } else if T.self == Int.self {
            state.appendInt(Int64(unsafeBitCast(value, to: Int.self)))
        } else if T.self == Double.self {
            state.appendDouble(unsafeBitCast(value, to: Double.self))
        } else if T.self == Bool.self {
            state.appendBool(unsafeBitCast(value, to: Bool.self))
        } else if T.self == Date.self {
            let date = unsafeBitCast(value, to: Date.self)
            state.appendDouble(date.timeIntervalSinceReferenceDate, tag: BinaryFormat.Tag.date)
        } else if T.self == Data.self {
            unsafeBitCast(value, to: Data.self).withUnsafeBytes {
                state.appendBytes($0)
            }
        } else if T.self == [String].self {
            // Arrays of the commonest element types skip the standard library's unspecialized `Array` encoding.
            writeArray(unsafeBitCast(value, to: [String].self)) { $0.appendString($1) }
        } else if T.self == [Int].self {
            writeArray(unsafeBitCast(value, to: [Int].self)) { $0.appendInt(Int64($1)) }
        } else if T.self == [Double].self {
            writeArray(unsafeBitCast(value, to: [Double].self)) { $0.appendDouble($1) }
        } else {
            return false
        }
        return true
    }

    @inline(__always)
    private func writeArray<Element>(_ elements: [Element], _ write: (BinaryEncodingState, Element) -> Void) {
        let header = state.openContainer(tag: BinaryFormat.Tag.array)
        for element in elements {
            write(state, element)
        }
        state.closeInnermost(header)
    }

    /// Encodes a value into this encoder's slot, which must be pending at the end of the buffer.
    func encodeValue<T: Encodable>(_ value: T) throws {
        if writeDirectly(value) { return }
        let start = state.count
        try value.encode(to: self)
        if state.count == start {
            // Like JSONEncoder, a value that wrote nothing is an empty keyed container.
            _ = state.appendEmptyContainer(tag: BinaryFormat.Tag.map)
        }
    }

    /// Encodes a value in a container, at the end of the buffer, under the path (parent, key).
    @inline(__always)
    func encodeNested<T: Encodable>(
        _ value: T,
        parent: BinaryCodingPathNode?,
        key: @autoclosure () -> any CodingKey
    ) throws {
        if writeDirectly(value) { return }
        let saved = (slot, self.parent, self.key)
        slot = .pending(state.count)
        self.parent = parent
        self.key = key()
        defer { (slot, self.parent, self.key) = saved }
        try encodeValue(value)
    }
}

/// The keyed container of ``BinaryEncoder``: appends (key, value) entries to a map.
struct BinaryKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    private typealias Tag = BinaryFormat.Tag

    private let encoder: BinaryEncoder
    /// The offset of the map's header, or -1 when the container could not be opened (every write throws).
    private let header: Int
    private let parent: BinaryCodingPathNode?
    private let key: (any CodingKey)?
    private var node: BinaryCodingPathNode?

    init(encoder: BinaryEncoder, header: Int, parent: BinaryCodingPathNode?, key: (any CodingKey)?) {
        self.encoder = encoder
        self.header = header
        self.parent = parent
        self.key = key
    }

    var codingPath: [any CodingKey] {
        BinaryCodingPathNode.path(parent: parent, key: key)
    }

    private mutating func pathNode() -> BinaryCodingPathNode? {
        guard let key else { return parent }
        if let node { return node }
        let created = BinaryCodingPathNode(parent: parent, lastKey: key)
        node = created
        return created
    }

    /// Checks that the map is still open and appends the key of a new entry.
    @inline(__always)
    private func begin(_ key: some CodingKey, _ value: @autoclosure () -> Any) throws {
        guard encoder.state.willWrite(into: header) else {
            throw BinaryEncodingState.outOfOrderError(value(), codingPath: codingPath + [key])
        }
        encoder.state.appendUTF8(key.stringValue)
    }

    /// Like ``begin(_:_:)``, for the methods that cannot throw; records the error to be thrown at the end.
    private func beginNested(_ key: some CodingKey) -> Bool {
        do {
            try begin(key, "nested container")
            return true
        } catch {
            encoder.state.record(error)
            return false
        }
    }

    mutating func encodeNil(forKey key: Key) throws {
        try begin(key, Optional<Any>.none as Any)
        encoder.state.append(Tag.null)
    }

    mutating func encode(_ value: Bool, forKey key: Key) throws {
        try begin(key, value)
        encoder.state.appendBool(value)
    }

    mutating func encode(_ value: String, forKey key: Key) throws {
        try begin(key, value)
        encoder.state.appendString(value)
    }

    mutating func encode(_ value: Double, forKey key: Key) throws {
        try begin(key, value)
        encoder.state.appendDouble(value)
    }

    mutating func encode(_ value: Float, forKey key: Key) throws {
        try begin(key, value)
        encoder.state.appendFloat(value)
    }

    mutating func encode(_ value: Int, forKey key: Key) throws {
        try begin(key, value)
        encoder.state.appendInt(Int64(value))
    }

    mutating func encode(_ value: Int8, forKey key: Key) throws {
        try begin(key, value)
        encoder.state.appendInt(Int64(value))
    }

    mutating func encode(_ value: Int16, forKey key: Key) throws {
        try begin(key, value)
        encoder.state.appendInt(Int64(value))
    }

    mutating func encode(_ value: Int32, forKey key: Key) throws {
        try begin(key, value)
        encoder.state.appendInt(Int64(value))
    }

    mutating func encode(_ value: Int64, forKey key: Key) throws {
        try begin(key, value)
        encoder.state.appendInt(value)
    }

    mutating func encode(_ value: UInt, forKey key: Key) throws {
        try begin(key, value)
        encoder.state.appendUInt(UInt64(value))
    }

    mutating func encode(_ value: UInt8, forKey key: Key) throws {
        try begin(key, value)
        encoder.state.appendUInt(UInt64(value))
    }

    mutating func encode(_ value: UInt16, forKey key: Key) throws {
        try begin(key, value)
        encoder.state.appendUInt(UInt64(value))
    }

    mutating func encode(_ value: UInt32, forKey key: Key) throws {
        try begin(key, value)
        encoder.state.appendUInt(UInt64(value))
    }

    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        try begin(key, value)
        encoder.state.appendUInt(value)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try begin(key, value)
        try encoder.encodeNested(value, parent: pathNode(), key: key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type,
        forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let header = beginNested(key) ? encoder.state.openContainer(tag: Tag.map) : -1
        return KeyedEncodingContainer(
            BinaryKeyedEncodingContainer<NestedKey>(encoder: encoder, header: header, parent: pathNode(), key: key))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let header = beginNested(key) ? encoder.state.openContainer(tag: Tag.array) : -1
        return BinaryUnkeyedEncodingContainer(encoder: encoder, header: header, parent: pathNode(), key: key)
    }

    mutating func superEncoder() -> any Encoder {
        superEncoder(for: BinarySuperKey())
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        superEncoder(for: key)
    }

    private mutating func superEncoder(for key: some CodingKey) -> any Encoder {
        // An empty map holds the entry's place until the superclass writes its value.
        let offset = beginNested(key) ? encoder.state.appendEmptyContainer(tag: Tag.map) : Int.min / 2
        return BinaryEncoder(state: encoder.state, slot: .placeholder(offset), parent: pathNode(), key: key)
    }
}

/// The unkeyed container of ``BinaryEncoder``: appends values to an array.
struct BinaryUnkeyedEncodingContainer: UnkeyedEncodingContainer {
    private typealias Tag = BinaryFormat.Tag

    private let encoder: BinaryEncoder
    /// The offset of the array's header, or -1 when the container could not be opened (every write throws).
    private let header: Int
    private let parent: BinaryCodingPathNode?
    private let key: (any CodingKey)?
    private var node: BinaryCodingPathNode?
    /// The number of values written through this container.
    private(set) var count = 0

    init(encoder: BinaryEncoder, header: Int, parent: BinaryCodingPathNode?, key: (any CodingKey)?) {
        self.encoder = encoder
        self.header = header
        self.parent = parent
        self.key = key
    }

    var codingPath: [any CodingKey] {
        BinaryCodingPathNode.path(parent: parent, key: key)
    }

    private mutating func pathNode() -> BinaryCodingPathNode? {
        guard let key else { return parent }
        if let node { return node }
        let created = BinaryCodingPathNode(parent: parent, lastKey: key)
        node = created
        return created
    }

    /// Checks that the array is still open and counts the new element.
    @inline(__always)
    private mutating func begin(_ value: @autoclosure () -> Any) throws {
        guard encoder.state.willWrite(into: header) else {
            throw BinaryEncodingState.outOfOrderError(value(), codingPath: codingPath + [BinaryIndexKey(count)])
        }
        count += 1
    }

    private mutating func beginNested() -> Bool {
        do {
            try begin("nested container")
            return true
        } catch {
            encoder.state.record(error)
            return false
        }
    }

    mutating func encodeNil() throws {
        try begin(Optional<Any>.none as Any)
        encoder.state.append(Tag.null)
    }

    mutating func encode(_ value: Bool) throws {
        try begin(value)
        encoder.state.appendBool(value)
    }

    mutating func encode(_ value: String) throws {
        try begin(value)
        encoder.state.appendString(value)
    }

    mutating func encode(_ value: Double) throws {
        try begin(value)
        encoder.state.appendDouble(value)
    }

    mutating func encode(_ value: Float) throws {
        try begin(value)
        encoder.state.appendFloat(value)
    }

    mutating func encode(_ value: Int) throws {
        try begin(value)
        encoder.state.appendInt(Int64(value))
    }

    mutating func encode(_ value: Int8) throws {
        try begin(value)
        encoder.state.appendInt(Int64(value))
    }

    mutating func encode(_ value: Int16) throws {
        try begin(value)
        encoder.state.appendInt(Int64(value))
    }

    mutating func encode(_ value: Int32) throws {
        try begin(value)
        encoder.state.appendInt(Int64(value))
    }

    mutating func encode(_ value: Int64) throws {
        try begin(value)
        encoder.state.appendInt(value)
    }

    mutating func encode(_ value: UInt) throws {
        try begin(value)
        encoder.state.appendUInt(UInt64(value))
    }

    mutating func encode(_ value: UInt8) throws {
        try begin(value)
        encoder.state.appendUInt(UInt64(value))
    }

    mutating func encode(_ value: UInt16) throws {
        try begin(value)
        encoder.state.appendUInt(UInt64(value))
    }

    mutating func encode(_ value: UInt32) throws {
        try begin(value)
        encoder.state.appendUInt(UInt64(value))
    }

    mutating func encode(_ value: UInt64) throws {
        try begin(value)
        encoder.state.appendUInt(value)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try begin(value)
        try encoder.encodeNested(value, parent: pathNode(), key: BinaryIndexKey(count - 1))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<NestedKey> {
        let header = beginNested() ? encoder.state.openContainer(tag: Tag.map) : -1
        return KeyedEncodingContainer(BinaryKeyedEncodingContainer<NestedKey>(
            encoder: encoder, header: header, parent: pathNode(), key: BinaryIndexKey(count - 1)))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let header = beginNested() ? encoder.state.openContainer(tag: Tag.array) : -1
        return BinaryUnkeyedEncodingContainer(
            encoder: encoder, header: header, parent: pathNode(), key: BinaryIndexKey(count - 1))
    }

    mutating func superEncoder() -> any Encoder {
        let offset = beginNested() ? encoder.state.appendEmptyContainer(tag: Tag.map) : Int.min / 2
        return BinaryEncoder(
            state: encoder.state, slot: .placeholder(offset), parent: pathNode(), key: BinaryIndexKey(count - 1))
    }
}

/// The single value container of ``BinaryEncoder``: writes the encoder's one value.
struct BinarySingleValueEncodingContainer: SingleValueEncodingContainer {
    private typealias Tag = BinaryFormat.Tag

    private let encoder: BinaryEncoder

    init(encoder: BinaryEncoder) {
        self.encoder = encoder
    }

    var codingPath: [any CodingKey] { encoder.codingPath }

    mutating func encodeNil() throws {
        try encoder.beginSingleValue(Optional<Any>.none as Any)
        encoder.state.append(Tag.null)
    }

    mutating func encode(_ value: Bool) throws {
        try encoder.beginSingleValue(value)
        encoder.state.appendBool(value)
    }

    mutating func encode(_ value: String) throws {
        try encoder.beginSingleValue(value)
        encoder.state.appendString(value)
    }

    mutating func encode(_ value: Double) throws {
        try encoder.beginSingleValue(value)
        encoder.state.appendDouble(value)
    }

    mutating func encode(_ value: Float) throws {
        try encoder.beginSingleValue(value)
        encoder.state.appendFloat(value)
    }

    mutating func encode(_ value: Int) throws {
        try encoder.beginSingleValue(value)
        encoder.state.appendInt(Int64(value))
    }

    mutating func encode(_ value: Int8) throws {
        try encoder.beginSingleValue(value)
        encoder.state.appendInt(Int64(value))
    }

    mutating func encode(_ value: Int16) throws {
        try encoder.beginSingleValue(value)
        encoder.state.appendInt(Int64(value))
    }

    mutating func encode(_ value: Int32) throws {
        try encoder.beginSingleValue(value)
        encoder.state.appendInt(Int64(value))
    }

    mutating func encode(_ value: Int64) throws {
        try encoder.beginSingleValue(value)
        encoder.state.appendInt(value)
    }

    mutating func encode(_ value: UInt) throws {
        try encoder.beginSingleValue(value)
        encoder.state.appendUInt(UInt64(value))
    }

    mutating func encode(_ value: UInt8) throws {
        try encoder.beginSingleValue(value)
        encoder.state.appendUInt(UInt64(value))
    }

    mutating func encode(_ value: UInt16) throws {
        try encoder.beginSingleValue(value)
        encoder.state.appendUInt(UInt64(value))
    }

    mutating func encode(_ value: UInt32) throws {
        try encoder.beginSingleValue(value)
        encoder.state.appendUInt(UInt64(value))
    }

    mutating func encode(_ value: UInt64) throws {
        try encoder.beginSingleValue(value)
        encoder.state.appendUInt(value)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try encoder.beginSingleValue(value)
        try encoder.encodeValue(value)
    }
}
