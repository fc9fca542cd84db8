// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Canopy",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "LMDB", targets: ["LMDB"]),
        .library(name: "Canopy", targets: ["Canopy"]),
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
        .testTarget(name: "LMDBTests", dependencies: ["LMDB"]),
        .testTarget(name: "CanopyTests", dependencies: ["Canopy", "CanopyTestSupport", "CrashWriter"]),
    ],
    swiftLanguageModes: [.v6]
)
