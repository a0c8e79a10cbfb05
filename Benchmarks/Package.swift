// swift-tools-version: 6.1
import PackageDescription

/// StateKit's benchmarks: StateKit against its peers and a hand-written floor, side by side.
///
/// Its own package so the root package keeps zero dependencies. Run it with
/// `swift package --package-path Benchmarks benchmark` (see README.md here).
let package = Package(
    name: "StateKitBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "StateKit", path: ".."),
        .package(
            url: "https://github.com/ordo-one/benchmark",
            from: "1.38.1",
            traits: ["MallocInterposer"]
        ),
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
    ],
    targets: [
        .executableTarget(
            name: "StateKitBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "StateKit", package: "StateKit"),
                .product(name: "OpenCombine", package: "OpenCombine"),
                "CombinePeers",
            ],
            path: "Benchmarks/StateKitBenchmarks",
            // Swift 5 mode: the seed article's code predates strict concurrency checking.
            swiftSettings: [.swiftLanguageMode(.v5)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Peers written here, shared by the benchmarks and the profiling driver.
        .target(
            name: "CombinePeers",
            dependencies: [.product(name: "OpenCombine", package: "OpenCombine")],
            // Swift 5 mode, as the benchmarks: OpenCombine's types are not `Sendable`.
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // A driver for Scripts/profile.sh: one scenario under callgrind.
        .executableTarget(
            name: "StateKitProfile",
            dependencies: [
                .product(name: "StateKit", package: "StateKit"),
                .product(name: "StateKitInspector", package: "StateKit"),
                .product(name: "OpenCombine", package: "OpenCombine"),
                "CombinePeers",
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
