// swift-tools-version:6.2
import PackageDescription

/// A client module with main-actor default isolation (the Xcode 26 app default), proving StateKit's
/// public API compiles there with no annotations and no warnings. Built by `.ci/run`.
let package = Package(
    name: "MainActorClient",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [.package(name: "StateKit", path: "../..")],
    targets: [
        .executableTarget(
            name: "MainActorClient",
            dependencies: [.product(name: "StateKit", package: "StateKit")],
            swiftSettings: [.defaultIsolation(MainActor.self)]
        )
    ]
)
