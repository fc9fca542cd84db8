import Foundation
import Synchronization

// The binary codec's fast path for flat structs: a struct whose `Decodable` implementation decodes each of its stored
// properties, in declaration order and under its own name, from one keyed container, as a string, a number, a Bool
// or a Date (what synthesized `Decodable` does for such a struct) is decoded by reading its map's entries in order and
// writing each value straight into the struct's memory, without `init(from:)`, containers or coding keys.
//
// Only types that opt in with ``BinaryCodecSynthesizedDecoding`` take it: whether an `init(from:)` changes the values
// it reads (lowercases a string, clamps a number) cannot be learned from values — a value the change leaves as it is
// looks the same — so the codec never guesses. For a type that opted in, its plan (keys, kinds, offsets) is laid out
// from the first decode, made through the general path with a recording decoder wrapped around the real one (so that
// decode returns what the general path returns, and can fail no other way), which notes every call `init(from:)`
// makes. The plan exists when those calls were one keyed container and one primitive decode per stored property (the
// names and types that `Mirror` lists, in its order), when the struct's size and alignment are those of its
// properties laid out in that order, and when every property of the decoded value holds, bit for bit, the value its
// call returned (a check of the layout). Otherwise the type is always decoded through the general path.
//
// The fast path reads with the general path's own bounds-checked readers; it succeeds only when the bytes are a map of
// exactly those keys in that order with values of those types. Anything else (corrupt or truncated bytes, another
// order, missing or extra keys, a nil) makes it give up — releasing what it wrote — and the value is decoded through
// the general path, which returns it or throws the usual typed error.

/// Opts a type in to the binary codec's fast path for flat structs (see ``BinaryCodec``), with a promise: decoding
/// the type is exactly what the `Decodable` conformance the compiler synthesizes for a struct does — each stored
/// property, in declaration order, decoded under its own name from one keyed container and stored as read.
///
/// The codec then writes the values straight into the struct without calling `init(from:)`, containers or coding
/// keys. It cannot check the promise from values: a type whose `init(from:)` changes what it reads
/// (lowercases, trims, clamps), validates it or fills defaults must not conform, or its values would be read without
/// those changes. Types that don't conform — the default — are always decoded through `init(from:)`. A conforming
/// type that does not fit the fast path (a property that is not a string, an integer, a floating-point number, a Bool
/// or a Date; custom coding keys; more than 256 bytes) is decoded through `init(from:)` too.
///
/// ```swift
/// struct Point: Codable, Sendable, BinaryCodecSynthesizedDecoding { var x: Double; var y: Double; var label: String }
/// ```
public protocol BinaryCodecSynthesizedDecoding: Decodable {}

/// Earlier versions' opt-out of the fast path, which is now opt-in (``BinaryCodecSynthesizedDecoding``): a type that
/// doesn't opt in is always decoded through its `init(from:)`, so this marker changes nothing. Kept so that code
/// written for those versions compiles.
@available(*, deprecated, message: "types are decoded through init(from:) unless they conform to BinaryCodecSynthesizedDecoding; remove this conformance")
public typealias BinaryCodecGeneralDecoding = Decodable

/// The kinds of property values the fast path writes.
enum FlatFieldKind: Sendable {
    case string, bool, double, float, date
    case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64

    var size: Int {
        switch self {
        case .string: MemoryLayout<String>.size
        case .bool, .int8, .uint8: 1
        case .int16, .uint16: 2
        case .float, .int32, .uint32: 4
        case .double, .date, .int, .int64, .uint, .uint64: 8
        }
    }

    var alignment: Int {
        switch self {
        case .string: MemoryLayout<String>.alignment
        default: size
        }
    }

    /// The tag the binary encoder writes for values of this kind, or `nil` for a Bool (`false` or `true`). The
    /// readers accept more (a Double from a Float or an integer, a Date from a Double); the fast path compares this
    /// tag as part of an entry's head, and on any other gives up for the general path, which reads them.
    var tag: UInt8? {
        switch self {
        case .string: BinaryFormat.Tag.string
        case .date: BinaryFormat.Tag.date
        case .double: BinaryFormat.Tag.double
        case .float: BinaryFormat.Tag.float
        case .int, .int8, .int16, .int32, .int64: BinaryFormat.Tag.int
        case .uint, .uint8, .uint16, .uint32, .uint64: BinaryFormat.Tag.uint
        case .bool: nil
        }
    }

