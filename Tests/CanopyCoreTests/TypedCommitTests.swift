import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Synchronization
import Testing

/// The commit change value of ``ChangeCounting``: how many rows its writer handled.
private struct HandledRows: Sendable, Equatable {
    var count: Int
    var keys: [String]
}

/// The payload coding of ``HandledRows``, counting its decodes.
private enum HandledRowsCoding: ExtensionPayloadCoding {
    static let decodes = Mutex(0)
    static func encode(_ value: HandledRows) -> [UInt8] {
        Array("\(value.count)|\(value.keys.joined(separator: ","))".utf8)
    }
    static func decode(_ bytes: [UInt8]) throws -> HandledRows {
        decodes.withLock { $0 += 1 }
        return try parse(bytes)
    }
    static func parse(_ bytes: [UInt8]) throws -> HandledRows {
        let parts = String(decoding: bytes, as: UTF8.self).split(separator: "|", omittingEmptySubsequences: false)
        guard parts.count == 2, let count = Int(parts[0]) else { throw CanopyError(.corruptStore, "malformed handled rows") }
        return HandledRows(count: count, keys: parts[1].isEmpty ? [] : parts[1].split(separator: ",").map(String.init))
    }
}

/// ``HandledRowsCoding`` without its decode counter, for the tests that run beside the one reading the counter (a
/// decode here counted there: that test failed when the suites ran in parallel).
private enum TitleLengthsCoding: ExtensionPayloadCoding {
    static func encode(_ value: HandledRows) -> [UInt8] { HandledRowsCoding.encode(value) }
    static func decode(_ bytes: [UInt8]) throws -> HandledRows { try HandledRowsCoding.parse(bytes) }
}

/// An extension whose commit value is typed: the rows its writer handled in the transaction.
private final class ChangeCounting: StoreExtension, Sendable {
    let name = "change-counting"
    let kind = "change-counting"
    let versionTag = "1"
    let options = "{}"

    func prepare(in transaction: ReadWriteTransaction, context: ExtensionRegistrationContext) throws {}
    func beginWrite(_ transaction: ReadWriteTransaction) throws -> Writer { Writer() }
    func dropStorage(in transaction: ReadWriteTransaction) throws {}

    final class Writer: ExtensionTransaction {
        var keys: [String] = []
        func handle(_ change: RowChange) throws -> AttachmentEdit {
            keys.append(change.key)
            return .keep
        }
        func prepareCommit(_ commit: ExtensionCommit) throws -> ExtensionPayload? {
            keys.isEmpty ? nil : ExtensionPayload(HandledRows(count: keys.count, keys: keys), coding: HandledRowsCoding.self)
        }
    }
}

@Suite("Typed commit changes")
struct TypedCommitTests {
    /// An observer in the committing process gets the extension's change value itself, without decoding bytes; the
    /// commit log keeps the bytes of the declared coding, which is what another process (here: a notification made
    /// from those bytes alone) decodes to the same value.
    @Test func inProcessObserversGetTheValueOtherProcessesTheBytes() throws {
        try withDatabase { database, _ in
            try database.register(ChangeCounting())
            let recorder = NotificationRecorder()
            database.addCommitObserver { recorder.record($0) }
            HandledRowsCoding.decodes.withLock { $0 = 0 }
            try database.newConnection().readWrite { txn in
                try txn.set(Note(title: "a"), forKey: "a", in: notes)
                try txn.set(Note(title: "b"), forKey: "b", in: notes)
                _ = try txn.touchObject(forKey: "a", inCollection: "notes")
            }
            let notification = try #require(recorder.wait(for: 1).first)
            let expected = HandledRows(count: 3, keys: ["a", "b", "a"])
            #expect(try notification.extensionChange(named: "change-counting", coding: HandledRowsCoding.self) == expected)
            #expect(HandledRowsCoding.decodes.withLock { $0 } == 0)
            #expect(notification.extensionPayloads["change-counting"] == HandledRowsCoding.encode(expected))

            let fromLog = CommitNotification(snapshot: notification.snapshot, extensionPayloads: notification.extensionPayloads)
            #expect(try fromLog.extensionChange(named: "change-counting", coding: HandledRowsCoding.self) == expected)
            #expect(HandledRowsCoding.decodes.withLock { $0 } == 1)
            #expect(try fromLog.extensionChange(named: "other", coding: HandledRowsCoding.self) == nil)
        }
    }
}

