import Canopy
import CanopyTestSupport
import Foundation

// The child process of the crash test: commits numbered transactions in a loop until it is killed.
// Each transaction writes `counter` = n and rows "n-a", "n-b" (so a half-applied transaction is visible), then
// prints "acked n" after the commit returns.
// Usage: CrashWriter <database-path> <durability> [--with-view] [--commits N]
//   --with-view registers `crashWriterView()` (the cross-process observation test watches it from another process);
//   --commits N stops after N commits instead of running until killed.

let arguments = CommandLine.arguments
guard arguments.count >= 3, let durability = Durability(rawValue: arguments[2]) else {
    FileHandle.standardError.write(Data("usage: CrashWriter <database-path> <full|metadataOnly|none> [--with-view] [--commits N]\n".utf8))
    exit(2)
}
let withView = arguments.contains("--with-view")
let commitLimit = arguments.firstIndex(of: "--commits").flatMap { arguments.indices.contains($0 + 1) ? Int(arguments[$0 + 1]) : nil }
do {
    let database = try Database(path: arguments[1], options: DatabaseOptions(durability: durability))
    if withView { try database.register(crashWriterView()) }
    let connection = database.newConnection()
    let entries = crashWriterEntries
    let counter = TypedCollection<Int, NoMetadata>("counter")
    var next = (try connection.read { txn in try txn.object(forKey: "n", in: counter) } ?? 0) + 1
    var written = 0
    while commitLimit.map({ written < $0 }) ?? true {
        let number = next
        try connection.readWrite { txn in
            try txn.set(CrashWriterEntry(number: number, part: "a"), forKey: "\(number)-a", in: entries)
            try txn.set(number, forKey: "n", in: counter)
            try txn.set(CrashWriterEntry(number: number, part: "b"), forKey: "\(number)-b", in: entries)
        }
        FileHandle.standardOutput.write(Data("acked \(number)\n".utf8))  // unbuffered: the test reads it after the kill
        next += 1
        written += 1
    }
    exit(0)
} catch {
    FileHandle.standardError.write(Data("CrashWriter: \(error)\n".utf8))
    exit(1)
}
