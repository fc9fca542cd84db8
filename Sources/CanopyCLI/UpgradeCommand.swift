import ArgumentParser
import Canopy

extension CanopyCommand {
    struct Upgrade: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Upgrade a database of an earlier format (canopy/3 or canopy/4) to this build's (canopy/5) in place.",
            discussion: """
                In one transaction (killed halfway, the file stays as it was): a canopy/4 file's state record moves \
                into its commit log; a canopy/3 file also gets a checksum on every stored record. Close every process \
                of an older build that has the database open first. A read-write open by an app upgrades the same \
                way; read-only commands read a canopy/4 file as it is, and refuse a canopy/3 file naming this command. \
                A database already in this format is left as it is. Example: canopy upgrade ./db
                """)

        @OptionGroup var database: DatabaseArgument

        func run() throws {
            let db = try database.open(readOnly: false)
            if let count = db.upgradedRecordCount {
                let what = db.upgradedFromFormat == "canopy/3" ? "records checksummed, the state moved into the commit log" : "the state moved into the commit log"
                console.line("upgraded \(db.path) from \(db.upgradedFromFormat ?? "?") to \(CanopyVersion.storageFormat): \(count) records rewritten (\(what)). Check it with `canopy verify \(db.path)`.")
            } else {
                console.line("\(db.path) is already in format \(CanopyVersion.storageFormat); nothing to do")
            }
        }
    }
}
