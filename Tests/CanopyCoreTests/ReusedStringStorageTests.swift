@testable import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// A flat struct with two strings that are often heap strings (16 to 63 bytes), one that sometimes is.
private struct Entry: Codable, Sendable, Equatable, BinaryCodecSynthesizedDecoding {
    var id: Int
    var title: String
    var note: String
    var tag: String
    var done: Bool

    /// Lengths 0 to 80 (small strings, heap strings whose storage a scan may reuse, longer ones), ASCII or not.
    static func random(_ id: Int, using random: inout SeededRandom) -> Entry {
        func text(_ maximum: Int) -> String {
            let letters = random.next() % 5 == 0 ? Array("abcdéf€ghij ") : Array("abcdefghijklmnopqrstuvwxyz 0123456789")
            return String((0..<Int(random.next() % UInt64(maximum + 1))).map { _ in letters[Int(random.next() % UInt64(letters.count))] })
        }
        return Entry(id: id, title: text(20), note: text(80), tag: text(40), done: random.next() % 2 == 0)
    }
}

/// A typed scan writes a row's strings into the storages of the previous row's strings that its closure let go of
/// (``NativeASCIIString``): a string the closure kept, in whatever form, is never written again.
@Suite("A scan's reused string storages")
struct ReusedStringStorageTests {
    private static let entries = TypedCollection<Entry, NoMetadata>("entries")

    /// The layout the reuse relies on is the standard library's here (else nothing is reused, and the scans below
    /// test the ordinary path only).
    @Test func layoutIsTheStandardLibrarys() {
        #expect(NativeASCIIString.isExact)
    }