    /// The kind of values of `type`, or `nil` when the fast path does not write them.
    init?(_ type: Any.Type) {
        switch ObjectIdentifier(type) {
        case ObjectIdentifier(String.self): self = .string
        case ObjectIdentifier(Bool.self): self = .bool
        case ObjectIdentifier(Double.self): self = .double
        case ObjectIdentifier(Float.self): self = .float
        case ObjectIdentifier(Date.self): self = .date
        case ObjectIdentifier(Int.self): self = .int
        case ObjectIdentifier(Int8.self): self = .int8
        case ObjectIdentifier(Int16.self): self = .int16
        case ObjectIdentifier(Int32.self): self = .int32
        case ObjectIdentifier(Int64.self): self = .int64
        case ObjectIdentifier(UInt.self): self = .uint
        case ObjectIdentifier(UInt8.self): self = .uint8
        case ObjectIdentifier(UInt16.self): self = .uint16
        case ObjectIdentifier(UInt32.self): self = .uint32
        case ObjectIdentifier(UInt64.self): self = .uint64
        default: return nil
        }
    }
}

/// How to decode one flat struct type: its properties' keys, kinds and offsets.
final class FlatDecodePlan: @unchecked Sendable {
    struct Field {
        let key: String
        let kind: FlatFieldKind
        let offset: Int
    }

    /// A field as the decode loop reads it: trivial values only (nothing retained), its key at
    /// `keyBytes[keyStart..<(keyStart + keyLength)]`. `head` holds the bytes the field's entry starts with —
    /// `varint(key length)`, the key, the value's tag (`headTag`, or none for a Bool, which has two) — as little-endian
    /// words, `headLength` of them (0 when they are more than 16): the loop compares them with two loads and masks
    /// instead of reading the length and calling `memcmp`.
    private struct Slot {
        let kind: FlatFieldKind
        let offset: Int
        let keyStart: Int
        let keyLength: Int
        let headLow: UInt64
        let headHigh: UInt64
        let maskLow: UInt64
        let maskHigh: UInt64
        let headLength: Int
        /// For a string, its slot in a scan's reused storages (``FlatDecodePlan/reusedStorageSlots``), or -1.
        let reuseSlot: Int
    }

    let fields: [Field]
    let size: Int
    private let slots: [Slot]
    private let keyBytes: [UInt8]
    /// The offsets of the string fields: destroying a value of the plan is releasing them (every other kind is
    /// trivial, and the plan covers every stored property).
    private let stringOffsets: [Int]
    /// Whether short ASCII strings are stored straight into the value (``SmallASCIIString/isExact``, read once here).
    private let smallStrings = SmallASCIIString.isExact
    /// Whether heap strings' storages may be reused (``NativeASCIIString/isExact``, read once here).
    private let reusesStorages = NativeASCIIString.isExact
    /// The string fields whose storages a scan can keep for its next row (the first ones, if there are more).
    static let reusedStorageSlots = 16

    init(fields: [Field], size: Int) {
        self.fields = fields
        self.size = size
        var keyBytes: [UInt8] = []
        var slots: [Slot] = []
        var stringOffsets: [Int] = []
        for field in fields {
            var reuseSlot = -1
            if field.kind == .string {
                if stringOffsets.count < Self.reusedStorageSlots { reuseSlot = stringOffsets.count }
                stringOffsets.append(field.offset)
            }
            let key = Array(field.key.utf8)
            var head: [UInt8] = []
            if key.count < 0x80 {
                head = [UInt8(key.count)] + key
                if let tag = field.kind.tag { head.append(tag) }
            }
            if head.count > 16 { head = [] }
            var low: UInt64 = 0, high: UInt64 = 0
            for (index, byte) in head.enumerated() {
                if index < 8 { low |= UInt64(byte) << (8 * UInt64(index)) } else { high |= UInt64(byte) << (8 * UInt64(index - 8)) }
            }
            func mask(_ bytes: Int) -> UInt64 { bytes >= 8 ? ~0 : bytes <= 0 ? 0 : (1 << (8 * UInt64(bytes))) - 1 }
            slots.append(Slot(
                kind: field.kind, offset: field.offset, keyStart: keyBytes.count, keyLength: key.count,
                headLow: low, headHigh: high, maskLow: mask(head.count), maskHigh: mask(head.count - 8), headLength: head.count,
                reuseSlot: reuseSlot))
            keyBytes.append(contentsOf: key)
        }
        self.slots = slots
        self.keyBytes = keyBytes
        self.stringOffsets = stringOffsets
    }

