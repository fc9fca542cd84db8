// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Canopy",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "LMDB", targets: ["LMDB"]),
        .library(name: "Canopy", targets: ["Canopy"]),
        .executable(name: "canopy", targets: ["canopy"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // The C library, found through pkg-config; Debian/Ubuntu install it with `apt-get install liblmdb-dev`.
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"])]
        ),
        // A thin, safe Swift wrapper over LMDB. Knows nothing of collections, codecs or views.
        .target(name: "LMDB", dependencies: ["CLMDB"]),
        // The object store: collections, codecs, connections, caches, notifications, extensions, views.
        .target(name: "Canopy", dependencies: ["LMDB"]),
        // Fixtures shared by the test targets: temporary directories, seeded random numbers, invariant checks.
        .target(name: "CanopyTestSupport", dependencies: ["Canopy", "LMDB"], path: "Sources/CanopyTestSupport"),
        // A small program that `make demo` runs on a fresh database in a temporary folder.
        .executableTarget(name: "Demo", dependencies: ["Canopy"], path: "Examples/Demo"),
        // The child process of the crash test: commits numbered transactions until it is killed.
        .executableTarget(name: "CrashWriter", dependencies: ["Canopy", "CanopyTestSupport"], path: "Tests/CrashWriter"),
        // The `canopy` admin CLI: the commands live in a library so that tests run them in-process.
        .target(name: "CanopyCLI", dependencies: ["Canopy", "LMDB", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        .executableTarget(name: "canopy", dependencies: ["CanopyCLI"], path: "Tools/canopy"),
        .testTarget(name: "CanopyCLITests", dependencies: ["CanopyCLI", "Canopy", "CanopyTestSupport", "canopy", "CrashWriter"]),
        .testTarget(name: "LMDBTests", dependencies: ["LMDB"]),
        .testTarget(name: "CanopyTests", dependencies: ["Canopy", "CanopyTestSupport", "CrashWriter"]),
    ],
    swiftLanguageModes: [.v6]
)
