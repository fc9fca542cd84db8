/// The heap storage of a native ASCII string, rewritten in place with other ASCII bytes: the binary codec's way to give
/// a scan's next row the storage of a string the scan's closure let go of, instead of freeing it and allocating another
/// (a row of a scan of a struct holding a 16- to 63-byte string otherwise pays a `malloc`, a copy through the standard
/// library's string maker, and a `free` with its release: about 500 instructions of the row's 1,500).
///
/// A string of more than 15 bytes lives in a `__StringStorage` object: the object's header (class, reference counts),
/// its capacity (which counts the terminating NUL), its count and flags, then the bytes and a NUL. The `String` itself
/// holds the same count and flags, then the object's address. A storage is rewritten only when it is known to be
/// referenced by that string alone — `isKnownUniquelyReferenced`, the check `String` itself makes before it writes its
/// storage in place — when it holds ASCII without breadcrumbs (a storage of a string of fewer than 64 bytes has none),
/// and when its capacity holds the new bytes and their NUL. The new string is then, word for word, the string
/// `String(decoding:as:)` makes of the same bytes, but for its storage's address and capacity.
///
/// All of that is the standard library's private layout: ``isExact`` checks it once per process, bit for bit and by
/// behaviour, against strings the standard library makes (every length from 16 to 63 bytes, and rewrites from each to
/// the shortest, the same and the longest length its capacity holds); where it does not hold, nothing is rewritten and
/// strings are made the standard
/// library's way.
enum NativeASCIIString {
    /// The shortest string kept in a heap storage (one more than a small string holds).
    static let minimumCount = SmallASCIIString.maximumCount + 1
    /// The longest string written into a reused storage: a storage for 64 bytes or more may carry breadcrumbs.
    static let maximumCount = 63

    /// The flags of a native, tail-allocated ASCII (hence NFC) string, in the top nibble of its count word.
    static let flags: UInt64 = 0xF000_0000_0000_0000

    /// Offsets in the storage object: its capacity (with the terminating NUL), its count and flags, its bytes.
    private static let capacityOffset = 16
    private static let countOffset = 24
    private static let bytesOffset = 32

    /// Whether the layout above is the standard library's on this platform: checked once.
    static let isExact: Bool = checkLayout()

    /// The storage of the string at `target` when it is a native ASCII string of 16 to 63 bytes whose storage can be
    /// rewritten for another such string (no flags beside its capacity), else `nil`. Says nothing of who else holds
    /// it: see ``isUniquelyReferenced(_:)``. Only when ``isExact``.
    @inline(__always)
    static func rewritableStorage(of target: UnsafeRawPointer) -> UnsafeMutableRawPointer? {
        let count = target.load(as: UInt64.self)
        let object = target.load(fromByteOffset: 8, as: UInt64.self)
        // The count word: these flags and 16 to 63; the object word: an address, no discriminator bits (native).
        guard count &- (flags | UInt64(minimumCount)) <= UInt64(maximumCount &- minimumCount), object >> 56 == 0,
              let storage = UnsafeMutableRawPointer(bitPattern: UInt(object)),
              storage.load(fromByteOffset: countOffset, as: UInt64.self) == count,
              storage.load(fromByteOffset: capacityOffset, as: UInt64.self) <= UInt64(maximumCount &+ 1)
        else { return nil }
        return storage
    }

    /// Whether `slot` holds no storage (read without retaining what it holds).
    @inline(__always)
    static func isEmpty(_ slot: UnsafeMutablePointer<AnyObject?>) -> Bool {
        UnsafeRawPointer(slot).load(as: UnsafeRawPointer?.self) == nil
    }

    /// Moves the reference of the string at `target` (whose storage ``rewritableStorage(of:)`` found) into `slot`
    /// (`nil`) and keeps it there when nothing else holds the storage (`isKnownUniquelyReferenced`), else releases it.
    /// Either way the string at `target` is destroyed (its memory left uninitialized). Returns whether it was kept.
    @inline(__always)
    static func keepIfUnique(_ target: UnsafeMutableRawPointer, in slot: UnsafeMutablePointer<AnyObject?>) -> Bool {
        // The string's object word is the storage's reference (a native string's holds no other bits): moved, so
        // neither retained nor released.
        slot.pointee = (target + 8).assumingMemoryBound(to: AnyObject.self).move()
        if isKnownUniquelyReferenced(&slot.pointee) { return true }
        slot.pointee = nil
        return false
    }

