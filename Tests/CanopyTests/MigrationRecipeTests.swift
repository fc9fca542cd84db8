import Canopy
import CanopyTestSupport
import Foundation
import Testing

@Suite("README migration recipe")
struct MigrationRecipeTests {
    static let testsFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()

    @Test("the README's block is the compiled file")
    func readmeBlockIsTheCompiledFile() throws {
        let readme = try String(contentsOf: Self.testsFolder.appendingPathComponent("../../README.md"), encoding: .utf8)
        let block = try #require(swiftBlock(after: "<!-- migration-recipe", in: readme), "README has no migration recipe")
        let compiled = try String(contentsOf: Self.testsFolder.appendingPathComponent("MigrationRecipe.swift"), encoding: .utf8)
        #expect(block == compiled, "README's migration recipe and MigrationRecipe.swift differ")
    }

    @Test("the recipe migrates rows of version 1 and its view holds them")
    func recipeRuns() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.appending("db")
        do {
            let database = try Database(path: path)
            try database.newConnection().readWrite { txn in
                try txn.set(ReminderV1(title: "Buy milk", list: "home"), forKey: "r1", in: TypedCollection<ReminderV1, NoMetadata>("reminders"))
            }
        }
        try migrationRecipe(folder: path)
        let database = try Database(path: path)
        try database.newConnection().read { txn throws in
            #expect(try txn.object(forKey: "r1", in: TypedCollection<ListedReminder, NoMetadata>("reminders"))?.done == false)
            #expect(try txn.view("open-by-list").count(inGroup: "home") == 1)
        }
    }
}
