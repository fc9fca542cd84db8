import Foundation
import LMDB

/// A migration step as the database records it once applied.
public struct AppliedMigration: Codable, Sendable, Hashable {
    /// The step's name.
    public var name: String
    /// When the step finished (the clock of the process that ran it).
    public var appliedAt: Date
    /// The snapshot of the commit that finished it.
    public var snapshot: UInt64
    /// How many rows it rewrote, moved or removed.
    public var rows: Int
}

/// A migration step that started and has not finished (a process ran it in batches and stopped, or is running it):
/// the next ``Migrator/migrate(_:)`` resumes it after ``after``.
public struct MigrationInProgress: Codable, Sendable, Hashable {
    /// The step's name.
    public var name: String
    /// The last key of the collection the step has done (its checkpoint), or `nil` before the first batch ended.
    public var after: String?
    /// How many rows it changed so far.
    public var rows: Int
    /// How many batches it committed so far.
    public var batches: Int
}

extension ReadTransaction {
    /// The migration steps applied to this database, in the order they were applied.
    /// - Throws: ``CanopyError/Code/corruptStore`` when a record does not decode.
    public func appliedMigrations() throws -> [AppliedMigration] {
        try migrationRecords(prefix: StoreInfoKey.migrationAppliedPrefix, as: AppliedMigration.self)
            .sorted { ($0.snapshot, $0.name) < ($1.snapshot, $1.name) }
    }

    /// The migration steps that started and have not finished (interrupted; resumed by the next migrate).
    /// - Throws: ``CanopyError/Code/corruptStore`` when a record does not decode.
    public func migrationsInProgress() throws -> [MigrationInProgress] {
        try migrationRecords(prefix: StoreInfoKey.migrationProgressPrefix, as: MigrationInProgress.self)
    }

    func migrationProgress(_ name: String) throws -> MigrationInProgress? {
        try storage.withValue(forKey: StoreInfoKey.migrationProgress(name), in: tables.info) { bytes in
            try bytes.map { try decodeMigrationRecord(MigrationInProgress.self, $0, name: name) }
        }
    }

    private func migrationRecords<T: Decodable>(prefix: String, as type: T.Type) throws -> [T] {
        var records: [T] = []
        try storage.forEach(in: tables.info, prefix: Array(prefix.utf8)) { key, value in
            let name = String(decoding: key.dropFirst(prefix.utf8.count), as: UTF8.self)
            records.append(try decodeMigrationRecord(T.self, value, name: name))
            return true
        }
        return records
    }

    private func decodeMigrationRecord<T: Decodable>(_ type: T.Type, _ bytes: UnsafeRawBufferPointer, name: String) throws -> T {
        do {
            return try JSONDecoderBox.decoder.decode(T.self, from: Array(bytes))
        } catch {
            throw CanopyError(.corruptStore, "the record of migration step '\(name)' is malformed", path: core.path, underlying: error)
        }
    }
}

extension ReadWriteTransaction {
    func writeMigrationRecord<T: Encodable>(_ record: T?, forKey key: [UInt8]) throws {
        let storage = try writeStorage
        if let record {
            let bytes = Array(try JSONDecoderBox.encoder.encode(record))
            try guarded { try storage.put(bytes, forKey: key, in: tables.info) }
        } else {
            try guarded { _ = try storage.delete(key, in: tables.info) }
        }
        didWrite = true
    }
}