    /// Writes the `count` ASCII bytes at `start` into the storage `slot` holds (from ``keepIfUnique(_:in:)``), and
    /// moves its reference into the string it stores at `target` (uninitialized), emptying the slot. Returns `false`,
    /// changing nothing, when the slot is empty, its storage's capacity is too small or `count` is outside 16 to 63;
    /// the caller checks that the bytes are ASCII.
    @inline(__always)
    static func rewrite(
        from slot: UnsafeMutablePointer<AnyObject?>, with start: UnsafeRawPointer, count: Int, into target: UnsafeMutableRawPointer
    ) -> Bool {
        // The slot's reference read as an address (no retain: the slot keeps it until it is moved below).
        guard count >= minimumCount, count <= maximumCount,
              let storage = UnsafeRawPointer(slot).load(as: UnsafeMutableRawPointer?.self),
              UInt64(count) < storage.load(fromByteOffset: capacityOffset, as: UInt64.self) else { return false }
        write(start, count: count, into: storage, string: target)
        (target + 8).initializeMemory(as: AnyObject?.self, to: slot.move())
        slot.initialize(to: nil)
        return true
    }

    /// Writes the `count` (16 to 63, fewer than the storage's capacity) ASCII bytes at `start` and their NUL into
    /// `storage`, and the count and flags into it and into the string's count word at `string`.
    @inline(__always)
    private static func write(_ start: UnsafeRawPointer, count: Int, into storage: UnsafeMutableRawPointer, string target: UnsafeMutableRawPointer) {
        let bytes = storage + bytesOffset
        // Whole words, the last one ending at `count` (it overlaps the one before: no call to `memcpy`).
        var index = 0
        while index &+ 8 < count {
            bytes.storeBytes(of: start.loadUnaligned(fromByteOffset: index, as: UInt64.self), toByteOffset: index, as: UInt64.self)
            index &+= 8
        }
        bytes.storeBytes(of: start.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self), toByteOffset: count &- 8, as: UInt64.self)
        bytes.storeBytes(of: 0, toByteOffset: count, as: UInt8.self)
        let countAndFlags = flags | UInt64(count)
        storage.storeBytes(of: countAndFlags, toByteOffset: countOffset, as: UInt64.self)
        target.storeBytes(of: countAndFlags, as: UInt64.self)
    }

    /// Sets `string` to the string `String(decoding:as:)` makes of `bytes`: written into the storage `string` holds when
    /// nothing else holds it (the closure that saw the string kept no copy of it) and the bytes are 16 to 63 of ASCII
    /// that its capacity holds, else made by `String(decoding:as:)` (which replaces invalid UTF-8, as a scan's keys
    /// are made). Only rewrites when ``isExact``.
    @inline(__always)
    static func assign(_ string: inout String, decoding bytes: UnsafeRawBufferPointer) {
        let count = bytes.count
        if isExact, count >= minimumCount, count <= maximumCount, let start = bytes.baseAddress,
           BinaryReader.isASCII(start, count: count) {
            let rewritten = withUnsafeMutableBytes(of: &string) { raw -> Bool in
                let target = raw.baseAddress.unsafelyUnwrapped
                // Uniqueness checked on the string's own reference, in place (`isKnownUniquelyReferenced` on its object
                // word: nothing moved, retained or released).
                guard let storage = rewritableStorage(of: target),
                      UInt64(count) < storage.load(fromByteOffset: capacityOffset, as: UInt64.self),
                      isKnownUniquelyReferenced(&(target + 8).assumingMemoryBound(to: AnyObject.self).pointee)
                else { return false }
                write(start, count: count, into: storage, string: target)
                return true
            }
            if rewritten { return }
        }
        string = String(decoding: bytes, as: UTF8.self)
    }

    /// Checks the layout against strings made by `String(decoding:as:)`: for every length from 16 to 63 and two
    /// patterns, the words of the string and its storage, and that a storage held twice is not kept; then, for each
    /// length, rewrites to the shortest, the same and the longest length its capacity holds, compared with the standard
    /// library's string of the same bytes word for word (but the address and the capacity) and by behaviour (equality,
    /// hash, views, a C string, appending to a copy). About 0.3 ms, once per process.
    static func checkLayout() -> Bool {
        guard MemoryLayout<String>.size == 16, MemoryLayout<UInt>.size == 8 else { return false }
        let alphabet = Array("The quick brown fox jumps over the lazy dog 0123456789 {}~\u{0}\u{7F}".utf8)
        func bytes(_ count: Int, _ pattern: Int) -> [UInt8] {
            (0..<count).map { alphabet[($0 &* 7 &+ pattern &* 13) % alphabet.count] }
        }
        func words(_ string: inout String) -> (UInt64, UInt64) {
            withUnsafeBytes(of: &string) { ($0.load(as: UInt64.self), $0.load(fromByteOffset: 8, as: UInt64.self)) }
        }
        let slot = UnsafeMutablePointer<AnyObject?>.allocate(capacity: 1)
        slot.initialize(to: nil)
        defer {
            slot.deinitialize(count: 1)
            slot.deallocate()
        }
        for count in minimumCount...maximumCount {
            for pattern in 0..<2 {
                let original = bytes(count, pattern)
                var made = String(decoding: original, as: UTF8.self)
                let (countWord, objectWord) = words(&made)
                let storage: UnsafeMutableRawPointer? = withUnsafeBytes(of: &made) { rewritableStorage(of: $0.baseAddress.unsafelyUnwrapped) }
                guard countWord == flags | UInt64(count), let storage, UInt64(UInt(bitPattern: storage)) == objectWord,
                      storage.load(fromByteOffset: bytesOffset &+ count, as: UInt8.self) == 0,
                      (0..<count).allSatisfy({ storage.load(fromByteOffset: bytesOffset &+ $0, as: UInt8.self) == original[$0] })
                else { return false }
                let capacity = Int(storage.load(fromByteOffset: capacityOffset, as: UInt64.self))
                // Held twice (by an array, which the optimizer cannot fold into `made`): not kept, and released.
                let copies = [made]
                let keptShared = withUnsafeMutableBytes(of: &made) { keepIfUnique($0.baseAddress.unsafelyUnwrapped, in: slot) }
                guard !keptShared, slot.pointee == nil, copies[0] == String(decoding: original, as: UTF8.self) else {
                    // (`made` was destroyed either way: give it a value again before it goes out of scope.)
                    withUnsafeMutableBytes(of: &made) { _ = $0.baseAddress.unsafelyUnwrapped.initializeMemory(as: String.self, to: "") }
                    return false
                }
                withUnsafeMutableBytes(of: &made) { _ = $0.baseAddress.unsafelyUnwrapped.initializeMemory(as: String.self, to: copies[0]) }
                // (Every length's words were checked above: a few rewrites per length check the rewrite itself, and keep
                // the check to about a millisecond.)
                for newCount in Set([minimumCount, count, min(maximumCount, capacity &- 1)]) where pattern == 0 {
                    guard rewrites(count: count, pattern: pattern, to: newCount) else { return false }
                }
            }
        }
        return true

        // A fresh string of `count` bytes rewritten with `newCount` others, compared with the standard library's.
        func rewrites(count: Int, pattern: Int, to newCount: Int) -> Bool {
            var string = String(decoding: bytes(count, pattern), as: UTF8.self)
            let replacement = bytes(newCount, pattern &+ 1)
            let rewritten: Bool = withUnsafeMutableBytes(of: &string) { target in
                let target = target.baseAddress.unsafelyUnwrapped
                guard rewritableStorage(of: target) != nil, keepIfUnique(target, in: slot) else {
                    _ = target.initializeMemory(as: String.self, to: "")
                    return false
                }
                let written = replacement.withUnsafeBytes { rewrite(from: slot, with: $0.baseAddress.unsafelyUnwrapped, count: newCount, into: target) }
                if !written { _ = target.initializeMemory(as: String.self, to: "") }
                return written && slot.pointee == nil
            }
            var expected = String(decoding: replacement, as: UTF8.self)
            guard rewritten, words(&string).0 == words(&expected).0 else { return false }
            var appended = string
            appended.append("!")
            return string == expected && string.hashValue == expected.hashValue && Array(string.utf8) == replacement
                && string.utf8.count == newCount && string.utf16.count == newCount && string.unicodeScalars.count == newCount
                && string.count == expected.count
                && string.withCString { c in (0..<newCount).allSatisfy { UInt8(bitPattern: c[$0]) == replacement[$0] } && c[newCount] == 0 }
                && appended == expected + "!" && string == expected && string.isContiguousUTF8
                && string.dropFirst(3) == expected.dropFirst(3) && string.lowercased() == expected.lowercased()
        }
    }
}
