import ArgumentParser
import Canopy

extension CanopyCommand {
    struct Upgrade: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Upgrade a database of an earlier format (canopy/3, canopy/4 or canopy/5) to this build's (canopy/6) in place.",
            discussion: """
                In one transaction (killed halfway, the file stays as it was): a canopy/5 file's extension state \
                records (views', search indexes') move from canopy.info into its commit log; a canopy/4 file's store \
                state record moves there too; a canopy/3 file also gets a checksum on every stored record. Views are \
                not rebuilt. Close every process of an older build that has the database open first (one that stays \
                open fails with a typed error at its next transaction). A read-write open by an app upgrades the same \
                way; read-only commands read a canopy/4 or canopy/5 file as it is, and refuse a canopy/3 file naming \
                this command. A database already in this format is left as it is. Example: canopy upgrade ./db
                """)

        @OptionGroup var database: DatabaseArgument

        func run() throws {
            let db = try database.open(readOnly: false)
            if let count = db.upgradedRecordCount {
                let what: String
                switch db.upgradedFromFormat {
                case "canopy/3": what = "records checksummed, the state and the extensions' state records moved into the commit log"
                case "canopy/4", "canopy/4-without-checksums": what = "the state and the extensions' state records moved into the commit log"
                default: what = "the extensions' state records moved into the commit log"
                }
                console.line("upgraded \(db.path) from \(db.upgradedFromFormat ?? "?") to \(CanopyVersion.storageFormat): \(count) records rewritten (\(what)). Check it with `canopy verify \(db.path)`.")
            } else {
                console.line("\(db.path) is already in format \(CanopyVersion.storageFormat); nothing to do")
            }
        }
    }
}
