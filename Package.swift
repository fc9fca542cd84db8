// swift-tools-version: 6.1
import Foundation
import PackageDescription

let package = Package(
    name: "Canopy",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "LMDB", targets: ["LMDB"]),
        .library(name: "Canopy", targets: ["Canopy"]),
        .library(name: "CanopyCore", targets: ["CanopyCore"]),
        .library(name: "CanopyIndexes", targets: ["CanopyIndexes"]),
        .library(name: "CanopySearch", targets: ["CanopySearch"]),
        .executable(name: "canopy", targets: ["canopy"]),
        .library(name: "CanopySource", targets: ["CanopySource"]),
        .library(name: "CanopyTerminal", targets: ["CanopyTerminal"]),
        .executable(name: "reminders", targets: ["reminders"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // Operational logs and metrics, the server ecosystem's APIs (DatabaseOptions.logger, .metricsFactory).
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
    ],
    targets: [
        // The C library, found through pkg-config; Debian/Ubuntu install it with `apt-get install liblmdb-dev`.
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"])]
        ),
        // CRC32C in C: the CPU's crc32 instruction (SSE4.2, ARMv8 CRC) where there is one, a table otherwise.
        .target(name: "CCRC32C"),
        // Guarded calls into LMDB: a crash inside liblmdb on a damaged page (SIGSEGV or SIGBUS in the map, a failed
        // assertion) returns an error code instead of ending the process. Its checked reads also check what they found
        // (inside the data file; a value's checksum, hence CCRC32C), so that a read or a scan's step is one call.
        .target(name: "CLMDBGuard", dependencies: ["CLMDB", "CCRC32C"]),
        // A thin, safe Swift wrapper over LMDB (values of checksummed databases carry a CRC32C; calls that read pages
        // are guarded). Knows nothing of collections, codecs or views.
        .target(name: "LMDB", dependencies: ["CLMDB", "CLMDBGuard", "CCRC32C"]),
        // The object store: collections, codecs, connections, caches, commits and notifications, and the extension
        // interface (typed tables, row scan, dependencies) that views and other extensions are built on.
        .target(name: "CanopyCore", dependencies: [
            "LMDB", .product(name: "Logging", package: "swift-log"), .product(name: "CoreMetrics", package: "swift-metrics"),
        ]),
        // Views, mappings, changesets and observation, built only on CanopyCore's public extension interface (this
        // module does not see the store's internals, nor LMDB); re-exports CanopyCore, so `import Canopy` is all an
        // app needs. Targets below that use Canopy also name CanopyCore: an incremental build then recompiles them
        // when CanopyCore's interface changes (through the re-export alone it did not, and linked stale code).
        .target(name: "Canopy", dependencies: ["CanopyCore"]),
        // A secondary index (rows by a value; lookups by value and range): another extension built only on CanopyCore.
        .target(name: "CanopyIndexes", dependencies: ["CanopyCore"]),
        // Full-text search: an index (words, prefixes, phrases, BM25) built only on CanopyCore's extension interface,
        // and live search results as a Canopy view.
        .target(name: "CanopySearch", dependencies: ["Canopy", "CanopyCore"]),
        // What every test target needs and no module under test provides: temporary directories, seeded random numbers
        // with printed seeds, child processes with timeouts, the built executables. Depends on none of the modules under
        // test, so a test target gets only the modules it names.
        .target(name: "CanopyTestSupport", path: "Sources/CanopyTestSupport"),
        // TaylorSource-style data sources and cell factory over Canopy views (container protocol, factory, sources).
        .target(name: "CanopySource", dependencies: ["Canopy", "CanopyCore"]),
        // A terminal list view implementing CanopySource's container protocol (hand-written ANSI, no styling package).
        .target(name: "CanopyTerminal", dependencies: ["CanopySource", "CanopyCore"]),
        // The logic of the `reminders` example (models, views, commands), tested in-process.
        .target(name: "RemindersKit", dependencies: [
            "Canopy", "CanopyCore", "CanopySearch", "CanopySource", "CanopyTerminal",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ], path: "Examples/Reminders/RemindersKit"),
        // The `reminders` tool; `make demo` runs `reminders demo`.
        .executableTarget(name: "reminders", dependencies: ["RemindersKit"], path: "Examples/Reminders/reminders"),
        // The example of the CanopyTerminal article "A live terminal list in 30 lines" (driven in tmux by a test).
        .executableTarget(name: "live-list", dependencies: ["Canopy", "CanopyCore", "CanopySource", "CanopyTerminal"], path: "Examples/LiveList"),
        // Fixtures per module under test, shared by several test targets and by the child processes below (which write
        // what the tests then read, so both sides must use the same models): a separate target each, because a test
        // target cannot import another, and CanopyTestSupport must not depend on the modules under test.
        // The store's: notes and a fresh database (CanopyCoreTests, CanopyTests, CanopyIndexesTests), the transforming
        // models the CrashWriter reads back.
        .target(name: "CanopyCoreTestFixtures", dependencies: ["CanopyCore", "CanopyTestSupport"], path: "Tests/CanopyCoreTestFixtures"),
        // Views': the changeset applier (UIKit's rules), the CrashWriter's and EvolutionChild's models and views.
        .target(name: "CanopyTestFixtures", dependencies: ["Canopy", "CanopyCore", "CanopyTestSupport"], path: "Tests/CanopyTestFixtures"),
        // Search's: the CrashWriter's search index and results view.
        .target(name: "CanopySearchTestFixtures", dependencies: ["CanopySearch", "Canopy", "CanopyCore", "CanopyTestFixtures"], path: "Tests/CanopySearchTestFixtures"),
        // The child process of the crash test: commits numbered transactions until it is killed.
        .executableTarget(name: "CrashWriter", dependencies: [
            "Canopy", "CanopyCore", "CanopySearch", "CanopyCoreTestFixtures", "CanopyTestFixtures", "CanopySearchTestFixtures",
        ], path: "Tests/CrashWriter"),
        // The child process of the model-evolution tests: version 1 or 2 of an app over one database.
        .executableTarget(name: "EvolutionChild", dependencies: ["Canopy", "CanopyCore", "CanopyTestFixtures"], path: "Tests/EvolutionChild"),
        // The `canopy` admin CLI: the commands live in a library so that tests run them in-process.
        // (CanopySearch: `verify` checks search indexes from their stored tables, as it checks views.)
        .target(name: "CanopyCLI", dependencies: ["Canopy", "CanopyCore", "CanopySearch", "LMDB", "CanopySource", "CanopyTerminal", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        .executableTarget(name: "canopy", dependencies: ["CanopyCLI"], path: "Tools/canopy"),
        .testTarget(name: "CanopyCLITests", dependencies: ["CanopyCLI", "Canopy", "CanopyCore", "CanopySearch", "CanopyTestSupport", "CanopyTestFixtures", "canopy", "CrashWriter"]),
        .testTarget(name: "LMDBTests", dependencies: ["LMDB", "CanopyTestSupport"]),
        // The store: codecs, checksums of records, damaged files, caches, connections, notifications, the change feed,
        // the extension interface's store side (with extensions of its own; no view, no index).
        .testTarget(name: "CanopyCoreTests", dependencies: [
            "CanopyCore", "LMDB", "CanopyTestSupport", "CanopyCoreTestFixtures", "CrashWriter",
        ]),
        // Views, mappings, changesets, observation, manual and many-group views, and the store's behaviour with views
        // registered (view pages' checksums, crashes, format upgrades, migrations, telemetry), and the articles' examples
        // of views. Only Canopy and what is below it.
        // Fixtures/: database files written by earlier releases (read by path, see FormatUpgradeTests).
        .testTarget(name: "CanopyTests", dependencies: [
            "Canopy", "CanopyCore", "LMDB", "CanopyTestSupport", "CanopyCoreTestFixtures",
            "CanopyTestFixtures", "CrashWriter", "EvolutionChild",
            .product(name: "Logging", package: "swift-log"), .product(name: "InMemoryLogging", package: "swift-log"),
            .product(name: "MetricsTestKit", package: "swift-metrics"), .product(name: "CoreMetrics", package: "swift-metrics"),
        ], exclude: ["Fixtures"]),
        // Modules used together: the README's quick start and recipes (views, an index, a data source, a terminal list),
        // and views registered beside a secondary index (catch-up after another process's writes, registration with a
        // read, rebuilds of both). The one test target that names several library modules beside each other.
        .testTarget(name: "IntegrationTests", dependencies: [
            "Canopy", "CanopyCore", "CanopyIndexes", "CanopySource", "CanopyTerminal", "LMDB", "CanopyTestSupport",
            "CanopyCoreTestFixtures", "CanopyTestFixtures", "CrashWriter",
        ]),
        // The secondary index.
        .testTarget(name: "CanopyIndexesTests", dependencies: ["CanopyIndexes", "CanopyCore", "CanopyTestSupport", "CanopyCoreTestFixtures"]),
        .testTarget(name: "CanopySearchTests", dependencies: [
            "CanopySearch", "Canopy", "CanopyCore", "CanopySource", "CanopyTestSupport", "CanopyTestFixtures", "CanopySearchTestFixtures", "CrashWriter",
        ]),
        // (CrashWriter and its fixtures: the push source's stress test observes another process's commits.)
        .testTarget(name: "CanopySourceTests", dependencies: [
            "CanopySource", "CanopyTerminal", "Canopy", "CanopyCore", "CanopyTestSupport", "CanopyTestFixtures", "CrashWriter",
        ]),
        .testTarget(name: "CanopyTerminalTests", dependencies: ["CanopyTerminal", "CanopySource", "Canopy", "CanopyCore", "CanopyTestSupport", "live-list"]),
        .testTarget(name: "RemindersTests", dependencies: ["RemindersKit", "CanopyCore", "CanopyTestSupport", "reminders"], exclude: ["Fixtures"]),
    ],
    swiftLanguageModes: [.v6]
)

// swift-docc-plugin only for `make docs` (which sets CANOPY_DOCS=1): the build, the tests and CI never fetch or build it.
if ProcessInfo.processInfo.environment["CANOPY_DOCS"] != nil {
    package.dependencies.append(.package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"))
}
