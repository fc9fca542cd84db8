import ArgumentParser
import Canopy

extension CanopyCommand {
    struct Upgrade: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Upgrade a database of the previous format (canopy/3) to this build's (canopy/4) in place.",
            discussion: """
                Adds a checksum to every stored record, in one transaction: killed halfway, the file stays as it was. \
                Close every process of an older build that has the database open first. A read-write open by an app \
                upgrades the same way; read-only commands refuse a canopy/3 file and name this command. A database \
                already in this format is left as it is. Example: canopy upgrade ./db
                """)

        @OptionGroup var database: DatabaseArgument

        func run() throws {
            let db = try database.open(readOnly: false)
            if let count = db.upgradedRecordCount {
                console.line("upgraded \(db.path) to canopy/4: \(count) records checksummed. Check it with `canopy verify \(db.path)`.")
            } else {
                console.line("\(db.path) is already in format canopy/4; nothing to do")
            }
        }
    }
}