/// A writer that keeps, per row, the length of a note's title in the row's attachment, and counts removed titles'
/// lengths at commit: written against `handle` and `prepareCommit` only.
private final class TitleLengthWriter: ExtensionTransaction {
    let slot: AttachmentSlot
    var removedLengths: [Int] = []
    init(slot: AttachmentSlot) { self.slot = slot }

    func handle(_ change: RowChange) throws -> AttachmentEdit {
        switch change.kind {
        case .insert, .update:
            guard change.objectChanged else { return .keep }
            let title = try change.object(as: Note.self).title
            return title.isEmpty ? .remove : .set([UInt8(title.utf8.count)])
        case .touch: return .keep
        case .remove:
            if let length = try change.previousAttachment(at: slot)?.first { removedLengths.append(Int(length)) }
            return .keep
        }
    }

    func prepareCommit(_ commit: ExtensionCommit) throws -> ExtensionPayload? {
        removedLengths.isEmpty ? nil : ExtensionPayload(HandledRows(count: removedLengths.count, keys: removedLengths.map(String.init)),
                                                        coding: TitleLengthsCoding.self)
    }
}

@Suite("Extension writers without a database")
struct ExtensionWriterTests {
    /// A writer's whole surface — a change in, an attachment edit out; a typed value at commit — runs on values made
    /// by the test, with no LMDB environment, transaction or file.
    @Test func aWriterIsTestedOnChangeValuesAlone() throws {
        let slot = AttachmentSlot(testing: 7)
        let writer = TitleLengthWriter(slot: slot)
        let key = try #require(StoredRowKey(bytes: [0, 0, 0, 1] + Array("a".utf8)))
        let id = RowID(collection: "notes", key: "a")

        let insert = RowChange(id: id, storedKey: key, kind: .insert, objectChanged: true, metadataChanged: false, object: Note(title: "hello"))
        #expect(try writer.handle(insert) == .set([5]))
        // The object as bytes only: decoded with the collection's codec, as a write of a tool hands it.
        let bytes = try BinaryCodec().encode(Note(title: "hey"))
        let update = RowChange(id: id, storedKey: key, kind: .update, objectChanged: true, metadataChanged: false,
                               previousAttachments: [slot: [5]], objectBytes: bytes)
        #expect(try writer.handle(update) == .set([3]))
        #expect(try update.previousAttachment(at: slot) == [5])
        let emptied = RowChange(id: id, storedKey: key, kind: .update, objectChanged: true, metadataChanged: false, object: Note(title: ""))
        #expect(try writer.handle(emptied) == .remove)
        let metadataOnly = RowChange(id: id, storedKey: key, kind: .update, objectChanged: false, metadataChanged: true)
        #expect(try writer.handle(metadataOnly) == .keep)
        let removal = RowChange(id: id, storedKey: key, kind: .remove, objectChanged: true, metadataChanged: true, previousAttachments: [slot: [3]])
        #expect(try writer.handle(removal) == .keep)
        #expect(throws: CanopyError.self) { try removal.object(as: Note.self) }

        let payload = try #require(try writer.prepareCommit(ExtensionCommit(snapshot: 2, isReset: false)))
        let notification = CommitNotification(snapshot: 2, extensionPayloads: ["title-length": payload.bytes])
        #expect(try notification.extensionChange(named: "title-length", coding: TitleLengthsCoding.self) == HandledRows(count: 1, keys: ["3"]))
    }
}

@Suite("Attachment slots")
struct AttachmentSlotAssignmentTests {
    /// The store assigns an extension's slot when it registers it, so that no change a writer handles later writes the
    /// store's slot record; a rebuild assigns a new one.
    @Test func slotsAreAssignedAtRegistration() throws {
        try withDatabase { database, _ in
            let connection = database.newConnection()
            try connection.readWrite { txn in try txn.set(Note(title: "a"), forKey: "a", in: notes) }
            try database.register(ChangeCounting())
            let first = try connection.read { txn in try txn.attachmentSlot(for: "change-counting") }
            #expect(first != nil)
            // Writes that attach nothing leave the slot as it was.
            try connection.readWrite { txn in try txn.set(Note(title: "b"), forKey: "b", in: notes) }
            #expect(try connection.read { txn in try txn.attachmentSlot(for: "change-counting") } == first)
            try database.unregisterExtension(named: "change-counting")
            try database.register(ChangeCounting())
            let second = try connection.read { txn in try txn.attachmentSlot(for: "change-counting") }
            #expect(second != nil && second != first)
        }
    }
}
