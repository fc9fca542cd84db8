#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The report `canopy` prints when a contained child died by a signal (see ``CrashContainment``): what crashed, where
/// (the table and the region of its pages), and what to do.
struct DamageReport {
    /// What the walk of every table (in another contained child) found.
    enum Walk {
        /// It read every table to the end: the crash was not in LMDB's walk of the pages.
        case completed
        /// It ended with an error (the database cannot be opened as an LMDB environment).
        case failed
        /// It crashed too, at `breadcrumb`.
        case crashed(signal: Int32, breadcrumb: Breadcrumb.Record)
    }

    var command: String
    var signal: Int32
    var breadcrumb: Breadcrumb.Record

    /// Whether the breadcrumb alone does not say which table crashed.
    var needsWalk: Bool { breadcrumb.tableEntries == 0 && !breadcrumb.phase.hasPrefix("walking table") }

    static func signalName(_ number: Int32) -> String {
        switch number {
        case SIGSEGV: return "SIGSEGV"
        case SIGBUS: return "SIGBUS"
        case SIGABRT: return "SIGABRT"
        case SIGILL: return "SIGILL"
        case SIGTRAP: return "SIGTRAP"
        case SIGFPE: return "SIGFPE"
        case SIGKILL: return "SIGKILL"
        default: return "signal \(number)"
        }
    }

    /// Where a breadcrumb says the crash was: the phase, and in a table walk the entry and the region of leaf pages.
    static func place(_ record: Breadcrumb.Record) -> String {
        guard record.phase.hasPrefix("walking table") else { return record.phase.isEmpty ? "starting" : record.phase }
        var text = record.phase
        if record.tableEntries > 0 {
            text += ", after \(record.entriesRead) of its \(record.tableEntries) entries"
            if record.tableLeafPages > 0 {
                let page = min(record.tableLeafPages, record.entriesRead * record.tableLeafPages / record.tableEntries + 1)
                text += " (about leaf page \(page) of its \(record.tableLeafPages))"
            }
        }
        if record.entriesRead > 0, !record.lastKey.isEmpty {
            text += "; the last entry read whole has the key \(printableKey(record.lastKey))"
        }
        return text
    }

    /// A key for a message: text when it is printable UTF-8, hex otherwise.
    static func printableKey(_ bytes: [UInt8]) -> String {
        let prefixLength = bytes.count > 4 && bytes.prefix(4).contains(0) ? 4 : 0  // a row key: collection id + UTF-8 key
        let text = String(decoding: bytes.dropFirst(prefixLength), as: UTF8.self)
        if text.utf8.elementsEqual(bytes.dropFirst(prefixLength)), text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) {
            return (prefixLength > 0 ? hex(bytes.prefix(prefixLength)) + " " : "") + "'\(text)'"
        }
        return hex(bytes)
    }

    /// The report, with what the walk of every table found when one ran.
    func text(walk: Walk?) -> String {
        var text = "the database is damaged: `canopy \(command)` crashed (\(Self.signalName(signal))) while \(Self.place(breadcrumb))"
        if signal == SIGILL || signal == SIGTRAP {
            text += ": a check failed on malformed stored bytes"
        } else {
            text += ": LMDB trusts the file's pages and read outside them"
        }
        switch walk {
        case .crashed(let walkSignal, let record)?:
            text += ". A walk of every table crashes too (\(Self.signalName(walkSignal))) while \(Self.place(record))"
        case .completed?:
            text += ". A walk of every table reads them all: the damage is in the records this command reads (run `canopy verify`)"
        case .failed?:
            text += ". A walk of the tables cannot open the file as an LMDB environment"
        case nil:
            break
        }
        if !breadcrumb.databasePath.isEmpty { text += ". Database: \(breadcrumb.databasePath)" }
        text += ". The crash was contained in a child process and nothing was written. Restore the database from a backup; "
            + "`canopy export` may still copy out the rows it can read."
        return text
    }
}
