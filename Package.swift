// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "StateKit",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "StateKit", targets: ["StateKit"]),
        .library(name: "StateKitTesting", targets: ["StateKitTesting"]),
        .library(name: "StateKitHTTP", targets: ["StateKitHTTP"]),
        .library(name: "StateKitInspector", targets: ["StateKitInspector"]),
        .executable(name: "statekit-demo", targets: ["statekit-demo"]),
    ],
    targets: [
        .target(name: "StateKit"),
        .target(name: "StateKitTesting", dependencies: ["StateKit"]),
        .target(name: "StateKitHTTP", dependencies: ["StateKit"]),
        .target(name: "StateKitInspector", dependencies: ["StateKit"]),
        .executableTarget(name: "statekit-demo", dependencies: ["StateKit", "StateKitHTTP", "StateKitInspector"]),
        .executableTarget(name: "statekit-sinks-helper", dependencies: ["StateKit", "StateKitHTTP"]),
        // A child process for the persistence tests (kill -9, round trips between processes).
        .executableTarget(name: "statekit-testhelper", dependencies: ["StateKit"]),
        // The program the inspector's browser check (Scripts/inspector/check.py) inspects.
        .executableTarget(name: "statekit-inspector-fixture", dependencies: ["StateKit", "StateKitInspector"]),
        .testTarget(
            name: "StateKitTests",
            dependencies: ["StateKit", "StateKitTesting", "StateKitHTTP", "statekit-sinks-helper", "statekit-testhelper"]
        ),
        .testTarget(
            name: "StateKitInspectorTests", dependencies: ["StateKit", "StateKitInspector", "statekit-inspector-fixture"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
