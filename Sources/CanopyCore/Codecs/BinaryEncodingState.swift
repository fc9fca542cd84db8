/// The buffer that every encoder and container of one ``BinaryCodec/encode(_:)`` call writes into, and the stack of
/// containers that are still open.
///
/// A container is identified by the offset of its header. The containers on the stack nest in one another, outermost
/// first, and the end of the buffer is inside all of them. Writing into a container closes (patches the size of) every
/// container above it on the stack; writing into a container that is no longer on the stack would have to insert
/// bytes before bytes written later, so it is refused.
///
/// The bytes are written to raw memory rather than an `[UInt8]`, whose `append` costs several times more per call,
/// and copied into an array once at the end.
final class BinaryEncodingState {
    // The state is used by one thread during one encode call, and no access to these properties overlaps another
    // (no user code runs during an access), so the runtime's exclusivity checks, a large part of the cost of
    // encoding a small value, are left out.
    @exclusivity(unchecked) private var storage: UnsafeMutableRawPointer
    @exclusivity(unchecked) private var capacity: Int
    /// The number of bytes written.
    @exclusivity(unchecked) private(set) var count = 0
    @exclusivity(unchecked) private var open: [Int]
    /// An error found where the `Encodable` API cannot throw (opening a nested container); thrown at the end.
    @exclusivity(unchecked) private(set) var deferredError: (any Error)?
    /// The encoders alive on this state (the root, nested ones from `superEncoder()`, any kept by an `encode(to:)`
    /// or its containers): a caller reuses the state and its root encoder only when the root is the last one.
    @exclusivity(unchecked) var liveEncoders = 0

    init() {
        capacity = 256
        storage = .allocate(byteCount: capacity, alignment: 8)
        open = []
        open.reserveCapacity(8)
    }

    deinit {
        storage.deallocate()
    }

    /// The most a state kept for reuse holds on to (a larger buffer, grown for one large value, is not kept).
    static let reusableCapacity = 64 * 1024

    /// Empties the state for another encode call, keeping its buffer; `false` when the buffer grew past
    /// ``reusableCapacity`` and should not be kept.
    func reset() -> Bool {
        count = 0
        open.removeAll(keepingCapacity: true)
        deferredError = nil
        return capacity <= Self.reusableCapacity
    }

    // MARK: Bytes

    /// Makes room for `byteCount` more bytes.
    @inline(__always)
    private func reserve(_ byteCount: Int) {
        if capacity - count < byteCount { grow(byteCount) }
    }

