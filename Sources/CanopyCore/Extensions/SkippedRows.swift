import LMDB
import Logging

/// The rows an extension (a view, an index) left out because it could not decode them, as recorded in its state.
///
/// A view or index that meets a row it cannot decode while it populates (or catches up) skips the row and records it
/// here rather than failing its whole registration: one row written by an older model must not keep an app from
/// starting. The rows stay in the store, untouched; once one is rewritten (with the app's current type, or by a
/// migration step) the extension places it like any other and it leaves this record. Read it with
/// ``ReadTransaction/skippedRows(ofExtension:)``; `canopy info` and `canopy views` print the count, `canopy verify`
/// lists the rows. An extension can refuse to skip (a view's `strictDecoding` option): then the registration fails
/// with ``CanopyError/Code/decodingFailed`` as before.
public struct SkippedRows: Codable, Sendable, Hashable {
    /// How many rows are skipped now.
    public var count: Int
    /// The first skipped rows (at most ``listLimit``), in the order they were met.
    public var rows: [RowID]
    /// The error of the first row met (``CanopyError/message``), which usually explains the others.
    public var firstError: String

    /// How many rows the record lists by key.
    public static let listLimit = 100

    /// Creates a record.
    public init(count: Int = 0, rows: [RowID] = [], firstError: String = "") {
        self.count = count
        self.rows = rows
        self.firstError = firstError
    }

    /// Records one more skipped row.
    public mutating func add(_ row: RowID, error: String) {
        if count == 0 || firstError.isEmpty { firstError = error }
        count += 1
        if rows.count < Self.listLimit, !rows.contains(row) { rows.append(row) }
    }

    /// Records that a skipped row was rewritten or removed.
    public mutating func remove(_ row: RowID) {
        count = max(0, count - 1)
        rows.removeAll { $0 == row }
        if count == 0 { firstError = "" }
    }
}

extension ReadTransaction {
    /// The rows extension `name` skipped because it could not decode them, or `nil` when it skipped none.
    /// - Throws: ``CanopyError/Code/corruptStore`` when the record does not decode.
    public func skippedRows(ofExtension name: String) throws -> SkippedRows? {
        let key = StoreInfoKey.skippedRows(of: name)
        return try storage.withValue(forKey: key, in: tables.info) { bytes in
            guard let bytes else { return nil }
            do {
                return try JSONDecoderBox.decoder.decode(SkippedRows.self, from: Array(bytes))
            } catch {
                throw CanopyError(.corruptStore, "the record of the rows extension '\(name)' skipped is malformed; register it again with a new version tag to rebuild it",
                                  path: core.path, extensionName: name, underlying: error)
            }
        }
    }
}

extension ReadWriteTransaction {
    /// Records the rows extension `name` skipped because it could not decode them (`nil`, or a record with a count of
    /// 0, removes the record). An extension calls it when it populates, and when a skipped row is rewritten or
    /// removed.
    public func setSkippedRows(_ record: SkippedRows?, ofExtension name: String) throws {
        let key = StoreInfoKey.skippedRows(of: name)
        let storage = try writeStorage
        if let record, record.count > 0 {
            // An operator must act on rows a view leaves out (migrate or fix them): a warning when the count grows.
            // The previous record is read only on this rare path, and only when the logger would print it.
            if core.logger.logLevel <= .warning {
                let before = (try? skippedRows(ofExtension: name))??.count ?? 0
                if record.count > before {
                    core.logger.warning("an extension skipped rows it cannot decode", metadata: [
                        "canopy.path": "\(core.path)", "canopy.extension": "\(name)", "canopy.skipped": "\(record.count)",
                        "canopy.error": "\(record.firstError)",
                    ])
                }
            }
            let bytes = Array(try JSONDecoderBox.encoder.encode(record))
            try guarded { try storage.put(bytes, forKey: key, in: tables.info) }
        } else {
            try guarded { _ = try storage.delete(key, in: tables.info) }
        }
        didWrite = true
    }
}
