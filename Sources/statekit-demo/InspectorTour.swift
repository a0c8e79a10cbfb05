import Foundation
import StateKit
import StateKitInspector
import Synchronization

/// `statekit-demo --inspect`: a small app model, live in the browser, until Return is pressed.
enum InspectorDemo {
    struct Profile: Codable, Equatable, Sendable {
        var name: String
        var plan: String
        var tags: [String]
    }

    static func run() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("statekit-demo-inspect")
        let title = MonitoredState("Draft", key: "document.title")
        let profile = MonitoredState(Profile(name: "Ada", plan: "free", tags: ["admin"]), key: "profile")
        let history = StateHistory(tracking: title, profile)
        let clicks = MonitoredState(0, key: "clicks")
        let theme = PersistedState("light", key: "theme", storage: .file(directory))
        let cart = SyncedState([String](), key: "cart", sinks: [ClosureSink { _ in }])
        let subscription = clicks.subscribe { _ in }
        title ~> "Quarterly report"
        profile ~> { $0.plan = "pro" }
        theme ~> "dark"
        cart ~> { $0.append("Book") }

        let inspector = try StateInspector.start()
        print("Inspect the demo's state at \(inspector.url)")
        print("(a click every half second; press Return to stop)")
        let ticking = LockedFlag()
        let ticker = Thread {
            var tick = 0
            while !ticking.isStopped {
                tick += 1
                clicks.modify { $0 += 1 }
                if tick % 10 == 0 { profile ~> { $0.tags.append("tag\(tick / 10)") } }
                Thread.sleep(forTimeInterval: 0.5)
            }
        }
        ticker.start()
        _ = readLine()
        ticking.stop()
        inspector.stop()
        withExtendedLifetime((history, subscription, theme, cart)) {}
    }
}

/// A flag one thread sets and another reads.
final class LockedFlag: Sendable {
    private let stopped = Atomic(false)

    var isStopped: Bool { stopped.load(ordering: .acquiring) }

    func stop() { stopped.store(true, ordering: .releasing) }
}
