import Foundation

@testable import StateKit  // a container's pipelines, and whether each stopped

/// The sink pipelines of the containers a test made, held weakly: a released container's
/// pipelines must stop within their drain timeout (semantics 24), and a stopped or freed one
/// counts as stopped.
final class PipelineWatch: @unchecked Sendable {
    private let lock = NSLock()
    /// Whether each pipeline runs still (`false` once it stopped or was freed).
    private var running: [() -> Bool] = []

    /// Watches the pipelines of `state`.
    func watch<Value>(_ state: SyncedState<Value>) {
        let checks = state.pipelines.map { pipeline in { [weak pipeline] in pipeline.map { !$0.hasStopped } ?? false } }
        lock.withLock { running += checks }
    }

    /// How many of the watched pipelines run still.
    var liveCount: Int {
        lock.withLock { running }.count { $0() }
    }

    /// Waits (polling, bounded) until no watched pipeline runs; returns whether that happened.
    func allStopped(within seconds: Double = 60) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while liveCount > 0 && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        return liveCount == 0
    }
}