    /// Every value a scan hands out equals the stored one, whether the closure kept the value, one of its strings, a
    /// substring, a copy inside another value, the UTF-8 bytes' owner, or nothing; the values and strings kept are
    /// still right after the scan (a reused storage held by any of them would have been rewritten by a later row).
    @Test(arguments: [0x5EED_0019 as UInt64, 0x0BAD_CAFE])
    func keptStringsAreNeverRewritten(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let values = (0..<2_000).map { Entry.random($0, using: &random) }
        try withDatabase { database, _ in
            let connection = database.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
            try connection.readWrite { txn in
                for value in values { try txn.set(value, forKey: String(format: "entry-%012d", value.id), in: Self.entries) }
            }
            for pass in 0..<2 {  // the first scan lays out the plan; the second runs with it from its first row
                var keptValues: [Entry] = []
                var keptNotes: [(Int, String)] = []
                var keptSubstrings: [(Int, Substring)] = []
                var keptTags: [(Int, [String: String])] = []
                var seen = 0
                try connection.read { txn in
                    try txn.enumerateObjects(in: Self.entries) { value in
                        #expect(value == values[value.id], "seed \(seed), pass \(pass), row \(value.id)")
                        switch value.id % 5 {
                        case 0: keptValues.append(value)
                        case 1: keptNotes.append((value.id, value.note))
                        case 2: keptSubstrings.append((value.id, value.tag.dropFirst(min(2, value.tag.count))))
                        case 3: keptTags.append((value.id, [value.title: value.tag]))
                        default: break  // nothing kept: its storages may serve the next row
                        }
                        seen += 1
                        return true
                    }
                }
                #expect(seen == values.count, "seed \(seed)")
                for value in keptValues { #expect(value == values[value.id], "seed \(seed), kept row \(value.id)") }
                for (id, note) in keptNotes { #expect(note == values[id].note, "seed \(seed), kept note of row \(id)") }
                for (id, tag) in keptSubstrings {
                    #expect(tag == values[id].tag.dropFirst(min(2, values[id].tag.count)), "seed \(seed), kept substring of row \(id)")
                }
                for (id, map) in keptTags { #expect(map == [values[id].title: values[id].tag], "seed \(seed), kept copy of row \(id)") }
            }
        }
    }

    /// A closure that keeps a string or a key only now and then, through the keyed scan (whose key's storage is reused
    /// too), sees every row and key right, and what it kept stays right; a closure that throws ends the scan with its
    /// error, and the next scan is right.
    @Test func keyedScanAndThrowingClosure() throws {
        var random = SeededRandom(seed: 0x7E57_0019)
        let values = (0..<500).map { Entry.random($0, using: &random) }
        struct Stop: Error {}
        try withDatabase { database, _ in
            let connection = database.newConnection(options: .init(objectCacheLimit: 0, metadataCacheLimit: 0))
            try connection.readWrite { txn in
                for value in values { try txn.set(value, forKey: String(format: "entry-%012d", value.id), in: Self.entries) }
            }
            try connection.read { txn in
                var kept: [String] = []
                var keptKeys: [String] = []
                try txn.enumerateObjects(in: Self.entries) { key, value in
                    #expect(key == String(format: "entry-%012d", value.id) && value == values[value.id], "row \(value.id)")
                    if value.id % 7 == 0 { kept.append(value.note) }
                    // The key (18 bytes: a heap string) kept now and then: the next row's key gets its own storage.
                    if value.id % 3 == 0 { keptKeys.append(key) }
                    return true
                }
                #expect(kept == values.filter { $0.id % 7 == 0 }.map(\.note))
                #expect(keptKeys == values.filter { $0.id % 3 == 0 }.map { String(format: "entry-%012d", $0.id) })
                #expect(throws: Stop.self) {
                    try txn.enumerateObjects(in: Self.entries) { value in
                        if value.id == 250 { throw Stop() }
                        return true
                    }
                }
                var all: [Entry] = []
                try txn.enumerateObjects(in: Self.entries) { value in all.append(value); return true }
                #expect(all == values)
            }
        }
    }

    /// The rewrite itself: a 16- to 63-byte ASCII string's storage held twice is not kept (and the other holder's string
    /// is intact); held once, it is kept, takes other bytes that fit its capacity, and gives the string the standard
    /// library makes of them.
    @Test func rewriteGivesTheStandardLibrarysString() throws {
        try #require(NativeASCIIString.isExact)
        let seed: UInt64 = 0x57A6_0019
        var random = SeededRandom(seed: seed)
        let slot = UnsafeMutablePointer<AnyObject?>.allocate(capacity: 1)
        slot.initialize(to: nil)
        defer {
            slot.deinitialize(count: 1)
            slot.deallocate()
        }
        var rewrites = 0
        for _ in 0..<500 {
            let text = (0..<(16 + Int(random.next() % 48))).map { _ in UInt8(0x20 + random.next() % 95) }
            let replacement = (0..<(16 + Int(random.next() % 48))).map { _ in UInt8(0x20 + random.next() % 95) }
            // Held twice: released, not kept; the other holder's string is as it was.
            var shared = String(decoding: text, as: UTF8.self)
            let holder = [shared]
            let keptShared = withUnsafeMutableBytes(of: &shared) { target in
                #expect(NativeASCIIString.rewritableStorage(of: target.baseAddress!) != nil, "seed \(seed)")
                let kept = NativeASCIIString.keepIfUnique(target.baseAddress!, in: slot)
                target.baseAddress!.initializeMemory(as: String.self, to: "")  // it was destroyed: give it a value
                return kept
            }
            #expect(!keptShared && NativeASCIIString.isEmpty(slot), "seed \(seed): a storage held twice was kept")
            #expect(Array(holder[0].utf8) == text, "seed \(seed)")
            // Held once: kept and rewritten, or refused when the replacement does not fit (the slot keeps it).
            var string = String(decoding: text, as: UTF8.self)
            let rewritten = withUnsafeMutableBytes(of: &string) { target -> Bool in
                let target = target.baseAddress!
                #expect(NativeASCIIString.keepIfUnique(target, in: slot), "seed \(seed): a storage held once was not kept")
                let written = replacement.withUnsafeBytes {
                    NativeASCIIString.rewrite(from: slot, with: $0.baseAddress!, count: replacement.count, into: target)
                }
                if !written {
                    target.initializeMemory(as: String.self, to: String(decoding: text, as: UTF8.self))
                    slot.pointee = nil
                }
                return written
            }
            let expected = String(decoding: rewritten ? replacement : text, as: UTF8.self)
            #expect(string == expected && Array(string.utf8) == Array(expected.utf8) && string.hashValue == expected.hashValue,
                    "seed \(seed)")
            #expect(NativeASCIIString.isEmpty(slot), "seed \(seed)")
            if rewritten { rewrites += 1 }
        }
        #expect(rewrites > 100, "seed \(seed)")
    }
}
