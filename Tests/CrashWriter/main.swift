import Canopy
import Foundation

// The child process of the crash test: commits numbered transactions in a loop until it is killed.
// Each transaction writes `counter` = n and rows "n-a", "n-b" (so a half-applied transaction is visible), then
// prints "acked n" after the commit returns. Usage: CrashWriter <database-path> <durability>

struct Entry: Codable, Sendable {
    var number: Int
    var part: String
}

let arguments = CommandLine.arguments
guard arguments.count >= 3, let durability = Durability(rawValue: arguments[2]) else {
    FileHandle.standardError.write(Data("usage: CrashWriter <database-path> <full|metadataOnly|none>\n".utf8))
    exit(2)
}
do {
    let database = try Database(path: arguments[1], options: DatabaseOptions(durability: durability))
    let connection = database.newConnection()
    let entries = TypedCollection<Entry, NoMetadata>("entries")
    let counter = TypedCollection<Int, NoMetadata>("counter")
    var next = (try connection.read { txn in try txn.object(forKey: "n", in: counter) } ?? 0) + 1
    while true {
        let number = next
        try connection.readWrite { txn in
            try txn.set(Entry(number: number, part: "a"), forKey: "\(number)-a", in: entries)
            try txn.set(number, forKey: "n", in: counter)
            try txn.set(Entry(number: number, part: "b"), forKey: "\(number)-b", in: entries)
        }
        FileHandle.standardOutput.write(Data("acked \(number)\n".utf8))  // unbuffered: the test reads it after the kill
        next += 1
    }
} catch {
    FileHandle.standardError.write(Data("CrashWriter: \(error)\n".utf8))
    exit(1)
}
