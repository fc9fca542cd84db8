/// Strings of at most 15 ASCII bytes made from their bytes with two loads and a few shifts: the binary codec's way to
/// make the short strings of a decoded value (a title, a tag, a key), which the standard library stores inline in the
/// `String` itself (a "small" string: the bytes, then a byte holding the count and the flags of an immortal, small,
/// ASCII string).
///
/// `String(unsafeUninitializedCapacity:initializingUTF8With:)` makes the same string in about 85 instructions (a call
/// through a closure, a check of the bytes it has just been given); this makes it in about 15. It is used only where
/// it gives, bit for bit, the string the standard library makes of the same bytes: ``isExact`` checks that once per
/// process, for every length and several byte patterns, against `String(decoding:as:)`; where it does not hold (another
/// layout, another platform), callers make strings the standard library's way.
enum SmallASCIIString {
    /// The longest string made here (the inline capacity of a `String` on 64-bit platforms).
    static let maximumCount = 15

    /// Whether ``make(_:count:)`` gives the standard library's own string for every ASCII input of 1 to 15 bytes on
    /// this platform: checked once, bit for bit, against `String(decoding:as:)`.
    static let isExact: Bool = checkLayout()

    /// The string of the `count` bytes at `start`, which must be 0 to 15 bytes of ASCII (callers check both; only when
    /// ``isExact``).
    @inline(__always)
    static func make(_ start: UnsafeRawPointer, count: Int) -> String {
        let (low, high) = words(start, count: count)
        return unsafeBitCast((low, high | flags(count: count)), to: String.self)
    }

    /// The top byte of a small ASCII string's second word, in place: immortal (bit 7), ASCII (bit 6), small (bit 5),
    /// then the count (0 to 15).
    @inline(__always)
    static func flags(count: Int) -> UInt64 {
        UInt64(truncatingIfNeeded: 0xE0 | count) &<< 56
    }

    /// Initializes the `String` at `target` (uninitialized, aligned) with the small string whose bytes are `low` and
    /// `high` (from ``words(_:count:)``: ASCII, `count` of them), by storing its two words: no `String` value is made,
    /// so none is retained (a small string is immortal). Only when ``isExact``.
    @inline(__always)
    static func initialize(_ target: UnsafeMutableRawPointer, low: UInt64, high: UInt64, count: Int) {
        target.storeBytes(of: low, as: UInt64.self)
        target.storeBytes(of: high | flags(count: count), toByteOffset: 8, as: UInt64.self)
    }

    /// The `count` (0 to 15) bytes at `start` as two little-endian words, the bytes past `count` zero; never a load
    /// outside the bytes. The bytes are ASCII exactly when `(low | high) & 0x8080_8080_8080_8080 == 0`.
    @inline(__always)
    static func words(_ start: UnsafeRawPointer, count: Int) -> (low: UInt64, high: UInt64) {
        if count >= 8 {
            let low = UInt64(littleEndian: start.loadUnaligned(as: UInt64.self))
            guard count > 8 else { return (low, 0) }
            // The 8 bytes that end at `count`, shifted down to start at byte 8.
            let tail = UInt64(littleEndian: start.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self))
            return (low, tail &>> UInt64(8 &* (16 &- count)))
        }
        if count >= 4 {
            // Two 4-byte loads, the second overlapping the first (the same bytes in the same places).
            let head = UInt64(UInt32(littleEndian: start.loadUnaligned(as: UInt32.self)))
            let tail = UInt64(UInt32(littleEndian: start.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self)))
            return (head | tail &<< UInt64(8 &* (count &- 4)), 0)
        }
        var low: UInt64 = 0
        for index in 0..<count { low |= UInt64(start.load(fromByteOffset: index, as: UInt8.self)) &<< UInt64(8 &* index) }
        return (low, 0)
    }

    /// Compares ``make(_:count:)`` and ``initialize(_:low:high:count:)`` with `String(decoding:as:)`, bit for bit and as
    /// strings, for every length from 0 to 15 and several patterns of ASCII bytes (NUL and DEL among them).
    static func checkLayout() -> Bool {
        guard MemoryLayout<String>.size == 16, MemoryLayout<(UInt64, UInt64)>.size == 16 else { return false }
        let alphabet = Array("\u{0}The quick brown fox jumps over 0123456789 {}~\u{7F}".utf8)
        for count in 0...maximumCount {
            for pattern in 0..<5 {
                let bytes = (0..<count).map { alphabet[($0 &* 7 &+ pattern &* 11) % alphabet.count] }
                let expected = String(decoding: bytes, as: UTF8.self)
                // (A buffer of at least one byte, so that an empty input has an address too.)
                let padded = bytes + [0x21]
                let made = padded.withUnsafeBytes { buffer in buffer.baseAddress.map { make($0, count: count) } } ?? "-"
                var stored = ""
                let words: (low: UInt64, high: UInt64) = padded.withUnsafeBytes { buffer in buffer.baseAddress.map { Self.words($0, count: count) } } ?? (0, 0)
                withUnsafeMutableBytes(of: &stored) { target in
                    guard let base = target.baseAddress else { return }
                    initialize(base, low: words.low, high: words.high, count: count)
                }
                let expectedBits = unsafeBitCast(expected, to: (UInt64, UInt64).self)
                guard unsafeBitCast(made, to: (UInt64, UInt64).self) == expectedBits,
                      unsafeBitCast(stored, to: (UInt64, UInt64).self) == expectedBits,
                      made == expected, stored == expected, made.utf8.count == count, Array(made.utf8) == bytes,
                      (words.low | words.high) & 0x8080_8080_8080_8080 == 0
                else { return false }
            }
        }
        return true
    }
}
