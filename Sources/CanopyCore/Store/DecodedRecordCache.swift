import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The last decoded value of one small store record that rarely changes (the attachment slots), kept with the bytes
/// it was decoded from: a read whose stored bytes are the same returns it without decoding again.
///
/// Equal bytes decode to equal values, so a hit is the value a decode would give, whichever process or transaction
/// wrote the record and whatever snapshot a reader is at: nothing is assumed about when the record changes. Every
/// write transaction with extensions and every observer advance reads the attachment slots; decoding them (a dictionary
/// of extension names) cost more than reading them from LMDB. (The state record changes at every commit: remembering
/// it cost a write transaction more than its decode.)
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
        let copy = Array(bytes)
        last.withLock { $0 = (copy, value) }
        return value
    }
}
