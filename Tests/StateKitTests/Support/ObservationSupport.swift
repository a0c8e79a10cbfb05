import Foundation
import Observation

/// Counts `withObservationTracking` firings and what the tracked expression read at each one.
final class TrackingProbe<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [Value] = []

    /// Tracks `read` once; on change, records what `read` returns at that moment.
    func trackOnce(_ read: @escaping @Sendable () -> Value) {
        track(read, again: false)
    }

    /// Tracks `read` and re-tracks inside every `onChange`, as SwiftUI does after each render.
    func trackContinuously(_ read: @escaping @Sendable () -> Value) {
        track(read, again: true)
    }

    private func track(_ read: @escaping @Sendable () -> Value, again: Bool) {
        withObservationTracking {
            _ = read()
        } onChange: {
            let value = read()
            self.lock.withLock { self.seen.append(value) }
            if again { self.track(read, again: true) }
        }
    }

    /// What `read` returned at each firing, in order.
    var firings: [Value] {
        lock.withLock { seen }
    }
}
