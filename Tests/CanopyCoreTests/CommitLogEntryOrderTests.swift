@testable import CanopyCore
import CanopyTestSupport
import Testing

/// A commit-log entry carries the store's state (every extension's snapshot and state record) and the commit's
/// extension payloads, kept in dictionaries whose order differs between processes and between two dictionaries of the
/// same contents: the entry is written by name, so that equal states are equal bytes wherever they were encoded.
@Suite("Commit log entries: the same state, the same bytes")
struct CommitLogEntryOrderTests {
    /// Extension names, enough that two dictionaries of them almost never iterate alike by chance.
    static let names = (0..<24).map { "ext-\($0)" } + ["tasks", "tasks.done", "a", "z.z"]

    /// A state and notification holding `names`, inserted in an order drawn from `seed`, into dictionaries reserved for
    /// `capacity` (each dictionary storage hashes with its own seed, as each process does).
    static func entry(seed: UInt64, capacity: Int, extensions: Int) -> CommitLogEntry {
        var random = SeededRandom(seed: seed)
        let order = names.suffix(extensions).shuffled(using: &random)
        var snapshots = [String: UInt64](minimumCapacity: capacity)
        var records = [String: [UInt8]](minimumCapacity: capacity)
        var payloads = [String: [UInt8]](minimumCapacity: capacity)
        var removed = Set<String>(minimumCapacity: capacity)
        for name in order {
            let number = UInt64(names.firstIndex(of: name) ?? 0)
            snapshots[name] = 40 + number
            records[name] = Array(name.utf8) + [UInt8(number)]
            payloads[name] = [UInt8(number), 7]
            removed.insert("collection-\(name)")
        }
        var state = StoreState()
        state.snapshot = 77
        state.extensionSnapshots = snapshots
        state.extensionStates = records
        let notification = CommitNotification(snapshot: 77, removedCollections: removed, extensionPayloads: payloads)
        return CommitLogEntry(notification: notification, state: state)
    }

    @Test("one state in differently seeded and sized dictionaries encodes to the same bytes, and decodes back to it",
          arguments: [names.count, CommitLogEntry.namesWalkedInPlace, 3, 2])
    func sameStateSameBytes(extensions: Int) throws {
        let reference = Self.entry(seed: 1, capacity: 0, extensions: extensions)
        let bytes = reference.encoded
        for seed: UInt64 in 2...40 {
            let other = Self.entry(seed: seed, capacity: Int(seed % 5) * 40, extensions: extensions)
            #expect(other == reference, "seed \(seed)")
            #expect(other.encoded == bytes, "seed \(seed), \(extensions) extensions: the same state encoded to other bytes")
        }
        // Walked by ascending name (without a sorted copy up to `namesWalkedInPlace` names).
        var walked: [String] = []
        CommitLogEntry.forEachByName(reference.state?.extensionStates ?? [:]) { name, _ in walked.append(name) }
        #expect(walked == Array(Self.names.suffix(extensions)).sorted())
        let decoded = try bytes.withUnsafeBytes { try CommitLogEntry(decoding: $0) }
        #expect(decoded.state == reference.state)
        #expect(decoded.notification.extensionPayloads == reference.notification.extensionPayloads)
        #expect(decoded.notification.removedCollections == reference.notification.removedCollections)
        #expect(decoded.encoded == bytes, "decoded and encoded again: the same bytes")
    }
}
