import Foundation
import StateKit

/// A stand-in for a remote server: keeps the latest value it was sent in a local file, so the
/// tour runs without a network. A real app uses `HTTPSyncSink` from `StateKitHTTP` here.
struct FileRemoteSink: StateSink {
    let fileURL: URL
    var policy: SinkPolicy { .latestValue }

    func send(_ changes: [StateChange<[String]>]) async throws {
        guard let latest = changes.last else { return }
        let body = try JSONEncoder().encode(latest.newValue)
        try body.write(to: fileURL, options: .atomic)
        print("  remote stored version \(latest.version) (\(latest.idempotencyKey)): \(latest.newValue)")
    }
}

let syncSection = TourSection(name: "sync", summary: "SyncedState with an analytics sink and a remote-sync sink") {
    let directory = FileManager.default.temporaryDirectory.appending(path: "statekit-demo-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let analytics = JSONLinesAnalyticsBackend(fileURL: directory.appending(path: "events.jsonl"))
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)

    let cart = SyncedState([String](), key: "cart") {
        AnalyticsSink(backend: analytics) { change in
            AnalyticsEvent(name: "cart_changed", properties: ["items": "\(change.newValue.count)"])
        }
        FileRemoteSink(fileURL: directory.appending(path: "remote-cart.json"))
    }
    for item in ["Book", "Pen", "Lamp"] {
        cart.modify { $0.append(item) }
    }
    await cart.flush()

    print("  analytics events (one JSON line per change):")
    let lines = try String(contentsOf: analytics.fileURL, encoding: .utf8).split(separator: "\n")
    for line in lines { print("    \(line)") }
    for (name, statistics) in zip(["analytics", "remote"], cart.statistics) {
        print("  \(name): \(statistics)")
    }
}
