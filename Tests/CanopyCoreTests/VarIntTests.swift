import CanopyCore
import CanopyTestSupport
import Testing

/// The one variable-length integer code (``VarInt``): what it writes is LEB128, reads give back what was written,
/// and malformed bytes are a typed failure, never a trap.
@Suite("VarInt: the one variable-length integer code")
struct VarIntTests {
    /// The reference encoding, written out bit by bit (independent of ``VarInt``).
    static func leb128(_ value: UInt64) -> [UInt8] {
        var bytes: [UInt8] = []
        var rest = value
        repeat {
            let group = UInt8(rest & 0x7F)
            rest >>= 7
            bytes.append(rest == 0 ? group : group | 0x80)
        } while rest != 0
        return bytes
    }

    @Test("Random values and edges round-trip through append, write and read, with the reference bytes", arguments: [19 as UInt64, 1_919])
    func roundTrip(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        let edges: [UInt64] = [0, 1, 127, 128, 255, 16_383, 16_384, UInt64(UInt32.max), UInt64(Int64.max), UInt64(Int64.max) + 1, .max]
        let values = edges + (0..<2_000).map { _ in UInt64.random(in: 0...UInt64.max, using: &random) >> UInt64.random(in: 0..<64, using: &random) }
        for value in values {
            var appended: [UInt8] = []
            VarInt.append(value, to: &appended)
            #expect(appended == Self.leb128(value), "seed \(seed) value \(value)")
            #expect(VarInt.size(of: value) == appended.count, "seed \(seed) value \(value)")
            var written = [UInt8](repeating: 0xEE, count: VarInt.maxSize + 1)
            let count = written.withUnsafeMutableBytes { VarInt.write(value, to: $0.baseAddress!) }
            #expect(Array(written.prefix(count)) == appended && written[count] == 0xEE, "seed \(seed) value \(value)")
            let (read, end) = appended.withUnsafeBytes { buffer -> (UInt64?, Int) in
                var offset = 0
                return (VarInt.read(buffer, at: &offset), offset)
            }
            #expect(read == value && end == appended.count, "seed \(seed) value \(value)")
        }
    }

    @Test("A value cut short or past 64 bits is Malformed, with its offset and kind")
    func malformed() {
        func failure(_ bytes: [UInt8], limit: Int? = nil) -> VarInt.Malformed? {
            bytes.withUnsafeBytes { buffer -> VarInt.Malformed? in
                var offset = 0
                do {
                    _ = try VarInt.read(buffer.baseAddress!, at: &offset, limit: limit ?? buffer.count)
                    return nil
                } catch {
                    return error as? VarInt.Malformed
                }
            }
        }
        #expect(failure([0x80]) == VarInt.Malformed(offset: 1, isOverflow: false))
        #expect(failure([0xFF, 0xFF, 0x01], limit: 2) == VarInt.Malformed(offset: 2, isOverflow: false))
        // Ten bytes whose last carries more than the 64th bit.
        #expect(failure([UInt8](repeating: 0xFF, count: 9) + [0x02]) == VarInt.Malformed(offset: 9, isOverflow: true))
        #expect(failure([UInt8](repeating: 0xFF, count: 9) + [0x01]) == nil)
        // An endless run of continuation bytes stops at the overflow, not the end of memory.
        #expect(failure([UInt8](repeating: 0x80, count: 64))?.isOverflow == true)
        let empty: [UInt8] = []
        #expect(empty.withUnsafeBytes { buffer in
            var offset = 0
            return VarInt.read(buffer, at: &offset)
        } == nil)
        // A value larger than Int.max is not an Int.
        var big: [UInt8] = []
        VarInt.append(UInt64(Int.max) + 1, to: &big)
        #expect(big.withUnsafeBytes { buffer in
            var offset = 0
            return VarInt.readInt(buffer, at: &offset)
        } == nil)
    }
}
