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
        let marker = try #require(readme.range(of: "<!-- migration-recipe"))
        let afterMarker = readme[marker.upperBound...]
        let start = try #require(afterMarker.range(of: "```swift\n"))
        let end = try #require(afterMarker[start.upperBound...].range(of: "```"))
        let compiled = try String(contentsOf: Self.testsFolder.appendingPathComponent("MigrationRecipe.swift"), encoding: .utf8)
        #expect(String(afterMarker[start.upperBound..<end.lowerBound]) == compiled, "README's migration recipe and MigrationRecipe.swift differ")
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
