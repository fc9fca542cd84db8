import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The last decoded value of one small store record (the `state` record, the attachment slots), kept with the bytes
/// it was decoded from: a read whose stored bytes are the same returns it without decoding again.
///
/// Equal bytes decode to equal values, so a hit is the value a decode would give, whichever process or transaction
/// wrote the record and whatever snapshot a reader is at: nothing is assumed about when the record changes. Each write
/// transaction and each observer advance reads both records; decoding them (a dictionary of extension names each)
/// cost more than reading them from LMDB.
final class DecodedRecordCache<Value: Sendable>: Sendable {
    private let last = Mutex<(bytes: [UInt8], value: Value)?>(nil)

    /// The value of `bytes`: the remembered one when the bytes are the remembered bytes, otherwise `decode(bytes)`,
    /// remembered.
    func value(of bytes: UnsafeRawBufferPointer, decode: (UnsafeRawBufferPointer) throws -> Value) rethrows -> Value {
        if let hit = last.withLock({ last -> Value? in
            guard let last, last.bytes.count == bytes.count else { return nil }
            let same = bytes.isEmpty || last.bytes.withUnsafeBytes { memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }
            return same ? last.value : nil
        }) {
            return hit
        }
        let value = try decode(bytes)
        remember(bytes, as: value)
        return value
    }

    /// Remembers that `bytes` decode to `value` (a writer that has both: the next read of the bytes it wrote decodes
    /// nothing). Whether the write then commits does not matter: the pair stays true.
    func remember(_ bytes: UnsafeRawBufferPointer, as value: Value) {
        let copy = Array(bytes)
        last.withLock { $0 = (copy, value) }
    }
}