    @inline(never)
    private func grow(_ byteCount: Int) {
        let newCapacity = max(capacity * 2, count + byteCount)
        let newStorage = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 8)
        newStorage.copyMemory(from: storage, byteCount: count)
        storage.deallocate()
        storage = newStorage
        capacity = newCapacity
    }

    @inline(__always)
    func append(_ byte: UInt8) {
        reserve(1)
        storage.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    @inline(__always)
    func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        reserve(bytes.count)
        (storage + count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    /// Removes the last `byteCount` bytes.
    func removeLast(_ byteCount: Int) {
        count -= byteCount
    }

    @inline(__always)
    func appendVarint(_ value: UInt64) {
        reserve(VarInt.maxSize)
        count += VarInt.write(value, to: storage + count)
    }

    @inline(__always)
    func appendInt(_ value: Int64) {
        append(BinaryFormat.Tag.int)
        appendVarint(BinaryFormat.zigzag(value))
    }

    @inline(__always)
    func appendUInt(_ value: UInt64) {
        append(BinaryFormat.Tag.uint)
        appendVarint(value)
    }

    @inline(__always)
    func appendDouble(_ value: Double, tag: UInt8 = BinaryFormat.Tag.double) {
        reserve(9)
        storage.storeBytes(of: tag, toByteOffset: count, as: UInt8.self)
        storage.storeBytes(of: value.bitPattern.littleEndian, toByteOffset: count + 1, as: UInt64.self)
        count += 9
    }

    @inline(__always)
    func appendFloat(_ value: Float) {
        reserve(5)
        storage.storeBytes(of: BinaryFormat.Tag.float, toByteOffset: count, as: UInt8.self)
        storage.storeBytes(of: value.bitPattern.littleEndian, toByteOffset: count + 1, as: UInt32.self)
        count += 5
    }

    @inline(__always)
    func appendBool(_ value: Bool) {
        append(value ? BinaryFormat.Tag.true : BinaryFormat.Tag.false)
    }

    /// Appends a varint byte count and the UTF-8 of a string, without a tag (also used for map keys).
    @inline(__always)
    func appendUTF8(_ string: String) {
        // In place when the string is contiguous UTF-8 (native or small: nearly always), without the copy that
        // `withUTF8` needs (a `var`, retained and released per key and per value).
        let appended: Void? = string.utf8.withContiguousStorageIfAvailable { utf8 in
            appendVarint(UInt64(utf8.count))
            append(UnsafeRawBufferPointer(utf8))
        }
        guard appended == nil else { return }
        var string = string
        string.withUTF8 { utf8 in
            appendVarint(UInt64(utf8.count))
            append(UnsafeRawBufferPointer(utf8))
        }
    }

    @inline(__always)
    func appendString(_ value: String) {
        append(BinaryFormat.Tag.string)
        appendUTF8(value)
    }

    @inline(__always)
    func appendBytes(_ value: UnsafeRawBufferPointer) {
        append(BinaryFormat.Tag.bytes)
        appendVarint(UInt64(value.count))
        append(value)
    }

    // MARK: Containers

    /// Prepares to append to the container whose header is at `header`.
    ///
    /// - Returns: `false` when that container has already been closed.
    @inline(__always)
    func willWrite(into header: Int) -> Bool {
        if open.last == header { return true }
        return closeContainers(above: header)
    }

    private func closeContainers(above header: Int) -> Bool {
        guard header >= 0, let index = open.lastIndex(of: header) else { return false }
        while open.count > index + 1 {
            close(open.removeLast())
        }
        return true
    }

    /// Appends the header of a container whose size is patched when it closes, and opens it.
    @inline(__always)
    func openContainer(tag: UInt8) -> Int {
        let header = appendEmptyContainer(tag: tag)
        open.append(header)
        return header
    }

    /// Appends the header of an empty container without opening it.
    @inline(__always)
    func appendEmptyContainer(tag: UInt8) -> Int {
        let header = count
        reserve(BinaryFormat.containerHeaderSize)
        storage.storeBytes(of: tag, toByteOffset: header, as: UInt8.self)
        storage.storeBytes(of: 0, toByteOffset: header + 1, as: UInt32.self)
        count += BinaryFormat.containerHeaderSize
        return header
    }

    /// Opens the empty container at `header`, which must be the last bytes of the buffer.
    func reopen(_ header: Int) {
        open.append(header)
    }

    /// Closes the innermost open container, which must be the one at `header`, as it is complete.
    @inline(__always)
    func closeInnermost(_ header: Int) {
        if open.last == header {
            open.removeLast()
            close(header)
        }
    }

    private func close(_ header: Int) {
        let size = count - header - BinaryFormat.containerHeaderSize
        guard size <= Int(UInt32.max) else {
            record(CodecError(
                code: .unsupportedValue,
                message: "A container of \(size) bytes exceeds the binary format's limit of 4 GiB.",
                offset: header))
            return
        }
        storage.storeBytes(of: UInt32(size).littleEndian, toByteOffset: header + 1, as: UInt32.self)
    }

    func record(_ error: any Error) {
        if deferredError == nil { deferredError = error }
    }

    /// Closes every open container and returns the bytes.
    func finish() throws -> [UInt8] {
        while let header = open.popLast() {
            close(header)
        }
        if let deferredError { throw deferredError }
        // (`Array(_:)` of the raw buffer, specialized here; `init(unsafeUninitializedCapacity:)` calls the generic
        // allocation, several times the cost of the copy.)
        return Array(UnsafeRawBufferPointer(start: storage, count: count))
    }

    static func outOfOrderError(_ value: Any, codingPath: [any CodingKey]) -> EncodingError {
        .invalidValue(value, .init(
            codingPath: codingPath,
            debugDescription: """
                The binary codec needs nested containers to be written in order, but this container was written to \
                after its parent or a later sibling had been written to. Write each nested container completely \
                before writing to its parent again, or use JSONCodec for this type.
                """))
    }
}