    /// Decodes `bytes` into the struct at `out` (uninitialized, `size` bytes). Returns `false`, leaving `out`
    /// uninitialized, when the bytes are anything but this plan's map.
    ///
    /// With `storages` (a scan's ``reusedStorageSlots`` slots, filled by ``destroy(_:keepingStoragesIn:)``), a string
    /// of 16 to 63 ASCII bytes is written into the storage its field's slot holds, when the storage can take it, and
    /// the slot is emptied: no allocation (``NativeASCIIString``).
    func decode(
        into out: UnsafeMutableRawPointer, from bytes: UnsafeRawBufferPointer,
        reusing storages: UnsafeMutablePointer<AnyObject?>? = nil
    ) -> Bool {
        let storages = reusesStorages ? storages : nil
        let (written, complete) = slots.withUnsafeBufferPointer { slots in
            keyBytes.withUnsafeBytes { keys in decodeFields(into: out, from: bytes, slots: slots, keys: keys, storages: storages) }
        }
        if complete { return true }
        // Gave up: release the strings written so far.
        for field in fields.prefix(written) where field.kind == .string {
            (out + field.offset).assumingMemoryBound(to: String.self).deinitialize(count: 1)
        }
        return false
    }

    /// Destroys the value at `value` (one this plan decoded, or any value of the plan's type), leaving the memory
    /// uninitialized: releases its strings. With `storages`, the storage of a heap ASCII string that nothing else holds
    /// (``NativeASCIIString/isUniquelyReferenced(_:)``: the closure that saw the value kept no copy of it) is kept in
    /// its field's empty slot instead, for ``decode(into:from:reusing:)`` to write the next row's string into.
    func destroy(_ value: UnsafeMutableRawPointer, keepingStoragesIn storages: UnsafeMutablePointer<AnyObject?>?) {
        stringOffsets.withUnsafeBufferPointer { offsets in
            for (index, offset) in offsets.enumerated() {
                let target = value + offset
                if reusesStorages, let storages, index < Self.reusedStorageSlots, NativeASCIIString.isEmpty(storages + index),
                   NativeASCIIString.rewritableStorage(of: target) != nil {
                    // The string's reference moves to the slot, and stays there if nothing else holds the storage.
                    _ = NativeASCIIString.keepIfUnique(target, in: storages + index)
                } else if smallStrings && target.load(fromByteOffset: 8, as: UInt64.self) >> 60 == 0xE {
                    // A small ASCII string (``SmallASCIIString``'s layout, checked): immortal, nothing to release.
                } else {
                    target.assumingMemoryBound(to: String.self).deinitialize(count: 1)
                }
            }
        }
    }

