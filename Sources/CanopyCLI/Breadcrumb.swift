import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a contained child is (see ``CrashContainment``): written by the child into a page it shares with its
/// parent, read by the parent after the child died by a signal. Writing is a few stores into memory — cheap enough
/// for every entry of a table walk — and does nothing when the process is not a contained child.
///
/// The page: bytes 0..<8 the entries read in the current table, 8..<16 that table's entry count, 16..<24 its leaf
/// pages, 24..<28 the last key's length; 32..<288 the last key; 288..<1312 the phase (text, NUL-terminated);
/// 1312..<4096 the database path.
enum Breadcrumb {
    static let size = 4096
    private static let keyOffset = 32
    private static let keyCapacity = 256
    private static let phaseOffset = 288
    private static let phaseCapacity = 1024
    private static let pathOffset = 1312

    // nonisolated(unsafe): set once, at the start of a contained child's `main`, before any other thread runs; the
    // page itself is only written by the command's thread (one command per process).
    nonisolated(unsafe) private static var page: UnsafeMutableRawPointer?

    /// Maps the page the parent created (in a contained child).
    static func attach(descriptor: Int32) {
        let mapped = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0)
        close(descriptor)
        guard let mapped, mapped != MAP_FAILED else { return }
        page = mapped
    }

    /// Records what the command does now (and forgets the table position).
    static func phase(_ text: String) {
        guard let page else { return }
        page.storeBytes(of: 0, toByteOffset: 0, as: UInt64.self)
        page.storeBytes(of: 0, toByteOffset: 8, as: UInt64.self)
        page.storeBytes(of: 0, toByteOffset: 16, as: UInt64.self)
        page.storeBytes(of: 0, toByteOffset: 24, as: UInt32.self)
        store(text, at: phaseOffset, capacity: phaseCapacity)
    }

    /// Records the database the command opens.
    static func database(_ path: String) {
        store(path, at: pathOffset, capacity: size - pathOffset)
    }

    /// Records the table being walked: its entry count and leaf pages (from its statistics).
    static func table(entries: Int, leafPages: Int) {
        guard let page else { return }
        page.storeBytes(of: 0, toByteOffset: 0, as: UInt64.self)
        page.storeBytes(of: UInt64(entries), toByteOffset: 8, as: UInt64.self)
        page.storeBytes(of: UInt64(leafPages), toByteOffset: 16, as: UInt64.self)
    }

    /// Records that `count` entries of the table were read, the last with `key`.
    @inline(__always)
    static func entry(_ count: Int, key: UnsafeRawBufferPointer) {
        guard let page else { return }
        let length = min(key.count, keyCapacity)
        if length > 0, let base = key.baseAddress { (page + keyOffset).copyMemory(from: base, byteCount: length) }
        page.storeBytes(of: UInt32(length), toByteOffset: 24, as: UInt32.self)
        page.storeBytes(of: UInt64(count), toByteOffset: 0, as: UInt64.self)
    }

    private static func store(_ text: String, at offset: Int, capacity: Int) {
        guard let page else { return }
        let bytes = Array(text.utf8.prefix(capacity - 1))
        bytes.withUnsafeBytes { source in
            // An empty text has no bytes to copy (and may have no base address).
            guard let base = source.baseAddress else { return }
            (page + offset).copyMemory(from: base, byteCount: source.count)
        }
        page.storeBytes(of: 0, toByteOffset: offset + bytes.count, as: UInt8.self)
    }

    /// What a child recorded.
    struct Record {
        var phase = ""
        var databasePath = ""
        var entriesRead = 0
        var tableEntries = 0
        var tableLeafPages = 0
        var lastKey: [UInt8] = []
    }

    /// The parent's side: creates the page (a deleted temporary file, so nothing is left behind) and reads it.
    struct Reader {
        let descriptor: Int32
        let page: UnsafeMutableRawPointer

        static func create() -> Reader? {
            var template = Array((NSTemporaryDirectory() + "/canopy-breadcrumb-XXXXXX").utf8CString)
            let descriptor = template.withUnsafeMutableBufferPointer { buffer in buffer.baseAddress.map { mkstemp($0) } ?? -1 }
            guard descriptor >= 0 else { return nil }
            template.withUnsafeBufferPointer { buffer in _ = buffer.baseAddress.map { unlink($0) } }
            guard ftruncate(descriptor, off_t(Breadcrumb.size)) == 0,
                  let mapped = mmap(nil, Breadcrumb.size, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0), mapped != MAP_FAILED
            else {
                close(descriptor)
                return nil
            }
            return Reader(descriptor: descriptor, page: mapped)
        }

        func read() -> Record {
            func text(_ offset: Int, _ capacity: Int) -> String {
                let bytes = UnsafeRawBufferPointer(start: page + offset, count: capacity)
                return String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            let keyLength = min(Int(page.load(fromByteOffset: 24, as: UInt32.self)), Breadcrumb.keyCapacity)
            return Record(
                phase: text(Breadcrumb.phaseOffset, Breadcrumb.phaseCapacity), databasePath: text(Breadcrumb.pathOffset, Breadcrumb.size - Breadcrumb.pathOffset),
                entriesRead: Int(page.load(fromByteOffset: 0, as: UInt64.self)), tableEntries: Int(page.load(fromByteOffset: 8, as: UInt64.self)),
                tableLeafPages: Int(page.load(fromByteOffset: 16, as: UInt64.self)),
                lastKey: Array(UnsafeRawBufferPointer(start: page + Breadcrumb.keyOffset, count: keyLength)))
        }
    }
}
