import CCRC32C

/// CRC32C, the checksum of the values of a checksummed ``Database`` (and of anything else that wants one).
///
/// Computed with the CPU's crc32 instruction where it has one (SSE4.2 on x86-64, the CRC extension on ARMv8), with a
/// table otherwise; both give the same result.
public enum CRC32C {
    /// The CRC32C of `bytes`, continuing `crc` (start with 0; pass one call's result to the next to checksum a value
    /// spread over several buffers).
    public static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        canopy_crc32c(crc, bytes.baseAddress, bytes.count)
    }

    /// The CRC32C of `bytes`.
    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }

    /// The checksum computed with the table only, never the instruction (tests compare the two).
    public static func portableChecksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        canopy_crc32c_portable(crc, bytes.baseAddress, bytes.count)
    }

    /// Whether ``checksum(_:continuing:)`` uses a CPU instruction.
    public static var isHardwareAccelerated: Bool { canopy_crc32c_is_hardware() != 0 }
}

/// The 4-byte trailer of a value in a checksummed ``Database``: the CRC32C of the key followed by the value's bytes,
/// big-endian. Covering the key too means a value that moved to another key (a damaged branch or leaf) fails as well.
///
/// The one encode/verify pair: `seal(_:key:)` writes the trailer after the payload; ``payload(of:key:)`` checks it
/// and returns the payload. Every read and write of a checksummed database goes through them.
public enum ValueChecksum {
    /// Bytes the trailer adds to each value.
    public static let size = 4

    /// The checksum of `payload` stored under `key`.
    @usableFromInline
    static func compute(key: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer) -> UInt32 {
        canopy_crc32c_pair(key.baseAddress, key.count, payload.baseAddress, payload.count)
    }

    /// Writes the trailer into the last ``size`` bytes of `stored`, whose other bytes are the payload.
    @usableFromInline
    static func seal(_ stored: UnsafeMutableRawBufferPointer, key: UnsafeRawBufferPointer) {
        let payloadCount = stored.count - size
        let crc = compute(key: key, payload: UnsafeRawBufferPointer(rebasing: stored[..<payloadCount]))
        stored.storeBytes(of: crc.bigEndian, toByteOffset: payloadCount, as: UInt32.self)
    }

    /// The payload of `stored` (the value without its trailer), or `nil` when the value is shorter than a trailer or
    /// its trailer does not match the key and payload.
    public static func payload(of stored: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        let payloadCount = canopy_crc32c_sealed_payload_length(key.baseAddress, key.count, stored.baseAddress, stored.count)
        guard payloadCount >= 0, let base = stored.baseAddress else { return nil }
        return UnsafeRawBufferPointer(start: base, count: payloadCount)
    }

    /// `payload` followed by its trailer for `key`: the bytes a checksummed database stores.
    public static func sealed(_ payload: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: payload.count + size) { buffer, count in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            if payload.count > 0 { raw.baseAddress!.copyMemory(from: payload.baseAddress!, byteCount: payload.count) }
            seal(raw, key: key)
            count = payload.count + size
        }
    }

    @usableFromInline
    static func mismatch(_ operation: String, path: String?, database: Database, key: UnsafeRawBufferPointer) -> LMDBError {
        LMDBError(code: .checksumMismatch, operation: operation, path: path, database: database.name,
                  hint: "A stored value does not match its checksum: the file was changed outside LMDB (a damaged disk or a copy cut short). Restore a backup",
                  key: Array(key))
    }
}