    /// The loop of ``decode(into:from:)``, over the slots and key bytes in place (no bounds checks or reference
    /// counting per field: `slots` and `keys` are this plan's own, consistent by construction). Returns the number of
    /// fields initialized, and whether the bytes were the plan's map.
    ///
    /// It reads what the general path's readers read, with the same bounds checks, but only the one encoding the
    /// binary encoder writes for each kind (the tag compared as part of the head) and without throwing: anything
    /// else is `false`, and the general path reads the bytes again (and accepts them, or throws its typed error).
    /// (The position and the count are locals passed by value, so that they stay in registers.)
    @inline(__always)
    private func decodeFields(
        into out: UnsafeMutableRawPointer, from bytes: UnsafeRawBufferPointer, slots: UnsafeBufferPointer<Slot>,
        keys: UnsafeRawBufferPointer, storages: UnsafeMutablePointer<AnyObject?>?
    ) -> (written: Int, complete: Bool) {
        let count = bytes.count
        // The version byte, the root map's tag and its size, which must end with the bytes.
        guard count >= 1 &+ BinaryFormat.containerHeaderSize, let base = bytes.baseAddress,
              base.load(as: UInt8.self) == BinaryFormat.version,
              base.load(fromByteOffset: 1, as: UInt8.self) == BinaryFormat.Tag.map,
              Int(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: 2, as: UInt32.self))) == count &- (1 &+ BinaryFormat.containerHeaderSize)
        else { return (0, false) }
        let end = count
        var position = 1 &+ BinaryFormat.containerHeaderSize
        // The slot at hand, read where each of its fields is used (so that few values are held across the loop); its
        // index is the number of fields written.
        let firstSlot = slots.baseAddress.unsafelyUnwrapped
        let endSlot = firstSlot + slots.count
        var slot = firstSlot
        var written: Int { slot - firstSlot }
        while slot < endSlot {
            // Every offset below stays within 0...end (each step checks the bytes it takes against `end`), so the
            // arithmetic cannot overflow.
            let remaining = end &- position
            if slot.pointee.headLength > 0 {
                // The entry's head (key length, key, tag) compared as two words, which must hold the whole head (a
                // head is at most 16 bytes: only near the end can the bytes be shorter).
                let low: UInt64, high: UInt64
                if remaining >= 16 {
                    low = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: position, as: UInt64.self))
                    high = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: position &+ 8, as: UInt64.self))
                } else {
                    guard remaining >= slot.pointee.headLength else { return (written, false) }
                    (low, high) = Self.tailWords(base, at: position, end: end)
                }
                guard (low ^ slot.pointee.headLow) & slot.pointee.maskLow == 0, (high ^ slot.pointee.headHigh) & slot.pointee.maskHigh == 0 else {
                    return (written, false)
                }
                position &+= slot.pointee.headLength
            } else {
                // A key of 128 bytes or more (or a head longer than 16): its length, its bytes, then the tag.
                guard let (length, next) = Self.varint(base, at: position, end: end), length == UInt64(slot.pointee.keyLength),
                      slot.pointee.keyLength <= end &- next,
                      slot.pointee.keyLength == 0 || memcmp(base + next, keys.baseAddress.unsafelyUnwrapped + slot.pointee.keyStart, slot.pointee.keyLength) == 0
                else { return (written, false) }
                position = next &+ slot.pointee.keyLength
                if let tag = slot.pointee.kind.tag {
                    guard position < end, base.load(fromByteOffset: position, as: UInt8.self) == tag else { return (written, false) }
                    position &+= 1
                }
            }
            // `position` is at the value's payload (after its tag; at the tag itself for a Bool).
            let target = out + slot.pointee.offset
            switch slot.pointee.kind {
            case .string:
                guard let (length, next) = Self.varint(base, at: position, end: end), length <= UInt64(end &- next) else {
                    return (written, false)
                }
                let count = Int(length)
                if smallStrings && count <= SmallASCIIString.maximumCount {
                    // A short ASCII string: its bytes, loaded as two words (which also tell it is ASCII), stored in
                    // place as the small string the standard library would make of them.
                    let (low, high) = SmallASCIIString.words(base + next, count: count)
                    if (low | high) & 0x8080_8080_8080_8080 == 0 {
                        SmallASCIIString.initialize(target, low: low, high: high, count: count)
                        position = next &+ count
                        break
                    }
                }
                guard Self.storeString(base + next, count: count, into: target, storages: storages, slot: slot.pointee.reuseSlot)
                else { return (written, false) }
                position = next &+ count
            case .bool:
                guard position < end else { return (written, false) }
                switch base.load(fromByteOffset: position, as: UInt8.self) {
                case BinaryFormat.Tag.false: target.initializeMemory(as: Bool.self, to: false)
                case BinaryFormat.Tag.true: target.initializeMemory(as: Bool.self, to: true)
                default: return (written, false)
                }
                position &+= 1
            case .double:
                guard end &- position >= 8 else { return (written, false) }
                let bits = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: position, as: UInt64.self))
                target.initializeMemory(as: Double.self, to: Double(bitPattern: bits))
                position &+= 8
            case .date:
                guard end &- position >= 8 else { return (written, false) }
                let bits = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: position, as: UInt64.self))
                target.initializeMemory(as: Date.self, to: Date(timeIntervalSinceReferenceDate: Double(bitPattern: bits)))
                position &+= 8
            case .float:
                guard end &- position >= 4 else { return (written, false) }
                let bits = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: position, as: UInt32.self))
                target.initializeMemory(as: Float.self, to: Float(bitPattern: bits))
                position &+= 4
            case .int, .int64:
                guard let (value, next) = Self.varint(base, at: position, end: end) else { return (written, false) }
                target.initializeMemory(as: Int64.self, to: BinaryFormat.unzigzag(value))
                position = next
            case .int8:
                guard let (value, next) = Self.varint(base, at: position, end: end),
                      let narrow = Int8(exactly: BinaryFormat.unzigzag(value)) else { return (written, false) }
                target.initializeMemory(as: Int8.self, to: narrow)
                position = next
            case .int16:
                guard let (value, next) = Self.varint(base, at: position, end: end),
                      let narrow = Int16(exactly: BinaryFormat.unzigzag(value)) else { return (written, false) }
                target.initializeMemory(as: Int16.self, to: narrow)
                position = next
            case .int32:
                guard let (value, next) = Self.varint(base, at: position, end: end),
                      let narrow = Int32(exactly: BinaryFormat.unzigzag(value)) else { return (written, false) }
                target.initializeMemory(as: Int32.self, to: narrow)
                position = next
            case .uint, .uint64:
                guard let (value, next) = Self.varint(base, at: position, end: end) else { return (written, false) }
                target.initializeMemory(as: UInt64.self, to: value)
                position = next
            case .uint8:
                guard let (value, next) = Self.varint(base, at: position, end: end), let narrow = UInt8(exactly: value) else {
                    return (written, false)
                }
                target.initializeMemory(as: UInt8.self, to: narrow)
                position = next
            case .uint16:
                guard let (value, next) = Self.varint(base, at: position, end: end), let narrow = UInt16(exactly: value) else {
                    return (written, false)
                }
                target.initializeMemory(as: UInt16.self, to: narrow)
                position = next
            case .uint32:
                guard let (value, next) = Self.varint(base, at: position, end: end), let narrow = UInt32(exactly: value) else {
                    return (written, false)
                }
                target.initializeMemory(as: UInt32.self, to: narrow)
                position = next
            }
            slot += 1
        }
        return (written, position == end)
    }

    /// Stores the string of the `count` bytes at `start` into `target` (uninitialized): written into the storage
    /// `storages[slot]` holds when the bytes are 16 to 63 of ASCII and it can take them (the slot is emptied: its
    /// reference is the string's now), else made by ``BinaryReader/validUTF8String(_:count:)``. Returns `false`, leaving
    /// `target` uninitialized, when the bytes are not valid UTF-8. (Out of line: the loop keeps its registers.)
    @inline(never)
    private static func storeString(
        _ start: UnsafeRawPointer, count: Int, into target: UnsafeMutableRawPointer,
        storages: UnsafeMutablePointer<AnyObject?>?, slot: Int
    ) -> Bool {
        if let storages, slot >= 0, count >= NativeASCIIString.minimumCount, count <= NativeASCIIString.maximumCount,
           BinaryReader.isASCII(start, count: count),
           NativeASCIIString.rewrite(from: storages + slot, with: start, count: count, into: target) {
            return true
        }
        guard let string = BinaryReader.validUTF8String(start, count: count) else { return false }
        target.initializeMemory(as: String.self, to: string)
        return true
    }

    /// The fewer than 16 bytes from `position` to `end` as two little-endian words, the bytes past `end` zero.
    @inline(__always)
    private static func tailWords(_ base: UnsafeRawPointer, at position: Int, end: Int) -> (UInt64, UInt64) {
        if end >= 16 {
            // The 16 bytes that end at `end`, shifted down to start at `position`.
            let window = UInt128(UInt64(littleEndian: base.loadUnaligned(fromByteOffset: end &- 8, as: UInt64.self))) << 64
                | UInt128(UInt64(littleEndian: base.loadUnaligned(fromByteOffset: end &- 16, as: UInt64.self)))
            let shifted = window >> (8 &* (16 &- (end &- position)))
            return (UInt64(truncatingIfNeeded: shifted), UInt64(truncatingIfNeeded: shifted >> 64))
        }
        return shortTailWords(base, at: position, end: end)
    }

    /// ``tailWords(_:at:end:)`` of bytes shorter than 16 in all (out of line: its buffer on the stack is rare).
    @inline(never)
    private static func shortTailWords(_ base: UnsafeRawPointer, at position: Int, end: Int) -> (UInt64, UInt64) {
        var words: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &words) { $0.baseAddress.unsafelyUnwrapped.copyMemory(from: base + position, byteCount: end &- position) }
        return (UInt64(littleEndian: words.0), UInt64(littleEndian: words.1))
    }

    /// The varint at `position` and the position after it, or `nil` when it runs past `end` or overflows: what
    /// ``VarInt/read(_:at:limit:)`` reads, inline (the position stays in a register).
    @inline(__always)
    private static func varint(_ base: UnsafeRawPointer, at position: Int, end: Int) -> (UInt64, Int)? {
        // One byte (a string's length, a small number), two or three (a number below 2^21) without the loop's checks.
        if position < end {
            let first = UInt64(base.load(fromByteOffset: position, as: UInt8.self))
            if first < 0x80 { return (first, position &+ 1) }
            if end &- position >= 3 {
                let second = UInt64(base.load(fromByteOffset: position &+ 1, as: UInt8.self))
                if second < 0x80 { return (first & 0x7F | second &<< 7, position &+ 2) }
                let third = UInt64(base.load(fromByteOffset: position &+ 2, as: UInt8.self))
                if third < 0x80 { return (first & 0x7F | (second & 0x7F) &<< 7 | third &<< 14, position &+ 3) }
            }
        }
        return longVarint(base, at: position, end: end)
    }

    /// ``varint(_:at:end:)`` past its first bytes: the loop, out of line.
    @inline(never)
    private static func longVarint(_ base: UnsafeRawPointer, at position: Int, end: Int) -> (UInt64, Int)? {
        var next = position
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while next < end {
            let byte = base.load(fromByteOffset: next, as: UInt8.self)
            next &+= 1
            if shift == 63 && byte > 1 { return nil }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return (result, next) }
            shift &+= 7
        }
        return nil
    }

    /// The plan for `T`, learned from the calls `recorder` saw while `value` was decoded; `nil` when `T` does not
    /// qualify.
    static func learn<T>(_ type: T.Type, value: T, recorder: FlatCallRecorder) -> FlatDecodePlan? {
        guard !recorder.unsupported, recorder.containers == 1, !recorder.calls.isEmpty else { return nil }
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .struct, mirror.superclassMirror == nil else { return nil }
        let children = Array(mirror.children)
        guard children.count == recorder.calls.count else { return nil }
        var fields: [Field] = []
        var offset = 0
        var alignment = 1
        for (child, call) in zip(children, recorder.calls) {
            guard child.label == call.key, let kind = FlatFieldKind(Swift.type(of: child.value)), kind == call.kind else { return nil }
            offset = (offset + kind.alignment - 1) / kind.alignment * kind.alignment
            fields.append(Field(key: call.key, kind: kind, offset: offset))
            offset += kind.size
            alignment = max(alignment, kind.alignment)
        }
        guard offset == MemoryLayout<T>.size, alignment == MemoryLayout<T>.alignment else { return nil }
        // Every property holds, bit for bit, what its call returned.
        var copy = value
        let matches = withUnsafeBytes(of: &copy) { memory in
            zip(fields, recorder.calls).allSatisfy { field, call in
                call.bits.count == field.kind.size
                    && memory[field.offset..<(field.offset + field.kind.size)].elementsEqual(call.bits)
            }
        }
        return matches ? FlatDecodePlan(fields: fields, size: offset) : nil
    }
}

