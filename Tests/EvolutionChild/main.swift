import Canopy
import CanopyTestFixtures
import CanopyTestSupport
import Foundation

// A child process of the model-evolution tests: version 1 or version 2 of an app over one database.
//
// Usage: EvolutionChild <database-path> v1 <rows>      writes <rows> notes with version 1's types and view, prints "done"
//        EvolutionChild <database-path> write-new|write-old|remove <key>
//                                                      without views: writes one note of version 2 or 1, or removes
//                                                      one, prints "done"
//        EvolutionChild <database-path> v2 [batch]     migrates (batches of [batch] rows), registers version 2's view,
//                                                      prints "batch <rows so far>" after each batch, then
//                                                      "migrated <steps applied>" and "registered <rows in view>"
//        EvolutionChild <database-path> v2-paced [batch]
//                                                      as v2, but after each "batch" line waits for a line on its
//                                                      standard input before the next batch (until that input ends):
//                                                      the test decides how far the migration goes, whatever the load
//        EvolutionChild <database-path> notes-to-json      migrates collection "notes" (version 1's notes) to the JSON
//                                                      codec, prints "migrated <rows>"

let arguments = CommandLine.arguments
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }  // unbuffered
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data("usage: EvolutionChild <database-path> v1 <rows> | v2 [batch]\n".utf8))
    exit(2)
}
do {
    let database = try Database(path: arguments[1], options: .init(durability: .none))
    switch arguments[2] {
    case "v1":
        let rows = arguments.count > 3 ? Int(arguments[3]) ?? 100 : 100
        try database.register(evolutionViewV1())
        let connection = database.newConnection()
        var written = 0
        while written < rows {
            try connection.readWrite { txn in
                for number in written..<min(rows, written + 10_000) {
                    try txn.set(EvolutionNoteV1(title: "note \(number)", day: "day \(number % 7)"), forKey: String(format: "n%07d", number), in: evolutionNotesV1)
                }
            }
            written = min(rows, written + 10_000)
        }
        say("done")
    case "v2", "v2-paced":
        let batch = arguments.count > 3 ? Int(arguments[3]) ?? 10_000 : 10_000
        let paced = arguments[2] == "v2-paced"
        let applied = try evolutionMigrator(batchSize: batch, progress: { _, rows in
            say("batch \(rows)")
            if paced { _ = readLine() }  // the test's go-ahead (nil once it closed the input: no more pauses)
        }).migrate(database)
        say("migrated \(applied.count)")
        try database.register(evolutionViewV2())
        let count = try database.newConnection().read { txn in try txn.view("notes-by-day").count() }
        say("registered \(count)")
    case "notes-to-json":
        var migrator = Migrator()
        migrator.append(.changeCodec("notes-json", collection: "notes", to: JSONCodec(), object: EvolutionNoteV1.self, metadata: NoMetadata.self))
        say("migrated \(try migrator.migrate(database).map(\.rows).reduce(0, +))")
    case "write-new", "write-old", "remove":
        let key = arguments.count > 3 ? arguments[3] : "k"
        try database.newConnection().readWrite { txn in
            switch arguments[2] {
            case "write-new": try txn.set(EvolutionNote(title: key, filedUnder: "mon", priority: 1), forKey: key, in: evolutionNotes)
            case "write-old": try txn.set(EvolutionNoteV1(title: key, day: "mon"), forKey: key, in: evolutionNotesV1)
            default: try txn.remove(key: key, in: evolutionNotes)
            }
        }
        say("done")
    default:
        FileHandle.standardError.write(Data("unknown mode \(arguments[2])\n".utf8))
        exit(2)
    }
} catch {
    say("error \(error)")
    exit(1)
}
