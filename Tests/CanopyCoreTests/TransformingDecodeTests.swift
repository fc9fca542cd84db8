import CanopyCore
import CanopyCoreTestFixtures
import CanopyTestSupport
import Foundation
import Testing

/// The binary codec decodes exactly what a type's `init(from:)` returns, whatever value of the type a process decodes
/// first: types whose hand-written `init(from:)` lowercases or clamps, random values (about half of them left as they
/// are by the transformation), read in random orders by fresh child processes.
@Suite("Binary codec: values decode as init(from:) makes them", .ownThread)
struct TransformingDecodeTests {
    @Test("Every value a fresh process reads, in any order, equals what init(from:) returns", .timeLimit(.minutes(2)))
    func freshProcessesInRandomOrders() throws {
        let writerPath = try #require(builtExecutable(named: "CrashWriter"), "the CrashWriter executable was not built")
        let seed: UInt64 = 0x10_4E_25
        var random = SeededRandom(seed: seed)
        try withDatabase { database, directory in
            let letters = Array("abcdeXYZ")
            var expected: [String: String] = [:]
            try database.newConnection().readWrite { txn throws in
                for index in 0..<40 {
                    // Half the names are lowercase already, half of the levels within range.
                    let lower = Bool.random(using: &random)
                    let name = String((0..<Int.random(in: 1...8, using: &random)).map { _ in
                        let letter = letters.randomElement(using: &random) ?? "a"
                        return lower ? Character(letter.lowercased()) : letter
                    })
                    let count = Int.random(in: -1_000...1_000, using: &random)
                    try txn.set(LowercasedTag(name: name, count: count), forKey: "tag-\(index)", in: transformingTags)
                    expected["tag-\(index)"] = "tag-\(index)\t\(name.lowercased())\t\(count)"
                    let level = Bool.random(using: &random) ? Int.random(in: 0...10, using: &random) : Int.random(in: -50...50, using: &random)
                    try txn.set(ClampedLevel(label: "L\(index)", level: level), forKey: "level-\(index)", in: transformingLevels)
                    expected["level-\(index)"] = "level-\(index)\tL\(index)\t\(min(10, max(0, level)))"
                }
            }
            let path = directory.appending("db")
            for process in 0..<8 {
                let order = Array(expected.keys).sorted().shuffled(using: &random)
                let child = try ChildProcess(writerPath, [path, "none", "--read-transforming", order.joined(separator: ",")])
                let lines = child.remainingLines()
                #expect(child.waitForExit() == 0, "seed \(seed) process \(process)")
                #expect(lines == order.map { expected[$0] ?? "" }, "seed \(seed) process \(process), order \(order)")
            }
        }
    }
}