/// Stack room for one value being decoded by the fast path: 256 bytes, 16-byte aligned.
struct FlatScratch {
    var low = SIMD16<UInt64>()
    var high = SIMD16<UInt64>()
}

/// What the binary codec knows of each type it decoded: its plan, or that it has none.
enum FlatDecodePlans {
    enum Entry {
        case plan(FlatDecodePlan)
        case general

        /// The plan, when the type has one.
        var plan: FlatDecodePlan? {
            if case .plan(let plan) = self { return plan }
            return nil
        }
    }

    private static let entries = Mutex<[ObjectIdentifier: Entry]>([:])

    static func entry(for type: Any.Type) -> Entry? {
        entries.withLock { $0[ObjectIdentifier(type)] }
    }

    static func remember(_ entry: Entry, for type: Any.Type) {
        entries.withLock { $0[ObjectIdentifier(type)] = entry }
    }
}

// MARK: Recording

/// Notes the calls an `init(from:)` makes on a ``FlatRecordingDecoder``.
final class FlatCallRecorder {
    struct Call {
        let key: String
        let kind: FlatFieldKind
        /// The returned value's bits.
        let bits: [UInt8]
    }

    var calls: [Call] = []
    var containers = 0
    /// Set by any call the fast path does not reproduce.
    var unsupported = false
}

