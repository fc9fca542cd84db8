// swift-tools-version: 6.1
import PackageDescription

// Canopy's benchmarks: each workload runs through Canopy and through raw LMDB (the C API called from Swift, doing the
// same LMDB work) in one run, and `make bench` prints the ratios. Kept in its own package so that the root package
// does not depend on the benchmark harness.
let package = Package(
    name: "CanopyBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Canopy", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
        // Only for the observed-update comparison (needs Debian's libsqlite3-dev; `make bench` installs it).
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
    ],
    targets: [
        // <lmdb.h> for the raw baselines: the root package's CLMDB is not a product, so this package declares its own.
        .systemLibrary(
            name: "CLMDBBench",
            path: "Sources/CLMDBBench",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"])]
        ),
        .executableTarget(
            name: "StoreBenchmarks",
            dependencies: [
                .product(name: "Canopy", package: "Canopy"),
                .product(name: "CanopyCore", package: "Canopy"),
                .product(name: "LMDB", package: "Canopy"),
                .product(name: "CanopySource", package: "Canopy"),
                .product(name: "CanopySearch", package: "Canopy"),
                .product(name: "CanopyTerminal", package: "Canopy"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Benchmark", package: "benchmark"),
                "CLMDBBench",
            ],
            path: "Benchmarks/StoreBenchmarks",
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark"),
            ]
        ),
        // Cross-process observation (a writer process, an observer process): `make bench-xproc`.
        .executableTarget(
            name: "CrossProcessBench",
            dependencies: [.product(name: "Canopy", package: "Canopy")],
            path: "CrossProcess"
        ),
        // One StoreBenchmarks workload run a fixed number of times, for instruction counts under callgrind
        // (`InstructionCounts/count.sh`): on a loaded machine they decide where timings cannot.
        .executableTarget(
            name: "InstructionCounts",
            // (RawLMDB.swift is StoreBenchmarks' raw baseline, linked in: the `raw-*` workloads count it too;
            // SearchFTS5Baseline.swift its GRDB side of the search comparison.)
            dependencies: [
                .product(name: "Canopy", package: "Canopy"), .product(name: "CanopyCore", package: "Canopy"),
                .product(name: "CanopySearch", package: "Canopy"), "CLMDBBench",
                // The GRDB side of the search comparison (`search-index-grdb`, through StoreBenchmarks' FTS5Store).
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "InstructionCounts",
            exclude: ["count.sh"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