/// A decoder that forwards to the binary codec's decoder and records, in a ``FlatCallRecorder``, what is asked of it.
struct FlatRecordingDecoder: Decoder {
    let base: any Decoder
    let recorder: FlatCallRecorder

    var codingPath: [any CodingKey] { base.codingPath }
    var userInfo: [CodingUserInfoKey: Any] { base.userInfo }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        recorder.containers += 1
        return KeyedDecodingContainer(FlatRecordingContainer(base: try base.container(keyedBy: type), recorder: recorder))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        recorder.unsupported = true
        return try base.unkeyedContainer()
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        recorder.unsupported = true
        return try base.singleValueContainer()
    }
}

/// The keyed container of ``FlatRecordingDecoder``.
struct FlatRecordingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let base: KeyedDecodingContainer<Key>
    let recorder: FlatCallRecorder

    var codingPath: [any CodingKey] { base.codingPath }
    var allKeys: [Key] {
        recorder.unsupported = true
        return base.allKeys
    }

    func contains(_ key: Key) -> Bool {
        recorder.unsupported = true
        return base.contains(key)
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        recorder.unsupported = true
        return try base.decodeNil(forKey: key)
    }

    private func record<T>(_ value: T, _ key: Key) -> T {
        if let kind = FlatFieldKind(T.self) {
            var copy = value
            recorder.calls.append(.init(key: key.stringValue, kind: kind, bits: withUnsafeBytes(of: &copy) { Array($0) }))
        } else {
            recorder.unsupported = true
        }
        return value
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { record(try base.decode(type, forKey: key), key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { record(try base.decode(type, forKey: key), key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { record(try base.decode(type, forKey: key), key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { record(try base.decode(type, forKey: key), key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { record(try base.decode(type, forKey: key), key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { record(try base.decode(type, forKey: key), key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { record(try base.decode(type, forKey: key), key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { record(try base.decode(type, forKey: key), key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { record(try base.decode(type, forKey: key), key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { record(try base.decode(type, forKey: key), key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { record(try base.decode(type, forKey: key), key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { record(try base.decode(type, forKey: key), key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { record(try base.decode(type, forKey: key), key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { record(try base.decode(type, forKey: key), key) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let value = try base.decode(type, forKey: key)
        // Date is the one non-primitive the fast path writes (the general path reads it by its tag, not its Codable).
        if T.self == Date.self { return record(value, key) }
        recorder.unsupported = true
        return value
    }

    // decodeIfPresent's default implementations call contains and decodeNil, which mark the type unsupported.

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        recorder.unsupported = true
        return try base.nestedContainer(keyedBy: type, forKey: key)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        recorder.unsupported = true
        return try base.nestedUnkeyedContainer(forKey: key)
    }

    func superDecoder() throws -> any Decoder {
        recorder.unsupported = true
        return try base.superDecoder()
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        recorder.unsupported = true
        return try base.superDecoder(forKey: key)
    }
}
